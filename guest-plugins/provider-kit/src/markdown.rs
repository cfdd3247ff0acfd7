//! The Markdown the catalog's write tools take (descriptions, comments,
//! page bodies), read into blocks, and written in the two rich-text formats
//! Atlassian's APIs want: the Atlassian Document Format (Jira Cloud v3) and
//! the XHTML storage format (Confluence). ADF read back becomes plain text.
//!
//! Blocks only: headings, paragraphs (lines kept as hard breaks), bullet and
//! numbered lists and fenced code. Inline marks (`**bold**`, links) stay as
//! their literal text: the API shows what the model wrote, never less.

use toolhost_sdk::{Value, json};

/// One block of a Markdown text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Block {
    Heading(u8, String),
    /// Its lines, shown with hard breaks between them.
    Paragraph(Vec<String>),
    Bullets(Vec<String>),
    Numbered(Vec<String>),
    Code(String),
}

/// The blocks of `text`.
pub fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut lines = text.lines().peekable();
    let mut para: Vec<String> = Vec::new();
    let flush = |para: &mut Vec<String>, out: &mut Vec<Block>| {
        if !para.is_empty() {
            out.push(Block::Paragraph(std::mem::take(para)));
        }
    };
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") {
            flush(&mut para, &mut out);
            let mut code = Vec::new();
            for l in lines.by_ref() {
                if l.trim_start().starts_with("```") {
                    break;
                }
                code.push(l);
            }
            out.push(Block::Code(code.join("\n")));
        } else if let Some((level, title)) = heading(trimmed) {
            flush(&mut para, &mut out);
            out.push(Block::Heading(level, title.to_owned()));
        } else if bullet(trimmed).is_some() || numbered(trimmed).is_some() {
            flush(&mut para, &mut out);
            let is_bullet = bullet(trimmed).is_some();
            let item = if is_bullet { bullet } else { numbered };
            let mut items = vec![item(trimmed).unwrap_or_default().to_owned()];
            while let Some(next) = lines.peek().and_then(|l| item(l.trim_start())) {
                items.push(next.to_owned());
                lines.next();
            }
            out.push(if is_bullet {
                Block::Bullets(items)
            } else {
                Block::Numbered(items)
            });
        } else if trimmed.is_empty() {
            flush(&mut para, &mut out);
        } else {
            para.push(line.trim_end().to_owned());
        }
    }
    flush(&mut para, &mut out);
    out
}

fn heading(line: &str) -> Option<(u8, &str)> {
    let level = line.bytes().take_while(|&b| b == b'#').count();
    let rest = line[level..].strip_prefix(' ')?;
    (1..=6).contains(&level).then(|| (level as u8, rest.trim()))
}

fn bullet(line: &str) -> Option<&str> {
    line.strip_prefix("- ").or_else(|| line.strip_prefix("* "))
}

fn numbered(line: &str) -> Option<&str> {
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    (digits > 0).then(|| line[digits..].strip_prefix(". "))?
}

/// `text` as an ADF document (`{"type": "doc", "version": 1, ...}`).
pub fn to_adf(text: &str) -> Value {
    // ADF refuses empty text nodes, so empty strings are left out.
    let text_node = |s: &str| (!s.is_empty()).then(|| json!({"type": "text", "text": s}));
    let paragraph = |lines: &[String]| {
        let mut content = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            if i > 0 {
                content.push(json!({"type": "hardBreak"}));
            }
            content.extend(text_node(line));
        }
        json!({"type": "paragraph", "content": content})
    };
    let list = |kind: &str, items: &[String]| {
        let items: Vec<Value> = items
            .iter()
            .map(|i| json!({"type": "listItem", "content": [paragraph(std::slice::from_ref(i))]}))
            .collect();
        json!({"type": kind, "content": items})
    };
    let content: Vec<Value> = blocks(text)
        .iter()
        .map(|b| match b {
            Block::Heading(level, title) => {
                json!({"type": "heading", "attrs": {"level": level}, "content": text_node(title).into_iter().collect::<Vec<_>>()})
            }
            Block::Paragraph(lines) => paragraph(lines),
            Block::Bullets(items) => list("bulletList", items),
            Block::Numbered(items) => list("orderedList", items),
            Block::Code(code) => {
                json!({"type": "codeBlock", "content": text_node(code).into_iter().collect::<Vec<_>>()})
            }
        })
        .collect();
    json!({"type": "doc", "version": 1, "content": content})
}

