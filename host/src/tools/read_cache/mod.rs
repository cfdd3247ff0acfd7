//! The cache of native reads, its native half: a `read` keeps its file
//! whole ([`FileText`]), so any slice of it is answered from the cache as
//! a direct read answers it; a file held is served only while it is still
//! the one read (`fresh`: its stamp, or its content's digest); and the
//! directories of the files held are watched ([`Changes`]), the changes
//! reported in settled batches ([`settled`]), so a file that changes
//! behind the host's back is read again before the agent asks.
//!
//! The rest of the cache is not native and lives with what it serves: the
//! entries themselves are speculation's cache (a real read's file is
//! *kept*, `Engine::keep`, and found as `Lookup::Kept`, counted apart from
//! prefetch hits), and the pipeline wires the two (`pipeline::call` keeps
//! the file of a real read, `pipeline::prefetch` asks [`FileText`] whether
//! it is current and follows its directory, `pipeline::catalog` starts the
//! watch with each build and hands each settled batch to the engine).
//! Not here: reading a file (`root`), answering a slice (`files`).

mod changes;
mod fresh;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::mpsc;

use super::{Root, ToolError};
use fresh::Seen;

pub use changes::Changes;

/// How long the changes reported must pause before the files are read
/// again: an edit is often several writes, or several edits in a row.
const SETTLE: Duration = Duration::from_millis(30);

/// A whole text file as `read` loaded it: any slice of it is answered from
/// here exactly as a direct `read` of that slice would be.
#[derive(Debug, Clone)]
pub struct FileText {
    /// Its path relative to the root.
    pub(in crate::tools) rel: PathBuf,
    pub(in crate::tools) text: String,
    seen: Seen,
}

impl FileText {
    /// Bytes held, for a cache's bound.
    pub fn size(&self) -> usize {
        self.text.len()
    }

    /// Its path relative to the root, as results give it.
    pub fn path(&self) -> String {
        Root::display(&self.rel)
    }

    /// Whether the file on disk is still the one loaded.
    pub fn is_current(&self, root: &Root) -> bool {
        self.seen.still(root, &self.rel)
    }
}

/// The whole of the text file `given` names.
pub fn load(root: &Root, given: &str) -> Result<FileText, ToolError> {
    let (bytes, meta, rel) = root.read(given)?;
    if bytes.contains(&0) {
        return Err(ToolError::Failed(format!("{given}: a binary file, not text")));
    }
    let seen = Seen::new(&meta, &bytes);
    Ok(FileText {
        rel,
        text: String::from_utf8_lossy(&bytes).into_owned(),
        seen,
    })
}

/// A watch for the files below `root` that change, if the system grants
/// one (without, nothing is read again ahead of time).
pub fn watch(root: &Root) -> Option<(Changes, mpsc::Receiver<String>)> {
    Changes::new(root)
        .map_err(|e| tracing::debug!("files that change will not be read again ahead of time: {e}"))
        .ok()
}

/// The next batch of paths `changed` reports, once the changes settle;
/// `None` when the watch is gone.
pub async fn settled(changed: &mut mpsc::Receiver<String>) -> Option<BTreeSet<String>> {
    let mut paths = BTreeSet::from([changed.recv().await?]);
    // A batch is bounded too, so a tree that never settles is still
    // looked at.
    while paths.len() < Changes::MAX_PENDING
        && let Ok(next) = tokio::time::timeout(SETTLE, changed.recv()).await
    {
        paths.insert(next?);
    }
    Some(paths)
}
