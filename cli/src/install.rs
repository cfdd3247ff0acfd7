//! `toolhost add REF`, `toolhost update [NAME]` and `toolhost publish FILE
//! REF`: plugins installed from, and published to, an OCI registry
//! (`registry` owns the layout and the protocol).
//!
//! What comes from a registry is checked as a file in the plugin directory
//! is, before it is one: the pull is written to a staging directory inside
//! the plugin directory (which the loader never reads: it loads the
//! directory's own `*.wasm`), surveyed there as loading would find it (its
//! imports read from the component, its manifest under the user's
//! `[plugin.NAME]`), and must be signed by a key of `[trust] keys`, whether
//! or not `require_signatures` is set: a registry is someone else's
//! server. Its authority is shown and the user approves it (or not); only
//! then are `NAME.toml` and `NAME.wasm` written into the directory, each
//! replaced whole, and last the lock, which records the reference and the
//! manifest digest beside the component's digest. Until the lock is
//! written, a directory with a lock refuses the new files (their digests
//! are not the locked ones), so a reload in between loads the old plugin
//! or none, never a half. Anything failing before leaves the directory as
//! it was: the staging directory goes with it (`staging`, which also sweeps
//! what a killed pull left).

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow, bail};
use toolhost::plugin::{LoadReport, Runtime, RuntimeOptions, tracing_sink};
use toolhost::supply::{self, Approvals, Lock, Source, Surveyed};

use crate::config::Config;
use crate::consent::print_consent;
use crate::registry::{PluginRef, Pulled, Registry};
use crate::staging::{self, Staging};

/// Whether the user approves, asked on stdin unless `--yes` said so.
pub struct Approval {
    pub yes: bool,
}

impl Approval {
    fn ask(&self, question: &str) -> Result<bool> {
        if self.yes {
            return Ok(true);
        }
        eprint!("{question} [y/N] ");
        let mut line = String::new();
        std::io::stdin()
            .read_line(&mut line)
            .context("reading the answer")?;
        Ok(matches!(line.trim(), "y" | "Y" | "yes"))
    }
}

pub async fn add(
    runtime: &Runtime,
    config: &Config,
    dir: &Path,
    reference: &str,
    approval: Approval,
) -> Result<ExitCode> {
    let plugin = PluginRef::parse(reference)?;
    let name = plugin_name(&plugin)?;
    if dir.join(format!("{name}.wasm")).exists() {
        bail!(
            "plugin `{name}` is already in {}: `toolhost update {name}` brings it up to date",
            dir.display()
        );
    }
    sweep(dir)?;
    let registry = Registry::for_ref(&plugin).await?;
    let listing = registry.list(&plugin).await?;
    let pulled = registry.pull(&plugin, &listing).await?;
    let staged = Staged::new(runtime, config, dir, &name, &plugin, pulled).await?;
    let mut out = crate::output::stdout();
    writeln!(
        out,
        "{name} from {plugin} ({}), signed by `{}`:",
        staged.pulled.digest, staged.signer
    )?;
    print_consent(&mut out, &staged.surveyed.facts.consent)?;
    drop(out);
    if !approval.ask(&format!("add {name} with this authority?"))? {
        crate::say!("not added: nothing changed")?;
        return Ok(ExitCode::FAILURE);
    }
    staged.install(runtime, config, dir).await?;
    crate::say!("added {name} to {}", dir.display())?;
    Ok(ExitCode::SUCCESS)
}

pub async fn update(
    runtime: &Runtime,
    config: &Config,
    dir: &Path,
    only: Option<&str>,
    check: bool,
    approval: Approval,
) -> Result<ExitCode> {
    // Reporting only changes nothing, not even what a killed pull left.
    if !check {
        sweep(dir)?;
    }
    let lock_path = config.trust.lock_source(dir);
    let lock = Lock::read(&lock_path)?.unwrap_or_default();
    let added: Vec<(&String, &str, &Source)> = lock
        .plugins
        .iter()
        .filter_map(|(name, locked)| {
            let stem = locked.file.strip_suffix(".wasm")?;
            Some((name, stem, locked.source.as_ref()?))
        })
        .filter(|(name, _, _)| only.is_none_or(|only| only == name.as_str()))
        .collect();
    if let Some(only) = only
        && added.is_empty()
    {
        bail!(
            "no plugin `{only}` installed from a registry in {} (`toolhost add REF` installs one)",
            lock_path.display()
        );
    }
    let (mut pending, mut errors) = (0, Vec::new());
    for (name, stem, source) in added {
        let one = One { name, stem, source };
        match one.update(runtime, config, dir, check, &approval).await {
            Ok(Outcome::Current) => {}
            Ok(Outcome::Pending) => pending += 1,
            Err(e) => {
                eprintln!("error: {name}: {}", toolhost::error_chain(e.as_ref()));
                errors.push(e);
            }
        }
    }
    // 2 if one could not be checked or updated, 1 if one is left behind.
    Ok(match (errors.is_empty(), pending) {
        (false, _) => crate::exit_for(&errors),
        (true, 0) => ExitCode::SUCCESS,
        (true, _) => ExitCode::FAILURE,
    })
}

