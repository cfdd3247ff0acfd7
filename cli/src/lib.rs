//! The `toolhost` command line over the `toolhost` library: the
//! configuration file, assembling a host from it, and one module a verb.
//!
//! - [`config`]: the user's configuration file, `toolhost.toml`.
//! - [`setup`]: a [`toolhost::pipeline::Toolhost`] built from the configuration.
//! - [`serve`]: `toolhost serve` (MCP over stdio or HTTP), `call` and `stats`.
//! - [`watch`]: the plugin directory reloaded while serving (`serve --watch`).
//! - [`render`]: terminal views of a call and its result (`toolhost call`).
//! - [`stats`]: speculation figures on disk and in the log (`toolhost stats`).
//! - [`check`]: `toolhost check`, the generic checks of one plugin.
//! - [`expect`]: `toolhost check --expect`, a vendor's golden cases.
//! - [`scaffold`]: `toolhost new`, plugin templates in five languages.
//!
//! The library owns no process state: logging is set up by `main`.

pub mod check;
pub mod config;
pub mod expect;
pub mod render;
pub mod scaffold;
pub mod serve;
pub mod setup;
pub mod stats;
pub mod watch;
