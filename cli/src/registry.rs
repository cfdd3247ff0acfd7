//! An OCI registry as a source of plugins, through `oci-client`: the
//! references `toolhost add`, `update` and `publish` take, the credentials
//! they use, and the layout of a plugin in a registry, which is the
//! wasm-components-on-OCI convention (`wkg`, wassette) plus one layer of
//! ours:
//!
//! - the manifest is an OCI image manifest
//!   (`application/vnd.oci.image.manifest.v1+json`);
//! - its config is `application/vnd.wasm.config.v0+json` (`architecture`
//!   `wasm`, `os` `wasip2`, the layers' digests, the component's imports
//!   and exports);
//! - its first layer is the component, `application/wasm`;
//! - a second layer, if the vendor ships one, is the plugin's `NAME.toml`,
//!   [`PLUGIN_MANIFEST_MEDIA_TYPE`]. A layer rather than an annotation: it
//!   is a file, fetched and digest-checked like the component, and an
//!   annotation is a string other tools show and may drop.
//!
//! Everything a registry hands over is bounded: the manifest must be of
//! this layout, every layer is at most its cap (checked on its descriptor
//! before any byte is fetched, and again as the bytes come), every blob is
//! checked against its digest, and every request is bounded in time.
//!
//! Not here: whether what was pulled may be installed (signatures,
//! consent, the lock), which is `install`'s.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use base64::Engine;
use futures::StreamExt;
use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::manifest::{OCI_IMAGE_MEDIA_TYPE, OciDescriptor, OciImageManifest};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use serde::Serialize;
use toolhost::supply::Digest;

/// The config of a Wasm artifact (the convention's).
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The component layer (the convention's).
pub const WASM_MEDIA_TYPE: &str = "application/wasm";
/// The plugin's manifest, `NAME.toml` (ours).
pub const PLUGIN_MANIFEST_MEDIA_TYPE: &str = "application/vnd.toolhost.plugin.manifest.v1+toml";

/// The largest component pulled: the Python and JavaScript ones are tens
/// of MiB.
const MAX_COMPONENT: u64 = 128 << 20;
/// The largest `NAME.toml` pulled.
const MAX_PLUGIN_MANIFEST: u64 = 256 << 10;
/// Connecting to the registry.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Between two reads of a response, unless `TOOLHOST_REGISTRY_TIMEOUT`
/// (seconds) says otherwise.
const READ_TIMEOUT: Duration = Duration::from_secs(30);
/// A whole pull or push.
const TOTAL_TIMEOUT: Duration = Duration::from_secs(600);

/// The credentials' environment variables, taken before the Docker config.
const USERNAME_ENV: &str = "TOOLHOST_REGISTRY_USERNAME";
const PASSWORD_ENV: &str = "TOOLHOST_REGISTRY_PASSWORD";

/// A plugin's place in a registry: `[http://]REGISTRY/REPOSITORY(:TAG|@DIGEST)`.
/// Plain HTTP only when spelled `http://`, and only to a loopback address
/// written as one (as HTTP grants allow it): a name such as `localhost`
/// resolves to whatever the resolver says.
#[derive(Debug, Clone)]
pub struct PluginRef {
    reference: Reference,
    plain_http: bool,
}

impl PluginRef {
    pub fn parse(text: &str) -> Result<Self> {
        let (plain_http, rest) = match text.strip_prefix("http://") {
            Some(rest) => (true, rest),
            None => (false, text.strip_prefix("https://").unwrap_or(text)),
        };
        let reference: Reference = rest.parse().map_err(|e| {
            anyhow!("`{text}` is not a registry reference (REGISTRY/NAME:TAG or @sha256:...): {e}")
        })?;
        if !rest.starts_with(reference.registry()) {
            bail!("`{text}` names no registry: write it REGISTRY/NAMESPACE/NAME:TAG");
        }
        if plain_http && !is_loopback(reference.registry()) {
            bail!(
                "`{text}`: plain http:// is only for a registry on a loopback address (127.0.0.0/8); \
                 any other registry is reached over https"
            );
        }
        Ok(Self {
            reference,
            plain_http,
        })
    }

    /// The plugin's name: the last part of the repository.
    pub fn name(&self) -> &str {
        let repository = self.reference.repository();
        repository.rsplit('/').next().unwrap_or(repository)
    }

    /// This reference pinned to `digest`.
    fn at(&self, digest: &str) -> Reference {
        Reference::with_digest(
            self.reference.registry().to_owned(),
            self.reference.repository().to_owned(),
            digest.to_owned(),
        )
    }
}

impl std::fmt::Display for PluginRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = if self.plain_http { "http://" } else { "" };
        write!(f, "{scheme}{}", self.reference.whole())
    }
}

