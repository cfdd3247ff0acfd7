//! Approvals (`plugins.approvals` in the plugin directory, unless `[trust]
//! approvals` says otherwise): the user's consent to a plugin's authority,
//! recorded by `toolhost approve NAME` with the digest of the component
//! approved. With `require_approval = true` a plugin loads only within its
//! approval: an upgrade that imports no more and is granted no more needs
//! no new approval, one that widens either does, as does any change of its
//! place in the registration order (`order`, or its file name, which
//! orders plugins of one `order`): that place decides which tool names it
//! takes. An approval written before file names were recorded has none,
//! and is held to the rest.
//!
//! Owns the format and the comparison; not where it is enforced.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::SupplyError;
use super::consent::Consent;
use super::facts::Facts;
use crate::plugin_file::Digest;

/// The user's approvals of each plugin's authority (`toolhost approve`).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Approvals {
    /// By plugin name.
    #[serde(default)]
    pub plugins: BTreeMap<String, Approval>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Approval {
    /// The component approved.
    pub wasm: Digest,
    /// Its file name in the plugin directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    pub consent: Consent,
}

impl Approvals {
    /// Read `path`; none approved if there is no such file.
    pub fn read(path: &Path) -> Result<Self, SupplyError> {
        let Some(text) = super::read_optional(path)? else {
            return Ok(Self::default());
        };
        toml::from_str(&text).map_err(|e| SupplyError::Malformed {
            path: path.into(),
            message: e.to_string(),
        })
    }

    /// Record the approval of `facts` and write the file.
    pub fn approve(&mut self, path: &Path, facts: &Facts) -> Result<(), SupplyError> {
        let approval = Approval {
            wasm: facts.wasm.clone(),
            file: Some(facts.file_name()),
            consent: facts.consent.clone(),
        };
        self.plugins.insert(facts.name.clone(), approval);
        let text = format!(
            "# Written by `toolhost approve NAME`: the authority approved for each plugin.\n{}",
            toml::to_string(self).expect("approvals serialize")
        );
        crate::atomic_file::replace(path, text.as_bytes()).map_err(|source| SupplyError::Write {
            path: path.into(),
            source,
        })
    }

    /// Whether `facts` are within their approval, else why not and the
    /// command that approves them.
    pub(crate) fn check(&self, facts: &Facts) -> Result<(), String> {
        let name = &facts.name;
        let approve =
            format!("review it with `toolhost plugins --grants`, approve it with `toolhost approve {name}`");
        let Some(approval) = self.plugins.get(name) else {
            return Err(format!("plugin `{name}` is not approved: {approve}"));
        };
        let mut wider = facts.consent.widening(&approval.consent);
        if let Some(file) = approval.file.as_ref().filter(|f| **f != facts.file_name()) {
            wider.push(format!("is now the file {} (was {file})", facts.file_name()));
        }
        if wider.is_empty() {
            return Ok(());
        }
        Err(format!(
            "plugin `{name}` needs approval again: since its approval (of {}) it {}; {approve}",
            approval.wasm.short(),
            wider.join(", ")
        ))
    }
}
