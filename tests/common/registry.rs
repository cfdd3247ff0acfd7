//! A real OCI registry on loopback, for the `registry` tests: Debian's
//! `docker-registry` (Distribution 2.8, installed by `make
//! docker-registry`) on a free port, storing in a temporary directory the
//! tests can reach into (to tamper with a blob), optionally behind basic
//! authentication (htpasswd), and a proxy in front of it that kills it when
//! a request for a given path goes through (a registry lost mid-pull); and
//! a fake registry, for what no real one serves (a giant manifest).

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::free_port;

/// A `docker-registry` serving plain HTTP on 127.0.0.1, storing in its own
/// temporary directory; killed when dropped.
pub struct Registry {
    child: Arc<Mutex<Option<Child>>>,
    dir: tempfile::TempDir,
    pub port: u16,
}

/// The user of [`Registry::start_with_password`].
pub const REGISTRY_USER: &str = "vendor";
/// Its password, and the bcrypt hash of it the registry checks (cost 4,
/// made with libxcrypt's `crypt`, as `htpasswd -B` would make it:
/// Distribution reads only bcrypt).
pub const REGISTRY_PASSWORD: &str = "registry-test-password";
const REGISTRY_PASSWORD_BCRYPT: &str = "$2y$04$xc5AVw66b9FrKzs5UaqpeuBPeq.LiMperbN.0ww3bDAF5yI8W.0E6";

impl Registry {
    pub fn start() -> Result<Self> {
        Self::start_with(None)
    }

    /// A registry that serves only [`REGISTRY_USER`] with
    /// [`REGISTRY_PASSWORD`], over basic authentication: over plain HTTP,
    /// which Distribution allows (it only warns that htpasswd wants TLS).
    pub fn start_with_password() -> Result<Self> {
        Self::start_with(Some(&format!("{REGISTRY_USER}:{REGISTRY_PASSWORD_BCRYPT}\n")))
    }

    fn start_with(htpasswd: Option<&str>) -> Result<Self> {
        let dir = tempfile::tempdir()?;
        let port = free_port();
        let config = dir.path().join("config.yml");
        let auth = match htpasswd {
            Some(lines) => {
                let path = dir.path().join("htpasswd");
                std::fs::write(&path, lines)?;
                format!(
                    "auth:\n  htpasswd:\n    realm: toolhost-tests\n    path: {}\n",
                    path.display()
                )
            }
            None => String::new(),
        };
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\n\
                 http:\n  addr: 127.0.0.1:{port}\n{auth}",
                dir.path().join("storage").display()
            ),
        )?;
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start docker-registry: run `make docker-registry` first")?;
        let registry = Self {
            child: Arc::new(Mutex::new(Some(child))),
            dir,
            port,
        };
        for _ in 0..500 {
            if registry.answers() {
                return Ok(registry);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        bail!("docker-registry on port {port} did not answer GET /v2/")
    }

    /// Whether `GET /v2/` answers: 200, or 401 asking for credentials.
    fn answers(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let request = format!("GET /v2/ HTTP/1.0\r\nHost: 127.0.0.1:{}\r\n\r\n", self.port);
        let mut answer = String::new();
        stream.write_all(request.as_bytes()).is_ok()
            && stream.read_to_string(&mut answer).is_ok()
            && matches!(answer.split_whitespace().nth(1), Some("200" | "401"))
    }

    /// `REPO:TAG` (or `REPO@DIGEST`) of this registry, as `toolhost` takes
    /// a loopback registry over plain HTTP.
    pub fn reference(&self, name: &str) -> String {
        format!("http://127.0.0.1:{}/{name}", self.port)
    }

    /// Where the registry keeps the blob `sha256:HEX`.
    pub fn blob_path(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").expect("a sha256 digest");
        self.dir
            .path()
            .join("storage/docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }

    /// Stop the registry now.
    pub fn kill(&self) {
        if let Some(mut child) = self.child.lock().unwrap().take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// A proxy on loopback in front of this registry that kills it as soon
    /// as a request naming `needle` (a path) comes through, and cuts that
    /// connection: a registry lost in the middle of a pull. Its address
    /// (`127.0.0.1:PORT`).
    pub fn killed_at(&self, needle: &str) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let address = listener.local_addr().expect("address").to_string();
        let (child, port, needle) = (self.child.clone(), self.port, needle.as_bytes().to_vec());
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(upstream) = TcpStream::connect(("127.0.0.1", port)) else {
                    continue;
                };
                let (child, needle) = (child.clone(), needle.clone());
                std::thread::spawn(move || relay(client, upstream, &needle, &child));
            }
        });
        address
    }
}

/// Copy `client`'s bytes to `upstream` and back, until a chunk from the
/// client holds `needle`: then kill the registry and cut both.
fn relay(mut client: TcpStream, mut upstream: TcpStream, needle: &[u8], child: &Mutex<Option<Child>>) {
    let (mut back_from, mut back_to) = (upstream.try_clone().unwrap(), client.try_clone().unwrap());
    std::thread::spawn(move || std::io::copy(&mut back_from, &mut back_to));
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = match client.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if buf[..n].windows(needle.len()).any(|w| w == needle) {
            if let Some(mut child) = child.lock().unwrap().take() {
                let _ = child.kill();
                let _ = child.wait();
            }
            break;
        }
        if upstream.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = client.shutdown(Shutdown::Both);
    let _ = upstream.shutdown(Shutdown::Both);
}

