//! Every secret the host holds, in every form a source could write it, and
//! the redaction of one whole answer (a result, a tool definition, a text).
//!
//! A secret is matched as written, reversed, and each of those in hex and
//! in base64 (standard and URL-safe alphabets, at each of the three
//! alignments a value can take inside a longer base64 text), all ASCII
//! case-insensitively: so `TOK`, `kot`, `746f6b`, `746F6B` and the base64
//! of a text holding the secret anywhere are all caught. Escapes are
//! handled by decoding, not by patterns: each string is read with its JSON
//! `\uXXXX` (and `\n`, `\"`...) escapes and URL percent-escapes decoded,
//! whichever characters were escaped.
//!
//! An answer is matched whole: its strings are joined in order, so a
//! secret split across two blocks (or two strings of one structured
//! result) is found, and each string it touches has its part replaced.
//! A string in which a secret was found only once decoded is replaced by
//! its decoded form, redacted. Binary data (base64 in MCP) is decoded and
//! matched as bytes, then encoded again.
//!
//! Hex and base64 are matched only for secrets of [`MIN_ENCODED_SECRET`]
//! bytes or more: shorter ones would match ordinary text. Not here: which
//! strings an answer holds (`gate`).
//!
//! [`held`] is the set of every secret this process holds, which its own
//! log is redacted with.

use std::borrow::Cow;
use std::ops::Range;

use aho_corasick::{AhoCorasick, MatchKind};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE_NO_PAD};

pub mod held;

/// Shortest secret whose hex and base64 forms are matched.
pub(crate) const MIN_ENCODED_SECRET: usize = 8;

/// The secrets' forms, and the mark that replaces each.
pub(crate) struct Secrets {
    matcher: Option<AhoCorasick>,
    /// By pattern index of `matcher`.
    marks: Vec<String>,
}

/// One string of an answer, as the gate hands it over.
pub(crate) enum Piece {
    /// Text the client or the model reads.
    Text(String),
    /// Base64 of binary data (an image, audio, a blob).
    Binary(String),
}

