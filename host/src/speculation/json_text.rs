//! The JSON a text result holds, whole or cut short.
//!
//! Many servers answer JSON as text, and some cap it: a server's output
//! limit, or a log that kept only the head. A cut document is not thrown
//! away: what is complete before the cut (the first commits of a listing,
//! the first results of a search) is what an agent reads its next call
//! from, and what the host learns and plans from. Every container still
//! open at the cut is closed after its last complete member; the member
//! the cut went through is dropped, never guessed.
//!
//! Owns: reading JSON out of text. Not: how large a text is worth reading
//! (the caller's bound).

use serde_json::Value;

use crate::json_structure::scan as structure;

/// The object or array `text` holds, or what of it is complete when it was
/// cut short; `None` for text that is not JSON.
pub fn parse(text: &str) -> Option<Value> {
    let trimmed = text.trim();
    if !(trimmed.starts_with('{') || trimmed.starts_with('[')) {
        return None;
    }
    match serde_json::from_str::<Value>(trimmed) {
        Ok(value) => Some(value),
        Err(e) if e.is_eof() => salvage(trimmed),
        Err(_) => None,
    }
}

/// `text` up to its last complete member, with the containers open there
/// closed.
fn salvage(text: &str) -> Option<Value> {
    // The end of the last complete member of a container: just before a
    // comma that follows one, or just after a closing bracket.
    let mut cut = None;
    structure(text, |i, b, depth| match b {
        b'}' | b']' => cut = Some(i + 1),
        b',' if depth > 0 => cut = Some(i),
        _ => {}
    });
    let cut = cut?;
    let mut open = Vec::new();
    structure(&text[..cut], |_, b, _| match b {
        b'{' | b'[' => open.push(b),
        b'}' | b']' => {
            open.pop();
        }
        _ => {}
    });
    let mut closed = text[..cut].trim_end().to_owned();
    closed.extend(open.iter().rev().map(|b| if *b == b'{' { '}' } else { ']' }));
    serde_json::from_str(&closed).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn whole_json_is_read_as_it_is_and_other_text_is_not_json() {
        assert_eq!(parse(r#" {"a": [1, 2]} "#), Some(json!({"a": [1, 2]})));
        assert_eq!(parse("[]"), Some(json!([])));
        assert_eq!(parse("Created issue #4"), None);
        assert_eq!(parse("42"), None);
        // Broken, not cut: nothing is guessed.
        assert_eq!(parse(r#"{"a": 1,, "b": 2}"#), None);
    }

    #[test]
    fn a_cut_listing_keeps_its_complete_items_and_drops_the_one_cut_through() {
        let text = r#"[{"sha": "a1", "author": {"login": "x"}}, {"sha": "b2", "author": {"lo"#;
        assert_eq!(
            parse(text),
            Some(json!([{"sha": "a1", "author": {"login": "x"}}, {"sha": "b2"}]))
        );
        let text = r#"{"results": [{"id": "p1"}, {"id": "p2", "title": "a, b and [c"#;
        assert_eq!(
            parse(text),
            Some(json!({"results": [{"id": "p1"}, {"id": "p2"}]}))
        );
    }

    #[test]
    fn a_cut_inside_an_escape_or_a_key_loses_only_that_member() {
        let text = r#"{"a": "x\"y", "b": "tab\"#;
        assert_eq!(parse(text), Some(json!({"a": "x\"y"})));
        let text = r#"{"items": [1, 2], "na"#;
        assert_eq!(parse(text), Some(json!({"items": [1, 2]})));
        assert_eq!(parse(r#"{"a": 1"#), None);
        assert_eq!(parse("[[[["), None);
    }
}
