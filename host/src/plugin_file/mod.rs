//! One plugin file on disk, as it is checked before any of its code is
//! compiled or run: whether another user could change it (`safe_path`),
//! and its bytes read once and whole ([`ComponentFile`]), with their
//! [`Digest`] and the interfaces the component imports, read from the
//! component's own import section (wasmparser), not from what a manifest
//! or the plugin says of itself.
//!
//! A leaf under both sides that use it: the loader (`plugin`), which
//! compiles exactly the bytes read and keeps its code cache in a safe
//! directory, and the supply checks (`supply`), which decide from these
//! facts what may load. Not here: what is refused because of them.
//!
//! A file that changes while it is read (its size, modification or change
//! time, or inode differ before and after) is being written: it is
//! refused for now, and loads once it is complete (the next reload). One
//! over its cap is refused unread ([`Capped`]).

mod safe_path;

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use sha2::{Digest as _, Sha256};

pub(crate) use safe_path::check_dir as check_safe_dir;
pub use safe_path::{UnsafePath, check as check_safe_path};

/// A SHA-256 digest, written `sha256:HEX`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Digest(String);

impl Digest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self::of_sha256(&Sha256::digest(bytes).into())
    }

    /// The digest whose SHA-256 is `sha`.
    pub(crate) fn of_sha256(sha: &[u8; 32]) -> Self {
        Self(format!("sha256:{}", hex::encode(sha)))
    }

    /// The first 12 hex digits, for messages.
    pub fn short(&self) -> &str {
        let end = self.0.len().min("sha256:".len() + 12);
        &self.0[..end]
    }
}

impl std::fmt::Display for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A plugin file read whole.
pub struct ComponentFile {
    pub bytes: Vec<u8>,
    pub digest: Digest,
    /// The digest's bytes, for the code cache.
    pub(crate) sha256: [u8; 32],
}

impl ComponentFile {
    pub(crate) fn read(path: &Path) -> Result<Self, String> {
        let stamp = |meta: &std::fs::Metadata| {
            (
                meta.len(),
                meta.ino(),
                meta.mtime(),
                meta.mtime_nsec(),
                meta.ctime(),
                meta.ctime_nsec(),
            )
        };
        let cannot = |e: std::io::Error| format!("cannot read: {e}");
        let before = std::fs::metadata(path).map_err(cannot)?;
        let bytes = COMPONENT.read(path).map_err(cannot)?;
        let after = std::fs::metadata(path).map_err(cannot)?;
        if stamp(&before) != stamp(&after) || bytes.len() as u64 != after.len() {
            return Err(
                "is being written (it changed while it was read): it loads once it is complete".into(),
            );
        }
        let sha256: [u8; 32] = Sha256::digest(&bytes).into();
        let digest = Digest::of_sha256(&sha256);
        Ok(Self {
            bytes,
            digest,
            sha256,
        })
    }

    /// The names of the component's own imports (`wasi:cli/environment@0.2.3`,
    /// `toolhost:plugin/http@0.1.0`), in order; those of components and
    /// modules nested in it are theirs to satisfy from it, not the host.
    pub(crate) fn imports(&self) -> Result<Vec<String>, String> {
        Ok(interfaces(&self.bytes)?.imports)
    }
}

/// A file that comes with a plugin (the component, its manifest, its
/// detached signature), and the most of it the host reads: each is read
/// whole before anything checks it, so a file of gigabytes would be held
/// whole, one such file each.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Capped {
    what: &'static str,
    cap: u64,
}

/// A plugin's component, [`crate::bounds::MAX_COMPONENT_BYTES`].
pub(crate) const COMPONENT: Capped = Capped {
    what: "a plugin component",
    cap: crate::bounds::MAX_COMPONENT_BYTES,
};
/// A plugin's sidecar manifest, [`crate::bounds::MAX_MANIFEST_BYTES`].
pub(crate) const MANIFEST: Capped = Capped {
    what: "a manifest",
    cap: crate::bounds::MAX_MANIFEST_BYTES,
};
/// A component's detached signature, [`crate::bounds::MAX_SIGNATURE_BYTES`].
pub(crate) const SIGNATURE: Capped = Capped {
    what: "a signature",
    cap: crate::bounds::MAX_SIGNATURE_BYTES,
};

