//! Every secret this process holds, kept out of its own log.
//!
//! The gate redacts what reaches a client or the model. The process's log
//! is written by other libraries too, which log what they were handed:
//! rmcp logs an upstream server's refusal whole, its `WWW-Authenticate`
//! header included, and a server may quote there the token it was sent.
//! So each secret is held here as it is resolved: an upstream server's
//! header values as each session to it opens, a plugin's granted secrets as
//! its grant is made, the bearer token guarding the HTTP endpoint, the
//! token endpoint's client secret, the OTLP exporter's headers, the
//! cluster's shared key and its Redis password. A log writer passes each
//! line through [`redact`] (the `toolhost` command's does), and so does
//! the stderr of a stdio upstream server, which is also started without
//! the variables of the environment whose values are held (`holds`;
//! both in `upstream`).
//!
//! Values are only added: a secret taken out of the configuration stays
//! redacted for as long as the process runs. What is held is what the
//! configuration and the grants name, never a value a call brings (a
//! caller's token), so the set is as large as the configuration. Not here:
//! how a secret is found in a text (`Secrets`), the log writer.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError, RwLock};

use super::Secrets;

struct Held {
    /// Value to the name its mark says.
    values: BTreeMap<String, String>,
    /// Matches every value of `values`; `None` while there is none.
    secrets: Option<Arc<Secrets>>,
}

static HELD: RwLock<Held> = RwLock::new(Held {
    values: BTreeMap::new(),
    secrets: None,
});

/// Hold `secrets` (`(name, value)`; empty values are skipped) from now on.
pub(crate) fn hold<'a>(secrets: impl IntoIterator<Item = (&'a str, &'a str)>) {
    let new: Vec<(&str, &str)> = {
        let held = HELD.read().unwrap_or_else(PoisonError::into_inner);
        secrets
            .into_iter()
            .filter(|(_, value)| !value.is_empty() && !held.values.contains_key(*value))
            .collect()
    };
    if new.is_empty() {
        return;
    }
    let mut held = HELD.write().unwrap_or_else(PoisonError::into_inner);
    for (name, value) in new {
        held.values
            .entry(value.to_owned())
            .or_insert_with(|| name.to_owned());
    }
    let secrets = Secrets::new(
        held.values
            .iter()
            .map(|(value, name)| (name.as_str(), value.as_str())),
    );
    held.secrets = Some(Arc::new(secrets));
}

/// Whether `value`, as a whole (its surrounding whitespace aside), is a
/// secret this process holds.
pub(crate) fn holds(value: &str) -> bool {
    let value = value.trim();
    !value.is_empty()
        && HELD
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .values
            .contains_key(value)
}

/// `text` with every secret this process holds replaced by
/// `[redacted:NAME]`, in each form the gate finds (as written, reversed,
/// hex, base64, escaped).
///
/// For what leaves the process by a way the gate does not see: a log line
/// written by any library. `toolhost serve` writes its log through it;
/// an embedder's log writer can too.
pub fn redact(text: &str) -> String {
    let secrets = HELD
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .secrets
        .clone();
    match secrets {
        Some(secrets) => secrets.text(text),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value held once is redacted in every later text, whichever
    /// source held it, in the gate's forms; holding it again adds nothing.
    #[test]
    fn a_value_held_is_redacted_from_then_on() {
        const SECRET: &str = "held-secret-7f3a91c2";
        assert_eq!(redact(&format!("sent {SECRET}")), format!("sent {SECRET}"));
        hold([("X-Api-Key", SECRET), ("empty", "")]);
        assert_eq!(redact(&format!("sent {SECRET}")), "sent [redacted:X-Api-Key]");
        let reversed: String = SECRET.chars().rev().collect();
        assert_eq!(redact(&reversed), "[redacted:X-Api-Key]");
        hold([("other-name", SECRET)]);
        assert_eq!(redact(SECRET), "[redacted:X-Api-Key]");
        let count = HELD.read().unwrap().values.len();
        hold([("X-Api-Key", SECRET)]);
        assert_eq!(HELD.read().unwrap().values.len(), count);
        assert_eq!(redact("nothing here"), "nothing here");
    }
}
