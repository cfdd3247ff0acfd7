//! Secret values kept out of what a plugin hands on.
//!
//! The host injects a plugin's secrets into its requests; a server that
//! echoes request headers hands them back. [`Redactor`] holds the values of
//! one plugin's secrets and replaces each occurrence with
//! `[redacted:NAME]`. It is applied once per boundary: to every response
//! before the plugin sees it (`http`), and to what the plugin hands over,
//! its results and refusals, the arguments and schemas it edits, the
//! arguments it projects and its tool definitions (`calls`) and its log
//! lines (`host_api`), so a
//! value the plugin came by some other way (a server that sends it back
//! reversed or split) is caught on the way out. A secret written in the
//! JSON text of a structured result is caught in its escaped form too.
//!
//! An encoding of the value (base64, hex) is not recognised: a plugin that
//! never sees the value cannot encode it, and one that decodes it back is
//! caught on the way out; only a server that sends the secret encoded to
//! a plugin that passes it on encoded gets past, and that server is the
//! one holding the secret anyway.

use std::borrow::Cow;

use aho_corasick::{AhoCorasick, MatchKind};
use serde_json::{Map, Value};

use super::wit::latest::tool::{AfterCallOverride, Content, ResourceBody, ToolResult};

/// The secrets of one plugin, by value, and what replaces each.
#[derive(Clone)]
pub struct Redactor {
    matcher: Option<AhoCorasick>,
    /// By pattern index of `matcher`.
    marks: Vec<String>,
}

impl Redactor {
    /// Nothing to redact.
    pub fn none() -> Self {
        Self {
            matcher: None,
            marks: Vec::new(),
        }
    }

    /// Redact each `(name, value)`; values must not be empty.
    pub fn new<'a>(secrets: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let (mut patterns, mut marks) = (Vec::new(), Vec::new());
        for (name, value) in secrets {
            debug_assert!(!value.is_empty(), "an empty secret would match everywhere");
            let escaped = serde_json::to_string(value).expect("a string serialises");
            let escaped = &escaped[1..escaped.len() - 1];
            for form in [value, escaped] {
                if !patterns.iter().any(|p: &String| p == form) {
                    patterns.push(form.to_owned());
                    marks.push(format!("[redacted:{name}]"));
                }
            }
        }
        if patterns.is_empty() {
            return Self::none();
        }
        let matcher = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&patterns)
            .expect("a few short literal patterns always build");
        Self {
            matcher: Some(matcher),
            marks,
        }
    }

    pub fn text<'t>(&self, text: &'t str) -> Cow<'t, str> {
        match &self.matcher {
            Some(m) if m.is_match(text) => Cow::Owned(m.replace_all(text, self.marks.as_slice())),
            _ => Cow::Borrowed(text),
        }
    }

    pub fn string(&self, text: &mut String) {
        if let Cow::Owned(clean) = self.text(text) {
            *text = clean;
        }
    }

    pub fn bytes(&self, bytes: &mut Vec<u8>) {
        if let Some(m) = &self.matcher
            && m.is_match(bytes.as_slice())
        {
            *bytes = m.replace_all_bytes(bytes, self.marks.as_slice());
        }
    }

    pub fn content(&self, content: &mut [Content]) {
        for block in content {
            match block {
                Content::Text(t) => self.string(t),
                Content::Image(m) | Content::Audio(m) => self.bytes(&mut m.data),
                Content::ResourceLink(l) => {
                    for text in [&mut l.uri, &mut l.name]
                        .into_iter()
                        .chain(l.title.as_mut())
                        .chain(l.description.as_mut())
                    {
                        self.string(text);
                    }
                }
                Content::Resource(e) => {
                    self.string(&mut e.uri);
                    match &mut e.body {
                        ResourceBody::Text(t) => self.string(t),
                        ResourceBody::Blob(b) => self.bytes(b),
                    }
                }
            }
        }
    }

    /// Every string of `value`, object keys included.
    pub fn value(&self, value: &mut Value) {
        match value {
            Value::String(text) => self.string(text),
            Value::Array(items) => items.iter_mut().for_each(|v| self.value(v)),
            Value::Object(map) => self.map(map),
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    /// Every key and string value of `map`, in place (key order kept).
    pub fn map(&self, map: &mut Map<String, Value>) {
        if self.matcher.is_none() {
            return;
        }
        let needs_new_keys = map.keys().any(|k| matches!(self.text(k), Cow::Owned(_)));
        if needs_new_keys {
            *map = std::mem::take(map)
                .into_iter()
                .map(|(k, v)| (self.text(&k).into_owned(), v))
                .collect();
        }
        map.values_mut().for_each(|v| self.value(v));
    }

    /// A tool's answer: its content, structured result and details.
    pub fn result(&self, result: &mut ToolResult) {
        self.content(&mut result.content);
        for text in result.structured.iter_mut().chain(result.details.as_mut()) {
            self.string(text);
        }
    }

    /// What an after-call hook replaces.
    pub fn after_call(&self, o: &mut AfterCallOverride) {
        if let Some(content) = &mut o.content {
            self.content(content);
        }
        for text in o.structured.iter_mut().chain(o.details.as_mut()) {
            self.string(text);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_occurrence_of_every_form_is_replaced() {
        let r = Redactor::new([("gh", "tok-1"), ("odd", "a\"b")]);
        assert_eq!(r.text("x tok-1 y tok-1"), "x [redacted:gh] y [redacted:gh]");
        assert_eq!(r.text(r#"{"v":"a\"b"}"#), r#"{"v":"[redacted:odd]"}"#);
        assert_eq!(r.text("a\"b"), "[redacted:odd]");
        let mut bytes = b"\x00tok-1\xff".to_vec();
        r.bytes(&mut bytes);
        assert_eq!(bytes, b"\x00[redacted:gh]\xff");
        assert!(matches!(r.text("clean"), Cow::Borrowed(_)));
        assert_eq!(Redactor::none().text("tok-1"), "tok-1");
    }

    #[test]
    fn json_values_are_redacted_in_keys_and_strings_at_any_depth() {
        let r = Redactor::new([("gh", "tok-1")]);
        let mut v = serde_json::json!({"a": ["x tok-1", {"tok-1": 2}], "b": 3, "tok-1k": null});
        r.value(&mut v);
        assert_eq!(
            v,
            serde_json::json!({"a": ["x [redacted:gh]", {"[redacted:gh]": 2}], "b": 3, "[redacted:gh]k": null})
        );
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["a", "b", "[redacted:gh]k"], "the order is kept");
    }

    #[test]
    fn the_longest_secret_wins() {
        let r = Redactor::new([("short", "abc"), ("long", "abcdef")]);
        assert_eq!(r.text("abcdef abc"), "[redacted:long] [redacted:short]");
    }
}
