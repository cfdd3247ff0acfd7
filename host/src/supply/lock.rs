//! The lock file (`plugins.lock` in the plugin directory, unless
//! `[trust] lock` says otherwise): for each plugin, the digest of its
//! component, the digest of its manifest in effect (the sidecar with its
//! `[plugin.NAME]` settings laid over it, so a change in either shows),
//! and the authority in effect. When it exists, a plugin loads only if it
//! matches; a mismatch names the file and what changed.
//!
//! A plugin installed from a registry (`toolhost add`) also records where
//! it came from ([`Source`]: the reference and the manifest digest it
//! resolved to), which `toolhost update` resolves again.
//!
//! Written by `toolhost lock`, `add` and `update`, whole (replaced
//! atomically); read at every load. Owns the format and the comparison;
//! not where it is enforced.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::SupplyError;
use super::consent::Consent;
use super::facts::Facts;
use crate::plugin_file::Digest;

/// The version of the format written.
const VERSION: u32 = 1;

/// The lock file: the digest each plugin must have (`toolhost lock`).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lock {
    /// The lock file's format.
    pub version: u32,
    /// By plugin name.
    #[serde(default)]
    pub plugins: BTreeMap<String, Locked>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Locked {
    /// The file name in the plugin directory.
    pub file: String,
    pub wasm: Digest,
    pub manifest: Digest,
    /// Where it was installed from, if from a registry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    pub consent: Consent,
}

/// A registry reference a plugin was installed from, and the digest of the
/// OCI manifest it resolved to then.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// As given to `toolhost add`, tag and all.
    pub reference: String,
    /// Of the OCI manifest the reference resolved to (`sha256:HEX`).
    pub digest: String,
}

impl Locked {
    fn of(facts: &Facts, source: Option<Source>) -> Self {
        Self {
            file: facts.file_name(),
            wasm: facts.wasm.clone(),
            manifest: facts.manifest.clone(),
            source,
            consent: facts.consent.clone(),
        }
    }
}

impl Lock {
    /// A lock of exactly these plugins.
    pub fn of(facts: &[Facts]) -> Self {
        let plugins = facts
            .iter()
            .map(|f| (f.name.clone(), Locked::of(f, None)))
            .collect();
        Self {
            version: VERSION,
            plugins,
        }
    }

    /// Record `facts` (from `source`), in place of the plugin's entry.
    pub fn record(&mut self, facts: &Facts, source: Option<Source>) {
        self.plugins.insert(facts.name.clone(), Locked::of(facts, source));
    }

    /// Keep the source `previous` recorded of each plugin whose component
    /// is still the one it recorded: a component changed by hand is no
    /// longer what the registry served.
    pub fn keep_sources(&mut self, previous: &Lock) {
        for (name, locked) in &mut self.plugins {
            if let Some(before) = previous.plugins.get(name).filter(|b| b.wasm == locked.wasm) {
                locked.source.clone_from(&before.source);
            }
        }
    }

    /// Read `path`; `None` if there is no such file.
    pub fn read(path: &Path) -> Result<Option<Self>, SupplyError> {
        let Some(text) = super::read_optional(path)? else {
            return Ok(None);
        };
        let lock: Self = toml::from_str(&text).map_err(|e| SupplyError::Malformed {
            path: path.into(),
            message: e.to_string(),
        })?;
        if lock.version != VERSION {
            return Err(SupplyError::Malformed {
                path: path.into(),
                message: format!(
                    "version {} is not one this toolhost reads ({VERSION}); run `toolhost lock` again",
                    lock.version
                ),
            });
        }
        Ok(Some(lock))
    }

    /// Write the lock file to `path`.
    pub fn write(&self, path: &Path) -> Result<(), SupplyError> {
        let text = format!(
            "# Written by `toolhost lock`: only these plugins, with these digests and\n\
             # this authority, load. Run `toolhost lock` again to accept a change.\n{}",
            toml::to_string(self).expect("a lock serializes")
        );
        crate::atomic_file::replace(path, text.as_bytes()).map_err(|source| SupplyError::Write {
            path: PathBuf::from(path),
            source,
        })
    }

    /// Whether `facts` match this lock (at `path`), else what differs.
    pub(crate) fn check(&self, path: &Path, facts: &Facts) -> Result<(), String> {
        let lock = path.display();
        let Some(locked) = self.plugins.get(&facts.name) else {
            return Err(format!(
                "plugin `{}` is not in {lock}: it loads once it is locked (`toolhost lock`)",
                facts.name
            ));
        };
        let mut changes = Vec::new();
        if locked.file != facts.file_name() {
            changes.push(format!("it was locked as {}", locked.file));
        }
        if locked.wasm != facts.wasm {
            changes.push(format!(
                "its component changed (locked {}, now {})",
                locked.wasm.short(),
                facts.wasm.short()
            ));
        }
        if locked.manifest != facts.manifest {
            changes.push("its manifest or its [plugin] settings in toolhost.toml changed".to_owned());
        }
        if changes.is_empty() {
            return Ok(());
        }
        let wider = facts.consent.widening(&locked.consent);
        let authority = match wider.is_empty() {
            true => "its authority is within the locked one".to_owned(),
            false => format!("it is now wider: it {}", wider.join(", ")),
        };
        Err(format!(
            "does not match {lock}: {}; {authority}. If the change is yours, run `toolhost lock`",
            changes.join(", ")
        ))
    }
}
