//! [`EditError`]: why the host refused a change to a lent schema or to lent
//! arguments. Mirrors the WIT `edit-error` variant with a readable `Display`.

use core::fmt;

use crate::bindings::shared::toolhost::plugin::types as wit;

/// Why the host refused a change to a [`Schema`](crate::Schema) or to
/// [`Args`](crate::Args).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EditError {
    /// The named property or argument does not exist.
    NoSuchField(String),
    /// The JSON given does not parse or has the wrong shape (for example a
    /// property schema that is not a JSON object).
    InvalidJson(String),
    /// The change would make the schema invalid (for example marking a
    /// missing property as required, or an empty enum).
    InvalidSchema(String),
    /// The value is larger than the host accepts from this plugin (its size
    /// in bytes).
    TooLarge(u64),
    /// The handle was lent for reading only.
    ReadOnly,
}

impl fmt::Display for EditError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EditError::NoSuchField(name) => write!(f, "no such field: {name}"),
            EditError::InvalidJson(why) => write!(f, "invalid JSON: {why}"),
            EditError::InvalidSchema(why) => write!(f, "invalid schema: {why}"),
            EditError::TooLarge(size) => write!(f, "value too large ({size} bytes)"),
            EditError::ReadOnly => f.write_str("lent for reading only"),
        }
    }
}

impl std::error::Error for EditError {}

impl From<wit::EditError> for EditError {
    fn from(e: wit::EditError) -> Self {
        match e {
            wit::EditError::NoSuchField(s) => EditError::NoSuchField(s),
            wit::EditError::InvalidJson(s) => EditError::InvalidJson(s),
            wit::EditError::InvalidSchema(s) => EditError::InvalidSchema(s),
            wit::EditError::TooLarge(n) => EditError::TooLarge(n),
            wit::EditError::ReadOnly => EditError::ReadOnly,
        }
    }
}

impl From<EditError> for String {
    /// Lets `?` turn an [`EditError`] into the `String` error of
    /// `transform_args` / `prepare_arguments`.
    fn from(e: EditError) -> Self {
        e.to_string()
    }
}
