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
//! - [`describe`]: an error as the user is shown it, with its causes.
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

/// `error` and each of its causes, joined by `: `, a cause left out where
/// the text before already ends with it: many errors show their cause in
/// their own message and return it as their source too, which printed
/// every such reason twice (`No such file or directory (os error 2): No
/// such file or directory (os error 2)`).
pub fn describe(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(error) = cause {
        let said = error.to_string();
        if !text.ends_with(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        cause = error.source();
    }
    text
}

/// Exit status 2 when something could not be loaded or reached.
fn exit_for<E>(errors: &[E]) -> ExitCode {
    if errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error that says its cause in its message and returns it too.
    #[derive(Debug)]
    struct Unreadable(std::io::Error);

    impl std::fmt::Display for Unreadable {
        fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            write!(f, "cannot read /nowhere: {}", self.0)
        }
    }

    impl std::error::Error for Unreadable {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn a_cause_is_described_once() {
        let missing = || std::io::Error::from(std::io::ErrorKind::NotFound);
        let error = anyhow::Error::new(Unreadable(missing())).context("loading the plugins");
        assert_eq!(
            describe(error.as_ref()),
            format!("loading the plugins: cannot read /nowhere: {}", missing())
        );
        let error = anyhow::Error::new(missing()).context("reading a.txt");
        assert_eq!(describe(error.as_ref()), format!("reading a.txt: {}", missing()));
    }
}
