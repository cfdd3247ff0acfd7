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
//! Everything a registry hands over is bounded: the manifest is read up
//! to [`MAX_MANIFEST`] and must be of this layout, every layer is at most
//! its cap (checked on its descriptor before any byte is fetched, and
//! again as the bytes come), every blob is checked against its digest, the
//! config blob is never fetched (nothing in it is used), and every request
//! is bounded in time. What a registry says in an error is not read, let
//! alone quoted. The pulls' requests are made here (see
//! [`Registry::fetch`]); oci-client negotiates the authorization and
//! pushes.
//!
//! Not here: whether what was pulled may be installed (signatures,
//! consent, the lock), which is `install`'s; where the credentials come
//! from, which is `credentials`'.

mod credentials;

use std::net::IpAddr;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::manifest::{OCI_IMAGE_MEDIA_TYPE, OciDescriptor, OciImageManifest};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference, RegistryOperation};
use serde::Serialize;
use toolhost::internals::http_client::{self, BodyError};
use toolhost::supply::Digest;

/// The config of a Wasm artifact (the convention's).
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The component layer (the convention's).
pub const WASM_MEDIA_TYPE: &str = "application/wasm";
/// The plugin's manifest, `NAME.toml` (ours).
pub const PLUGIN_MANIFEST_MEDIA_TYPE: &str = "application/vnd.toolhost.plugin.manifest.v1+toml";

/// The largest image manifest read: what the OCI distribution spec asks
/// registries to accept (a plugin's is under 1 KiB).
const MAX_MANIFEST: usize = 4 << 20;
/// Connecting to the registry.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Between two reads of a response, unless `TOOLHOST_REGISTRY_TIMEOUT`
/// (seconds) says otherwise.
const READ_TIMEOUT: Duration = Duration::from_secs(30);
/// A whole resolve, pull or push, unless `TOOLHOST_REGISTRY_DEADLINE`
/// (seconds) says otherwise: a registry that answers, but a byte at a
/// time, is bounded by this.
const DEADLINE: Duration = Duration::from_secs(600);

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
    /// The pulls' own requests (see [`Registry::fetch`]), with the same
    /// bounds in time as `client`'s.
    http: reqwest::Client,
    /// The bearer token oci-client negotiated for pulls, if the registry
    /// asks for one.
    token: tokio::sync::OnceCell<Option<String>>,
    auth: RegistryAuth,
    /// Where `auth` was found, for an error saying it was refused.
    auth_from: String,
    read_timeout: Duration,
    deadline: Duration,
}

impl Registry {
    pub async fn for_ref(plugin: &PluginRef) -> Result<Self> {
        // rustls is built without a provider (see the host's http_client).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let read_timeout = seconds("TOOLHOST_REGISTRY_TIMEOUT", READ_TIMEOUT)?;
        let deadline = seconds("TOOLHOST_REGISTRY_DEADLINE", DEADLINE)?;
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
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(read_timeout)
            // A registry may send a blob's GET to its storage, over HTTPS,
            // or over HTTP to loopback as a reference may. reqwest drops
            // the authorization on a redirect to another host.
            .redirect(reqwest::redirect::Policy::custom(|attempt| {
                let url = attempt.url();
                let allowed = url.scheme() == "https" || url.host_str().is_some_and(is_loopback);
                match (allowed, attempt.previous().len()) {
                    (false, _) => attempt.error("a redirect to plain HTTP off loopback"),
                    (true, 10..) => attempt.error("over 10 redirects"),
                    (true, _) => attempt.follow(),
                }
            }))
            .build()
            .context("building the registry's HTTP client")?;
        let credentials = credentials::for_registry(&registry).await?;
        Ok(Self {
            client: Client::new(config),
            http,
            token: tokio::sync::OnceCell::new(),
            auth: credentials.auth,
            auth_from: credentials.from,
            read_timeout,
            deadline,
        })
    }

