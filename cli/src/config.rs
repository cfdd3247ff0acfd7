//! `toolhost.toml`: the user's configuration. Every key is optional and
//! unknown keys are errors, reported with the file, line and column.
//!
//! Owns parsing and the checks that need only the file (and, for value-model
//! overrides, the layered models); not where each setting takes effect.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use sha2::{Digest, Sha256};

use toolhost::ClusterConfig;
use toolhost::UpstreamConfig;
use toolhost::WebSettings;
use toolhost::mcp::AuthConfig;
use toolhost::pin::OnChange;
use toolhost::plugin::{Manifest, PluginSettings};
use toolhost::speculation::Settings as SpeculationSettings;
use toolhost::supply::TrustSettings;
use toolhost::{UnsafeSpeculation, ValueModel, ValueModels};

/// The file looked for in the working directory when none is given.
pub const DEFAULT_FILE: &str = "toolhost.toml";
/// The pin file's name, beside the configuration file by default.
pub const PIN_FILE: &str = "toolhost.pin.json";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error(transparent)]
    UnsafeSpeculation(#[from] UnsafeSpeculation),
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The file this was read from, made absolute: it names the default
    /// statistics file, so that two configurations keep their records apart.
    #[serde(skip)]
    source: Option<PathBuf>,
    /// The plugin directory (relative to the file's directory).
    pub plugins: Option<PathBuf>,
    /// Where compiled plugin code is cached; `false` turns the cache off.
    pub cache: Option<CacheSetting>,
    /// Value-model overrides, by tool name; layered last.
    #[serde(default)]
    pub tools: BTreeMap<String, ValueModel>,
    /// The directory the native file tools are confined to (default: the
    /// working directory).
    pub root: Option<PathBuf>,
    /// Serve the native `write` and `edit` tools too (confined to `root`).
    #[serde(default)]
    pub writable: bool,
    /// What `web_fetch` may reach.
    #[serde(default)]
    pub web: WebSettings,
    /// Calling likely next tools ahead of time.
    #[serde(default)]
    pub speculation: SpeculationSettings,
    /// Upstream MCP servers whose tools are served too.
    #[serde(default)]
    pub upstream: Vec<UpstreamConfig>,
    /// Seconds `serve` waits for the upstream servers before it answers
    /// its client ([`Config::upstream_wait`]).
    upstream_wait_s: Option<u64>,
    /// Base-catalog tools served, each bound to a backend: the name of a tool
    /// plugin or of an upstream server (`create_issue = "jira"`).
    #[serde(default)]
    pub bind: BTreeMap<String, String>,
    /// Per-plugin settings by plugin name, with the keys of a sidecar
    /// manifest, laid over it (see `plugin::manifest`).
    #[serde(default)]
    plugin: BTreeMap<String, toml::Spanned<toml::Table>>,
    /// Who may call the MCP endpoint over HTTP.
    #[serde(default)]
    pub auth: AuthConfig,
    /// What plugins may load: the lock file, approvals, vendors' keys.
    #[serde(default)]
    pub trust: TrustSettings,
    /// The Redis replicas share prefetches on; absent, one machine alone.
    pub cluster: Option<ClusterConfig>,
    /// Where each call is recorded; absent, nowhere.
    pub audit: Option<AuditConfig>,
    /// The pinned tool list (`toolhost pin`).
    #[serde(default)]
    pub pin: PinConfig,
    /// Who may call which tool; absent, every caller may call every tool.
    pub policy: Option<PolicyConfig>,
    /// Where callers' own credentials come from (a plugin secret's
    /// `from = "store"` or `"exchange"`); absent, nowhere.
    pub credentials: Option<CredentialsConfig>,
    /// Where `serve` exports its spans over OTLP/HTTP; absent, they are
    /// only logged.
    pub telemetry: Option<TelemetryConfig>,
}

/// The `[telemetry]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetryConfig {
    /// The collector's OTLP/HTTP base URL; spans go to its `/v1/traces`.
    pub endpoint: String,
    /// Headers sent with each export (a collector's API key), each read
    /// from the environment variable named: header → variable.
    #[serde(default)]
    pub headers_env: BTreeMap<String, String>,
    /// The spans' `service.name`.
    #[serde(default = "TelemetryConfig::default_service_name")]
    pub service_name: String,
}

impl TelemetryConfig {
    fn default_service_name() -> String {
        "toolhost".into()
    }

    /// As the library takes them.
    pub fn settings(&self) -> toolhost::mcp::OtlpSettings {
        toolhost::mcp::OtlpSettings {
            endpoint: self.endpoint.clone(),
            headers_env: self
                .headers_env
                .iter()
                .map(|(header, var)| (header.clone(), var.clone()))
                .collect(),
            service_name: self.service_name.clone(),
        }
    }
}

