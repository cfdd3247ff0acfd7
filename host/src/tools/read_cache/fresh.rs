//! Whether a file is still what a read of it saw, for serving that read
//! again from a cache.
//!
//! A read records its file's [`Stamp`] (device, inode, length, mtime and
//! ctime), taken from the open file before its bytes are read. Every write
//! moves the ctime to the current time, and nothing but the clock can set
//! it back (unlike the mtime, which `cp -p`, `rsync -t` or `touch -r`
//! restore), and a file replaced by a rename has another inode: so while the
//! stamp is unchanged, so is the file. The exception is a write within the
//! same timestamp tick as the one the stamp saw: a stamp whose ctime was
//! this recent when it was taken proves nothing (git's "racily clean"
//! rule), and the read is then trusted only through the digest of its
//! content, re-read and compared, where the file is small enough for that
//! to be cheap; a larger racy file is never taken as unchanged.
//!
//! It owns that judgement, not the reading itself (`files`).

use std::io::Read;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cap_std::fs::{Metadata, MetadataExt};
use sha2::{Digest, Sha256};

use super::Root;

/// A ctime this close to the time its stamp is taken may be shared by a
/// write that follows, unseen.
const RACY: Duration = Duration::from_millis(100);
/// Files up to this size are judged by their content's digest when their
/// stamp cannot be trusted.
const DIGEST_MAX: u64 = 256 << 10;

/// What a file's metadata looked like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    fn of(meta: &Metadata) -> Self {
        Self {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// Whether the ctime is old enough, now, for a later write to move it.
    fn settled(&self, now: SystemTime) -> bool {
        let (secs, nanos) = self.ctime;
        let Ok(secs) = u64::try_from(secs) else {
            return false;
        };
        let ctime = UNIX_EPOCH + Duration::new(secs, u32::try_from(nanos).unwrap_or(0));
        now.duration_since(ctime).is_ok_and(|age| age >= RACY)
    }
}

/// What a read saw of its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    stamp: Stamp,
    /// The content's digest, kept only when the stamp alone proves nothing.
    check: Check,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Check {
    /// The stamp was settled: an unchanged stamp is an unchanged file.
    Stamp,
    /// The stamp was racy; the content had this digest.
    Digest([u8; 32]),
    /// Racy and too large to digest: never taken as unchanged.
    Never,
}

impl Seen {
    /// `meta` is the open file's, taken before `bytes` (all of it) were read.
    pub fn new(meta: &Metadata, bytes: &[u8]) -> Self {
        let stamp = Stamp::of(meta);
        let check = if stamp.settled(SystemTime::now()) {
            Check::Stamp
        } else if bytes.len() as u64 <= DIGEST_MAX {
            Check::Digest(Sha256::digest(bytes).into())
        } else {
            Check::Never
        };
        Self { stamp, check }
    }

    /// Whether the file at `rel` (relative to `root`) is still the one seen.
    pub fn still(&self, root: &Root, rel: &Path) -> bool {
        let path = Root::display(rel);
        let Ok(meta) = root.metadata(&path) else {
            return false;
        };
        if Stamp::of(&meta) != self.stamp {
            return false;
        }
        match &self.check {
            Check::Stamp => true,
            Check::Never => false,
            Check::Digest(digest) => {
                let Ok((file, _, _)) = root.open_file(&path) else {
                    return false;
                };
                let mut bytes = Vec::new();
                // One byte over the length seen tells a file that grew.
                let read = file.take(self.stamp.len + 1).read_to_end(&mut bytes);
                read.is_ok() && Sha256::digest(&bytes).as_slice() == digest
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(root: &Root, name: &str) -> Seen {
        let (mut file, meta, _) = root.open_file(name).unwrap();
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).unwrap();
        Seen::new(&meta, &bytes)
    }

    #[test]
    fn a_fresh_small_file_is_judged_by_its_content() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one").unwrap();
        let root = Root::new(dir.path()).unwrap();
        let before = seen(&root, "a.txt");
        assert!(matches!(before.check, Check::Digest(_)), "just written: racy");
        assert!(before.still(&root, Path::new("a.txt")));
        // Same length, same tick or not: the digest tells.
        let file = std::fs::File::options()
            .write(true)
            .open(dir.path().join("a.txt"))
            .unwrap();
        std::os::unix::fs::FileExt::write_at(&file, b"two", 0).unwrap();
        assert!(!before.still(&root, Path::new("a.txt")));
    }

    #[test]
    fn a_settled_stamp_is_judged_by_the_stamp_alone() {
        let old = Stamp {
            dev: 1,
            ino: 2,
            len: 3,
            mtime: (1_000, 0),
            ctime: (1_000, 0),
        };
        assert!(old.settled(SystemTime::now()));
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        let recent = Stamp {
            ctime: (now.as_secs() as i64, i64::from(now.subsec_nanos())),
            ..old
        };
        assert!(!recent.settled(SystemTime::now()));
        assert!(
            !Stamp {
                ctime: (-1, 0),
                ..old
            }
            .settled(SystemTime::now())
        );
    }
}