    /// GET `path` of `plugin`'s repository (`manifests/TAG`,
    /// `blobs/DIGEST`) with the authorization oci-client negotiated (a
    /// bearer token, or the basic credentials), read up to `cap` bytes.
    /// oci-client reads a manifest, and any error's body, whole, whatever
    /// its size: the pulls are made here, and only the authorization and
    /// pushes are oci-client's. `what` names what is fetched, for errors.
    /// None if the registry has no such thing.
    async fn fetch(
        &self,
        plugin: &PluginRef,
        path: &str,
        accept: &str,
        what: &str,
        cap: usize,
    ) -> Result<Option<Vec<u8>>> {
        let reference = &plugin.reference;
        let token = self
            .token
            .get_or_try_init(|| async {
                self.client
                    .auth(reference, &self.auth, RegistryOperation::Pull)
                    .await
                    .map_err(|e| self.oci_error(plugin, e))
            })
            .await?;
        let scheme = if plugin.plain_http { "http" } else { "https" };
        let url = format!(
            "{scheme}://{}/v2/{}/{path}",
            reference.resolve_registry(),
            reference.repository()
        );
        let request = self.http.get(&url).header("accept", accept);
        let request = match (token, &self.auth) {
            (Some(token), _) => request.bearer_auth(token),
            (None, RegistryAuth::Basic(user, password)) => request.basic_auth(user, Some(password)),
            (None, _) => request,
        };
        // An error's body is never read: its status says enough.
        let mut response = request.send().await.map_err(|e| self.http_error(plugin, e))?;
        match response.status().as_u16() {
            200 => {}
            401 | 403 => bail!("{plugin}: the registry refused {}", self.auth_from),
            404 => return Ok(None),
            status => bail!("{plugin}: the registry answered HTTP {status} for {what}"),
        }
        match http_client::whole_body(&mut response, cap).await {
            Ok(body) => Ok(Some(body)),
            Err(BodyError::TooLarge(_)) => Err(anyhow!("{plugin}: {what} is over its cap of {cap} bytes")),
            Err(BodyError::Broken(e)) => Err(self.http_error(plugin, e)),
        }
    }

    /// An error of a request made here, saying what went wrong with the
    /// registry in the user's terms.
    fn http_error(&self, plugin: &PluginRef, e: reqwest::Error) -> anyhow::Error {
        if e.is_timeout() {
            return anyhow!(
                "{plugin}: the registry did not answer within {} s",
                self.read_timeout.as_secs()
            );
        }
        anyhow::Error::new(e.without_url()).context(format!("{plugin}: cannot reach the registry"))
    }

    /// An error of oci-client's, saying what went wrong with the registry
    /// without quoting what it answered: a registry's text is hostile, and
    /// as long as it likes.
    fn oci_error(&self, plugin: &PluginRef, e: OciDistributionError) -> anyhow::Error {
        match e {
            OciDistributionError::UnauthorizedError { .. }
            | OciDistributionError::AuthenticationFailure(_)
            | OciDistributionError::ServerError { code: 401 | 403, .. } => {
                anyhow!("{plugin}: the registry refused {}", self.auth_from)
            }
            OciDistributionError::RegistryError { envelope, .. }
                if envelope
                    .errors
                    .iter()
                    .any(|e| matches!(e.code, OciErrorCode::Unauthorized | OciErrorCode::Denied)) =>
            {
                anyhow!("{plugin}: the registry refused {}", self.auth_from)
            }
            OciDistributionError::RegistryError { envelope, .. } => {
                let codes: Vec<String> = envelope.errors.iter().map(|e| format!("{:?}", e.code)).collect();
                anyhow!("{plugin}: the registry answered {}", codes.join(", "))
            }
            OciDistributionError::ServerError { code, .. } => {
                anyhow!("{plugin}: the registry answered HTTP {code}")
            }
            OciDistributionError::RequestError(e) => self.http_error(plugin, e),
            other => anyhow::Error::new(other).context(plugin.to_string()),
        }
    }

