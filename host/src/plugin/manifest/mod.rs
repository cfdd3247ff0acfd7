//! The sidecar manifest `NAME.toml` beside `NAME.wasm`: the plugin's
//! registration order, resource limits, instance policy, failure policy,
//! grants, and its own `config` table.
//!
//! The user may set the same keys for a plugin in `toolhost.toml`
//! (`[plugin.NAME]`), laid over the sidecar (see `layer`): the vendor
//! ships defaults beside the component, the user's file has the last word,
//! and neither has to edit the other's.
//!
//! Every key is optional; unknown keys are errors (a typo such as
//! `memroy_mb` must not silently fall back to a default). The plugin never
//! sees this file: it reads only its `config` table, through the `config()`
//! import. Grants are the user's to give, so they live here and not in the
//! component.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::engine::MAX_MEMORY_BYTES;
use super::origin::Origin;

/// A plugin's settings (a manifest, or the `[plugin.NAME]` table laid
/// over it) that are not a manifest's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ManifestError {
    /// What is wrong, naming the key at fault.
    pub message: String,
}

/// Components larger than this are language runtimes (JavaScript, Python):
/// they get more memory by default.
pub const HEAVY_COMPONENT_BYTES: usize = 4 << 20;

/// Calls an instance serves, by default, before it is replaced.
///
/// A fresh instance per call pays for instantiation, first-touch page
/// faults and teardown on every call: about eight times a call on a reused
/// instance (`cargo bench -p toolhost --bench plugins`, remapping two keys
/// of a 1 KB argument object through a Rust guest:
/// `transform_args/wasm_fresh_instance` 63 µs against
/// `transform_args/wasm_reused_instance` 8 µs at commit 631e817, wasmtime
/// 48), and a tools/list of 60 tools through four plugins makes 240 calls.
/// A fresh instance per call is therefore not the default: instances are
/// reused, one per concurrent call, and replaced after this
/// many calls or at once after any trap or timeout. State a plugin keeps
/// between calls stays within that plugin. `instances = "fresh"` in a
/// manifest buys full isolation between calls at the measured price.
pub const DEFAULT_MAX_USES: u32 = 1000;

/// The most requests a plugin may be allowed in flight (`http.start`), per
/// call or in all: each holds a socket and a task of the host's.
pub const MAX_REQUESTS_IN_FLIGHT: u32 = 1024;

/// A plugin's manifest (`NAME.toml` beside `NAME.wasm`), with the user's `[plugin.NAME]` table laid over it.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Registration order; lower runs first. Plugins without one run after
    /// all that have one, by file name.
    pub order: Option<i64>,
    /// `false` keeps the file in the directory without loading it.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Caps on the plugin's memory, CPU and time.
    #[serde(default)]
    pub limits: LimitsSpec,
    /// What happens when the plugin fails: per-method policies, quarantine.
    #[serde(default)]
    pub failure: FailureSpec,
    /// What the plugin may reach: hosts, secrets.
    #[serde(default)]
    pub grants: Grants,
    /// The plugin's own configuration, handed to it as JSON by `config()`.
    #[serde(default)]
    pub config: toml::Table,
    /// A candidate version run beside this one on real traffic, its
    /// results compared and never served (see `plugin::shadow`). A
    /// relative path is taken from the manifest's directory.
    pub shadow: Option<std::path::PathBuf>,
}

fn yes() -> bool {
    true
}

impl Default for Manifest {
    /// What an absent manifest means: every key at its default.
    fn default() -> Self {
        Self {
            order: None,
            enabled: true,
            limits: LimitsSpec::default(),
            failure: FailureSpec::default(),
            grants: Grants::default(),
            config: toml::Table::new(),
            shadow: None,
        }
    }
}

/// Lay `overlay` over `base`: tables merge key by key (the overlay winning,
/// at every depth); any other value, arrays included, is replaced whole, so
/// `grants.http` in `toolhost.toml` is the complete list, not an addition.
fn layer(base: &mut toml::Table, overlay: &toml::Table) {
    for (key, value) in overlay {
        match (base.get_mut(key), value) {
            (Some(toml::Value::Table(base)), toml::Value::Table(overlay)) => layer(base, overlay),
            _ => {
                base.insert(key.clone(), value.clone());
            }
        }
    }
}