impl Registry {
    /// The manifest `name` (`REPO:TAG` or `REPO@DIGEST`) as the registry
    /// serves it to a client asking for OCI manifests.
    pub async fn manifest(&self, name: &str) -> serde_json::Value {
        let (repo, tag) = name.rsplit_once([':', '@']).expect("REPO:TAG");
        let url = format!("http://127.0.0.1:{}/v2/{repo}/manifests/{tag}", self.port);
        let response = toolhost::internals::http_client::builder()
            .build()
            .unwrap()
            .get(url)
            .header("accept", "application/vnd.oci.image.manifest.v1+json")
            .send()
            .await
            .expect("GET the manifest");
        assert!(response.status().is_success(), "{response:?}");
        serde_json::from_slice(&response.bytes().await.unwrap()).expect("a JSON manifest")
    }

    /// The blob `digest` of repository `repo`.
    pub async fn blob(&self, repo: &str, digest: &str) -> Vec<u8> {
        let url = format!("http://127.0.0.1:{}/v2/{repo}/blobs/{digest}", self.port);
        let client = toolhost::internals::http_client::builder().build().unwrap();
        let response = client.get(url).send().await.expect("GET the blob");
        assert!(response.status().is_success(), "{response:?}");
        response.bytes().await.unwrap().to_vec()
    }

    /// Push `blobs` to `repo` (monolithic uploads) and `manifest` as
    /// `repo:tag`: what another tool than toolhost puts in a registry.
    pub async fn push_raw(&self, repo: &str, tag: &str, blobs: &[&[u8]], manifest: &serde_json::Value) {
        let client = toolhost::internals::http_client::builder().build().unwrap();
        let base = format!("http://127.0.0.1:{}", self.port);
        for blob in blobs {
            let started = client
                .post(format!("{base}/v2/{repo}/blobs/uploads/"))
                .send()
                .await
                .unwrap();
            let location = started.headers()["location"].to_str().unwrap().to_owned();
            let location = match location.starts_with("http") {
                true => location,
                false => format!("{base}{location}"),
            };
            let separator = if location.contains('?') { '&' } else { '?' };
            let digest = toolhost::supply::Digest::of(blob);
            let put = client
                .put(format!("{location}{separator}digest={digest}"))
                .body(blob.to_vec())
                .send()
                .await
                .unwrap();
            assert!(put.status().is_success(), "{put:?}");
        }
        let put = client
            .put(format!("{base}/v2/{repo}/manifests/{tag}"))
            .header("content-type", manifest["mediaType"].as_str().unwrap_or_default())
            .body(manifest.to_string())
            .send()
            .await
            .unwrap();
        let status = put.status();
        assert!(
            status.is_success(),
            "{status}: {}",
            put.text().await.unwrap_or_default()
        );
    }
}

/// What the fake registry answers a request.
pub enum FakeAnswer {
    /// 200, with these bytes.
    Bytes(Vec<u8>),
    /// This status, with bytes without end and without a length, until the
    /// client hangs up.
    Endless(u16),
    /// 200, with bytes without end and without a length, one every 100 ms:
    /// a registry that answers, but is never done.
    Trickle,
    /// 307 to this URL.
    Redirect(String),
}

/// A fake registry on loopback, over plain HTTP: `GET /v2/` answers 200,
/// any other request `answer(path)`. Its address (`127.0.0.1:PORT`).
pub fn fake_registry(answer: impl Fn(&str) -> FakeAnswer + Send + Sync + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let address = listener.local_addr().expect("address").to_string();
    let answer = Arc::new(answer);
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let answer = answer.clone();
            std::thread::spawn(move || serve_fake(client, &*answer));
        }
    });
    address
}

/// Answer one request on `stream`, then close it.
fn serve_fake(mut stream: TcpStream, answer: &dyn Fn(&str) -> FakeAnswer) {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let head = String::from_utf8_lossy(&head);
    let path = head.split_whitespace().nth(1).unwrap_or_default().to_owned();
    let answer = match path.as_str() {
        "/v2/" => FakeAnswer::Bytes(b"{}".to_vec()),
        _ => answer(&path),
    };
    let mut location = String::new();
    let (status, length, chunk, pause): (u16, Option<usize>, Vec<u8>, bool) = match answer {
        FakeAnswer::Bytes(body) => (200, Some(body.len()), body, false),
        FakeAnswer::Endless(status) => (status, None, vec![b' '; 64 * 1024], false),
        FakeAnswer::Trickle => (200, None, vec![b' '], true),
        FakeAnswer::Redirect(to) => {
            location = format!("location: {to}\r\n");
            (307, Some(0), Vec::new(), false)
        }
    };
    let mut reply = format!(
        "HTTP/1.1 {status} Fake\r\ncontent-type: application/vnd.oci.image.manifest.v1+json\r\nconnection: close\r\n{location}"
    );
    if let Some(length) = length {
        reply.push_str(&format!("content-length: {length}\r\n"));
    }
    reply.push_str("\r\n");
    if stream.write_all(reply.as_bytes()).is_ok() {
        match length {
            Some(_) => {
                let _ = stream.write_all(&chunk);
            }
            None => {
                while stream.write_all(&chunk).is_ok() {
                    if pause {
                        std::thread::sleep(Duration::from_millis(100));
                    }
                }
            }
        }
    }
    let _ = stream.shutdown(Shutdown::Both);
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.kill();
    }
}
