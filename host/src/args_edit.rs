//! Call arguments lent to one plugin for one call, through the
//! `tool-args` handle: what `prepare-arguments`, `before-call` (read-only)
//! and `transform-args` read and write.
//!
//! This module owns the checks on each write: a read-only handle refuses
//! every one, a value is bounded by the plugin's output cap, the
//! arguments hold at most `bounds::MAX_PROPERTIES` keys, and everything
//! the plugins of one call write together fits the room the handle is lent
//! with (`bounds::MAX_ARGS_GROWTH` at most). Not here: the schema the
//! arguments are validated against (`schema`), the WASM plumbing
//! (`plugin`), or the order the plugins run in (`enrich`).

use serde_json::{Map, Value};

use crate::bounds::{MAX_ARGS_GROWTH, MAX_PROPERTIES};
use crate::schema::{EditError, parse_json};

/// Call arguments lent to one plugin for one call.
#[derive(Debug)]
pub struct ArgsEdit {
    pub args: Map<String, Value>,
    read_only: bool,
    max_value_bytes: usize,
    /// Bytes (keys and values) the plugin may still write: the arguments
    /// never grow by more than this, however many `set`s it makes.
    room: usize,
}

impl ArgsEdit {
    pub fn new(args: Map<String, Value>, read_only: bool, max_value_bytes: usize) -> Self {
        Self {
            args,
            read_only,
            max_value_bytes,
            room: MAX_ARGS_GROWTH,
        }
    }

    /// The same, with only `room` bytes to write (what the plugins before
    /// it in a chain left).
    pub fn within(mut self, room: usize) -> Self {
        self.room = room;
        self
    }

    /// Bytes the plugin may still write.
    pub fn room(&self) -> usize {
        self.room
    }

    pub fn get(&self, key: &str) -> Option<String> {
        self.args.get(key).map(json_text)
    }

    /// Set `key` to the value `value_json` (JSON text). The key is taken by
    /// value: the host import already owns it, and this is the hot path of
    /// `transform-args`.
    pub fn set(&mut self, key: String, value_json: &str) -> Result<(), EditError> {
        if self.read_only {
            return Err(EditError::ReadOnly);
        }
        if value_json.len() > self.max_value_bytes {
            return Err(EditError::TooLarge(value_json.len() as u64));
        }
        let written = key.len() + value_json.len();
        if written > self.room {
            return Err(EditError::TooLarge(written as u64));
        }
        // Length first: the key is hashed only when the object is full.
        if self.args.len() >= MAX_PROPERTIES && !self.args.contains_key(&key) {
            return Err(EditError::InvalidSchema(format!(
                "more than {MAX_PROPERTIES} arguments"
            )));
        }
        self.args.insert(key, parse_json(value_json)?);
        self.room -= written;
        Ok(())
    }

    pub fn remove(&mut self, key: &str) -> Result<Option<String>, EditError> {
        if self.read_only {
            return Err(EditError::ReadOnly);
        }
        // `shift_remove` keeps the other arguments in order, as a plugin
        // author expects of a JSON object.
        Ok(self.args.shift_remove(key).map(|v| json_text(&v)))
    }
}

/// A value as compact JSON text. `serde_json::to_string` writes into a
/// buffer directly; `Value::to_string` goes through `fmt::Display`, which
/// costs more on this path (every `get` and `remove` of a plugin).
fn json_text(value: &Value) -> String {
    serde_json::to_string(value).expect("a JSON value always serialises")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_only_args_refuse_writes() {
        let mut a = ArgsEdit::new(Map::new(), true, 1024);
        assert_eq!(a.set("k".into(), "1"), Err(EditError::ReadOnly));
        assert_eq!(a.remove("k"), Err(EditError::ReadOnly));
    }
}

/// Property tests of the `tool-args` handle, fed what a hostile plugin may
/// send: whatever the edits, nothing panics, an edit is checked against
/// the arguments' read-only flag and the cap, and a refused edit changes
/// nothing.
#[cfg(test)]
mod fuzz {
    use proptest::prelude::*;
    use serde_json::Value;

    use super::*;
    use crate::fuzzing::{config, json_text, json_value, name};

    /// The per-value cap the edits run under: small, so the fuzzer hits it.
    const CAP: usize = 256;

    #[derive(Debug, Clone)]
    enum ArgEdit {
        Set(String, String),
        Remove(String),
        Get(String),
    }

    fn arg_edit() -> impl Strategy<Value = ArgEdit> {
        prop_oneof![
            3 => (name(), json_text()).prop_map(|(k, v)| ArgEdit::Set(k, v)),
            1 => name().prop_map(ArgEdit::Remove),
            1 => name().prop_map(ArgEdit::Get),
        ]
    }

    proptest! {
        #![proptest_config(config(512))]

        #[test]
        fn argument_edits_are_checked_and_refusals_change_nothing(
            start in prop::collection::vec((name(), json_value()), 0..6),
            read_only in any::<bool>(),
            edits in prop::collection::vec(arg_edit(), 1..24),
        ) {
            let mut args = ArgsEdit::new(start.into_iter().collect(), read_only, CAP);
            for op in &edits {
                let before = args.args.clone();
                match op {
                    ArgEdit::Set(key, text) => match args.set(key.clone(), text) {
                        Ok(()) => {
                            prop_assert!(!read_only && text.len() <= CAP);
                            let sent = serde_json::from_str::<Value>(text).ok();
                            prop_assert_eq!(args.args.get(key), sent.as_ref());
                        }
                        Err(_) => prop_assert_eq!(&args.args, &before),
                    },
                    ArgEdit::Remove(key) => match args.remove(key) {
                        Ok(removed) => {
                            prop_assert!(!read_only);
                            prop_assert_eq!(removed.map(|t| serde_json::from_str::<Value>(&t).unwrap()), before.get(key).cloned());
                            prop_assert!(!args.args.contains_key(key));
                        }
                        Err(e) => {
                            prop_assert!(read_only && e == EditError::ReadOnly);
                            prop_assert_eq!(&args.args, &before);
                        }
                    },
                    ArgEdit::Get(key) => {
                        let got = args.get(key).map(|t| serde_json::from_str::<Value>(&t).unwrap());
                        prop_assert_eq!(got.as_ref(), before.get(key));
                    }
                }
                prop_assert!(args.args.len() <= MAX_PROPERTIES);
            }
        }
    }
}