/// Limits as written; [`Limits`] holds them resolved with defaults.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsSpec {
    pub memory_mb: Option<u32>,
    pub cpu_ms: Option<u64>,
    pub wall_ms: Option<u64>,
    pub max_output_kb: Option<u32>,
    pub quarantine_after: Option<u32>,
    pub backoff_ms: Option<u64>,
    pub max_backoff_ms: Option<u64>,
    /// `"fresh"` (a new instance per call) or `"reuse"`.
    pub instances: Option<InstanceMode>,
    /// With `instances = "reuse"`: calls an instance serves before it is
    /// replaced.
    pub max_uses: Option<u32>,
    /// Requests one call may have started and not finished (`http.start`).
    pub max_requests_per_call: Option<u32>,
    /// Requests the plugin may have started and not finished, over all its
    /// instances.
    pub max_requests_in_flight: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InstanceMode {
    Fresh,
    Reuse,
}

/// How calls get component instances.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "mode")]
pub enum InstancePolicy {
    /// A new instance for every call: no state survives between calls.
    Fresh,
    /// Instances are reused for up to `max_uses` calls each, then replaced.
    Reuse { max_uses: u32 },
}

/// Resolved resource limits of one plugin.
#[derive(Debug, Clone, Serialize)]
pub struct Limits {
    pub memory_bytes: usize,
    pub cpu: Duration,
    pub wall: Duration,
    pub max_output_bytes: usize,
    pub quarantine_after: u32,
    pub backoff: Duration,
    pub max_backoff: Duration,
    pub instances: InstancePolicy,
    /// Started requests one call may have in flight.
    pub requests_per_call: usize,
    /// Started requests the plugin may have in flight.
    pub requests_in_flight: usize,
}

impl LimitsSpec {
    /// Resolve against defaults; heavy components get more memory (see
    /// [`HEAVY_COMPONENT_BYTES`]), and every plugin reused instances (see
    /// [`DEFAULT_MAX_USES`]).
    pub(crate) fn resolve(&self, component_bytes: usize) -> Result<Limits, String> {
        let heavy = component_bytes > HEAVY_COMPONENT_BYTES;
        let memory_mb = self.memory_mb.unwrap_or(if heavy { 256 } else { 64 });
        let memory_bytes = memory_mb as usize * (1 << 20);
        if memory_bytes == 0 || memory_bytes > MAX_MEMORY_BYTES {
            return Err(format!(
                "limits.memory_mb must be 1 to {}",
                MAX_MEMORY_BYTES >> 20
            ));
        }
        let mode = self.instances.unwrap_or(InstanceMode::Reuse);
        let instances = match (mode, self.max_uses) {
            (InstanceMode::Fresh, Some(_)) => {
                return Err("limits.max_uses applies only with instances = \"reuse\"".into());
            }
            (InstanceMode::Fresh, None) => InstancePolicy::Fresh,
            (InstanceMode::Reuse, Some(0)) => {
                return Err("limits.max_uses must be at least 1".into());
            }
            (InstanceMode::Reuse, uses) => InstancePolicy::Reuse {
                max_uses: uses.unwrap_or(DEFAULT_MAX_USES),
            },
        };
        // A cap on requests in flight: 1 to MAX_REQUESTS_IN_FLIGHT, so a
        // manifest cannot lift it out of reach.
        let capped = |v: Option<u32>, default: u32, key: &str| match v.unwrap_or(default) {
            n @ 1..=MAX_REQUESTS_IN_FLIGHT => Ok(n as usize),
            _ => Err(format!("limits.{key} must be 1 to {MAX_REQUESTS_IN_FLIGHT}")),
        };
        let positive = |v: u64, key: &str| {
            if v == 0 {
                Err(format!("limits.{key} must be positive"))
            } else {
                Ok(v)
            }
        };
        Ok(Limits {
            memory_bytes,
            cpu: Duration::from_millis(positive(self.cpu_ms.unwrap_or(500), "cpu_ms")?),
            wall: Duration::from_millis(positive(self.wall_ms.unwrap_or(30_000), "wall_ms")?),
            max_output_bytes: positive(self.max_output_kb.unwrap_or(1024).into(), "max_output_kb")? as usize
                * 1024,
            quarantine_after: self.quarantine_after.unwrap_or(3).max(1),
            backoff: Duration::from_millis(self.backoff_ms.unwrap_or(1_000)),
            max_backoff: Duration::from_millis(self.max_backoff_ms.unwrap_or(300_000)),
            instances,
            requests_per_call: capped(self.max_requests_per_call, 16, "max_requests_per_call")?,
            requests_in_flight: capped(self.max_requests_in_flight, 64, "max_requests_in_flight")?,
        })
    }
}