/// `host[:port]` is an IP address of loopback.
fn is_loopback(registry: &str) -> bool {
    let host = match registry.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(rest),
        None => registry.rsplit_once(':').map_or(registry, |(host, _)| host),
    };
    host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// What a plugin's manifest in the registry says is there.
pub struct Listing {
    /// Of the manifest, as the registry served it: what the tag resolved to.
    pub digest: String,
    wasm: OciDescriptor,
    plugin_manifest: Option<OciDescriptor>,
}

/// A plugin pulled, each part checked against its digest.
pub struct Pulled {
    pub digest: String,
    pub wasm: Vec<u8>,
    pub plugin_manifest: Option<Vec<u8>>,
}

/// A registry client for one reference, with its credentials.
pub struct Registry {
    client: Client,
    auth: RegistryAuth,
}

impl Registry {
    pub fn for_ref(plugin: &PluginRef) -> Result<Self> {
        // rustls is built without a provider (see the host's http_client).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let read_timeout = match std::env::var("TOOLHOST_REGISTRY_TIMEOUT") {
            Ok(secs) => Duration::from_secs(
                secs.parse()
                    .map_err(|_| anyhow!("TOOLHOST_REGISTRY_TIMEOUT must be a number of seconds"))?,
            ),
            Err(_) => READ_TIMEOUT,
        };
        let registry = plugin.reference.resolve_registry().to_owned();
        let config = ClientConfig {
            protocol: match plugin.plain_http {
                true => ClientProtocol::HttpsExcept(vec![registry.clone()]),
                false => ClientProtocol::Https,
            },
            connect_timeout: Some(CONNECT_TIMEOUT),
            read_timeout: Some(read_timeout),
            ..ClientConfig::default()
        };
        Ok(Self {
            client: Client::new(config),
            auth: credentials(&registry)?,
        })
    }

    /// What `plugin` resolves to now: its manifest's digest and layers,
    /// refused unless they are of the layout.
    pub async fn list(&self, plugin: &PluginRef) -> Result<Listing> {
        bounded(plugin, "resolving", self.list_unbounded(plugin)).await
    }

    async fn list_unbounded(&self, plugin: &PluginRef) -> Result<Listing> {
        let (body, _) = self
            .client
            .pull_manifest_raw(&plugin.reference, &self.auth, &[OCI_IMAGE_MEDIA_TYPE])
            .await
            .with_context(|| plugin.to_string())?;
        // The digest is the body's, computed here, whatever the registry's
        // headers say; a reference by digest must name exactly this body.
        let digest = Digest::of(&body).to_string();
        if let Some(wanted) = plugin.reference.digest()
            && wanted != digest
        {
            bail!("{plugin}: the registry served a manifest of digest {digest}, not the one asked for");
        }
        let manifest: OciImageManifest =
            serde_json::from_slice(&body).map_err(|e| anyhow!("{plugin}: not an OCI image manifest: {e}"))?;
        let media_type = manifest.media_type.as_deref().unwrap_or(OCI_IMAGE_MEDIA_TYPE);
        if media_type != OCI_IMAGE_MEDIA_TYPE || manifest.config.media_type != CONFIG_MEDIA_TYPE {
            bail!(
                "{plugin} is not a Wasm component: its manifest is {media_type} with a config of {}, \
                 not {OCI_IMAGE_MEDIA_TYPE} with {CONFIG_MEDIA_TYPE}",
                manifest.config.media_type
            );
        }
        let mut wasm = None;
        let mut plugin_manifest = None;
        for layer in manifest.layers {
            let (slot, cap) = match layer.media_type.as_str() {
                WASM_MEDIA_TYPE => (&mut wasm, MAX_COMPONENT),
                PLUGIN_MANIFEST_MEDIA_TYPE => (&mut plugin_manifest, MAX_PLUGIN_MANIFEST),
                other => bail!("{plugin}: a layer of media type {other}, which a plugin does not have"),
            };
            if slot.is_some() {
                bail!("{plugin}: more than one layer of media type {}", layer.media_type);
            }
            if u64::try_from(layer.size).map_or(true, |size| size > cap) {
                bail!(
                    "{plugin}: its {} layer is {} bytes, over the cap of {cap}",
                    layer.media_type,
                    layer.size
                );
            }
            *slot = Some(layer);
        }
        let wasm = wasm.ok_or_else(|| anyhow!("{plugin}: no {WASM_MEDIA_TYPE} layer"))?;
        Ok(Listing {
            digest,
            wasm,
            plugin_manifest,
        })
    }

    /// The layers of `listing`, fetched by the digest it resolved to.
    pub async fn pull(&self, plugin: &PluginRef, listing: &Listing) -> Result<Pulled> {
        bounded(plugin, "pulling", async {
            let at = plugin.at(&listing.digest);
            let wasm = self.blob(plugin, &at, &listing.wasm).await?;
            let plugin_manifest = match &listing.plugin_manifest {
                Some(layer) => Some(self.blob(plugin, &at, layer).await?),
                None => None,
            };
            Ok(Pulled {
                digest: listing.digest.clone(),
                wasm,
                plugin_manifest,
            })
        })
        .await
    }

    /// One blob, at most its descriptor's size, checked against its digest.
    async fn blob(&self, plugin: &PluginRef, at: &Reference, layer: &OciDescriptor) -> Result<Vec<u8>> {
        let size = usize::try_from(layer.size).context("layer size")?;
        let mut stream = self
            .client
            .pull_blob_stream(at, layer)
            .await
            .with_context(|| format!("{plugin}: its {} layer", layer.media_type))?;
        let mut bytes = Vec::with_capacity(size);
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.with_context(|| format!("{plugin}: its {} layer", layer.media_type))?;
            if bytes.len() + chunk.len() > size {
                bail!(
                    "{plugin}: its {} layer is longer than its manifest says",
                    layer.media_type
                );
            }
            bytes.extend_from_slice(&chunk);
        }
        let digest = Digest::of(&bytes).to_string();
        if digest != layer.digest || bytes.len() != size {
            bail!(
                "{plugin}: its {} layer does not match its digest (the manifest says {}, the bytes are {digest})",
                layer.media_type,
                layer.digest
            );
        }
        Ok(bytes)
    }

    /// Push `wasm` (and its `NAME.toml`) to `plugin`, in the layout: the
    /// manifest's digest.
    pub async fn push(
        &self,
        plugin: &PluginRef,
        wasm: Vec<u8>,
        plugin_manifest: Option<Vec<u8>>,
    ) -> Result<String> {
        let mut layers = vec![ImageLayer::new(wasm, WASM_MEDIA_TYPE.to_owned(), None)];
        if let Some(text) = plugin_manifest {
            layers.push(ImageLayer::new(text, PLUGIN_MANIFEST_MEDIA_TYPE.to_owned(), None));
        }
        let config = WasmConfig::of(&layers[0].data, &layers)?;
        let config = Config::new(serde_json::to_vec(&config)?, CONFIG_MEDIA_TYPE.to_owned(), None);
        let mut manifest = OciImageManifest::build(&layers, &config, None);
        manifest.media_type = Some(OCI_IMAGE_MEDIA_TYPE.to_owned());
        let digest = Digest::of(&serde_json::to_vec(&manifest)?).to_string();
        bounded(plugin, "pushing", async {
            self.client
                .push(&plugin.reference, &layers, config, &self.auth, Some(manifest))
                .await
                .with_context(|| plugin.to_string())
        })
        .await?;
        Ok(digest)
    }
}

