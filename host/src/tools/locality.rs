//! Whether quick file work may run where its call is, rather than on a
//! blocking thread (`work`): only while the root is on a local file system
//! with nothing mounted beneath it.
//!
//! Reading a small file from a local disk takes microseconds; handing the
//! read to a blocking thread and back costs tens (66 of a `read`'s 75 µs
//! on a 2-core virtual machine, by the `front` bench). What the hand-off
//! buys is an answer when the disk never answers, and that is the failure
//! of a network or user-space (FUSE) file system, not of a local one. So
//! quick work runs in place while the root's file system is of a local
//! kind and no mount lies beneath the root, as last checked. The check
//! reads the mount table, off the async workers, again every [`RECHECK`]:
//! a network file system mounted beneath the root later is heeded within
//! that time.
//!
//! It owns the check and its answer, not what runs where (`work`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long a check's answer holds.
pub(super) const RECHECK: Duration = Duration::from_secs(5);

/// File systems whose operations return, whatever else happens: on a disk
/// or in memory (`statfs`'s magic numbers, `linux/magic.h`).
const LOCAL_KINDS: [i64; 8] = [
    0xEF53,      // ext2, ext3, ext4
    0x5846_5342, // xfs
    0x9123_683E, // btrfs
    0x0102_1994, // tmpfs
    0x794C_7630, // overlayfs
    0x2FC1_2FC1, // zfs
    0xF2F5_2010, // f2fs
    0x8584_58F6, // ramfs
];

/// The last answer for one root.
pub(super) struct Locality {
    root: PathBuf,
    /// What every stamp counts from.
    born: Instant,
    /// The last answer, read on every quick call without a lock: 0 before
    /// the first check, else the microseconds from `born` to the check,
    /// plus one, shifted left once, with the answer in the low bit.
    checked: AtomicU64,
}

impl Locality {
    /// Unchecked: work runs on the blocking threads until a check says
    /// otherwise.
    pub fn new(root: &Path) -> Self {
        Self {
            root: root.to_owned(),
            born: Instant::now(),
            checked: AtomicU64::new(0),
        }
    }

    /// Whether quick work may run in place, as last checked; `None` when a
    /// check is due ([`Locality::check`], which blocks).
    pub fn in_place(&self) -> Option<bool> {
        let checked = self.checked.load(Ordering::Acquire);
        let at = Duration::from_micros((checked >> 1).checked_sub(1)?);
        (self.born.elapsed().saturating_sub(at) < RECHECK).then_some(checked & 1 == 1)
    }

    /// Check now, and keep the answer. Blocks: it asks the root's file
    /// system and reads the mount table.
    pub fn check(&self) -> bool {
        let local = is_local(&self.root)
            && std::fs::read_to_string("/proc/self/mountinfo")
                .is_ok_and(|table| !mounted_beneath(&table, &self.root));
        let at = u64::try_from(self.born.elapsed().as_micros()).unwrap_or(u64::MAX >> 2);
        self.checked
            .store((at + 1) << 1 | u64::from(local), Ordering::Release);
        local
    }
}

/// Whether `dir`'s file system is of a local kind.
// `f_type` is an i64 here and narrower on other targets.
#[allow(clippy::unnecessary_cast)]
fn is_local(dir: &Path) -> bool {
    rustix::fs::statfs(dir).is_ok_and(|fs| LOCAL_KINDS.contains(&(fs.f_type as i64)))
}

/// Whether the mount table `mountinfo` (`/proc/self/mountinfo`) has a mount
/// point beneath `root` (`root` itself is not beneath it).
fn mounted_beneath(mountinfo: &str, root: &Path) -> bool {
    mountinfo
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(unescape)
        .any(|point| {
            let point = Path::new(&point);
            point != root && point.starts_with(root)
        })
}

/// A mount table's field, whose space, tab, newline and backslash are
/// written in octal (`\040`).
fn unescape(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut rest = field;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let code = rest
            .get(at + 1..at + 4)
            .and_then(|o| u8::from_str_radix(o, 8).ok());
        match code {
            Some(byte) => {
                out.push(char::from(byte));
                rest = &rest[at + 4..];
            }
            None => {
                out.push('\\');
                rest = &rest[at + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
23 22 0:21 / /proc rw,nosuid shared:2 - proc proc rw
41 22 0:35 / /srv/work rw shared:3 - ext4 /dev/sdb1 rw
42 41 0:36 / /srv/work/my\\040share rw shared:4 - nfs4 server:/export rw
";

    #[test]
    fn a_mount_beneath_the_root_is_found_and_the_roots_own_is_not() {
        assert!(mounted_beneath(TABLE, Path::new("/srv/work")));
        assert!(mounted_beneath(TABLE, Path::new("/srv")));
        assert!(!mounted_beneath(TABLE, Path::new("/srv/work/my share")));
        assert!(!mounted_beneath(TABLE, Path::new("/srv/work/src")));
        // A sibling whose name merely starts the same is not beneath.
        assert!(!mounted_beneath(TABLE, Path::new("/srv/wor")));
    }

    #[test]
    fn escapes_in_the_table_are_read() {
        assert_eq!(unescape("/a\\040b\\134c"), "/a b\\c");
        assert_eq!(unescape("/odd\\x"), "/odd\\x");
    }

    #[test]
    fn an_answer_holds_until_it_is_due_again() {
        let dir = tempfile::tempdir().unwrap();
        let mut locality = Locality::new(dir.path());
        let local = locality.check();
        assert_eq!(locality.in_place(), Some(local));
        // The same answer, given longer ago than it holds.
        let Some(earlier) = Instant::now().checked_sub(RECHECK * 2) else {
            return;
        };
        locality.born = earlier;
        locality
            .checked
            .store((1 << 1) | u64::from(local), Ordering::Release);
        assert_eq!(locality.in_place(), None, "due again");
    }

    #[test]
    fn a_root_on_no_local_file_system_is_never_worked_in_place() {
        let proc = Locality::new(Path::new("/proc"));
        assert_eq!(proc.in_place(), None, "unchecked");
        assert!(!proc.check());
        assert_eq!(proc.in_place(), Some(false));
    }
}