/// What happens to a call when a plugin fails in one method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// The plugin's contribution is skipped (and its changes rolled back).
    Open,
    /// The operation fails with an error naming the plugin.
    Closed,
}

/// Per-method failure policy. By default adapting a listing or planning a
/// prefetch fails open (skipped, rolled back) and changing a call's
/// arguments fails closed (the call errors, naming the plugin).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FailureSpec {
    pub enrich_schema: Option<Policy>,
    pub transform_args: Option<Policy>,
    pub value_model: Option<Policy>,
    pub project_args: Option<Policy>,
    pub rate_limit_host: Option<Policy>,
    pub prepare_arguments: Option<Policy>,
    pub before_call: Option<Policy>,
}

/// The methods whose failures follow a policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    EnrichSchema,
    TransformArgs,
    ValueModel,
    ProjectArgs,
    RateLimitHost,
    PrepareArguments,
    BeforeCall,
}

impl FailureSpec {
    pub fn policy(&self, method: Method) -> Policy {
        use Method::*;
        let (set, default) = match method {
            EnrichSchema => (self.enrich_schema, Policy::Open),
            ValueModel => (self.value_model, Policy::Open),
            ProjectArgs => (self.project_args, Policy::Open),
            RateLimitHost => (self.rate_limit_host, Policy::Open),
            TransformArgs => (self.transform_args, Policy::Closed),
            PrepareArguments => (self.prepare_arguments, Policy::Closed),
            BeforeCall => (self.before_call, Policy::Closed),
        };
        set.unwrap_or(default)
    }
}

/// Authority the user grants a plugin beyond the empty sandbox.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Grants {
    /// Origins the plugin may reach through `toolhost:plugin/http`:
    /// `api.github.com` is https on 443; cleartext only as `http://...`.
    #[serde(default)]
    pub http: Vec<Origin>,
    /// Secrets the host adds to requests, by name.
    #[serde(default)]
    pub secrets: BTreeMap<String, SecretGrant>,
}

/// A secret injected by the host as a request header; the plugin never sees
/// its value.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SecretGrant {
    /// Where its value comes from: the host's environment (one value for
    /// every caller), or each caller's own (`credentials`).
    #[serde(default)]
    pub from: SecretSource,
    /// The environment variable of the host process that holds the value:
    /// with `from = "env"`, the value; with a caller's own, the shared
    /// value used for a caller who has none, and only with `fallback = "env"`.
    pub env: Option<String>,
    /// `"env"`: a caller with no credential of their own for this secret
    /// is sent `env`'s shared value instead of being refused.
    pub fallback: Option<Fallback>,
    /// The header to set, e.g. `Authorization`.
    pub header: String,
    /// Prepended to the value, e.g. `"Bearer "`.
    #[serde(default)]
    pub prefix: String,
    /// Origins it is sent to; each must be among the granted `http` ones.
    pub hosts: Vec<Origin>,
    /// Let `hosts` name `http://` origins on a loopback address (a local
    /// test server or proxy). Without it a secret goes over https only,
    /// and over cleartext to anything else never.
    #[serde(default)]
    pub allow_loopback_http: bool,
    /// With `from = "exchange"`: the `audience` asked of the token
    /// endpoint; by default the first of `hosts`, as a URL.
    pub audience: Option<String>,
}

/// Where a secret's value comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SecretSource {
    /// The environment variable `env`, read at load: the host's own
    /// credential, the same for every caller.
    #[default]
    Env,
    /// The caller's entry in the operator's credential store
    /// (`[credentials] file`).
    Store,
    /// The caller's verified bearer token exchanged at the token endpoint
    /// (`[credentials.exchange]`, RFC 8693) for one meant for `hosts`.
    Exchange,
}

