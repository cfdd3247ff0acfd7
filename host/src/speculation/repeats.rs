//! Whether a tool's exact repeats may be answered from the result its
//! earlier call left: only once repeats of it were seen to get the same
//! answer again.
//!
//! An agent that repeats a read it just made often does so because it
//! expects a change the host cannot see: a CI run progressing, an issue a
//! workflow opens. Serving that repeat from the earlier result would answer
//! with the world as it was (the vendor replay found a third of the served
//! repeats stale so). So the first repeats of each tool run for real and
//! their answer is compared with the one held ([`Repeats::compared`]): after
//! [`MIN_SAME`] answers that did not change, the tool's repeats are served
//! from what is held; once one changed without a write the host saw, never
//! again in this run. Results checked against their source before every use
//! (a native file read) are not this module's concern.
//!
//! Owns the per-tool record. Not: what is held (the cache), nor how two
//! answers are compared (the engine compares what the target encodes).

use std::collections::HashMap;
use std::sync::Mutex;

/// Repeats that got the same answer before a tool's repeats are served.
pub const MIN_SAME: u32 = 2;
/// Tools recorded; past this, a new tool's repeats are simply not served.
const MAX_TOOLS: usize = 1024;

#[derive(Default, Clone, Copy)]
struct Record {
    same: u32,
    changed: bool,
}

#[derive(Default)]
pub struct Repeats {
    inner: Mutex<HashMap<String, Record>>,
}

impl Repeats {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Record>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether `tool`'s exact repeats may be answered from what is held.
    pub fn trusted(&self, tool: &str) -> bool {
        self.lock()
            .get(tool)
            .is_some_and(|r| !r.changed && r.same >= MIN_SAME)
    }

    /// A repeat of `tool` ran for real: its answer was `same` as the one
    /// held, or not.
    pub fn compared(&self, tool: &str, same: bool) {
        let mut inner = self.lock();
        if inner.len() >= MAX_TOOLS && !inner.contains_key(tool) {
            return;
        }
        let record = inner.entry(tool.to_owned()).or_default();
        if same {
            record.same = record.same.saturating_add(1);
        } else {
            record.changed = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_are_trusted_after_unchanged_answers_and_never_once_one_changed() {
        let r = Repeats::default();
        assert!(!r.trusted("get"));
        for _ in 0..MIN_SAME {
            r.compared("get", true);
        }
        assert!(r.trusted("get"));
        r.compared("get", false);
        r.compared("get", true);
        assert!(!r.trusted("get"), "a change is never forgotten");
        for i in 0..MAX_TOOLS + 5 {
            r.compared(&format!("t{i}"), true);
        }
        assert_eq!(r.lock().len(), MAX_TOOLS);
    }
}