/// The text of an ADF document (or of any ADF node): blocks on their own
/// lines, list items after `- `, mentions by their text. A plain string
/// (Jira Data Center's v2 bodies) is returned as it is.
pub fn adf_text(node: &Value) -> String {
    let mut out = String::new();
    write_adf(node, &mut out);
    out.trim_end().to_owned()
}

fn write_adf(node: &Value, out: &mut String) {
    if let Some(s) = node.as_str() {
        out.push_str(s);
        return;
    }
    let kind = node.get("type").and_then(Value::as_str).unwrap_or("");
    match kind {
        "text" => out.push_str(node.get("text").and_then(Value::as_str).unwrap_or("")),
        "hardBreak" => out.push('\n'),
        "mention" | "emoji" => out.push_str(node["attrs"]["text"].as_str().unwrap_or("")),
        _ => {
            if kind == "listItem" {
                out.push_str("- ");
            }
            for child in node
                .get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                write_adf(child, out);
            }
            if matches!(
                kind,
                "paragraph" | "heading" | "codeBlock" | "blockquote" | "rule"
            ) && !out.ends_with('\n')
            {
                out.push('\n');
            }
        }
    }
}

/// `text` in Confluence's storage format (XHTML), escaped.
pub fn to_storage(text: &str) -> String {
    let list = |tag: &str, items: &[String]| {
        let items: String = items.iter().map(|i| format!("<li>{}</li>", escape(i))).collect();
        format!("<{tag}>{items}</{tag}>")
    };
    blocks(text)
        .iter()
        .map(|b| match b {
            Block::Heading(level, title) => format!("<h{level}>{}</h{level}>", escape(title)),
            Block::Paragraph(lines) => {
                let lines: Vec<String> = lines.iter().map(|l| escape(l)).collect();
                format!("<p>{}</p>", lines.join("<br />"))
            }
            Block::Bullets(items) => list("ul", items),
            Block::Numbered(items) => list("ol", items),
            Block::Code(code) => format!("<pre>{}</pre>", escape(code)),
        })
        .collect()
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "# Title\nfirst line\nsecond line\n\n- a\n- b\n1. one\n2. two\n```\nlet x = 1;\n```\n";

    #[test]
    fn blocks_are_read() {
        assert_eq!(
            blocks(TEXT),
            vec![
                Block::Heading(1, "Title".into()),
                Block::Paragraph(vec!["first line".into(), "second line".into()]),
                Block::Bullets(vec!["a".into(), "b".into()]),
                Block::Numbered(vec!["one".into(), "two".into()]),
                Block::Code("let x = 1;".into()),
            ]
        );
        assert_eq!(
            blocks("#hashtag"),
            vec![Block::Paragraph(vec!["#hashtag".into()])]
        );
    }

    #[test]
    fn adf_round_trips_to_text() {
        let doc = to_adf(TEXT);
        assert_eq!(doc["content"][1]["content"][1], json!({"type": "hardBreak"}));
        assert_eq!(
            adf_text(&doc),
            "Title\nfirst line\nsecond line\n- a\n- b\n- one\n- two\nlet x = 1;"
        );
        assert_eq!(to_adf("")["content"], json!([]));
    }

    #[test]
    fn storage_is_escaped_xhtml() {
        assert_eq!(
            to_storage("a <b> & c\nd\n\n- x"),
            "<p>a &lt;b&gt; &amp; c<br />d</p><ul><li>x</li></ul>"
        );
    }
}
