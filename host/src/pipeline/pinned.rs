//! The tool list as served under the pin (`crate::pin`): the catalog's
//! listing, each tool with its source, compared with the pin file.
//!
//! The comparison is kept until the catalog is rebuilt or the pin file
//! changes (its modification time or length), so that listing the tools and
//! checking a call cost a `stat` of the file, and a pin accepted while
//! serving takes effect at the next list or call. Each difference newly
//! held is logged once, under the target `pin`. A pin file that cannot be
//! read serves nothing, and says why: the pin is a defence, and a broken
//! one must not fall open.
//!
//! Not here: the comparison itself (`pin`), what a catalog is (`catalog`).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use super::catalog::Generation;
use crate::pin::{self, Entry, Pin, Served};

/// What the served list was last computed from, and the list.
pub(super) struct Cache {
    generation: Arc<Generation>,
    stamp: Option<(SystemTime, u64)>,
    served: Arc<Served>,
}

/// The last comparison, shared by every caller.
#[derive(Default)]
pub(super) struct Pinned(Mutex<Option<Cache>>);

/// The catalog's listing, each tool as MCP lists it, with its pin entry.
pub(super) fn entries(generation: &Generation) -> Vec<(rmcp::model::Tool, Entry)> {
    let core = &generation.core;
    core.listing
        .tools
        .iter()
        .map(|t| {
            let tool = t.to_mcp();
            let entry =
                Entry::new(&tool, core.source(t)).with_prompt(t.meta.snippet.as_deref(), &t.meta.guidelines);
            (tool, entry)
        })
        .collect()
}

impl Pinned {
    /// What `generation` serves under the pin of `settings`.
    pub(super) fn served(&self, generation: Arc<Generation>, settings: &pin::Settings) -> Arc<Served> {
        let stamp = std::fs::metadata(&settings.file)
            .ok()
            .map(|m| (m.modified().unwrap_or(SystemTime::UNIX_EPOCH), m.len()));
        let mut cache = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(last) = cache.as_ref()
            && Arc::ptr_eq(&last.generation, &generation)
            && last.stamp == stamp
        {
            return last.served.clone();
        }
        let current = entries(&generation);
        let served = match Pin::read(&settings.file) {
            Ok(None) => Served {
                tools: current.into_iter().map(|(tool, _)| tool).collect(),
                differences: Vec::new(),
            },
            Ok(Some(pin)) => pin.serve(current, settings.on_change),
            Err(e) => {
                tracing::error!(target: "pin", "{e}: no tool is served until it is fixed");
                Served::default()
            }
        };
        let told: BTreeSet<String> = cache
            .as_ref()
            .map(|last| last.served.held().map(|d| d.summary()).collect())
            .unwrap_or_default();
        for held in served.held().filter(|d| !told.contains(&d.summary())) {
            tracing::warn!(target: "pin", "held back: {held}");
        }
        let served = Arc::new(served);
        *cache = Some(Cache {
            generation,
            stamp,
            served: served.clone(),
        });
        served
    }
}