impl Secrets {
    /// The secrets `(name, value)`, in every form; empty values are
    /// skipped.
    pub(crate) fn new<'a>(secrets: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        Self::matching(secrets, forms)
    }

    /// The secrets `(name, value)` as written (and JSON-escaped) only: for
    /// a thousand callers' tokens, which the libraries below would log as
    /// they sent them, at a fifteenth of the patterns.
    pub(crate) fn as_written<'a>(secrets: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        Self::matching(secrets, |value| {
            let escaped = serde_json::to_string(value).expect("a string serialises");
            vec![value.to_owned(), escaped[1..escaped.len() - 1].to_owned()]
        })
    }

    fn matching<'a>(
        secrets: impl IntoIterator<Item = (&'a str, &'a str)>,
        forms: impl Fn(&str) -> Vec<String>,
    ) -> Self {
        let (mut patterns, mut marks): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
        // Duplicates are found by hash, not by comparing each pair: the
        // process may hold a thousand values.
        let mut seen = std::collections::HashSet::new();
        for (name, value) in secrets {
            if value.is_empty() {
                continue;
            }
            for form in forms(value) {
                if seen.insert(form.to_ascii_lowercase()) {
                    patterns.push(form);
                    marks.push(format!("[redacted:{name}]"));
                }
            }
        }
        let matcher = (!patterns.is_empty()).then(|| {
            AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .ascii_case_insensitive(true)
                .build(&patterns)
                .expect("literal patterns of bounded length always build")
        });
        Self { matcher, marks }
    }

    /// Whether there is anything to redact.
    pub(crate) fn is_empty(&self) -> bool {
        self.matcher.is_none()
    }

    /// Whether `text`, as written or decoded, holds a secret.
    pub(crate) fn found_in(&self, text: &str) -> bool {
        self.matcher
            .as_ref()
            .is_some_and(|m| m.is_match(text) || m.is_match(&*decoded(text)))
    }

    /// `text` with every secret redacted.
    pub(crate) fn text(&self, text: &str) -> String {
        let mut fixed = self.redact(&[Piece::Text(text.to_owned())]);
        fixed.pop().flatten().unwrap_or_else(|| text.to_owned())
    }

    /// The pieces of one answer, in order: for each, its replacement if it
    /// held (part of) a secret.
    pub(crate) fn redact(&self, pieces: &[Piece]) -> Vec<Option<String>> {
        let mut fixed: Vec<Option<String>> = vec![None; pieces.len()];
        let Some(matcher) = &self.matcher else {
            return fixed;
        };
        // Each piece alone, as written; binary data as its bytes.
        for (piece, fix) in pieces.iter().zip(&mut fixed) {
            *fix = match piece {
                Piece::Text(t) if matcher.is_match(t) => Some(matcher.replace_all(t, &self.marks)),
                Piece::Text(_) => None,
                Piece::Binary(b64) => self.binary(matcher, b64),
            };
        }
        // The decoded texts joined, so a secret split across pieces or
        // hidden by escapes is found.
        let decoded: Vec<Cow<str>> = pieces
            .iter()
            .zip(&fixed)
            .map(|(piece, fix)| match (piece, fix) {
                (Piece::Text(_), Some(f)) => decoded(f),
                (Piece::Text(t), None) => decoded(t),
                (Piece::Binary(_), _) => Cow::Borrowed(""),
            })
            .collect();
        let mut joined = String::new();
        let mut starts = Vec::with_capacity(decoded.len());
        for d in &decoded {
            starts.push(joined.len());
            joined.push_str(d);
        }
        let mut hits: Vec<Vec<(Range<usize>, usize)>> = vec![Vec::new(); pieces.len()];
        for m in matcher.find_iter(&joined) {
            let first = starts.partition_point(|s| *s <= m.start()) - 1;
            for (i, start) in starts.iter().enumerate().skip(first) {
                let end = start + decoded[i].len();
                if *start >= m.end() {
                    break;
                }
                if end > m.start() && end > *start {
                    let local = m.start().max(*start) - start..m.end().min(end) - start;
                    hits[i].push((local, m.pattern().as_usize()));
                }
            }
        }
        let spliced: Vec<Option<String>> = hits
            .iter()
            .zip(&decoded)
            .map(|(hits, text)| (!hits.is_empty()).then(|| self.splice(text, hits)))
            .collect();
        for (fix, new) in fixed.iter_mut().zip(spliced) {
            if new.is_some() {
                *fix = new;
            }
        }
        fixed
    }

    /// Base64 data with every secret in its bytes redacted, encoded again;
    /// data that is not base64 is matched as text.
    fn binary(&self, matcher: &AhoCorasick, b64: &str) -> Option<String> {
        let Ok(bytes) = STANDARD.decode(b64) else {
            return matcher
                .is_match(b64)
                .then(|| matcher.replace_all(b64, &self.marks));
        };
        let marks: Vec<&[u8]> = self.marks.iter().map(String::as_bytes).collect();
        matcher
            .is_match(&bytes)
            .then(|| STANDARD.encode(matcher.replace_all_bytes(&bytes, &marks)))
    }

    fn splice(&self, text: &str, hits: &[(Range<usize>, usize)]) -> String {
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (range, pattern) in hits {
            out.push_str(&text[at..range.start]);
            out.push_str(&self.marks[*pattern]);
            at = range.end;
        }
        out.push_str(&text[at..]);
        out
    }
}

