//! Logging to the host's log, under the plugin's name (the `host.log`
//! import). Anything a plugin prints to stdout or stderr also lands there,
//! but these carry a level.

use crate::bindings::shared::toolhost::plugin::host::{self, LogLevel};

/// Log at trace level.
pub fn trace(message: &str) {
    host::log(LogLevel::Trace, message);
}

/// Log at debug level.
pub fn debug(message: &str) {
    host::log(LogLevel::Debug, message);
}

/// Log at info level.
pub fn info(message: &str) {
    host::log(LogLevel::Info, message);
}

/// Log at warn level.
pub fn warn(message: &str) {
    host::log(LogLevel::Warn, message);
}

/// Log at error level.
pub fn error(message: &str) {
    host::log(LogLevel::Error, message);
}
