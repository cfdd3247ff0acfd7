//! `toolhost lock`: record the plugin directory as it is, so that from
//! now on only these plugins, with these digests and this authority, load
//! (see `toolhost::supply`). A plugin whose path is unsafe, whose facts
//! cannot be read, or (with `require_signatures`) that no trusted key
//! signed is left out of the lock, and said. A plugin installed from a
//! registry keeps its recorded source while its component is unchanged.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use toolhost::plugin::Runtime;
use toolhost::supply::{self, Lock};

use crate::config::Config;
use crate::exit_for;

pub async fn run(runtime: &Runtime, config: &Config, dir: &Path) -> Result<ExitCode> {
    let survey = supply::survey(runtime, &config.trust, dir).await?;
    let mut errors: Vec<String> = survey.errors.iter().map(ToString::to_string).collect();
    let mut locked = Vec::new();
    for s in &survey.plugins {
        if config.trust.require_signatures
            && let Some(Err(why)) = &s.verdicts.signature
        {
            errors.push(format!("{}: {why}", s.facts.path.display()));
            continue;
        }
        match &s.verdicts.lock {
            None => crate::say!("locked {} ({})", s.facts.name, s.facts.wasm.short())?,
            Some(Ok(())) => crate::say!("locked {} ({}, unchanged)", s.facts.name, s.facts.wasm.short())?,
            Some(Err(change)) => {
                crate::say!("locked {} ({}): it {change}", s.facts.name, s.facts.wasm.short())?
            }
        }
        locked.push(s.facts.clone());
    }
    for error in &errors {
        eprintln!("error: {error}");
    }
    let path = config.trust.lock_path(dir);
    let mut lock = Lock::of(&locked);
    if let Some(previous) = Lock::read(&config.trust.lock_source(dir))? {
        lock.keep_sources(&previous);
    }
    lock.write(&path)?;
    crate::say!("wrote {} ({} plugins)", path.display(), locked.len())?;
    Ok(exit_for(&errors))
}