impl Capped {
    /// Why a file of `size` bytes is not read: it is over the cap.
    pub fn refusal(self, size: u64) -> Option<String> {
        // Each in MiB from one on, else in KiB, rounded up.
        let shown = |bytes: u64| match bytes >= 1 << 20 {
            true => format!("{} MiB", bytes.div_ceil(1 << 20)),
            false => format!("{} KiB", bytes.div_ceil(1 << 10)),
        };
        (size > self.cap).then(|| {
            format!(
                "the file is {}, over the {} {} may be",
                shown(size),
                shown(self.cap),
                self.what
            )
        })
    }

    /// The whole file at `path`: refused unread if it is over the cap, and
    /// if it grows past it while it is read, with no more than that read.
    pub fn read(self, path: &Path) -> std::io::Result<Vec<u8>> {
        use std::io::Read;
        let refused = |size| {
            std::io::Error::new(
                std::io::ErrorKind::FileTooLarge,
                self.refusal(size).unwrap_or_default(),
            )
        };
        let file = std::fs::File::open(path)?;
        let size = file.metadata()?.len();
        if size > self.cap {
            return Err(refused(size));
        }
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        file.take(self.cap + 1).read_to_end(&mut bytes)?;
        match bytes.len() as u64 > self.cap {
            true => Err(refused(bytes.len() as u64)),
            false => Ok(bytes),
        }
    }
}

/// What a component imports and exports, by name, at its top level.
pub struct Interfaces {
    /// In order, as [`ComponentFile::imports`] reads them.
    pub imports: Vec<String>,
    /// In order.
    pub exports: Vec<String>,
}

/// The top-level imports and exports of the component `bytes`; an error
/// for a core module or bytes that do not parse.
pub fn interfaces(bytes: &[u8]) -> Result<Interfaces, String> {
    let (mut imports, mut exports) = (Vec::new(), Vec::new());
    let mut depth = 0usize;
    let unreadable =
        |e: wasmparser::BinaryReaderError| format!("cannot read the component's interfaces: {e}");
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        use wasmparser::Payload;
        match payload.map_err(unreadable)? {
            Payload::Version { encoding, .. }
                if depth == 0 && encoding != wasmparser::Encoding::Component =>
            {
                return Err("is a core WebAssembly module, not a component".into());
            }
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentImportSection(reader) if depth == 0 => {
                for import in reader {
                    imports.push(named("an import", import.map_err(unreadable)?.name.name)?);
                }
            }
            Payload::ComponentExportSection(reader) if depth == 0 => {
                for export in reader {
                    exports.push(named("an export", export.map_err(unreadable)?.name.name)?);
                }
            }
            _ => {}
        }
    }
    Ok(Interfaces { imports, exports })
}

/// `name`, if it is a name the component model allows: these names are
/// shown to the user (`toolhost approve`) and written to the lock and the
/// approvals before the component is compiled, which would refuse one
/// holding a terminal's escape codes or a line of its own; so are they.
fn named(what: &str, name: &str) -> Result<String, String> {
    match wasmparser::names::ComponentName::new(name, 0) {
        Ok(_) => Ok(name.to_owned()),
        Err(_) => Err(format!(
            "has {what} named {}, which is no name the component model allows",
            crate::bounds::shown(name)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file one byte over the cap is refused unread, naming its size; one
    /// under it is read whole. (The loader tells most such files from their
    /// size before it gets here: this is the read's own bound, for a file
    /// that grew since.)
    #[test]
    fn a_file_over_the_cap_is_refused_and_one_under_it_read() {
        let dir = tempfile::tempdir().unwrap();
        let over = dir.path().join("over.wasm");
        std::fs::File::create(&over)
            .unwrap()
            .set_len(crate::bounds::MAX_COMPONENT_BYTES + 1)
            .unwrap();
        let refused = COMPONENT.read(&over).unwrap_err();
        assert_eq!(refused.kind(), std::io::ErrorKind::FileTooLarge);
        assert_eq!(
            refused.to_string(),
            "the file is 129 MiB, over the 128 MiB a plugin component may be"
        );
        let error = ComponentFile::read(&over).err().expect("refused");
        assert!(error.starts_with("cannot read: the file is 129 MiB"), "{error}");

        assert_eq!(
            MANIFEST.refusal((300 << 10) + 1).unwrap(),
            "the file is 301 KiB, over the 256 KiB a manifest may be"
        );
        assert_eq!(SIGNATURE.refusal(64 << 10), None);

        let under = dir.path().join("under.wasm");
        std::fs::write(&under, b"\0asm").unwrap();
        assert_eq!(COMPONENT.read(&under).unwrap(), b"\0asm");
    }
}
