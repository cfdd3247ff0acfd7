//! `toolhost plugins --grants` and `toolhost approve NAME`: what each
//! component imports (read from the component) and what the user grants
//! it, with its signature, lock and approval verdicts; and the approval of
//! one plugin's authority, pinned to its digest (see `toolhost::supply`).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Result, bail};
use serde_json::json;
use toolhost::plugin::Runtime;
use toolhost::supply::{self, Approvals, Consent, Surveyed};

use crate::config::Config;
use crate::exit_for;

pub async fn grants(runtime: &Runtime, config: &Config, dir: &Path, as_json: bool) -> Result<ExitCode> {
    let survey = supply::survey(runtime, &config.trust, dir).await?;
    for error in &survey.errors {
        eprintln!("error: {error}");
    }
    let mut out = crate::output::stdout();
    if as_json {
        let plugins: Vec<_> = survey
            .plugins
            .iter()
            .map(|s| {
                let v = &s.verdicts;
                json!({
                    "name": s.facts.name, "file": s.facts.path.display().to_string(),
                    "wasm": s.facts.wasm, "manifest": s.facts.manifest, "consent": s.facts.consent,
                    "signature": v.signature.as_ref().map(|r| verdict(r.as_ref().map(|k| format!("signed by {k}")))),
                    "lock": v.lock.as_ref().map(|r| verdict(r.as_ref().map(|_| "matches".to_owned()))),
                    "approval": verdict(v.approval.as_ref().map(|_| "approved".to_owned())),
                })
            })
            .collect();
        let value = json!({"directory": dir, "plugins": plugins, "errors": survey.errors});
        writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
        return Ok(exit_for(&survey.errors));
    }
    writeln!(out, "plugins in {}:", dir.display())?;
    for s in &survey.plugins {
        print_one(&mut out, s)?;
    }
    Ok(exit_for(&survey.errors))
}

fn verdict(result: Result<String, &String>) -> serde_json::Value {
    match result {
        Ok(text) => json!({"ok": true, "text": text}),
        Err(why) => json!({"ok": false, "text": why}),
    }
}

fn print_one(out: &mut impl Write, s: &Surveyed) -> std::io::Result<()> {
    let (f, v) = (&s.facts, &s.verdicts);
    writeln!(out, "{} ({}, {})", f.name, f.file_name(), f.wasm.short())?;
    print_consent(out, &f.consent)?;
    if let Some(signature) = &v.signature {
        match signature {
            Ok(key) => writeln!(out, "  signature: signed by `{key}`")?,
            Err(why) => writeln!(out, "  signature: {why}")?,
        }
    }
    match &v.lock {
        None => writeln!(out, "  lock: no lock file")?,
        Some(Ok(())) => writeln!(out, "  lock: matches")?,
        Some(Err(why)) => writeln!(out, "  lock: {why}")?,
    }
    match &v.approval {
        Ok(()) => writeln!(out, "  approval: approved"),
        Err(why) => writeln!(out, "  approval: {why}"),
    }
}

pub(crate) fn print_consent(out: &mut impl Write, c: &Consent) -> std::io::Result<()> {
    let list = |items: Vec<String>| match items.is_empty() {
        true => "none".to_owned(),
        false => items.join(", "),
    };
    writeln!(out, "  imports: {}", list(c.imports.iter().cloned().collect()))?;
    let order = c.order.map_or("none".to_owned(), |o| o.to_string());
    writeln!(out, "  order: {order}")?;
    if let Some(shadow) = &c.shadow {
        writeln!(out, "  shadow: {shadow}")?;
    }
    writeln!(out, "  http: {}", list(c.http.iter().cloned().collect()))?;
    let secrets = c
        .secrets
        .iter()
        .map(|(name, s)| {
            let hosts: Vec<&str> = s.hosts.iter().map(String::as_str).collect();
            format!("{name} (${} as {} to {})", s.env, s.header, hosts.join(", "))
        })
        .collect();
    writeln!(out, "  secrets: {}", list(secrets))?;
    let l = &c.limits;
    writeln!(
        out,
        "  limits: {} MiB, {} ms CPU, {} ms wall, {} KiB out",
        l.memory_mb, l.cpu_ms, l.wall_ms, l.max_output_kb
    )
}

pub async fn approve(runtime: &Runtime, config: &Config, dir: &Path, name: &str) -> Result<ExitCode> {
    let survey = supply::survey(runtime, &config.trust, dir).await?;
    let Some(found) = survey.plugins.iter().find(|s| s.facts.name == name) else {
        for error in &survey.errors {
            eprintln!("error: {error}");
        }
        bail!(
            "no plugin `{name}` whose facts could be read in {}",
            dir.display()
        );
    };
    let path = config.trust.approvals_path(dir);
    // An older toolhost's approvals, beside the directory, move in with it.
    let mut approvals = Approvals::read(&config.trust.approvals_source(dir))?;
    approvals.approve(&path, &found.facts)?;
    let mut out = crate::output::stdout();
    writeln!(
        out,
        "approved {name} ({}) in {}:",
        found.facts.wasm.short(),
        path.display()
    )?;
    print_consent(&mut out, &found.facts.consent)?;
    Ok(ExitCode::SUCCESS)
}
