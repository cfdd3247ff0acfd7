//! The `toolhost` command line over the `toolhost` library: the
//! configuration file, assembling a host from it, and one module a verb.
//!
//! The verbs, one module each:
//! - [`plugins`]: `toolhost plugins`, what the plugin directory loads.
//! - [`tools`]: `toolhost tools`, what is served and why (`--explain`).
//! - [`serve`]: `toolhost serve`, MCP over stdio or streamable HTTP.
//! - [`call`]: `toolhost call`, one call through the pipeline.
//! - [`stats`]: `toolhost stats`, and the figures a server keeps on disk.
//! - [`check`]: `toolhost check`, the generic checks of one plugin, with
//!   [`expect`], a vendor's golden cases (`--expect`).
//! - [`scaffold`]: `toolhost new`, plugin templates in five languages.
//! - [`lock`]: `toolhost lock`, the plugin directory pinned by digest.
//! - [`consent`]: `toolhost plugins --grants` and `toolhost approve`.
//! - [`signing`]: `toolhost keygen` and `toolhost sign`, for vendors.
//! - [`replay`]: `toolhost replay`, recorded plugin calls run again.
//! - [`pin`]: `toolhost pin`, the served tool list pinned, reviewed, accepted.
//! - [`install`]: `toolhost add`, `update` and `publish`, plugins from and
//!   to an OCI registry, over [`registry`].
//!
//! What they share:
//! - [`config`]: the user's configuration file, `toolhost.toml`.
//! - [`setup`]: a [`toolhost::Toolhost`] built from the configuration.
//! - [`watch`]: the plugin directory reloaded while serving (`serve --watch`).
//! - [`render`]: terminal views of a call and its result (`toolhost call`).
//! - [`output`]: standard output, which its reader may close early.
//!
//! The library owns no process state: logging is set up by `main`.

use std::process::ExitCode;

pub mod call;
pub mod check;
pub mod config;
pub mod consent;
pub mod expect;
pub mod install;
pub mod lock;
pub mod output;
pub mod pin;
pub mod plugins;
pub mod registry;
pub mod render;
pub mod replay;
pub mod scaffold;
pub mod serve;
pub mod setup;
pub mod signing;
mod staging;
pub mod stats;
pub mod tools;
pub mod watch;

/// Exit status 2 when something could not be loaded or reached.
fn exit_for<E>(errors: &[E]) -> ExitCode {
    if errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    }
}
