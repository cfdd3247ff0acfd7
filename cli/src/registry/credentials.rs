//! A registry's credentials, found where `docker login` leaves them:
//! `TOOLHOST_REGISTRY_USERNAME` and `TOOLHOST_REGISTRY_PASSWORD` first,
//! else the Docker config (`$DOCKER_CONFIG/config.json`, else
//! `~/.docker/config.json`): the registry's credential helper
//! (`credHelpers`), else the config's store (`credsStore`), else its
//! `auths` entry (`auth`, base64 of `USER:PASSWORD`, or `username` and
//! `password`, or an `identitytoken`). Never from the command line, where
//! every user of the machine can read them.
//!
//! A helper is `docker-credential-NAME get` found on `PATH`, handed the
//! registry on stdin, as Docker runs it; it is bounded in time and in what
//! it prints. Errors name the file, the entry or the helper at fault and
//! never quote what they read: it holds secrets.
//!
//! Not here: sending the credentials, which is `registry`'s and
//! oci-client's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use base64::Engine;
use oci_client::secrets::RegistryAuth;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The credentials' environment variables, taken before the Docker config.
const USERNAME_ENV: &str = "TOOLHOST_REGISTRY_USERNAME";
const PASSWORD_ENV: &str = "TOOLHOST_REGISTRY_PASSWORD";
/// A credential helper may ask the desktop to unlock a keychain, but not
/// forever.
const HELPER_TIMEOUT: Duration = Duration::from_secs(30);
/// A helper prints one small JSON object.
const MAX_HELPER_OUTPUT: u64 = 64 << 10;
/// The username a helper gives for an identity token rather than a
/// password (Docker's convention).
const TOKEN_USERNAME: &str = "<token>";

/// Credentials for one registry, and where they were found: what an error
/// says was refused, without quoting it.
pub struct Credentials {
    pub auth: RegistryAuth,
    pub from: String,
}

impl Credentials {
    /// None: `why` says where none were found.
    fn anonymous(why: &str) -> Self {
        Self {
            auth: RegistryAuth::Anonymous,
            from: format!("anonymous access ({why})"),
        }
    }
}

/// The credentials for `registry` (`host[:port]`, as oci-client resolves it).
pub async fn for_registry(registry: &str) -> Result<Credentials> {
    match (std::env::var(USERNAME_ENV), std::env::var(PASSWORD_ENV)) {
        (Ok(user), Ok(password)) => {
            return Ok(Credentials {
                auth: RegistryAuth::Basic(user, password),
                from: format!("the credentials of {USERNAME_ENV} and {PASSWORD_ENV}"),
            });
        }
        (Ok(_), Err(_)) | (Err(_), Ok(_)) => {
            bail!("set both {USERNAME_ENV} and {PASSWORD_ENV}, or neither")
        }
        (Err(_), Err(_)) => {}
    }
    let none = format!("no credentials in {USERNAME_ENV} nor in a Docker config");
    let Some(path) = docker_config() else {
        return Ok(Credentials::anonymous(&none));
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Credentials::anonymous(&none)),
        Err(e) => bail!("cannot read {}: {e}", path.display()),
    };
    let none = format!(
        "no credentials for {registry} in {USERNAME_ENV} nor in {}",
        path.display()
    );
    let config: DockerConfig = serde_json::from_str(&text)
        .map_err(|e| anyhow!("{}: not a Docker config (line {})", path.display(), e.line()))?;
    let server = server_address(registry);
    if let Some(helper) = config.helper_for(registry) {
        return helper_get(helper, &server).await;
    }
    let Some((key, entry)) = config.auths.iter().find(|(key, _)| host_of(key) == registry) else {
        return Ok(Credentials::anonymous(&none));
    };
    let from = format!("the credentials of `{key}` in {}", path.display());
    let auth = entry
        .auth()
        .map_err(|e| anyhow!("{}: the entry `{key}` has {e}", path.display()))?;
    Ok(match auth {
        Some(auth) => Credentials { auth, from },
        None => Credentials::anonymous(&none),
    })
}

fn docker_config() -> Option<PathBuf> {
    match std::env::var_os("DOCKER_CONFIG") {
        Some(dir) => Some(Path::new(&dir).join("config.json")),
        None => std::env::home_dir().map(|home| home.join(".docker/config.json")),
    }
}

/// What Docker calls the registry in its config and hands its helpers:
/// Docker Hub by its historical URL, any other by `host[:port]`.
fn server_address(registry: &str) -> String {
    match registry {
        "index.docker.io" | "registry-1.docker.io" => "https://index.docker.io/v1/".to_owned(),
        other => other.to_owned(),
    }
}

/// The `host[:port]` of a config key, which may be written as a URL.
fn host_of(key: &str) -> &str {
    let key = key.trim_start_matches("https://").trim_start_matches("http://");
    key.split('/').next().unwrap_or(key)
}

#[derive(serde::Deserialize)]
struct DockerConfig {
    #[serde(default)]
    auths: BTreeMap<String, DockerAuth>,
    #[serde(default, rename = "credsStore")]
    creds_store: Option<String>,
    #[serde(default, rename = "credHelpers")]
    cred_helpers: BTreeMap<String, String>,
}

impl DockerConfig {
    /// The helper that holds `registry`'s credentials, if one does.
    fn helper_for(&self, registry: &str) -> Option<&str> {
        self.cred_helpers
            .iter()
            .find(|(key, _)| host_of(key) == registry)
            .map(|(_, helper)| helper.as_str())
            .or(self.creds_store.as_deref())
            .filter(|helper| !helper.is_empty())
    }
}

#[derive(serde::Deserialize)]
struct DockerAuth {
    auth: Option<String>,
    username: Option<String>,
    password: Option<String>,
    identitytoken: Option<String>,
}