/// The patterns of one secret: as written, reversed and JSON-escaped, and
/// (if long enough) the hex and base64 of the first two.
fn forms(value: &str) -> Vec<String> {
    if value.is_empty() {
        return Vec::new();
    }
    let reversed: String = value.chars().rev().collect();
    let escaped = serde_json::to_string(value).expect("a string serialises");
    let mut forms = vec![
        value.to_owned(),
        reversed.clone(),
        escaped[1..escaped.len() - 1].to_owned(),
    ];
    if value.len() >= MIN_ENCODED_SECRET {
        for v in [value, reversed.as_str()] {
            forms.push(hex::encode(v));
            forms.extend(base64_forms(v.as_bytes()));
        }
    }
    forms
}

/// What every base64 text holding `value` holds, whatever comes before
/// it: for each offset of `value` modulo 3, the characters that encode its
/// bytes alone, in both alphabets.
fn base64_forms(value: &[u8]) -> Vec<String> {
    let mut forms = Vec::new();
    for align in 0..3 {
        let mut bytes = vec![0; align];
        bytes.extend_from_slice(value);
        // Character i encodes bits 6i..6i+6; the value's are 8·align..8·len.
        let (first, last) = ((8 * align).div_ceil(6), 8 * bytes.len() / 6);
        for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
            let encoded = engine.encode(&bytes);
            forms.push(encoded[first..last].to_owned());
        }
    }
    forms
}

/// `text` with its JSON escapes and then its percent-escapes decoded.
fn decoded(text: &str) -> Cow<'_, str> {
    let unescaped = unescape_json(text);
    if !unescaped.contains('%') {
        return unescaped;
    }
    let decoded = match percent_encoding::percent_decode_str(&unescaped).decode_utf8_lossy() {
        Cow::Borrowed(_) => None,
        Cow::Owned(decoded) => Some(decoded),
    };
    decoded.map_or(unescaped, Cow::Owned)
}

