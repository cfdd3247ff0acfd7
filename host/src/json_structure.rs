//! The structure of JSON text, read before or instead of parsing it: which
//! bytes are brackets and commas (outside strings, escapes understood) and
//! how deep each one sits ([`scan`]), and whether it may name one of a few
//! keys ([`Names`]). Owns only those looks; what is done with them (a cap
//! checked before parsing, a document cut short mended, the host's own keys
//! taken out of what a peer sends) is their callers'.

use aho_corasick::AhoCorasick;

/// Calls `each` with every byte of `text` outside its strings, its index
/// and the nesting depth after it.
pub fn scan(text: &str, mut each: impl FnMut(usize, u8, usize)) {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, b) in text.bytes().enumerate() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        each(i, b, depth);
    }
}

/// A few names (a key with its quotes, or a name no other key holds),
/// looked for in JSON text in one pass, so that only text that may hold
/// one is parsed. A key may be written with escapes, which JSON reads as
/// the characters they stand for: `"t\u0061sk"` is `"task"`, and
/// `toolhost.internal\/task` is `toolhost.internal/task`. Text holding a
/// `\u` or `\/` escape anywhere may therefore hold any name, and is taken
/// for one that does: a peer cannot pass one of the host's own keys
/// unseen by spelling it otherwise.
pub(crate) struct Names(AhoCorasick);

impl Names {
    /// Looks for `names`.
    pub(crate) fn new(names: &[&str]) -> Self {
        let patterns = names.iter().copied().chain(["\\u", "\\/"]);
        Self(AhoCorasick::new(patterns).expect("a few short names build an automaton"))
    }

    /// Whether `text` may name one of them.
    pub(crate) fn may_be_in(&self, text: &[u8]) -> bool {
        self.0.is_match(text)
    }
}