impl SecretSource {
    /// As the grant spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Env => "env",
            Self::Store => "store",
            Self::Exchange => "exchange",
        }
    }
}

/// What a caller's own secret falls back to when they have none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Fallback {
    /// The shared value of `env`.
    Env,
}

impl SecretGrant {
    /// Whether each caller brings their own value.
    pub fn per_caller(&self) -> bool {
        self.from != SecretSource::Env
    }

    /// The environment variable of the shared value, if one is used: the
    /// value itself, or a caller's own secret's explicit fallback.
    pub fn shared_env(&self) -> Option<&str> {
        match (self.from, self.fallback) {
            (SecretSource::Env, _) | (_, Some(Fallback::Env)) => self.env.as_deref(),
            _ => None,
        }
    }

    /// `env` is there when it is used, and used when it is there.
    fn check_source(&self, name: &str) -> Result<(), String> {
        match (self.from, &self.env, self.fallback) {
            (SecretSource::Env, None, _) => Err(format!(
                "secret `{name}`: `env` names the environment variable that holds it"
            )),
            (SecretSource::Env, Some(_), Some(_)) => Err(format!(
                "secret `{name}`: `fallback` is for a secret each caller brings (`from = \"store\"` or \"exchange\")"
            )),
            (_, None, Some(Fallback::Env)) => Err(format!(
                "secret `{name}`: `fallback = \"env\"` needs `env`, the variable of the shared value"
            )),
            (SecretSource::Store | SecretSource::Exchange, Some(env), None) => Err(format!(
                "secret `{name}`: `env = \"{env}\"` is the shared value of a secret each caller \
                 brings: set `fallback = \"env\"` to send it to callers with none of their own, or remove it"
            )),
            _ if self.from != SecretSource::Exchange && self.audience.is_some() => Err(format!(
                "secret `{name}`: `audience` is asked of the token endpoint, with `from = \"exchange\"` only"
            )),
            (SecretSource::Exchange, ..) if self.audience.is_none() && self.hosts.is_empty() => Err(format!(
                "secret `{name}`: an exchanged token needs `audience` or `hosts` to be asked for"
            )),
            _ => Ok(()),
        }
    }
}

