//! [`Args`]: a tool call's arguments, lent by the host to `transform_args`,
//! `prepare_arguments`, `before_call` and `rate_limit_host`.
//!
//! Like [`Schema`](crate::Schema), the object lives in the host and each
//! method is one host call touching one key. Hooks that may only read get
//! `&Args`, so the mutators (`&mut self`) are not even callable there; the
//! host would refuse them anyway (`EditError::ReadOnly`).

use serde_json::Value;

use crate::EditError;
use crate::bindings::shared::toolhost::plugin::types::ToolArgs;
use crate::schema::{parse, text};

/// A call's arguments (a JSON object), lent for the length of one call.
pub struct Args<'a> {
    handle: &'a ToolArgs,
}

impl<'a> Args<'a> {
    pub(crate) fn from_handle(handle: &'a ToolArgs) -> Self {
        Args { handle }
    }

    /// One argument's value, or `None` if it is absent.
    pub fn get(&self, key: &str) -> Option<Value> {
        self.handle.get(key).map(|text| parse(&text))
    }

    /// One argument's value if it is a JSON string.
    pub fn get_str(&self, key: &str) -> Option<String> {
        match self.get(key)? {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// Whether the argument `key` is present.
    pub fn contains(&self, key: &str) -> bool {
        self.handle.get(key).is_some()
    }

    /// The top-level keys, in order.
    pub fn keys(&self) -> Vec<String> {
        self.handle.keys()
    }

    /// Set one argument, adding or replacing it.
    pub fn set(&mut self, key: &str, value: &Value) -> Result<(), EditError> {
        Ok(self.handle.set(key, &text(value))?)
    }

    /// Remove one argument and return its value, or `None` if it was absent.
    pub fn remove(&mut self, key: &str) -> Result<Option<Value>, EditError> {
        Ok(self.handle.remove(key)?.map(|text| parse(&text)))
    }

    /// The whole object. Prefer `get`: it copies less.
    pub fn to_value(&self) -> Value {
        parse(&self.handle.to_json())
    }
}
