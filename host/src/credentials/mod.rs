//! Per-caller credentials: the values of a plugin's secrets that each caller
//! brings (`from = "store"` or `"exchange"` in its grant), resolved for one
//! call from the operator's credential store (`store`) or by exchanging the
//! caller's verified bearer token at the token endpoint (`exchange`, RFC
//! 8693), and the partition of the speculation cache those values put the
//! call's answers in ([`Resolved::partition`]); likewise the exchanged
//! token of an upstream server that acts as each caller
//! ([`Credentials::upstream_token`]).
//!
//! Owns the resolution and the partition's keyed hash. Not here: how the
//! values reach a request (`plugin::http`, which injects and redacts them
//! host-side, out of the plugin's view; `upstream`, which opens the
//! caller's session with the token), who the caller is (`pipeline`'s
//! `Caller`, which hands over only its subject and its token), nor the
//! cache that is partitioned (`speculation`).
//!
//! A partition is an HMAC-SHA-256, under a key of this process (or, in a
//! cluster, one derived from the replicas' shared key, so replicas agree),
//! of the plugin's (or server's) name and the values resolved, cut to 128 bits: the same
//! values always give the same partition, and the partition gives nothing
//! of the values back. A call that resolves no value of its own (every
//! secret shared, or a caller's own falling back to the shared value)
//! stays in the shared partition, with everyone holding the same.

mod exchange;
mod store;

use std::path::PathBuf;
use std::sync::Arc;

use hmac::{Hmac, Mac};
use sha2::Sha256;

pub use exchange::ExchangeSettings;
pub(crate) use exchange::SubjectToken;

use crate::plugin::manifest::SecretSource;
use crate::plugin::{CallSecrets, HttpGrant};

/// The bytes of a partition id (as `speculation::cache::PARTITION_BYTES`).
const PARTITION_BYTES: usize = 16;

/// Where callers' own credentials come from (`[credentials]`).
#[derive(Debug, Clone, Default)]
pub struct CredentialSettings {
    /// The operator's credential store: a TOML file, mode 0600, of
    /// caller subject → plugin → secret name → value.
    pub file: Option<PathBuf>,
    /// The operator's credential store as a directory, mode 0700, of one
    /// file per caller (their subject percent-encoded, then `.toml`), each
    /// of plugin → secret name → value. Not with `file`.
    pub dir: Option<PathBuf>,
    /// The token endpoint callers' bearer tokens are exchanged at.
    pub exchange: Option<ExchangeSettings>,
}

/// A credential that could not be resolved for a call: the text names the
/// plugin, the secret and what to set up, never a value or a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CredentialError(pub(crate) String);

/// Who asks, as far as credentials go: the caller's subject, and the
/// verified bearer token they came with, if any.
#[derive(Clone, Copy)]
pub(crate) struct Asker<'a> {
    pub(crate) subject: &'a str,
    pub(crate) token: Option<&'a SubjectToken>,
    /// How the caller was established, for the error of one who has no
    /// token to exchange ("came over stdio", "came without a JWT").
    pub(crate) came: &'a str,
}

/// One call's credentials for its backend.
pub(crate) struct Resolved {
    /// The partition its answers belong to; `None`, the shared one.
    pub(crate) partition: Option<[u8; PARTITION_BYTES]>,
    /// What the call's backend is lent of its caller's.
    pub(crate) lent: Option<Lent>,
}

/// A caller's own credential, lent to one call's backend.
#[derive(Clone)]
pub(crate) enum Lent {
    /// A plugin's per-caller secrets, for its store during `execute`.
    Plugin(Arc<CallSecrets>),
    /// An upstream server's exchanged token, for the caller's session.
    Upstream(Arc<str>),
}

impl Lent {
    /// Each value by name, for the gate.
    pub(crate) fn values(&self) -> Vec<(&str, &str)> {
        match self {
            Self::Plugin(secrets) => secrets.values().collect(),
            Self::Upstream(token) => vec![("authorization", token)],
        }
    }

    /// A plugin's secrets, if that is what is lent.
    pub(crate) fn plugin(&self) -> Option<Arc<CallSecrets>> {
        match self {
            Self::Plugin(secrets) => Some(secrets.clone()),
            Self::Upstream(_) => None,
        }
    }

