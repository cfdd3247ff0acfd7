//! Replacing a file whole, so that a reader sees the old content or the new,
//! never half of it: write a temporary file beside it, then rename it into
//! place. Used for the statistics file and the pin file (the native `write`
//! and `edit` do the same through the tool root's directory handles).

use std::io::Write;
use std::path::Path;

/// Write `bytes` to `path`, creating missing directories. The file keeps
/// the mode of the one it replaces, or gets the usual 0644.
pub fn replace(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    // A temporary file is private.
    let mode = match std::fs::metadata(path) {
        Ok(meta) => meta.permissions(),
        Err(_) => std::os::unix::fs::PermissionsExt::from_mode(0o644),
    };
    tmp.as_file().set_permissions(mode)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
