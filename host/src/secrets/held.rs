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
//! the variables of the environment whose values hold a secret
//! ([`found_in`]; both in `upstream`).
//!
//! What the configuration and the grants name is held for as long as the
//! process runs ([`hold`]): a secret taken out of the configuration stays
//! redacted. A value of one caller's (the token their bearer token was
//! exchanged for, their values in the operator's credential store) is
//! leased ([`lease`]): held while something keeps it (the exchange's cache,
//! the caller's session to an upstream, the store as last read) and let go
//! with the last [`Lease`], so the set stays bounded by those holders' own
//! bounds. Not here: how a secret is found in a text
//! (`Secrets`), the log writer.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError, RwLock};

use super::Secrets;

struct Held {
    /// Value to how it is held.
    values: BTreeMap<String, Holding>,
    /// Matches every value of `values`: those held for good in every form
    /// the gate finds, the leased ones as written (`Secrets::as_written`,
    /// so that a thousand callers' tokens build in milliseconds).
    secrets: Option<Arc<Matcher>>,
    /// `values` changed since `secrets` was built: it is built again by
    /// the next redaction, once for however many changes (a cache letting
    /// go of a hundred tokens at once).
    stale: bool,
}

/// How one value is held.
struct Holding {
    /// The name its mark says: the first holder's.
    name: String,
    /// Held until the process ends ([`hold`]).
    for_good: bool,
    /// The [`Lease`]s alive.
    leases: usize,
}

static HELD: RwLock<Held> = RwLock::new(Held {
    values: BTreeMap::new(),
    secrets: None,
    stale: false,
});

impl Held {
    /// The value's holding, added if new.
    fn entry(&mut self, name: &str, value: &str) -> &mut Holding {
        self.stale |= !self.values.contains_key(value);
        self.values.entry(value.to_owned()).or_insert_with(|| Holding {
            name: name.to_owned(),
            for_good: false,
            leases: 0,
        })
    }
}

/// The two matchers of [`Held::secrets`].
struct Matcher {
    for_good: Secrets,
    leased: Secrets,
}

fn held() -> std::sync::RwLockWriteGuard<'static, Held> {
    HELD.write().unwrap_or_else(PoisonError::into_inner)
}

/// Hold `secrets` (`(name, value)`; empty values are skipped) from now on.
pub(crate) fn hold<'a>(secrets: impl IntoIterator<Item = (&'a str, &'a str)>) {
    let new: Vec<(&str, &str)> = {
        let held = HELD.read().unwrap_or_else(PoisonError::into_inner);
        secrets
            .into_iter()
            .filter(|(_, value)| !value.is_empty() && held.values.get(*value).is_none_or(|h| !h.for_good))
            .collect()
    };
    if new.is_empty() {
        return;
    }
    let mut held = held();
    for (name, value) in new {
        held.entry(name, value).for_good = true;
    }
    // A value leased before is now matched in every form.
    held.stale = true;
}

/// A value held for as long as this lives (and any other lease of it, or
/// a [`hold`]).
#[must_use = "the value is let go when its lease drops"]
pub(crate) struct Lease(String);

/// Hold `value`, marked `name`, until the lease returned drops; `None` for
/// an empty value.
pub(crate) fn lease(name: &str, value: &str) -> Option<Lease> {
    if value.is_empty() {
        return None;
    }
    held().entry(name, value).leases += 1;
    Some(Lease(value.to_owned()))
}

impl Drop for Lease {
    fn drop(&mut self) {
        let mut held = held();
        let Some(holding) = held.values.get_mut(&self.0) else {
            return;
        };
        holding.leases -= 1;
        if holding.leases == 0 && !holding.for_good {
            held.values.remove(&self.0);
            held.stale = true;
        }
    }
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Lease(..)")
    }
}

/// Whether `text` holds a secret this process holds, anywhere in it and
/// in any form [`redact`] finds: a variable's value such as
/// `postgres://app:SECRET@db` holds one as surely as `SECRET` alone.
pub(crate) fn found_in(text: &str) -> bool {
    matcher().is_some_and(|m| m.for_good.found_in(text) || m.leased.found_in(text))
}

/// `text` with every secret this process holds replaced by
/// `[redacted:NAME]`, in each form the gate finds (as written, reversed,
/// hex, base64, escaped).
///
/// For what leaves the process by a way the gate does not see: a log line
/// written by any library. `toolhost serve` writes its log through it;
/// an embedder's log writer can too.
pub fn redact(text: &str) -> String {
    match matcher() {
        Some(matcher) => matcher.leased.text(&matcher.for_good.text(text)),
        None => text.to_owned(),
    }
}

/// What matches every value held now, built again if they changed.
fn matcher() -> Option<Arc<Matcher>> {
    {
        let held = HELD.read().unwrap_or_else(PoisonError::into_inner);
        if !held.stale {
            return held.secrets.clone();
        }
    }
    let mut held = held();
    if held.stale {
        let named = |for_good: bool| {
            held.values
                .iter()
                .filter(move |(_, holding)| holding.for_good == for_good)
                .map(|(value, holding)| (holding.name.as_str(), value.as_str()))
        };
        let matcher = Matcher {
            for_good: Secrets::new(named(true)),
            leased: Secrets::as_written(named(false)),
        };
        held.secrets =
            (!matcher.for_good.is_empty() || !matcher.leased.is_empty()).then(|| Arc::new(matcher));
        held.stale = false;
    }
    held.secrets.clone()
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
        assert_eq!(redact("nothing here"), "nothing here");
    }

    /// A leased value is redacted while any lease of it lives and let go
    /// with the last, unless it is also held for good.
    #[test]
    fn a_leased_value_is_redacted_while_a_lease_of_it_lives() {
        const CALLERS: &str = "leased-token-c41e9b07";
        const BOTH: &str = "leased-and-held-8d2f6a13";
        let cached = lease("exchanged-token", CALLERS).unwrap();
        let session = lease("authorization", CALLERS).unwrap();
        assert_eq!(redact(CALLERS), "[redacted:exchanged-token]");
        drop(cached);
        assert_eq!(redact(CALLERS), "[redacted:exchanged-token]");
        assert!(found_in(&format!("postgres://app:{CALLERS}@db")));
        drop(session);
        assert_eq!(redact(CALLERS), CALLERS);
        assert!(!found_in(CALLERS));

        let leased = lease("leased", BOTH).unwrap();
        hold([("configured", BOTH)]);
        drop(leased);
        assert_eq!(redact(BOTH), "[redacted:leased]");
        assert!(lease("empty", "").is_none());
    }
}