    /// An upstream's token, if that is what is lent.
    pub(crate) fn upstream(&self) -> Option<&str> {
        match self {
            Self::Upstream(token) => Some(token),
            Self::Plugin(_) => None,
        }
    }
}

impl Resolved {
    /// A call with nothing of its own: the shared partition.
    pub(crate) fn shared() -> Self {
        Self {
            partition: None,
            lent: None,
        }
    }

    /// An upstream call with the caller's exchanged `token`.
    pub(crate) fn upstream(token: String, partition: [u8; PARTITION_BYTES]) -> Self {
        Self {
            partition: Some(partition),
            lent: Some(Lent::Upstream(token.into())),
        }
    }
}

/// The resolver of callers' own credentials.
pub struct Credentials {
    store: Option<store::Store>,
    exchange: Option<exchange::Exchange>,
    key: Hmac<Sha256>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("store", &self.store)
            .field("exchange", &self.exchange.is_some())
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// Open the store (checked and read now: an unsafe or broken file or
    /// directory stops the start, naming it) and set up the exchange, with
    /// partitions keyed by a fresh random key of this process.
    pub fn open(settings: &CredentialSettings) -> Result<Self, CredentialError> {
        let mut key = [0u8; 32];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut key)
            .map_err(|_| CredentialError("no random key for the credential partitions".into()))?;
        let store = match (&settings.file, &settings.dir) {
            (Some(_), Some(_)) => {
                return Err(CredentialError(
                    "[credentials] sets both `file` and `dir`: the store is one or the other".into(),
                ));
            }
            (Some(file), None) => Some(store::Store::file(file)?),
            (None, Some(dir)) => Some(store::Store::dir(dir)?),
            (None, None) => None,
        };
        Ok(Self {
            store,
            exchange: settings
                .exchange
                .as_ref()
                .map(exchange::Exchange::new)
                .transpose()?,
            key: Hmac::new_from_slice(&key).expect("HMAC takes any key"),
        })
    }

    /// The same, with partitions keyed by `key` (replicas sharing a Redis
    /// derive it from their shared key, so they agree on partitions).
    pub(crate) fn keyed(mut self, key: [u8; 32]) -> Self {
        self.key = Hmac::new_from_slice(&key).expect("HMAC takes any key");
        self
    }

    /// Whether the plugin's per-caller secrets can be resolved by what is
    /// configured: a secret from the store needs `[credentials] file`, an
    /// exchanged one `[credentials.exchange]`.
    pub(crate) fn check(
        settings: Option<&Self>,
        plugin: &str,
        grant: &HttpGrant,
    ) -> Result<(), CredentialError> {
        for secret in grant.per_caller() {
            let (configured, table) = match secret.from {
                SecretSource::Store => (
                    settings.is_some_and(|s| s.store.is_some()),
                    "[credentials] file or dir",
                ),
                SecretSource::Exchange => (
                    settings.is_some_and(|s| s.exchange.is_some()),
                    "[credentials.exchange]",
                ),
                SecretSource::Env => continue,
            };
            if !configured {
                return Err(CredentialError(format!(
                    "plugin `{plugin}`: secret `{}` is each caller's own (from = \"{}\"), and no {table} \
                     is configured",
                    secret.name,
                    secret.from.as_str()
                )));
            }
        }
        Ok(())
    }

    /// Whether an upstream server acting as each caller can: it needs
    /// `[credentials.exchange]`.
    pub(crate) fn check_upstream(settings: Option<&Self>, name: &str) -> Result<(), CredentialError> {
        if settings.is_some_and(|s| s.exchange.is_some()) {
            return Ok(());
        }
        Err(CredentialError(format!(
            "upstream `{name}` acts as each caller (credential = \"exchange\"), and no \
             [credentials.exchange] is configured"
        )))
    }

    /// The values of `plugin`'s per-caller secrets for a call by `who`, and
    /// the partition they put its answers in. A caller with none for a
    /// secret that has no shared fallback is refused, naming the plugin,
    /// the secret and what to set up.
    pub(crate) async fn resolve(
        &self,
        plugin: &str,
        grant: &HttpGrant,
        who: Asker<'_>,
    ) -> Result<Resolved, CredentialError> {
        let mut values = Vec::new();
        for secret in grant.per_caller() {
            let value = match secret.from {
                SecretSource::Store => {
                    let store = self
                        .store
                        .as_ref()
                        .ok_or_else(|| unconfigured(plugin, &secret.name))?;
                    store.lookup(who.subject, plugin, &secret.name)?
                }
                SecretSource::Exchange => {
                    let exchange = self
                        .exchange
                        .as_ref()
                        .ok_or_else(|| unconfigured(plugin, &secret.name))?;
                    match who.token {
                        Some(token) => Some(exchange.token(token, &secret.audience).await.map_err(|e| {
                            CredentialError(format!("plugin `{plugin}`, secret `{}`: {e}", secret.name))
                        })?),
                        None if secret.fallback => None,
                        None => {
                            return Err(CredentialError(format!(
                                "plugin `{plugin}`: secret `{}` is the caller's bearer token exchanged at {}, \
                                 and caller `{}` {} so has no token to exchange: serve them over HTTP \
                                 with [auth.oauth], or give the secret `fallback = \"env\"`",
                                secret.name,
                                exchange.endpoint(),
                                crate::bounds::shown(who.subject),
                                who.came
                            )));
                        }
                    }
                }
                SecretSource::Env => continue,
            };
            match value {
                Some(value) => values.push((secret.name.clone(), value)),
                None if secret.fallback => {}
                None => {
                    let to_add = self.store.as_ref().map_or_else(
                        || "the operator adds it to the store".to_owned(),
                        |store| store.to_add(who.subject, plugin, &secret.name),
                    );
                    return Err(CredentialError(format!(
                        "plugin `{plugin}` needs caller `{subject}`'s own `{name}`, and the credential store \
                         has none: {to_add} (the caller's other tools keep working)",
                        subject = crate::bounds::shown(who.subject),
                        name = secret.name,
                    )));
                }
            }
        }
        if values.is_empty() {
            return Ok(Resolved::shared());
        }
        let partition = self.partition(plugin, &values);
        let secrets = grant.call_secrets(values).map_err(CredentialError)?;
        Ok(Resolved {
            partition: Some(partition),
            lent: Some(Lent::Plugin(Arc::new(secrets))),
        })
    }

    /// A token for upstream server `name` (for `audience`) in exchange for
    /// `who`'s, and the partition it puts the call's answers in. A caller
    /// with no token to exchange is refused, saying why.
    pub(crate) async fn upstream_token(
        &self,
        name: &str,
        audience: &str,
        who: Asker<'_>,
    ) -> Result<(String, [u8; PARTITION_BYTES]), CredentialError> {
        let refused = |why: String| CredentialError(format!("upstream `{name}`: {why}"));
        let exchange = self.exchange.as_ref().ok_or_else(|| {
            refused("it acts as each caller, and no [credentials.exchange] is configured".into())
        })?;
        let Some(token) = who.token else {
            return Err(refused(format!(
                "it acts as each caller with their bearer token exchanged at {}, and caller `{}` {} so has \
                 no token to exchange: serve them over HTTP with [auth.oauth]",
                exchange.endpoint(),
                crate::bounds::shown(who.subject),
                who.came
            )));
        };
        let issued = exchange.token(token, audience).await.map_err(refused)?;
        let partition = self.partition(
            &format!("upstream {name}"),
            &[("token".to_owned(), issued.clone())],
        );
        Ok((issued, partition))
    }

    /// The keyed hash of `values` for `plugin`: each part length-prefixed,
    /// so no two lists read as one.
    fn partition(&self, plugin: &str, values: &[(String, String)]) -> [u8; PARTITION_BYTES] {
        let mut mac = self.key.clone();
        let mut part = |bytes: &[u8]| {
            mac.update(&(bytes.len() as u64).to_be_bytes());
            mac.update(bytes);
        };
        part(plugin.as_bytes());
        for (name, value) in values {
            part(name.as_bytes());
            part(value.as_bytes());
        }
        let tag = mac.finalize().into_bytes();
        let mut id = [0u8; PARTITION_BYTES];
        id.copy_from_slice(&tag[..PARTITION_BYTES]);
        id
    }
}