impl Grants {
    /// A secret goes only to granted origins, and over cleartext only to a
    /// loopback address whose secret says `allow_loopback_http`.
    fn check(&self) -> Result<(), String> {
        for (name, secret) in &self.secrets {
            if name.is_empty()
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            {
                return Err(format!(
                    "secret `{name}`: a secret's name is letters, digits, `-` and `_`"
                ));
            }
            secret.check_source(name)?;
            // Both are shown to the user who approves the plugin, as the
            // plugin's file wrote them: no control character may hide or
            // disguise what is asked.
            if let Some(env) = &secret.env
                && !is_variable_name(env)
            {
                return Err(format!(
                    "secret `{name}`: env {} is no environment variable's name (letters, digits and `_`, not first a digit)",
                    crate::bounds::shown(env)
                ));
            }
            if http::HeaderName::from_bytes(secret.header.as_bytes()).is_err() {
                return Err(format!(
                    "secret `{name}`: header {} is no HTTP header's name",
                    crate::bounds::shown(&secret.header)
                ));
            }
            for origin in &secret.hosts {
                if !self.http.contains(origin) {
                    return Err(format!(
                        "secret `{name}` is sent to `{origin}`, which is not in grants.http"
                    ));
                }
                if !origin.is_cleartext() {
                    continue;
                }
                if !origin.is_loopback() {
                    return Err(format!(
                        "secret `{name}` would go over cleartext to `{origin}`: a secret is sent \
                         over http only to a loopback address (127.0.0.0/8, [::1])"
                    ));
                }
                if !secret.allow_loopback_http {
                    return Err(format!(
                        "secret `{name}` would go over cleartext to `{origin}`: set \
                         `allow_loopback_http = true` in [grants.secrets.{name}] to allow it"
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Whether `name` is an environment variable's name as shells write them.
fn is_variable_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The user's `[plugin.NAME]` table for one plugin, and the file it is in.
pub(crate) struct Overlay<'a> {
    pub file: &'a Path,
    pub table: &'a toml::Table,
}

impl Manifest {
    /// Read `path`, with the user's settings laid over it; a missing file
    /// is the default manifest.
    pub(crate) fn read(path: &Path, overlay: Option<Overlay<'_>>) -> Result<Self, String> {
        let text = match crate::plugin_file::MANIFEST.read(path) {
            Ok(bytes) => {
                String::from_utf8(bytes).map_err(|_| format!("{}: is not UTF-8 text", path.display()))?
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        // Parsed as a manifest first, so a mistake in the file is reported
        // with its line before any layering.
        let mut manifest: Self = toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut source = path.display().to_string();
        if let Some(overlay) = overlay {
            let mut table: toml::Table = toml::from_str(&text).expect("parsed above");
            layer(&mut table, overlay.table);
            source = format!(
                "{source} with its [plugin] settings in {}",
                overlay.file.display()
            );
            manifest = toml::Value::Table(table)
                .try_into()
                .map_err(|e: toml::de::Error| format!("{source}: {}", e.message()))?;
        }
        manifest.grants.check().map_err(|e| format!("{source}: {e}"))?;
        Ok(manifest)
    }

    /// Check the keys and types of a `[plugin.NAME]` table of
    /// `toolhost.toml` on its own, before any plugin is loaded.
    pub fn check_overlay(overlay: &toml::Table) -> Result<(), ManifestError> {
        toml::Value::Table(overlay.clone())
            .try_into::<Self>()
            .map(drop)
            .map_err(|e| ManifestError {
                message: e.message().to_owned(),
            })
    }

    /// The `config` table as the JSON text the plugin receives.
    pub fn config_json(&self) -> String {
        serde_json::to_string(&self.config).expect("a TOML table is valid JSON")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Manifest, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.toml");
        std::fs::write(&path, text).unwrap();
        Manifest::read(&path, None)
    }

    #[test]
    fn unknown_keys_are_errors_with_a_line() {
        let err = parse("order = 1\n[limits]\nmemroy_mb = 3\n").unwrap_err();
        assert!(err.contains("memroy_mb") && err.contains("line 3"), "{err}");
    }

    #[test]
    fn defaults_follow_component_weight() {
        let light = LimitsSpec::default().resolve(100_000).unwrap();
        let heavy = LimitsSpec::default().resolve(12 << 20).unwrap();
        assert_eq!(
            light.instances,
            InstancePolicy::Reuse {
                max_uses: DEFAULT_MAX_USES
            }
        );
        assert!(heavy.memory_bytes > light.memory_bytes);
        let fresh = LimitsSpec {
            instances: Some(InstanceMode::Fresh),
            ..LimitsSpec::default()
        };
        assert_eq!(fresh.resolve(100_000).unwrap().instances, InstancePolicy::Fresh);
    }

    #[test]
    fn secrets_must_target_granted_hosts() {
        let err = parse(
            "[grants]\nhttp = [\"a.example\"]\n[grants.secrets.t]\nenv = \"T\"\nheader = \"Authorization\"\nhosts = [\"b.example\"]\n",
        )
        .unwrap_err();
        assert!(err.contains("b.example"), "{err}");
        // The same origin, written two ways.
        parse(
            "[grants]\nhttp = [\"https://a.example\"]\n[grants.secrets.t]\nenv = \"T\"\nheader = \"Authorization\"\nhosts = [\"a.example:443\"]\n",
        )
        .unwrap();
    }

    /// What approval shows of a secret, as the plugin's file wrote it,
    /// cannot hide behind a terminal's escape codes or a line of its own.
    #[test]
    fn a_secrets_variable_and_header_are_names_with_no_control_character() {
        let secret = |env: &str, header: &str| {
            parse(&format!(
                "[grants]\nhttp = [\"a.example\"]\n[grants.secrets.t]\nenv = \"{env}\"\n\
                 header = \"{header}\"\nhosts = [\"a.example\"]\n"
            ))
        };
        secret("GITHUB_TOKEN", "Authorization").unwrap();
        secret("_t0", "X-Api-Key").unwrap();
        for (env, header, says) in [
            (
                "AWS\\u001b[8mSECRET",
                "Authorization",
                r#"env "AWS\u{1b}[8mSECRET" is no environment"#,
            ),
            ("1TOKEN", "Authorization", "env \"1TOKEN\" is no"),
            (
                "T",
                "Authorization\\nX-Other",
                r#"header "Authorization\nX-Other" is no HTTP header's name"#,
            ),
            ("T", "", "header \"\" is no"),
        ] {
            let err = secret(env, header).unwrap_err();
            assert!(err.contains(says), "{err}");
        }
    }

    #[test]
    fn secrets_go_over_cleartext_only_to_loopback_with_the_opt_in() {
        let secret = |origin: &str, opt_in: bool| {
            parse(&format!(
                "[grants]\nhttp = [\"{origin}\"]\n[grants.secrets.t]\nenv = \"T\"\nheader = \"Authorization\"\n\
                 hosts = [\"{origin}\"]\nallow_loopback_http = {opt_in}\n"
            ))
        };
        let err = secret("http://127.0.0.1:8080", false).unwrap_err();
        assert!(
            err.contains("allow_loopback_http") && err.contains("http://127.0.0.1:8080"),
            "{err}"
        );
        secret("http://127.0.0.1:8080", true).unwrap();
        secret("http://[::1]:8080", true).unwrap();
        for remote in ["http://example.com", "http://localhost:8080", "http://10.1.2.3"] {
            let err = secret(remote, true).unwrap_err();
            assert!(err.contains("loopback address"), "{err}");
        }
    }

    #[test]
    fn a_secrets_source_is_explicit_and_its_shared_value_a_fallback_only_when_said() {
        let secret = |lines: &str| {
            parse(&format!(
                "[grants]\nhttp = [\"a.example\"]\n[grants.secrets.t]\n{lines}\nheader = \"Authorization\"\n\
                 hosts = [\"a.example\"]\n"
            ))
        };
        let today = secret("env = \"T\"").unwrap();
        assert_eq!(today.grants.secrets["t"].shared_env(), Some("T"));
        assert!(!today.grants.secrets["t"].per_caller());
        let own = secret("from = \"store\"").unwrap();
        assert!(own.grants.secrets["t"].per_caller());
        assert_eq!(own.grants.secrets["t"].shared_env(), None);
        let fallback = secret("from = \"exchange\"\nenv = \"T\"\nfallback = \"env\"").unwrap();
        assert_eq!(fallback.grants.secrets["t"].shared_env(), Some("T"));
        for (lines, says) in [
            ("", "`env` names"),
            ("from = \"store\"\nenv = \"T\"", "set `fallback = \"env\"`"),
            ("from = \"store\"\nfallback = \"env\"", "needs `env`"),
            ("env = \"T\"\nfallback = \"env\"", "`fallback` is for"),
            ("from = \"store\"\naudience = \"x\"", "`audience`"),
            ("from = \"vault\"", "unknown variant"),
        ] {
            let err = secret(lines).unwrap_err();
            assert!(err.contains(says), "{lines}: {err}");
        }
    }

    #[test]
    fn grants_are_origins() {
        let err = parse("[grants]\nhttp = [\"*.github.com\"]\n").unwrap_err();
        assert!(err.contains("wildcards") && err.contains("line 2"), "{err}");
        let m = parse("[grants]\nhttp = [\"api.github.com\", \"http://127.0.0.1:9\"]\n").unwrap();
        let origins: Vec<String> = m.grants.http.iter().map(ToString::to_string).collect();
        assert_eq!(origins, ["https://api.github.com:443", "http://127.0.0.1:9"]);
    }

    #[test]
    fn failure_policy_defaults_follow_the_design() {
        let f = FailureSpec {
            enrich_schema: Some(Policy::Closed),
            ..FailureSpec::default()
        };
        assert_eq!(f.policy(Method::EnrichSchema), Policy::Closed);
        assert_eq!(f.policy(Method::TransformArgs), Policy::Closed);
        assert_eq!(f.policy(Method::ProjectArgs), Policy::Open);
    }
}

#[cfg(test)]
mod fuzz;
