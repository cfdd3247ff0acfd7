//! Who makes a call ([`Caller`]), as the host established it: over HTTP,
//! the subject and the configured claims of a bearer token the front
//! verified; on stdio, the local user who started the host; in an
//! embedding, whoever the embedder names. Owns the type and its bounds;
//! not the verification (`mcp::auth`), nor what is done with it (the
//! audit, `audit`).
//!
//! A caller cannot be built from what a request says about itself: the
//! constructor for a verified identity is the crate's own, used by the
//! HTTP front after a token's signature, issuer, audience and expiry are
//! checked, and the record says how each identity was established
//! ([`Via`]), so an embedder's naming of a user is never mistaken for a
//! verified token. Plugins never see it: the call context they are lent
//! is built from a call's id, cancellation and progress only.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::bounds::{cut, encoded_len};
use crate::credentials::{Asker, SubjectToken};

/// The longest subject kept, in bytes: OpenID Connect's cap on `sub`
/// (255 ASCII characters). A token whose `sub` is longer is refused.
pub(crate) const MAX_SUBJECT: usize = 255;
/// The most claims the configuration may name besides `sub`.
pub(crate) const MAX_IDENTITY_CLAIMS: usize = 8;
/// The longest claim name the configuration may give, in bytes.
pub(crate) const MAX_CLAIM_NAME: usize = 128;
/// The most bytes of JSON one claim's value may hold to be kept; a longer
/// one is left out of the caller (and logged).
pub(crate) const MAX_CLAIM_BYTES: usize = 1 << 10;

/// The subject of a call an embedder makes without naming a caller.
pub(crate) const EMBEDDER_SUBJECT: &str = "embedder";

/// Who makes a call, and how the host knows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Caller {
    subject: String,
    via: Via,
    /// The claims the configuration names that the token carries, by name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    claims: BTreeMap<String, Value>,
    /// The verified bearer JWT itself, kept host-side to be exchanged for
    /// the caller's own credentials (`credentials`); never serialised
    /// (the audit, the policy) nor shown.
    #[serde(skip)]
    token: Option<SubjectToken>,
}

/// How a caller's identity was established.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Via {
    /// A bearer token the HTTP front verified: a JWT's `sub`, or the
    /// shared token of `[auth]` (which names nobody in particular).
    Token,
    /// HTTP with no `[auth]` (a loopback address, or `--insecure`): nobody
    /// was asked who they are.
    Unauthenticated,
    /// The user who started the host, its client on stdio.
    LocalUser,
    /// Named by the program embedding the library, which vouches for it.
    Embedder,
}

impl Caller {
    /// The program embedding the library, calling on its own account: the
    /// caller of a [`CallControl`](super::CallControl) that names none.
    pub fn embedder() -> Self {
        Self::new(EMBEDDER_SUBJECT.to_owned(), Via::Embedder)
    }

    /// A user the embedding program has identified and vouches for
    /// (`subject`, cut to 255 bytes).
    pub fn named_by_embedder(subject: impl Into<String>) -> Self {
        Self::new(cut(subject.into(), MAX_SUBJECT), Via::Embedder)
    }

    /// The user this process runs as, by the name the system gives their
    /// user id (`uid:N` if it has none): over stdio, the client that
    /// started the host is theirs.
    pub fn local_user() -> Self {
        let uid = rustix::process::getuid().as_raw();
        let name = std::fs::read_to_string("/etc/passwd")
            .ok()
            .and_then(|passwd| user_name(&passwd, uid))
            .unwrap_or_else(|| format!("uid:{uid}"));
        Self::new(cut(name, MAX_SUBJECT), Via::LocalUser)
    }

    /// A caller over HTTP with no `[auth]`.
    pub(crate) fn unauthenticated() -> Self {
        Self::new("anonymous".to_owned(), Via::Unauthenticated)
    }

    /// The holder of the shared bearer token of `[auth]`, once it matched.
    pub(crate) fn shared_token() -> Self {
        Self::new("bearer-token".to_owned(), Via::Token)
    }

    /// The caller a verified JWT names: its `sub`, and each of `wanted`
    /// among its `claims` within [`MAX_CLAIM_BYTES`]. `Err` if `sub` is
    /// missing, not a string, or longer than [`MAX_SUBJECT`].
    pub(crate) fn verified(
        mut claims: serde_json::Map<String, Value>,
        wanted: &[String],
    ) -> Result<Self, String> {
        let subject = match claims.remove("sub") {
            Some(Value::String(sub)) if sub.len() <= MAX_SUBJECT => sub,
            Some(Value::String(sub)) => {
                return Err(format!(
                    "its `sub` holds {} bytes, more than {MAX_SUBJECT}",
                    sub.len()
                ));
            }
            _ => return Err("it has no `sub` string".into()),
        };
        let mut caller = Self::new(subject, Via::Token);
        for name in wanted {
            let Some(value) = claims.remove(name) else {
                continue;
            };
            let size = encoded_len(&value);
            if size > MAX_CLAIM_BYTES {
                tracing::warn!(
                    claim = %name,
                    "a token's claim holds {size} bytes of JSON, more than the {MAX_CLAIM_BYTES} kept: left out of its caller"
                );
                continue;
            }
            caller.claims.insert(name.clone(), value);
        }
        Ok(caller)
    }

    fn new(subject: String, via: Via) -> Self {
        Self {
            subject,
            via,
            claims: BTreeMap::new(),
            token: None,
        }
    }