/// `work`, failed if it takes longer than [`TOTAL_TIMEOUT`].
async fn bounded<T>(plugin: &PluginRef, doing: &str, work: impl Future<Output = Result<T>>) -> Result<T> {
    tokio::time::timeout(TOTAL_TIMEOUT, work)
        .await
        .map_err(|_| anyhow!("{plugin}: {doing} took over {} s", TOTAL_TIMEOUT.as_secs()))?
}

/// The convention's config of a component.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WasmConfig {
    created: String,
    architecture: &'static str,
    os: &'static str,
    layer_digests: Vec<String>,
    component: ComponentConfig,
}

#[derive(Serialize)]
struct ComponentConfig {
    exports: Vec<String>,
    imports: Vec<String>,
    target: Option<String>,
}

impl WasmConfig {
    fn of(wasm: &[u8], layers: &[ImageLayer]) -> Result<Self> {
        let toolhost::supply::Interfaces { imports, exports } =
            toolhost::supply::interfaces(wasm).map_err(|e| anyhow!("the component {e}"))?;
        Ok(Self {
            created: chrono::DateTime::<chrono::Utc>::from(std::time::SystemTime::now())
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            architecture: "wasm",
            os: "wasip2",
            layer_digests: layers.iter().map(ImageLayer::sha256_digest).collect(),
            component: ComponentConfig {
                exports,
                imports,
                target: None,
            },
        })
    }
}