    /// What `plugin` resolves to now: its manifest's digest and layers,
    /// refused unless they are of the layout.
    pub async fn list(&self, plugin: &PluginRef) -> Result<Listing> {
        self.bounded(plugin, "resolving", self.list_unbounded(plugin))
            .await
    }

    async fn list_unbounded(&self, plugin: &PluginRef) -> Result<Listing> {
        let reference = &plugin.reference;
        let name = reference.digest().or(reference.tag()).unwrap_or("latest");
        let body = self
            .fetch(
                plugin,
                &format!("manifests/{name}"),
                OCI_IMAGE_MEDIA_TYPE,
                "its manifest",
                MAX_MANIFEST,
            )
            .await?
            .ok_or_else(|| anyhow!("{plugin}: unknown to the registry (no such tag or digest)"))?;
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
                WASM_MEDIA_TYPE => (&mut wasm, toolhost::bounds::MAX_COMPONENT_BYTES),
                PLUGIN_MANIFEST_MEDIA_TYPE => (&mut plugin_manifest, toolhost::bounds::MAX_MANIFEST_BYTES),
                other => bail!("{plugin}: a layer of media type {other}, which a plugin does not have"),
            };
            if slot.is_some() {
                bail!("{plugin}: more than one layer of media type {}", layer.media_type);
            }
            // Fetched by digest from this registry, and from nowhere else:
            // a layer's `urls` would send a pull to any host, over any
            // scheme.
            if !is_sha256(&layer.digest) {
                bail!(
                    "{plugin}: its {} layer's digest is not sha256:HEX",
                    layer.media_type
                );
            }
            if layer.urls.as_ref().is_some_and(|urls| !urls.is_empty()) {
                bail!(
                    "{plugin}: its {} layer names URLs to fetch it from elsewhere, which a plugin's does not",
                    layer.media_type
                );
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
        self.bounded(plugin, "pulling", async {
            let wasm = self.blob(plugin, &listing.wasm).await?;
            let plugin_manifest = match &listing.plugin_manifest {
                Some(layer) => Some(self.blob(plugin, layer).await?),
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
    async fn blob(&self, plugin: &PluginRef, layer: &OciDescriptor) -> Result<Vec<u8>> {
        let size = usize::try_from(layer.size).context("layer size")?;
        let what = format!("its {} layer", layer.media_type);
        let bytes = self
            .fetch(plugin, &format!("blobs/{}", layer.digest), "*/*", &what, size)
            .await?
            .ok_or_else(|| anyhow!("{plugin}: {what} is missing from the registry"))?;
        let digest = Digest::of(&bytes).to_string();
        if digest != layer.digest || bytes.len() != size {
            bail!(
                "{plugin}: {what} does not match its digest (the manifest says {}, the bytes are {digest})",
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
        self.bounded(plugin, "pushing", async {
            self.client
                .push(&plugin.reference, &layers, config, &self.auth, Some(manifest))
                .await
                .map_err(|e| self.oci_error(plugin, e))
        })
        .await?;
        Ok(digest)
    }

    /// `work`, failed if it takes longer than the deadline.
    async fn bounded<T>(
        &self,
        plugin: &PluginRef,
        doing: &str,
        work: impl Future<Output = Result<T>>,
    ) -> Result<T> {
        tokio::time::timeout(self.deadline, work)
            .await
            .map_err(|_| anyhow!("{plugin}: {doing} took over {} s", self.deadline.as_secs()))?
    }
}

/// `sha256:` and 64 lowercase hex digits.
fn is_sha256(digest: &str) -> bool {
    digest
        .strip_prefix("sha256:")
        .is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}

/// The duration the environment variable `name` gives in whole seconds,
/// else `default`.
fn seconds(name: &str, default: Duration) -> Result<Duration> {
    match std::env::var(name) {
        Ok(secs) => match secs.parse() {
            Ok(secs @ 1..) => Ok(Duration::from_secs(secs)),
            _ => bail!("{name} must be a whole number of seconds, at least 1"),
        },
        Err(_) => Ok(default),
    }
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
}