fn unconfigured(plugin: &str, secret: &str) -> CredentialError {
    CredentialError(format!(
        "plugin `{plugin}`: secret `{secret}` is each caller's own, and no [credentials] resolve it"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credentials() -> Credentials {
        Credentials::open(&CredentialSettings::default()).unwrap()
    }

    /// The grant of plugin `p` with the secret `t` sent to a loopback
    /// origin, its source `lines`.
    fn grant(lines: &str) -> HttpGrant {
        let text = format!(
            "[grants]\nhttp = [\"http://127.0.0.1:9\"]\n[grants.secrets.t]\n{lines}\nheader = \"Authorization\"\n\
             hosts = [\"http://127.0.0.1:9\"]\nallow_loopback_http = true\n"
        );
        let manifest: crate::plugin::Manifest = toml::from_str(&text).unwrap();
        HttpGrant::new("p".into(), &manifest.grants).unwrap()
    }

    #[tokio::test]
    async fn a_caller_without_a_token_is_told_why_nothing_can_be_exchanged() {
        let settings = CredentialSettings {
            file: None,
            dir: None,
            exchange: Some(ExchangeSettings {
                token_endpoint: "http://127.0.0.1:9/token".into(),
                client_id: None,
                client_secret_env: None,
            }),
        };
        let c = Credentials::open(&settings).unwrap();
        let local = Asker {
            subject: "ada",
            token: None,
            came: "came over stdio as the local user,",
        };
        let err = c
            .resolve("p", &grant("from = \"exchange\""), local)
            .await
            .err()
            .unwrap()
            .to_string();
        for needed in [
            "plugin `p`",
            "`t`",
            "http://127.0.0.1:9/token",
            "stdio",
            "no token to exchange",
        ] {
            assert!(err.contains(needed), "{needed}: {err}");
        }
        // Unless the grant lets the shared value stand in.
        // SAFETY: no other test of this binary reads this variable.
        unsafe { std::env::set_var("TOOLHOST_TEST_CREDENTIALS_SHARED", "shared-value") };
        let shared =
            grant("from = \"exchange\"\nenv = \"TOOLHOST_TEST_CREDENTIALS_SHARED\"\nfallback = \"env\"");
        let resolved = c.resolve("p", &shared, local).await.unwrap();
        assert!(resolved.partition.is_none() && resolved.lent.is_none());
    }

    #[test]
    fn an_exchange_endpoint_in_clear_to_a_remote_host_is_refused() {
        for (endpoint, ok) in [
            ("https://login.example/token", true),
            ("http://127.0.0.1:8080/token", true),
            ("http://[::1]:8080/token", true),
            ("http://login.example/token", false),
            ("https://u:p@login.example/token", false),
            ("not a url", false),
        ] {
            let settings = ExchangeSettings {
                token_endpoint: endpoint.into(),
                client_id: None,
                client_secret_env: None,
            };
            assert_eq!(exchange::Exchange::new(&settings).is_ok(), ok, "{endpoint}");
        }
    }

    fn values(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn a_partition_is_the_same_for_the_same_values_and_differs_otherwise() {
        let c = credentials();
        let alice = c.partition("tracker", &values(&[("token", "tok-alice")]));
        assert_eq!(alice, c.partition("tracker", &values(&[("token", "tok-alice")])));
        assert_ne!(alice, c.partition("tracker", &values(&[("token", "tok-bob")])));
        assert_ne!(alice, c.partition("other", &values(&[("token", "tok-alice")])));
        // Length-prefixed: `ab`+`c` is not `a`+`bc`.
        assert_ne!(
            c.partition("p", &values(&[("ab", "c")])),
            c.partition("p", &values(&[("a", "bc")]))
        );
        // Another process (another key) makes other partitions.
        assert_ne!(
            alice,
            credentials().partition("tracker", &values(&[("token", "tok-alice")]))
        );
        // The same shared key makes the same ones.
        let (a, b) = (credentials().keyed([7; 32]), credentials().keyed([7; 32]));
        assert_eq!(
            a.partition("tracker", &values(&[("token", "tok-alice")])),
            b.partition("tracker", &values(&[("token", "tok-alice")]))
        );
    }
}
