//! Vendors' signatures, in the WebAssembly signature format of the tool
//! conventions as `wasmsign2` implements it (which handles components: a
//! component's sections are signed as a module's are). A signature is
//! embedded (a custom section at the start of the file) or detached
//! (`NAME.wasm.sig` beside the file, used when present). The user trusts
//! vendors' public keys, by name, in `[trust] keys` of toolhost.toml.
//!
//! Owns key files, signing and verifying; not when a signature is
//! required.

use std::collections::BTreeMap;
use std::io::Cursor;
use std::path::{Path, PathBuf};

use wasmsign2::{KeyPair, Module, PublicKey, SecretKey, WSError};

use super::SupplyError;

/// The public keys the user trusts, by the name they gave each.
#[derive(Default)]
pub(crate) struct TrustedKeys {
    keys: Vec<(String, PublicKey)>,
}

impl TrustedKeys {
    pub fn load(files: &BTreeMap<String, PathBuf>) -> Result<Self, SupplyError> {
        let keys = files
            .iter()
            .map(|(name, path)| {
                PublicKey::from_any_file(path)
                    .map(|key| (name.clone(), key))
                    .map_err(|e| SupplyError::Key {
                        name: name.clone(),
                        path: path.clone(),
                        message: e.to_string(),
                    })
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { keys })
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The name of the trusted key that signed `bytes` (the file at
    /// `path`), else why none did.
    pub(crate) fn verify(&self, path: &Path, bytes: &[u8]) -> Result<String, String> {
        let detached_path = detached_path(path);
        let detached = match crate::plugin_file::SIGNATURE.read(&detached_path) {
            Ok(signature) => Some(signature),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(format!("cannot read {}: {e}", detached_path.display())),
        };
        if self.keys.is_empty() {
            return Err("signatures are required, but [trust] keys in toolhost.toml names no key".into());
        }
        let mut unsigned = false;
        for (name, key) in &self.keys {
            match key.verify(&mut Cursor::new(bytes), detached.as_deref()) {
                Ok(()) => return Ok(name.clone()),
                Err(WSError::NoSignatures) => unsigned = true,
                Err(_) => {}
            }
        }
        Err(match (unsigned, detached.is_some()) {
            (true, _) => format!(
                "is not signed (no embedded signature, no {}), and require_signatures = true: \
                 ask its vendor for a signed file",
                detached_path.display()
            ),
            (false, true) => format!(
                "its signature {} verifies with no key in [trust] keys: signed by a key you do not \
                 trust, or the file changed since it was signed",
                detached_path.display()
            ),
            (false, false) => "its signature verifies with no key in [trust] keys: signed by a key \
                               you do not trust, or the file changed since it was signed"
                .into(),
        })
    }
}

/// Where the detached signature of `wasm` is looked for: `NAME.wasm.sig`.
pub fn detached_path(wasm: &Path) -> PathBuf {
    let mut name = wasm.as_os_str().to_owned();
    name.push(".sig");
    PathBuf::from(name)
}

/// Make a key pair: `NAME.key` (secret, mode 0600) and `NAME.pub` in `dir`.
/// Refuses to replace an existing key.
pub fn keygen(dir: &Path, name: &str) -> Result<(PathBuf, PathBuf), SupplyError> {
    let (secret, public) = (dir.join(format!("{name}.key")), dir.join(format!("{name}.pub")));
    let pair = KeyPair::generate();
    let write = |path: &Path, text: &str, mode: u32| {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(path)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .map_err(|source| SupplyError::Write {
                path: path.into(),
                source,
            })
    };
    write(&secret, &pair.sk.to_pem(), 0o600)?;
    write(&public, &pair.pk.to_pem(), 0o644)?;
    Ok((secret, public))
}

/// Sign the component at `file` with the secret key at `key`: embedded
/// (the file is replaced by the signed one) or detached (written to
/// `FILE.sig`, the file left as it is). Returns the file written.
pub fn sign(file: &Path, key: &Path, detached: bool) -> Result<PathBuf, SupplyError> {
    let bytes = std::fs::read(file).map_err(|source| SupplyError::Read {
        path: file.into(),
        source,
    })?;
    let (out, bytes) = if detached {
        let signed = signed_module(file, &bytes, key)?;
        let (_, signature) = signed.detach_signature().map_err(|e| sign_error(file, e))?;
        (detached_path(file), signature)
    } else {
        (file.to_owned(), signed(file, &bytes, key)?)
    };
    crate::atomic_file::replace(&out, &bytes).map_err(|source| SupplyError::Write {
        path: out.clone(),
        source,
    })?;
    Ok(out)
}

/// `bytes` (the component of `file`, named in errors) with a signature by
/// the secret key at `key` embedded.
pub fn signed(file: &Path, bytes: &[u8], key: &Path) -> Result<Vec<u8>, SupplyError> {
    let mut out = Vec::new();
    signed_module(file, bytes, key)?
        .serialize(&mut out)
        .map_err(|e| sign_error(file, e))?;
    Ok(out)
}

fn signed_module(file: &Path, bytes: &[u8], key: &Path) -> Result<Module, SupplyError> {
    let secret = SecretKey::from_any_file(key).map_err(|e| SupplyError::Key {
        name: "secret".into(),
        path: key.into(),
        message: e.to_string(),
    })?;
    let module = Module::deserialize(&mut Cursor::new(bytes)).map_err(|e| sign_error(file, e))?;
    secret.sign(module, None).map_err(|e| sign_error(file, e))
}

fn sign_error(file: &Path, e: WSError) -> SupplyError {
    SupplyError::Sign {
        path: file.into(),
        message: e.to_string(),
    }
}