/// The `[credentials]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CredentialsConfig {
    /// The operator's credential store (relative to the configuration
    /// file's directory): caller subject → plugin → secret → value, mode
    /// 0600, read again when it changes.
    pub file: Option<PathBuf>,
    /// The store as a directory (relative as `file`), mode 0700, of one
    /// file per caller: `SUBJECT.toml` (percent-encoded), of plugin →
    /// secret → value, mode 0600. Not with `file`.
    pub dir: Option<PathBuf>,
    /// The token endpoint callers' bearer tokens are exchanged at.
    pub exchange: Option<ExchangeConfig>,
}

/// The `[credentials.exchange]` table (RFC 8693).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExchangeConfig {
    /// The identity provider's token endpoint: https, or http to loopback.
    pub token_endpoint: String,
    /// The host's client id there.
    pub client_id: Option<String>,
    /// The environment variable holding the client's secret.
    pub client_secret_env: Option<String>,
}

impl CredentialsConfig {
    /// As the library takes them.
    pub fn settings(&self) -> toolhost::CredentialSettings {
        toolhost::CredentialSettings {
            file: self.file.clone(),
            dir: self.dir.clone(),
            exchange: self.exchange.as_ref().map(|e| toolhost::ExchangeSettings {
                token_endpoint: e.token_endpoint.clone(),
                client_id: e.client_id.clone(),
                client_secret_env: e.client_secret_env.clone(),
            }),
        }
    }
}

/// The `[policy]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyConfig {
    /// The Cedar policy file (relative to the configuration file's
    /// directory), reloaded by `serve --watch`.
    pub file: PathBuf,
}

/// The `[audit]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditConfig {
    /// The JSON-lines file each call is appended to (relative to the
    /// configuration file's directory), created 0600.
    pub file: PathBuf,
}

/// `[pin]`: where the pinned tool list is kept, and what a held change is
/// served as.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinConfig {
    /// The pin file (default: `toolhost.pin.json` beside this file).
    pub file: Option<PathBuf>,
    /// `pinned` (the default): a changed tool is served as pinned;
    /// `hide`: not at all.
    #[serde(default)]
    pub on_change: OnChange,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum CacheSetting {
    Enabled(bool),
    Dir(PathBuf),
}