/// One plugin installed from a registry, as its lock entry records it.
struct One<'a> {
    name: &'a str,
    stem: &'a str,
    source: &'a Source,
}

enum Outcome {
    /// Up to date, or updated.
    Current,
    /// Newer in the registry, and only checked or not approved.
    Pending,
}

impl One<'_> {
    async fn update(
        &self,
        runtime: &Runtime,
        config: &Config,
        dir: &Path,
        check: bool,
        approval: &Approval,
    ) -> Result<Outcome> {
        let (name, source) = (self.name, self.source);
        let plugin = PluginRef::parse(&source.reference)?;
        let registry = Registry::for_ref(&plugin).await?;
        let listing = registry.list(&plugin).await?;
        if listing.digest == source.digest {
            crate::say!("{name}: up to date ({plugin}, {})", source.digest)?;
            return Ok(Outcome::Current);
        }
        crate::say!(
            "{name}: {plugin} is now {} (installed: {})",
            listing.digest,
            source.digest
        )?;
        if check {
            return Ok(Outcome::Pending);
        }
        let pulled = registry.pull(&plugin, &listing).await?;
        let staged = Staged::new(runtime, config, dir, self.stem, &plugin, pulled).await?;
        crate::say!("  signed by `{}`", staged.signer)?;
        show_changes(config, dir, name, &staged).await?;
        if !approval.ask(&format!("update {name} to {}?", staged.pulled.digest))? {
            crate::say!("{name}: not updated")?;
            return Ok(Outcome::Pending);
        }
        let digest = staged.pulled.digest.clone();
        staged.install(runtime, config, dir).await?;
        crate::say!("{name}: updated to {digest}")?;
        Ok(Outcome::Current)
    }
}

pub async fn publish(file: &Path, reference: &str, key: Option<&Path>) -> Result<ExitCode> {
    let plugin = PluginRef::parse(reference)?;
    let bytes = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    let wasm = match key {
        Some(key) => supply::signature::signed(file, &bytes, key)?,
        None => bytes,
    };
    let sidecar = file.with_extension("toml");
    let manifest = match std::fs::read(&sidecar) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => bail!("cannot read {}: {e}", sidecar.display()),
    };
    let with_manifest = manifest.is_some();
    let digest = Registry::for_ref(&plugin)
        .await?
        .push(&plugin, wasm, manifest)
        .await?;
    crate::say!(
        "published {}{}{} to {plugin} ({digest})",
        file.display(),
        if with_manifest { " with its manifest" } else { "" },
        if key.is_some() { ", signed" } else { "" },
    )?;
    Ok(ExitCode::SUCCESS)
}

/// Remove what pulls killed before they ended left in `dir`, saying so.
fn sweep(dir: &Path) -> Result<()> {
    for removed in staging::sweep(dir)? {
        eprintln!("removed {}, left by a pull that was killed", removed.display());
    }
    Ok(())
}

/// The plugin's name, from the last part of its repository: a file name
/// in the plugin directory, so nothing that could leave it.
fn plugin_name(plugin: &PluginRef) -> Result<String> {
    let name = plugin.name();
    let fits = !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !fits {
        bail!("{plugin}: `{name}` cannot be a plugin's file name");
    }
    Ok(name.to_owned())
}

/// A pulled plugin in its staging directory, surveyed and signed.
struct Staged {
    /// Its file name in the plugin directory, without `.wasm`.
    stem: String,
    source: Source,
    pulled: Pulled,
    surveyed: Surveyed,
    signer: String,
    staging: Staging,
}

impl Staged {
    async fn new(
        runtime: &Runtime,
        config: &Config,
        dir: &Path,
        stem: &str,
        plugin: &PluginRef,
        pulled: Pulled,
    ) -> Result<Self> {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let staging = Staging::new(dir)?;
        let wasm = staging.path().join(format!("{stem}.wasm"));
        std::fs::write(&wasm, &pulled.wasm)?;
        if let Some(text) = &pulled.plugin_manifest {
            std::fs::write(wasm.with_extension("toml"), text)?;
        }
        // Surveyed as it would load, under the user's settings, but with
        // no lock or approvals of the staging directory's own.
        let mut trust = config.trust.clone();
        trust.lock = Some(staging.path().join("plugins.lock"));
        trust.approvals = Some(staging.path().join("plugins.approvals"));
        if trust.keys.is_empty() {
            bail!(
                "{plugin}: a plugin from a registry must be signed by a vendor you trust, and [trust] keys \
                 in toolhost.toml names no key"
            );
        }
        let survey = supply::survey(runtime, &trust, staging.path()).await?;
        if let Some(error) = survey.errors.first() {
            bail!("{plugin}: {}", error.message);
        }
        let surveyed = survey
            .plugins
            .into_iter()
            .next()
            .ok_or_else(|| anyhow!("{plugin}: its manifest disables it (enabled = false)"))?;
        let signer = match &surveyed.verdicts.signature {
            Some(Ok(key)) => key.clone(),
            Some(Err(why)) => bail!("{plugin}: refused: it {why}"),
            None => bail!("{plugin}: its signature was not checked"),
        };
        Ok(Self {
            stem: stem.to_owned(),
            source: Source {
                reference: plugin.to_string(),
                digest: pulled.digest.clone(),
            },
            pulled,
            surveyed,
            signer,
            staging,
        })
    }