/// `text` with JSON string escapes decoded wherever they stand: `\uXXXX`
/// (surrogate pairs joined, a lone surrogate as U+FFFD) and the one-letter
/// escapes; a backslash starting none of them is kept.
fn unescape_json(text: &str) -> Cow<'_, str> {
    if !text.contains('\\') {
        return Cow::Borrowed(text);
    }
    let hex4 = |s: &str| {
        s.get(..4)
            .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|h| u16::from_str_radix(h, 16).ok())
    };
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let tail = &rest[at + 1..];
        let (ch, used) = match tail.as_bytes().first() {
            Some(b'u') => match hex4(&tail[1..]) {
                Some(hi @ 0xD800..=0xDBFF) => match tail[5..].strip_prefix("\\u").and_then(hex4) {
                    Some(lo @ 0xDC00..=0xDFFF) => {
                        let c = 0x10000 + ((u32::from(hi) - 0xD800) << 10) + (u32::from(lo) - 0xDC00);
                        (char::from_u32(c), 11)
                    }
                    _ => (Some('\u{FFFD}'), 5),
                },
                Some(unit) => (Some(char::from_u32(unit.into()).unwrap_or('\u{FFFD}')), 5),
                None => (None, 0),
            },
            Some(b'n') => (Some('\n'), 1),
            Some(b't') => (Some('\t'), 1),
            Some(b'r') => (Some('\r'), 1),
            Some(b'b') => (Some('\u{8}'), 1),
            Some(b'f') => (Some('\u{c}'), 1),
            Some(b'"') => (Some('"'), 1),
            Some(b'\\') => (Some('\\'), 1),
            Some(b'/') => (Some('/'), 1),
            _ => (None, 0),
        };
        match ch {
            Some(c) => out.push(c),
            None => out.push('\\'),
        }
        rest = &tail[used..];
    }
    out.push_str(rest);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "s3cr3t-Token-42";

    fn secrets() -> Secrets {
        Secrets::new([("TOKEN", SECRET)])
    }

    fn texts(pieces: &[&str]) -> Vec<Option<String>> {
        let pieces: Vec<Piece> = pieces.iter().map(|p| Piece::Text((*p).to_owned())).collect();
        secrets().redact(&pieces)
    }

    /// Base64 of `text` after `pad` bytes of something else, in `engine`'s
    /// alphabet: the secret at every alignment a longer text gives it.
    fn base64_after(pad: usize, text: &str, engine: &impl base64::Engine) -> String {
        let mut bytes = vec![b'x'; pad];
        bytes.extend_from_slice(text.as_bytes());
        bytes.extend_from_slice(b" and more");
        engine.encode(bytes)
    }

    #[test]
    fn every_form_a_source_could_write_is_caught() {
        let reversed: String = SECRET.chars().rev().collect();
        let mut written = vec![
            format!("as is {SECRET}."),
            format!("upper {}", SECRET.to_uppercase()),
            format!("reversed {reversed}"),
            format!("hex {}", hex::encode(SECRET)),
            format!("HEX {}", hex::encode_upper(SECRET)),
            format!("reversed hex {}", hex::encode(&reversed)),
            format!(
                "escaped {}",
                SECRET
                    .chars()
                    .map(|c| format!("\\u{:04x}", c as u32))
                    .collect::<String>()
            ),
            format!(
                "percent {}",
                SECRET.bytes().map(|b| format!("%{b:02X}")).collect::<String>()
            ),
        ];
        for pad in 0..3 {
            written.push(base64_after(pad, SECRET, &STANDARD));
            written.push(base64_after(pad, SECRET, &URL_SAFE_NO_PAD));
            written.push(base64_after(pad, &reversed, &STANDARD));
        }
        for text in &written {
            let clean = secrets().text(text);
            assert!(
                clean.contains("[redacted:TOKEN]"),
                "not caught in {text:?}: {clean:?}"
            );
            assert!(!clean.contains(SECRET), "{clean}");
        }
    }

    #[test]
    fn a_secret_split_across_pieces_is_redacted_in_each() {
        let (head, tail) = SECRET.split_at(6);
        let fixed = texts(&["one", &format!("ends {head}"), &format!("{tail} starts"), "four"]);
        assert_eq!(fixed[0], None);
        assert_eq!(fixed[3], None);
        for part in [&fixed[1], &fixed[2]] {
            let part = part.as_deref().expect("each piece it touches is replaced");
            assert!(part.contains("[redacted:TOKEN]"), "{part}");
            assert!(!part.contains(head) && !part.contains(tail), "{part}");
        }
    }

    #[test]
    fn binary_data_holding_a_secret_is_redacted_in_its_bytes() {
        let data = STANDARD.encode(format!("\x00\x01{SECRET}\x02"));
        let fixed = secrets().redact(&[Piece::Binary(data)]);
        let bytes = STANDARD.decode(fixed[0].as_deref().unwrap()).unwrap();
        let bytes = String::from_utf8_lossy(&bytes);
        assert!(
            bytes.contains("[redacted:TOKEN]") && !bytes.contains(SECRET),
            "{bytes}"
        );
    }

    #[test]
    fn text_without_a_secret_is_left_alone_and_short_secrets_are_not_encoded() {
        assert_eq!(texts(&["nothing here", "746f6b"]), vec![None, None]);
        let short = Secrets::new([("PIN", "tok")]);
        assert_eq!(short.text("a tok here"), "a [redacted:PIN] here");
        // `tok` in hex would match ordinary hex text: not matched.
        assert_eq!(short.text("746f6b"), "746f6b");
        assert!(Secrets::new([("EMPTY", "")]).is_empty());
    }

    #[test]
    fn json_escapes_are_decoded_whichever_characters_are_escaped() {
        assert_eq!(unescape_json(r#"a\"b\\c\n\u0041\ud83d\ude00"#), "a\"b\\c\nA😀");
        assert_eq!(unescape_json(r"lone \ud800 and \q"), "lone \u{FFFD} and \\q");
        assert!(matches!(unescape_json("plain"), Cow::Borrowed("plain")));
    }
}
