//! The backend model the replay benches share: a latency for each call,
//! drawn from a range by a hash of the call (so the same call costs the same
//! with speculation off and on), the native tools' ranges (a slow or remote
//! file system), and file stamps old enough for the host to trust.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::Path;
use std::time::{Duration, SystemTime};

use serde_json::{Map, Value};

/// `lo..hi` ms scaled, picked by a hash of `what`.
pub fn latency(what: &impl Hash, lo: u64, hi: u64, scale: f64) -> Duration {
    let mut h = DefaultHasher::new();
    what.hash(&mut h);
    let ms = lo + h.finish() % (hi - lo + 1);
    Duration::from_secs_f64(ms as f64 * scale / 1000.0)
}

/// What one native tool call costs on the modelled file system.
pub fn native_latency(tool: &str, args: &Map<String, Value>, scale: f64) -> Duration {
    let (lo, hi) = match tool {
        "grep" => (150, 400),
        "glob" => (80, 200),
        "read" => (50, 150),
        _ => (50, 120),
    };
    latency(&(tool, Value::Object(args.clone()).to_string()), lo, hi, scale)
}

/// Date `path` an hour back: a file modified a moment ago is never taken as
/// current by the host (its stamp could still change unseen).
pub fn backdate(path: &Path) -> std::io::Result<()> {
    let hour_ago = SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(path)?
        .set_modified(hour_ago)
}