    /// The same caller, holding the verified JWT it came with.
    pub(crate) fn with_token(mut self, token: &str) -> Self {
        self.token = Some(SubjectToken::new(token));
        self
    }

    /// Who asks for credentials: the subject, the token, and how the
    /// caller came (for the error of one who has no token to exchange).
    pub(crate) fn asker(&self) -> Asker<'_> {
        Asker {
            subject: &self.subject,
            token: self.token.as_ref(),
            came: match self.via {
                Via::Token => "came with the shared [auth] token, not a JWT,",
                Via::Unauthenticated => "came over HTTP without [auth],",
                Via::LocalUser => "came over stdio as the local user,",
                Via::Embedder => "was named by the embedding program,",
            },
        }
    }

    /// Who the caller is: a token's `sub`, a user name, an embedder's name.
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// How the host knows it.
    pub fn via(&self) -> Via {
        self.via
    }

    /// The claims the configuration names that the caller's token carries.
    pub(crate) fn claims(&self) -> &BTreeMap<String, Value> {
        &self.claims
    }
}

/// Check the claim names of `[auth] identity_claims`: at most
/// [`MAX_IDENTITY_CLAIMS`], each a short name of printable ASCII, `sub`
/// not among them (it is always the subject).
pub(crate) fn check_claim_names(names: &[String]) -> Result<(), String> {
    if names.len() > MAX_IDENTITY_CLAIMS {
        return Err(format!(
            "`identity_claims` names {} claims, more than {MAX_IDENTITY_CLAIMS}",
            names.len()
        ));
    }
    for name in names {
        let printable = name
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\');
        if name.is_empty() || name.len() > MAX_CLAIM_NAME || !printable {
            return Err(format!(
                "`identity_claims`: {} is not a claim name (1 to {MAX_CLAIM_NAME} printable ASCII characters, no quote or backslash)",
                crate::bounds::shown(name)
            ));
        }
        if name == "sub" {
            return Err(
                "`identity_claims`: `sub` is always the caller's subject; name only other claims".into(),
            );
        }
    }
    Ok(())
}

/// The name `/etc/passwd` (its text, `passwd`) gives `uid`.
fn user_name(passwd: &str, uid: u32) -> Option<String> {
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let id = fields.nth(1)?;
        (id.parse() == Ok(uid) && !name.is_empty()).then(|| name.to_owned())
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn claims(value: Value) -> serde_json::Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn a_callers_token_is_never_serialised_nor_shown() {
        let caller = Caller::verified(claims(json!({"sub": "alice"})), &[])
            .unwrap()
            .with_token("eyJ.secret-jwt.sig");
        let shown = format!("{caller:?} {}", serde_json::to_string(&caller).unwrap());
        assert!(!shown.contains("secret-jwt"), "{shown}");
        assert!(caller.asker().token.is_some());
        assert!(Caller::local_user().asker().token.is_none());
    }

    #[test]
    fn a_verified_caller_keeps_its_sub_and_the_named_claims_within_their_bounds() {
        let wanted = ["email".to_owned(), "groups".to_owned(), "big".to_owned()];
        let token = claims(json!({
            "sub": "alice", "email": "alice@example.test", "groups": ["dev", "ops"],
            "role": "admin", "big": "x".repeat(MAX_CLAIM_BYTES),
        }));
        let alice = Caller::verified(token, &wanted).unwrap();
        assert_eq!((alice.subject(), alice.via()), ("alice", Via::Token));
        // Only the named claims, and only those within the cap.
        assert_eq!(
            serde_json::to_value(&alice).unwrap(),
            json!({"subject": "alice", "via": "token",
                   "claims": {"email": "alice@example.test", "groups": ["dev", "ops"]}})
        );
        let long = "s".repeat(MAX_SUBJECT + 1);
        for bad in [json!({}), json!({"sub": 7}), json!({"sub": long})] {
            assert!(Caller::verified(claims(bad.clone()), &wanted).is_err(), "{bad}");
        }
        let longest = "s".repeat(MAX_SUBJECT);
        assert!(Caller::verified(claims(json!({"sub": longest})), &[]).is_ok());
    }

    #[test]
    fn claim_names_are_bounded_in_count_and_form() {
        let names = |n: usize| (0..n).map(|i| format!("c{i}")).collect::<Vec<_>>();
        check_claim_names(&names(MAX_IDENTITY_CLAIMS)).unwrap();
        let err = check_claim_names(&names(MAX_IDENTITY_CLAIMS + 1)).unwrap_err();
        assert!(err.contains("more than 8"), "{err}");
        for bad in [
            "",
            "with space",
            "quo\"te",
            "sub",
            &"n".repeat(MAX_CLAIM_NAME + 1),
        ] {
            assert!(check_claim_names(&[bad.to_owned()]).is_err(), "{bad:?}");
        }
        check_claim_names(&["https://example.test/groups".to_owned()]).unwrap();
    }

    #[test]
    fn the_local_user_is_named_by_their_user_id() {
        let passwd = "root:x:0:0:root:/root:/bin/sh\nalice:x:1000:1000::/home/alice:/bin/sh\n";
        assert_eq!(user_name(passwd, 1000).as_deref(), Some("alice"));
        assert_eq!(user_name(passwd, 0).as_deref(), Some("root"));
        assert_eq!(user_name(passwd, 7), None);
        assert_eq!(Caller::local_user().via(), Via::LocalUser);
        let named = Caller::named_by_embedder("x".repeat(1000));
        assert!(named.subject().len() <= MAX_SUBJECT && named.via() == Via::Embedder);
    }
}
