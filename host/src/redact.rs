//! Secret redaction: every occurrence of a known secret value in a text is
//! replaced by [`REDACTED`] before the text leaves the host.
//!
//! Owns the matching only; who knows which values are secret (a plugin's
//! granted secrets, an upstream server's configured headers) builds the
//! [`Redactor`] and applies it where text leaves.

use std::borrow::Cow;

use aho_corasick::{AhoCorasick, MatchKind};

/// What a secret is replaced by.
pub const REDACTED: &str = "[redacted]";

/// Replaces a fixed set of secret values.
#[derive(Clone, Default)]
pub struct Redactor {
    /// `None` when there is nothing to redact.
    matcher: Option<AhoCorasick>,
}

impl Redactor {
    /// A redactor of `secrets`; empty values are ignored (they would match
    /// everywhere and hide nothing).
    pub fn new<S: AsRef<str>>(secrets: impl IntoIterator<Item = S>) -> Self {
        let secrets: Vec<String> = secrets
            .into_iter()
            .map(|s| s.as_ref().to_owned())
            .filter(|s| !s.is_empty())
            .collect();
        if secrets.is_empty() {
            return Self::default();
        }
        // Leftmost-longest, so a secret that contains another is replaced
        // whole, not cut in two around the shorter one.
        let matcher = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&secrets)
            .ok();
        Self { matcher }
    }

    /// `text` with every secret replaced; borrowed when none occurs.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match &self.matcher {
            Some(m) if m.is_match(text) => Cow::Owned(m.replace_all(text, &vec![REDACTED; m.patterns_len()])),
            _ => Cow::Borrowed(text),
        }
    }
}

impl std::fmt::Debug for Redactor {
    /// Never the values.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.matcher.as_ref().map_or(0, AhoCorasick::patterns_len);
        write!(f, "Redactor({n} secrets)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_occurrence_of_every_secret_is_replaced() {
        let r = Redactor::new(["s3cret", "s3cret-long", ""]);
        assert_eq!(
            r.redact("a s3cret, then s3cret-long and s3cret"),
            "a [redacted], then [redacted] and [redacted]"
        );
        assert!(matches!(r.redact("nothing here"), Cow::Borrowed(_)));
        assert!(!format!("{r:?}").contains("s3cret"));
    }

    #[test]
    fn no_secrets_redacts_nothing() {
        assert_eq!(Redactor::new(Vec::<String>::new()).redact("text"), "text");
    }
}