    /// Write the plugin's files into `dir`, then record it in the lock and
    /// the approvals.
    async fn install(self, runtime: &Runtime, config: &Config, dir: &Path) -> Result<()> {
        let wasm = dir.join(format!("{}.wasm", self.stem));
        let manifest = wasm.with_extension("toml");
        let write = |path: &PathBuf, bytes: &[u8]| {
            toolhost::atomic_file::replace(path, bytes)
                .with_context(|| format!("cannot write {}", path.display()))
        };
        match &self.pulled.plugin_manifest {
            Some(text) => write(&manifest, text)?,
            None => match std::fs::remove_file(&manifest) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    bail!("cannot remove {}: {e}", manifest.display())
                }
                _ => {}
            },
        }
        write(&wasm, &self.pulled.wasm)?;
        let facts = &self.surveyed.facts;
        let approvals_path = config.trust.approvals_path(dir);
        Approvals::read(&config.trust.approvals_source(dir))?.approve(&approvals_path, facts)?;
        let lock_path = config.trust.lock_path(dir);
        let mut lock = match Lock::read(&config.trust.lock_source(dir))? {
            Some(lock) => lock,
            // The first lock of the directory: every plugin in it, as it
            // is, as `toolhost lock` writes it.
            None => {
                crate::lock::run(runtime, config, dir).await?;
                Lock::read(&lock_path)?.unwrap_or_default()
            }
        };
        lock.record(facts, Some(self.source));
        lock.write(&lock_path)?;
        drop(self.staging);
        // Compiled now, approved: the next start takes the code from the
        // cache, where its client would wait for the compile.
        if runtime.keeps_code() {
            let stem = &self.stem;
            crate::say!("compiling {stem} for the next start...")?;
            if let Err(e) = runtime.precompile(self.pulled.wasm).await {
                crate::say!("{stem}: not compiled ahead ({e}); the next start compiles it")?;
            }
        }
        Ok(())
    }
}

/// What an update changes: imports, grants, tools.
async fn show_changes(config: &Config, dir: &Path, name: &str, staged: &Staged) -> Result<()> {
    // The installed plugin as the directory holds it now.
    let survey = supply::survey(&offline(config)?, &config.trust, dir).await?;
    let before = survey.plugins.iter().find(|s| s.facts.name == name);
    let after = &staged.surveyed.facts.consent;
    let mut out = crate::output::stdout();
    if let Some(before) = before {
        let before = &before.facts.consent;
        let (added, removed) = set_changes(&before.imports, &after.imports);
        list(&mut out, "imports added", &added)?;
        list(&mut out, "imports removed", &removed)?;
        let wider = after.widening(before);
        list(&mut out, "asks for more", &wider)?;
    }
    writeln!(out, "  authority of the update:")?;
    print_consent(&mut out, after)?;
    drop(out);
    let (old, new) = (
        supply::load_dir(&offline(config)?, &config.trust, dir).await?,
        offline(config)?.load_dir(staged.staging.path()).await?,
    );
    let tools = |report: &LoadReport| {
        report
            .plugins
            .iter()
            .find(|p| &*p.name == name)
            .map(|p| p.tools.clone())
            .unwrap_or_default()
    };
    let (old_tools, new_tools) = (tools(&old), tools(&new));
    let names = |report: &LoadReport| tools(report).into_iter().map(|t| t.name).collect::<BTreeSet<_>>();
    let (added, removed) = set_changes(&names(&old), &names(&new));
    let changed: Vec<String> = new_tools
        .iter()
        .filter(|t| old_tools.iter().any(|o| o.name == t.name && o != *t))
        .map(|t| t.name.clone())
        .collect();
    let mut out = crate::output::stdout();
    list(&mut out, "tools added", &added)?;
    list(&mut out, "tools removed", &removed)?;
    list(&mut out, "tools changed", &changed)?;
    Ok(())
}

fn set_changes(before: &BTreeSet<String>, after: &BTreeSet<String>) -> (Vec<String>, Vec<String>) {
    (
        after.difference(before).cloned().collect(),
        before.difference(after).cloned().collect(),
    )
}

fn list(out: &mut impl Write, what: &str, items: &[String]) -> std::io::Result<()> {
    if items.is_empty() {
        return Ok(());
    }
    writeln!(out, "  {what}: {}", items.join(", "))
}

/// A runtime that strips every grant: a component not yet approved is run
/// only to list its tools, reaching nothing.
fn offline(config: &Config) -> Result<Runtime> {
    Ok(Runtime::new(RuntimeOptions {
        cache_dir: None,
        compiler: crate::setup::compiler(),
        plugin_settings: config.plugin_settings(),
        log: tracing_sink(),
        record: None,
        offline: true,
    })?)
}
