//! What a plugin may do: the interfaces its component imports, what the
//! user's manifest grants it (HTTP origins, secrets, limits), and what of
//! the manifest decides what it takes (its `order`, which decides who
//! serves a tool name and whose hooks see a call's arguments first, and
//! the `shadow` candidate run beside it); and whether one such set goes
//! beyond another, for the lock file and approvals.
//!
//! Imports are compared by interface without its version
//! (`wasi:cli/environment`): a rebuild against a newer WASI patch release
//! is not more authority, a new interface is. Limits are wider when any
//! of memory, CPU, wall-clock time or output size is larger. Any change of
//! `order`, and any new shadow candidate, goes beyond: moving later can
//! hand a name to another plugin as moving earlier takes one.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::plugin::Manifest;
use crate::plugin::manifest::SecretSource;

/// A plugin's authority, as recorded in the lock and approval files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Consent {
    /// Interfaces imported, with their versions, as in the component.
    pub imports: BTreeSet<String>,
    /// `order` of the manifest: the plugin's place in the registration order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<i64>,
    /// `shadow` of the manifest: the candidate component run beside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shadow: Option<String>,
    /// Origins granted in `grants.http`.
    pub http: BTreeSet<String>,
    /// Secrets granted, by name: which variable goes as which header where.
    pub secrets: BTreeMap<String, SecretConsent>,
    /// The caps the plugin asks for.
    pub limits: LimitConsent,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecretConsent {
    pub env: String,
    pub header: String,
    pub hosts: BTreeSet<String>,
}

