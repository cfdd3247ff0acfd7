//! `toolhost pin`: record the tool list as `serve` would show it to the
//! model, review what differs from the pin now, accept differences.
//!
//! Owns the verb and its output; the pin file, the comparison and the diff
//! are `toolhost::pin`, and what `serve` does with them is the host's.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use toolhost::pin::Pin;
use toolhost::plugin::Runtime;

use crate::config::Config;
use crate::{exit_for, setup};

/// What `toolhost pin` does.
pub enum Action {
    /// Pin every tool as it is served now.
    Record,
    /// Show each difference from the pin; exit 1 if there is one.
    Review,
    /// Take the differences of these tools into the pin.
    Accept(Vec<String>),
}

pub async fn run(
    runtime: &Runtime,
    config: &Config,
    plugin_dir: Option<&Path>,
    action: Action,
) -> Result<ExitCode> {
    let settings = config.pin_settings();
    let file = settings.file.as_path();
    // Read before reaching anything: a corrupt pin stops here, naming it.
    let pinned = Pin::read(file)?;
    let (host, errors) = setup::build(runtime, config, plugin_dir, None).await?;
    for error in &errors {
        eprintln!("error: {error}");
    }
    let current = host.pin_entries();
    host.shutdown().await;
    let mut out = crate::output::stdout();
    let needs_pin = || {
        pinned
            .clone()
            .with_context(|| format!("no pin file at {}: run `toolhost pin` first", file.display()))
    };
    match action {
        Action::Record => {
            if let Some(before) = &pinned {
                for difference in before.review(&current) {
                    writeln!(out, "accepted: {}", difference.summary())?;
                }
            }
            Pin::new(current.clone()).write(file)?;
            writeln!(out, "pinned {} tools to {}", current.len(), file.display())?;
        }
        Action::Review => {
            let differences = needs_pin()?.review(&current);
            for difference in &differences {
                writeln!(out, "{difference}")?;
            }
            if differences.is_empty() {
                writeln!(out, "the tools served match the pin {}", file.display())?;
            } else {
                writeln!(
                    out,
                    "differences from the pin {}: {} (accept one with `toolhost pin --accept NAME`)",
                    file.display(),
                    differences.len()
                )?;
                return Ok(ExitCode::from(1));
            }
        }
        Action::Accept(names) => {
            let mut pin = needs_pin()?;
            let accepted = pin.accept(&current, &names)?;
            pin.write(file)?;
            for difference in accepted {
                writeln!(out, "accepted: {}", difference.summary())?;
            }
        }
    }
    Ok(exit_for(&errors))
}
