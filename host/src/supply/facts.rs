//! What the supply checks know of one plugin file: its name and path, the
//! digests of its component and of its manifest in effect, and its
//! authority ([`Consent`]).

use std::path::{Path, PathBuf};

use super::consent::Consent;
use crate::plugin::Manifest;
use crate::plugin_file::{ComponentFile, Digest};

#[derive(Debug, Clone)]
pub struct Facts {
    pub name: String,
    pub path: PathBuf,
    pub wasm: Digest,
    /// Of the manifest in effect, serialized: a change to the sidecar or to
    /// `[plugin.NAME]` in toolhost.toml changes it, a comment does not.
    pub manifest: Digest,
    pub consent: Consent,
}

impl Facts {
    /// Read the file at `path` (plugin `name`, under `manifest`), and
    /// return its facts with its contents.
    pub(crate) fn gather(
        path: &Path,
        name: &str,
        manifest: &Manifest,
    ) -> Result<(Self, ComponentFile), String> {
        let file = ComponentFile::read(path)?;
        let imports = file.imports()?;
        let consent = Consent::of(&imports, manifest, file.bytes.len())?;
        let manifest = serde_json::to_vec(manifest).map_err(|e| format!("manifest: {e}"))?;
        let facts = Self {
            name: name.to_owned(),
            path: path.to_owned(),
            wasm: file.digest.clone(),
            manifest: Digest::of(&manifest),
            consent,
        };
        Ok((facts, file))
    }

    pub fn file_name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}