impl Config {
    /// Read `path`. Relative paths in it are resolved against its directory.
    pub fn read(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.into(),
            source,
        })?;
        let mut config: Self = toml::from_str(&text).map_err(|e| ConfigError::Parse {
            path: path.into(),
            message: e.to_string(),
        })?;
        for (name, settings) in &config.plugin {
            Manifest::check_overlay(settings.get_ref()).map_err(|message| ConfigError::Parse {
                path: path.into(),
                message: format!(
                    "[plugin.{name}] (line {}): {message}",
                    line_of(&text, settings.span().start)
                ),
            })?;
        }
        let base = path.parent().unwrap_or(Path::new("."));
        // A shadow candidate is named from this file's directory (a
        // sidecar's, from the sidecar's): made absolute here.
        for settings in config.plugin.values_mut() {
            if let Some(toml::Value::String(shadow)) = settings.get_mut().get_mut("shadow") {
                let at = base.join(&*shadow);
                *shadow = std::path::absolute(&at)
                    .unwrap_or(at)
                    .to_string_lossy()
                    .into_owned();
            }
        }
        config.plugins = config.plugins.map(|p| base.join(p));
        config.root = config.root.map(|p| base.join(p));
        config.auth.resolve_paths(base);
        if let Some(audit) = &mut config.audit {
            audit.file = base.join(&audit.file);
        }
        if let Some(policy) = &mut config.policy {
            policy.file = base.join(&policy.file);
        }
        if let Some(credentials) = &mut config.credentials {
            credentials.file = credentials.file.as_ref().map(|f| base.join(f));
            credentials.dir = credentials.dir.as_ref().map(|d| base.join(d));
        }
        config.trust.resolve_paths(base);
        config.speculation.stats_file = config.speculation.stats_file.map(|p| base.join(p));
        config.pin.file = config.pin.file.map(|p| base.join(p));
        config.source = Some(std::path::absolute(path).unwrap_or_else(|_| path.into()));
        if let Some(CacheSetting::Dir(dir)) = &mut config.cache {
            *dir = base.join(&*dir);
        }
        Ok(config)
    }

    /// `path` if given, else `toolhost.toml` in the working directory if it
    /// exists, else the defaults.
    pub fn discover(path: Option<&Path>) -> Result<Self, ConfigError> {
        match path {
            Some(path) => Self::read(path),
            None if Path::new(DEFAULT_FILE).is_file() => Self::read(Path::new(DEFAULT_FILE)),
            None => Ok(Self::default()),
        }
    }

    /// How long `toolhost serve` waits for the upstream servers to start
    /// before it answers its client: `upstream_wait_s`, by default 5 s,
    /// half of the shortest wait a common client allows a server to start
    /// (Codex's 10 s). A server slower than that is served when it answers.
    pub fn upstream_wait(&self) -> Duration {
        Duration::from_secs(self.upstream_wait_s.unwrap_or(5))
    }

    /// Where `toolhost serve` writes its statistics (and resumes what
    /// speculation learned from), if anywhere: by default one file in the
    /// cache directory per configuration file, since what one set of plugins
    /// and upstreams taught says nothing about another's.
    pub fn stats_file(&self) -> Option<PathBuf> {
        if let Some(path) = &self.speculation.stats_file {
            return Some(path.clone());
        }
        let name = match &self.source {
            Some(source) => {
                let digest = Sha256::digest(source.to_string_lossy().as_bytes());
                format!("stats-{}.json", hex::encode(&digest[..8]))
            }
            None => "stats.json".to_owned(),
        };
        Some(self.cache_dir()?.join(name))
    }

    /// Where the pinned tool list is kept: `[pin] file`, else
    /// `toolhost.pin.json` beside the configuration file (in the working
    /// directory when there is none), as `plugins.lock` is beside the
    /// plugins it locks.
    pub fn pin_settings(&self) -> toolhost::pin::Settings {
        let beside = |source: &PathBuf| source.parent().unwrap_or(Path::new(".")).join(PIN_FILE);
        let file = match (&self.pin.file, &self.source) {
            (Some(file), _) => file.clone(),
            (None, Some(source)) => beside(source),
            (None, None) => PathBuf::from(PIN_FILE),
        };
        toolhost::pin::Settings {
            file,
            on_change: self.pin.on_change,
        }
    }

    /// The file this configuration was read from, as errors name it.
    fn file(&self) -> PathBuf {
        self.source.clone().unwrap_or_else(|| DEFAULT_FILE.into())
    }

    /// The `[plugin.NAME]` tables and the file they are in, for
    /// [`toolhost::plugin::RuntimeOptions`].
    pub fn plugin_settings(&self) -> PluginSettings {
        PluginSettings {
            file: self.file(),
            tables: self
                .plugin
                .iter()
                .map(|(name, settings)| (name.clone(), settings.get_ref().clone()))
                .collect(),
        }
    }

    /// Each `[plugin.NAME]` said as an error, for when no plugin directory
    /// is in use: its settings (a grant, a limit) apply to nothing, and
    /// would otherwise be ignored without a word.
    pub fn plugin_settings_unused(&self) -> Vec<String> {
        let file = self.file();
        self.plugin
            .keys()
            .map(|name| {
                format!(
                    "{}: [plugin.{name}] applies to no plugin: no plugin directory is in use \
                     (pass --plugins DIR, set `plugins` in {} or create ./plugins)",
                    file.display(),
                    file.display()
                )
            })
            .collect()
    }

    pub fn cache_dir(&self) -> Option<PathBuf> {
        match &self.cache {
            None | Some(CacheSetting::Enabled(true)) => toolhost::plugin::RuntimeOptions::default().cache_dir,
            Some(CacheSetting::Enabled(false)) => None,
            Some(CacheSetting::Dir(dir)) => Some(dir.clone()),
        }
    }

    /// Layer the user's overrides over `models`, refusing any that would
    /// speculate a tool that is not pure or read-only.
    pub fn apply_value_models(&self, models: &mut ValueModels) -> Result<(), ConfigError> {
        Ok(models.apply_overrides(&self.tools)?)
    }
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost::Transport;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolhost.toml");
        std::fs::write(&path, text).unwrap();
        Config::read(&path)
    }

    #[test]
    fn each_configuration_file_keeps_its_own_statistics() {
        let dir = tempfile::tempdir().unwrap();
        let cache = format!("cache = \"{}\"\n", dir.path().join("cache").display());
        let file = |name: &str| {
            let path = dir.path().join(name).join("toolhost.toml");
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &cache).unwrap();
            Config::read(&path).unwrap().stats_file().unwrap()
        };
        let (a, b) = (file("a"), file("b"));
        assert_ne!(a, b);
        assert_eq!(a, file("a"), "the same file, the same record");
        assert!(a.starts_with(dir.path().join("cache")), "{}", a.display());
        let pin = parse("[pin]\nfile = \"p/pin.json\"\non_change = \"hide\"\n").unwrap();
        let settings = pin.pin_settings();
        assert!(settings.file.ends_with("p/pin.json") && settings.file.is_absolute());
        assert_eq!(settings.on_change, OnChange::Hide);
        let beside = parse("").unwrap().pin_settings();
        assert!(beside.file.ends_with(PIN_FILE) && beside.file.is_absolute());
        assert_eq!(beside.on_change, OnChange::Pinned);
        assert!(parse("[pin]\non_change = \"show\"\n").is_err());
        let set = parse("[speculation]\nstats_file = \"s.json\"\n").unwrap();
        assert!(set.stats_file().unwrap().ends_with("s.json"));
    }

    #[test]
    fn the_credential_store_is_beside_the_configuration_and_the_exchange_parses() {
        let config = parse(
            "[credentials]\nfile = \"credentials.toml\"\n[credentials.exchange]\n\
             token_endpoint = \"https://login.example/token\"\nclient_id = \"toolhost\"\n",
        )
        .unwrap();
        let settings = config.credentials.unwrap().settings();
        let file = settings.file.unwrap();
        assert!(
            file.is_absolute() && file.ends_with("credentials.toml"),
            "{}",
            file.display()
        );
        let exchange = settings.exchange.unwrap();
        assert_eq!(exchange.token_endpoint, "https://login.example/token");
        assert_eq!(exchange.client_id.as_deref(), Some("toolhost"));
        assert!(parse("[credentials]\nfiel = \"a\"\n").is_err());
        let dir = parse("[credentials]\ndir = \"credentials.d\"\n")
            .unwrap()
            .credentials
            .unwrap()
            .settings()
            .dir
            .unwrap();
        assert!(
            dir.is_absolute() && dir.ends_with("credentials.d"),
            "{}",
            dir.display()
        );
    }

    #[test]
    fn the_audit_and_identity_claims_parse_and_the_file_is_beside_the_configuration() {
        let policy = parse("[policy]\nfile = \"team.cedar\"\n")
            .unwrap()
            .policy
            .unwrap()
            .file;
        assert!(
            policy.is_absolute() && policy.ends_with("team.cedar"),
            "{}",
            policy.display()
        );
        assert!(parse("[policy]\nfiles = \"a\"\n").is_err());
        let config =
            parse("[audit]\nfile = \"audit.jsonl\"\n[auth]\nidentity_claims = [\"email\"]\n").unwrap();
        let file = config.audit.unwrap().file;
        assert!(
            file.is_absolute() && file.ends_with("audit.jsonl"),
            "{}",
            file.display()
        );
        assert_eq!(config.auth.identity_claims, ["email"]);
        let err = parse("[audit]\nfiel = \"a\"\n").unwrap_err().to_string();
        assert!(err.contains("fiel"), "{err}");
    }

    #[test]
    fn errors_name_the_line() {
        let err = parse("plugins = \"p\"\n[tools.read]\nsied_effect = \"pure\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 3") && err.contains("sied_effect"), "{err}");
    }

    #[test]
    fn serving_settings_parse_and_unknown_keys_name_their_line() {
        let config = parse(concat!(
            "root = \"src\"\n[web]\nallowed_hosts = [\"example.com\"]\n",
            "[[upstream]]\nname = \"fs\"\ncommand = \"npx\"\nargs = [\"x\"]\ncategory = \"files\"\nprefix = \"fs_\"\n",
            "[bind]\ncreate_issue = \"fs\"\n"
        ))
        .unwrap();
        assert!(config.root.unwrap().ends_with("src"));
        assert_eq!(config.web.allowed_hosts, ["example.com"]);
        assert_eq!(config.upstream[0].prefix, "fs_");
        assert_eq!(config.bind["create_issue"], "fs");
        let err = parse("[[upstream]]\nname = \"a\"\ncommand = \"b\"\ncategroy = \"c\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 4") && err.contains("categroy"), "{err}");
    }

    #[test]
    fn an_upstream_takes_a_command_or_a_url_and_errors_name_it_and_the_line() {
        let config = parse(concat!(
            "[[upstream]]\nname = \"remote\"\nurl = \"http://127.0.0.1:9/mcp\"\n",
            "headers = { Authorization = \"Bearer s3cret\" }\n"
        ))
        .unwrap();
        let Transport::Http { url, headers } = &config.upstream[0].transport else {
            panic!("not an HTTP upstream: {:?}", config.upstream[0]);
        };
        assert_eq!(url, "http://127.0.0.1:9/mcp");
        let authorization = headers.iter().find(|(name, _)| name.as_str() == "authorization");
        assert_eq!(
            authorization.map(|(_, value)| value.as_bytes()),
            Some(&b"Bearer s3cret"[..])
        );
        assert!(
            !format!("{config:?}").contains("s3cret"),
            "a header value was logged"
        );
        for (text, needle) in [
            (
                "[[upstream]]\nname = \"both\"\ncommand = \"x\"\nurl = \"http://a/mcp\"\n",
                "not both",
            ),
            (
                "[[upstream]]\nname = \"neither\"\nprefix = \"n_\"\n",
                "set `command`",
            ),
            (
                "[[upstream]]\nname = \"ftp\"\nurl = \"ftp://a/mcp\"\n",
                "not http",
            ),
            (
                "[[upstream]]\nname = \"hdr\"\ncommand = \"x\"\nheaders = { A = \"b\" }\n",
                "`headers` are for `url`",
            ),
            (
                "[[upstream]]\nname = \"bad\"\nurl = \"http://a/mcp\"\nheaders = { \"a b\" = \"c\" }\n",
                "header name",
            ),
            (
                "[[upstream]]\nname = \"hasty\"\ncommand = \"x\"\nconnect_timeout_s = 0\n",
                "at least 1",
            ),
        ] {
            let err = parse(&format!("root = \".\"\n{text}")).unwrap_err().to_string();
            let name = text.split('"').nth(1).unwrap();
            assert!(
                err.contains(&format!("upstream `{name}`")) && err.contains(needle),
                "{err}"
            );
            assert!(err.contains("line 2"), "{err}");
        }
    }

    #[test]
    fn speculation_settings_parse_with_defaults_and_typos_are_named() {
        let config =
            parse("writable = true\n[speculation]\nhosts = [\"jira.test\"]\nper_host = 2\n").unwrap();
        assert!(config.writable);
        assert!(config.speculation.enabled && config.speculation.native);
        assert!(config.speculation.allows_host("JIRA.test"));
        assert!(!config.speculation.allows_host("other.test"));
        assert_eq!(config.speculation.per_host, 2);
        assert_eq!(config.speculation.probability_floor, 0.3);
        assert!(config.speculation.reread_changed);
        let off = parse("[speculation]\nreread_changed = false\n").unwrap();
        assert!(!off.speculation.reread_changed && off.speculation.native);
        let err = parse("[speculation]\nenable = false\n").unwrap_err().to_string();
        assert!(err.contains("line 2") && err.contains("enable"), "{err}");
        // On unless switched off: the value models gate what is called.
        let upstream = parse("[[upstream]]\nname = \"a\"\ncommand = \"b\"\n").unwrap();
        assert!(upstream.upstream[0].speculate);
        let upstream = parse("[[upstream]]\nname = \"a\"\ncommand = \"b\"\nspeculate = false\n").unwrap();
        assert!(!upstream.upstream[0].speculate);
    }

    #[test]
    fn trust_paths_resolve_against_the_file_and_typos_are_named() {
        let config = parse("[trust]\nkeys = { acme = \"keys/acme.pub\" }\nlock = \"p.lock\"\n").unwrap();
        assert!(
            config.trust.keys["acme"].is_absolute() && config.trust.keys["acme"].ends_with("keys/acme.pub")
        );
        assert!(
            config
                .trust
                .lock_path(Path::new("/x/plugins"))
                .ends_with("p.lock")
        );
        assert!(!config.trust.require_signatures && !config.trust.require_approval);
        let default = parse("").unwrap();
        assert_eq!(
            default.trust.approvals_path(Path::new("/x/plugins")),
            Path::new("/x/plugins/plugins.approvals")
        );
        let err = parse("[trust]\nrequire_signature = true\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("line 2") && err.contains("require_signature"),
            "{err}"
        );
    }

    #[test]
    fn speculating_a_mutating_tool_is_refused() {
        let config =
            parse("[tools.create_issue]\nside_effect = \"mutates-external\"\nspeculate = true\n").unwrap();
        let mut models = toolhost::internals::native_value_models();
        let err = config.apply_value_models(&mut models).unwrap_err().to_string();
        assert!(err.contains("create_issue"), "{err}");
        let fine = parse("[tools.read]\nspeculate = true\n").unwrap();
        fine.apply_value_models(&mut models).unwrap();
    }
}

#[cfg(test)]
mod docs;
#[cfg(test)]
mod fuzz;