impl DockerAuth {
    fn auth(&self) -> Result<Option<RegistryAuth>> {
        if let Some(token) = &self.identitytoken {
            return Ok(Some(RegistryAuth::Bearer(token.clone())));
        }
        if let (Some(user), Some(password)) = (&self.username, &self.password) {
            return Ok(Some(RegistryAuth::Basic(user.clone(), password.clone())));
        }
        let Some(auth) = &self.auth else {
            return Ok(None);
        };
        let (user, password) = base64::engine::general_purpose::STANDARD
            .decode(auth)
            .ok()
            .and_then(|d| String::from_utf8(d).ok())
            .and_then(|d| d.split_once(':').map(|(u, p)| (u.to_owned(), p.to_owned())))
            .ok_or_else(|| anyhow!("an `auth` that is not base64 of USER:PASSWORD"))?;
        Ok(Some(RegistryAuth::Basic(user, password)))
    }
}

/// What `docker-credential-NAME get` prints.
#[derive(serde::Deserialize)]
struct HelperAnswer {
    #[serde(rename = "Username")]
    username: String,
    #[serde(rename = "Secret")]
    secret: String,
}

/// `docker-credential-HELPER get` for `server`.
async fn helper_get(helper: &str, server: &str) -> Result<Credentials> {
    // A name, looked up on PATH as Docker does: never a path the config
    // could point anywhere.
    if !helper
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        bail!("the Docker config names a credential helper `{helper}`, which is not a helper's name");
    }
    let program = format!("docker-credential-{helper}");
    let mut child = tokio::process::Command::new(&program)
        .arg("get")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        // What a helper says on failure may quote what it was handed.
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| anyhow!("cannot run {program}, the Docker config's credential helper: {e}"))?;
    let (mut stdin, stdout) = (child.stdin.take(), child.stdout.take());
    let run = async {
        if let Some(stdin) = stdin.as_mut() {
            // A helper that exits without reading is seen by its status.
            let _ = stdin.write_all(server.as_bytes()).await;
        }
        drop(stdin);
        let mut out = Vec::new();
        if let Some(stdout) = stdout {
            stdout.take(MAX_HELPER_OUTPUT + 1).read_to_end(&mut out).await?;
        }
        let status = child.wait().await?;
        anyhow::Ok((status, out))
    };
    let (status, out) = tokio::time::timeout(HELPER_TIMEOUT, run)
        .await
        .map_err(|_| {
            anyhow!(
                "{program} get gave no answer within {} s",
                HELPER_TIMEOUT.as_secs()
            )
        })?
        .map_err(|e| anyhow!("{program} get: {e}"))?;
    if out.len() as u64 > MAX_HELPER_OUTPUT {
        bail!("{program} get printed over {MAX_HELPER_OUTPUT} bytes");
    }
    if !status.success() {
        // Docker's helpers say so on stdout when they hold nothing for
        // the registry: then there are no credentials, as for Docker.
        if String::from_utf8_lossy(&out).contains("credentials not found") {
            return Ok(Credentials::anonymous(&format!(
                "{program} holds none for {server}"
            )));
        }
        bail!("{program} get failed for {server} ({status})");
    }
    let answer: HelperAnswer = serde_json::from_slice(&out).map_err(|_| {
        anyhow!("{program} get printed no credentials (a JSON object with Username and Secret)")
    })?;
    let auth = match answer.username.as_str() {
        TOKEN_USERNAME => RegistryAuth::Bearer(answer.secret),
        _ => RegistryAuth::Basic(answer.username, answer.secret),
    };
    Ok(Credentials {
        auth,
        from: format!("the credentials {program} gave"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth_of(text: &str, registry: &str) -> Result<Option<RegistryAuth>> {
        let config: DockerConfig = serde_json::from_str(text)?;
        match config.auths.iter().find(|(key, _)| host_of(key) == registry) {
            Some((_, entry)) => entry.auth(),
            None => Ok(None),
        }
    }

    #[test]
    fn docker_config_credentials_are_found_by_registry_and_never_quoted() {
        let auth = base64::engine::general_purpose::STANDARD.encode("vendor:s3cret");
        let text = format!(
            r#"{{"auths": {{"https://ghcr.io": {{"auth": "{auth}"}},
                "127.0.0.1:5000": {{"username": "ci", "password": "pw"}}}}}}"#
        );
        let basic = |auth| match auth {
            Some(RegistryAuth::Basic(user, password)) => (user, password),
            _ => panic!("basic credentials expected"),
        };
        assert_eq!(
            basic(auth_of(&text, "ghcr.io").unwrap()),
            ("vendor".to_owned(), "s3cret".to_owned())
        );
        assert_eq!(
            basic(auth_of(&text, "127.0.0.1:5000").unwrap()),
            ("ci".to_owned(), "pw".to_owned())
        );
        assert!(auth_of(&text, "quay.io").unwrap().is_none());
        let bad = r#"{"auths": {"ghcr.io": {"auth": "s3cret-not-base64!"}}}"#;
        let e = auth_of(bad, "ghcr.io").unwrap_err().to_string();
        assert!(!e.contains("s3cret"), "{e}");
    }

    #[test]
    fn a_registrys_own_helper_comes_before_the_store() {
        let config: DockerConfig =
            serde_json::from_str(r#"{"credsStore": "desktop", "credHelpers": {"https://ghcr.io": "gh"}}"#)
                .unwrap();
        assert_eq!(config.helper_for("ghcr.io"), Some("gh"));
        assert_eq!(config.helper_for("quay.io"), Some("desktop"));
        assert_eq!(server_address("index.docker.io"), "https://index.docker.io/v1/");
    }
}