impl SecretConsent {
    /// Where the value comes from, as a widening names it: `$VAR`, or a
    /// caller's own.
    fn source(&self) -> String {
        if self.env.starts_with('{') {
            self.env.clone()
        } else {
            format!("${}", self.env)
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitConsent {
    pub memory_mb: u64,
    pub cpu_ms: u64,
    pub wall_ms: u64,
    pub max_output_kb: u64,
}

impl Consent {
    /// The authority of a component of `size` bytes importing `imports`,
    /// under `manifest` (its limits resolved as the loader resolves them).
    pub(crate) fn of(imports: &[String], manifest: &Manifest, size: usize) -> Result<Self, String> {
        let limits = manifest
            .limits
            .resolve(size)
            .map_err(|e| format!("manifest: {e}"))?;
        let secrets = manifest
            .grants
            .secrets
            .iter()
            .map(|(name, s)| {
                let hosts = s.hosts.iter().map(ToString::to_string).collect();
                // The environment variable, as approvals have always
                // named it; a caller's own secret says so, and a change of
                // source is a change of authority to approve.
                let env = match (s.from, s.shared_env()) {
                    (SecretSource::Env, env) => env.unwrap_or_default().to_owned(),
                    (from, None) => format!("{{each caller's own, from {}}}", from.as_str()),
                    (from, Some(env)) => format!("{{each caller's own, from {}, else {env}}}", from.as_str()),
                };
                let consent = SecretConsent {
                    env,
                    header: s.header.clone(),
                    hosts,
                };
                (name.clone(), consent)
            })
            .collect();
        Ok(Self {
            imports: imports.iter().cloned().collect(),
            order: manifest.order,
            shadow: manifest.shadow.as_ref().map(|p| p.display().to_string()),
            http: manifest.grants.http.iter().map(ToString::to_string).collect(),
            secrets,
            limits: LimitConsent {
                memory_mb: (limits.memory_bytes >> 20) as u64,
                cpu_ms: limits.cpu.as_millis() as u64,
                wall_ms: limits.wall.as_millis() as u64,
                max_output_kb: (limits.max_output_bytes >> 10) as u64,
            },
        })
    }

    /// What `self` has beyond `before`, each said in a few words; empty
    /// when it stays within it.
    pub fn widening(&self, before: &Consent) -> Vec<String> {
        let mut wider = Vec::new();
        if self.order != before.order {
            let order = |o: Option<i64>| o.map_or("none".to_owned(), |o| o.to_string());
            wider.push(format!(
                "has order = {} (was {})",
                order(self.order),
                order(before.order)
            ));
        }
        if let Some(shadow) = &self.shadow
            && before.shadow.as_ref() != Some(shadow)
        {
            wider.push(format!("runs the shadow candidate {shadow} beside it"));
        }
        let old_interfaces: BTreeSet<&str> = before.imports.iter().map(|i| unversioned(i)).collect();
        for import in &self.imports {
            if !old_interfaces.contains(unversioned(import)) {
                wider.push(format!("imports {import}"));
            }
        }
        for origin in self.http.difference(&before.http) {
            wider.push(format!("may reach {origin}"));
        }
        for (name, secret) in &self.secrets {
            match before.secrets.get(name) {
                None => wider.push(format!(
                    "gets secret `{name}` ({} as {})",
                    secret.source(),
                    secret.header
                )),
                Some(old) if old.env != secret.env || old.header != secret.header => wider.push(format!(
                    "secret `{name}` is now {} as {} (was {} as {})",
                    secret.source(),
                    secret.header,
                    old.source(),
                    old.header
                )),
                Some(old) => {
                    for host in secret.hosts.difference(&old.hosts) {
                        wider.push(format!("secret `{name}` also goes to {host}"));
                    }
                }
            }
        }
        let (new, old) = (&self.limits, &before.limits);
        for (what, new, old) in [
            ("memory_mb", new.memory_mb, old.memory_mb),
            ("cpu_ms", new.cpu_ms, old.cpu_ms),
            ("wall_ms", new.wall_ms, old.wall_ms),
            ("max_output_kb", new.max_output_kb, old.max_output_kb),
        ] {
            if new > old {
                wider.push(format!("limits.{what} {new} (was {old})"));
            }
        }
        wider
    }
}

/// `wasi:cli/environment@0.2.3` → `wasi:cli/environment`.
fn unversioned(import: &str) -> &str {
    import.split_once('@').map_or(import, |(name, _)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn consent(imports: &[&str], manifest: &str) -> Consent {
        let manifest: Manifest = toml::from_str(manifest).unwrap();
        let imports: Vec<String> = imports.iter().map(|s| s.to_string()).collect();
        Consent::of(&imports, &manifest, 1000).unwrap()
    }

    #[test]
    fn more_imports_grants_or_limits_are_wider_and_a_patch_release_is_not() {
        let base = consent(
            &["wasi:cli/environment@0.2.3"],
            "[grants]\nhttp = [\"a.example\"]\n",
        );
        let same = consent(
            &["wasi:cli/environment@0.2.6"],
            "[grants]\nhttp = [\"a.example\"]\n",
        );
        assert!(same.widening(&base).is_empty());
        let http = consent(
            &["wasi:cli/environment@0.2.3", "toolhost:plugin/http@0.1.0"],
            "[grants]\nhttp = [\"a.example\", \"b.example\"]\n[limits]\nmemory_mb = 512\n",
        );
        let wider = http.widening(&base);
        assert_eq!(
            wider,
            [
                "imports toolhost:plugin/http@0.1.0",
                "may reach https://b.example:443",
                "limits.memory_mb 512 (was 64)"
            ]
        );
        // Narrower is not wider.
        assert!(base.widening(&http).is_empty());
    }

    #[test]
    fn any_change_of_order_and_a_new_shadow_go_beyond() {
        let base = consent(&[], "");
        assert_eq!(
            consent(&[], "order = -5\n").widening(&base),
            ["has order = -5 (was none)"]
        );
        let ordered = consent(&[], "order = 1\n");
        assert_eq!(
            consent(&[], "order = 2\n").widening(&ordered),
            ["has order = 2 (was 1)"]
        );
        assert_eq!(base.widening(&ordered), ["has order = none (was 1)"]);
        let shadow = consent(&[], "shadow = \"next.wasm\"\n");
        assert_eq!(
            shadow.widening(&base),
            ["runs the shadow candidate next.wasm beside it"]
        );
        assert!(base.widening(&shadow).is_empty());
    }

    #[test]
    fn a_secret_sent_elsewhere_is_wider() {
        let secret = |hosts: &str| {
            consent(
                &[],
                &format!(
                    "[grants]\nhttp = [\"a.example\", \"b.example\"]\n[grants.secrets.t]\nenv = \"T\"\n\
                     header = \"Authorization\"\nhosts = [{hosts}]\n"
                ),
            )
        };
        let one = secret("\"a.example\"");
        let two = secret("\"a.example\", \"b.example\"");
        assert_eq!(
            two.widening(&one),
            ["secret `t` also goes to https://b.example:443"]
        );
        let none = consent(&[], "[grants]\nhttp = [\"a.example\", \"b.example\"]\n");
        assert_eq!(one.widening(&none), ["gets secret `t` ($T as Authorization)"]);
    }

    #[test]
    fn a_secret_that_becomes_each_callers_own_is_wider() {
        let secret = |source: &str| {
            consent(
                &[],
                &format!(
                    "[grants]\nhttp = [\"a.example\"]\n[grants.secrets.t]\n{source}\n\
                     header = \"Authorization\"\nhosts = [\"a.example\"]\n"
                ),
            )
        };
        let shared = secret("env = \"T\"");
        let own = secret("from = \"store\"\nenv = \"T\"\nfallback = \"env\"");
        assert_eq!(
            own.widening(&shared),
            [
                "secret `t` is now {each caller's own, from store, else T} as Authorization (was $T as Authorization)"
            ]
        );
    }
}