/// The registry's credentials: `TOOLHOST_REGISTRY_USERNAME` and
/// `TOOLHOST_REGISTRY_PASSWORD`, else the Docker config's `auths` entry for
/// the registry (`$DOCKER_CONFIG/config.json`, else
/// `~/.docker/config.json`), else none. Never from the command line, where
/// every user of the machine can read them.
fn credentials(registry: &str) -> Result<RegistryAuth> {
    if let (Ok(user), Ok(password)) = (std::env::var(USERNAME_ENV), std::env::var(PASSWORD_ENV)) {
        return Ok(RegistryAuth::Basic(user, password));
    }
    let Some(path) = docker_config() else {
        return Ok(RegistryAuth::Anonymous);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(RegistryAuth::Anonymous),
        Err(e) => bail!("cannot read {}: {e}", path.display()),
    };
    docker_auth(&text, registry).map_err(|e| anyhow!("{}: {e}", path.display()))
}

fn docker_config() -> Option<PathBuf> {
    match std::env::var_os("DOCKER_CONFIG") {
        Some(dir) => Some(Path::new(&dir).join("config.json")),
        None => std::env::home_dir().map(|home| home.join(".docker/config.json")),
    }
}

/// The `auths` entry of `registry` in a Docker config's text. Errors
/// never quote the file: it holds secrets.
fn docker_auth(text: &str, registry: &str) -> Result<RegistryAuth> {
    #[derive(serde::Deserialize)]
    struct DockerConfig {
        #[serde(default)]
        auths: std::collections::BTreeMap<String, DockerAuth>,
    }
    #[derive(serde::Deserialize)]
    struct DockerAuth {
        auth: Option<String>,
        identitytoken: Option<String>,
    }
    let config: DockerConfig =
        serde_json::from_str(text).map_err(|e| anyhow!("not a Docker config (line {})", e.line()))?;
    let entry = config.auths.iter().find(|(key, _)| {
        let key = key.trim_start_matches("https://").trim_start_matches("http://");
        key.split('/').next() == Some(registry)
    });
    let Some((key, entry)) = entry else {
        return Ok(RegistryAuth::Anonymous);
    };
    if let Some(token) = &entry.identitytoken {
        return Ok(RegistryAuth::Bearer(token.clone()));
    }
    let Some(auth) = &entry.auth else {
        return Ok(RegistryAuth::Anonymous);
    };
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(auth)
        .ok()
        .and_then(|d| String::from_utf8(d).ok())
        .ok_or_else(|| anyhow!("the `auth` of `{key}` is not base64 of USER:PASSWORD"))?;
    let (user, password) = decoded
        .split_once(':')
        .ok_or_else(|| anyhow!("the `auth` of `{key}` is not base64 of USER:PASSWORD"))?;
    Ok(RegistryAuth::Basic(user.to_owned(), password.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_is_for_loopback_addresses_only() {
        assert!(PluginRef::parse("http://127.0.0.1:5000/ns/echo:1").is_ok());
        for refused in [
            "http://localhost:5000/ns/echo:1",
            "http://10.0.0.1:5000/ns/echo:1",
        ] {
            let e = PluginRef::parse(refused).unwrap_err().to_string();
            assert!(e.contains("only for a registry on a loopback address"), "{e}");
        }
        let r = PluginRef::parse("ghcr.io/acme/tools/echo:1.2").unwrap();
        assert_eq!(r.name(), "echo");
        assert_eq!(r.to_string(), "ghcr.io/acme/tools/echo:1.2");
    }

    #[test]
    fn docker_config_credentials_are_found_by_registry_and_never_quoted() {
        let auth = base64::engine::general_purpose::STANDARD.encode("vendor:s3cret");
        let text = format!(r#"{{"auths": {{"https://ghcr.io": {{"auth": "{auth}"}}}}}}"#);
        match docker_auth(&text, "ghcr.io").unwrap() {
            RegistryAuth::Basic(user, password) => {
                assert_eq!((user.as_str(), password.as_str()), ("vendor", "s3cret"))
            }
            _ => panic!("basic credentials expected"),
        }
        assert!(matches!(
            docker_auth(&text, "quay.io").unwrap(),
            RegistryAuth::Anonymous
        ));
        let bad = r#"{"auths": {"ghcr.io": {"auth": "s3cret-not-base64!"}}}"#;
        let e = docker_auth(bad, "ghcr.io").unwrap_err().to_string();
        assert!(!e.contains("s3cret"), "{e}");
    }
}
