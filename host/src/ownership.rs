//! Who serves a tool name: the rule that settles a clash between sources,
//! so that one plugin (or upstream server) listing a name that is taken
//! never stops the host.
//!
//! - The native tools' names (`read`, `glob`, `grep`, `ls`, `web_fetch`,
//!   `write`, `edit`) are reserved for the host, whether or not the native
//!   tools are served or writable: turning a setting on never changes who
//!   serves a name.
//! - Base-catalog names are reserved for the catalog. Such a tool is served
//!   only by the backend it is bound to, with the catalog's schema; that
//!   backend (a tool plugin or an upstream server) may list a tool of that
//!   name, which is then that catalog tool's implementation (one tool, the
//!   catalog's schema, the plugin's hooks). Any other source listing it is
//!   refused. A binding comes from `[bind]`, or else from a vendor's full
//!   plugin: the first plugin registered that both claims the tool's
//!   category and lists the tool implements it, so a provider's one `.wasm`
//!   dropped into the directory serves its tools with no `[bind]` at all.
//!   `[bind]` always wins, and is how a user picks between two vendors of
//!   one category.
//! - Any other name goes to the first source registered: plugins in
//!   registration order, then upstream servers in configuration order.
//!
//! A refused tool is left out with a [`Refusal`] naming both sides; the
//! source's other tools are served. `toolhost serve`, `call`, `tools` and
//! `plugins` report refusals the same way, as errors beside the load errors,
//! one line per source ([`summary`]): two vendors of one category clash on
//! every tool of it, and a line per tool would bury the load errors. Each
//! refusal in full stays with the tool (`toolhost tools --explain NAME`).
//! This module owns the rule; the tools' sources and backends are the
//! pipeline's.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::Serialize;

use crate::catalog::{base_catalog, base_tool};
use crate::plugin::{Plugin, ToolDefinition};
use crate::tools::NATIVE_NAMES;

/// A tool left out because its name is another source's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refusal {
    /// The tool's name.
    pub tool: String,
    /// The source that listed it: `plugin `x`` or `upstream `y``.
    pub source: String,
    /// Who the name belongs to, and why.
    pub owner: String,
    /// The same, as the one-line [`summary`] counts it.
    #[serde(skip)]
    holder: Holder,
}

/// Who holds a refused name, as [`summary`] groups them.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Holder {
    Native,
    /// A base-catalog tool no source is bound to.
    Catalog,
    /// A base-catalog tool `[bind]` gives to this backend.
    Bound(String),
    /// A source that serves it: `plugin `x`` or `upstream `y``.
    Source(String),
}

impl Holder {
    fn phrase(&self) -> String {
        match self {
            Holder::Native => "reserved for the native tools".to_owned(),
            Holder::Catalog => "reserved for the base catalog".to_owned(),
            Holder::Bound(backend) => format!("bound to `{backend}` by `[bind]`"),
            Holder::Source(source) => format!("provided by {source}"),
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} lists tool `{}`, but {}: that tool is refused, the others are served",
            self.source, self.tool, self.owner
        )
    }
}

/// What [`Names::claim`] decided for one listed tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// The source serves the tool under its own definition.
    Serve,
    /// The name is a catalog tool bound to this source: the catalog's entry
    /// stands for it.
    Bound,
    /// Refused; the refusal is recorded.
    Refused,
}

/// Who implements a base-catalog tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// A tool plugin's or an upstream server's name.
    pub backend: String,
    /// Chosen by `[bind]` rather than by a full plugin claiming the tool.
    pub explicit: bool,
}

/// The base-catalog bindings in force: `explicit` (`[bind]`, catalog tool →
/// backend name), then, for each catalog tool still unbound, the first
/// plugin (registration order) that claims its category and lists it.
pub fn bindings(explicit: &BTreeMap<String, String>, plugins: &[Arc<Plugin>]) -> BTreeMap<String, Binding> {
    let mut bound: BTreeMap<String, Binding> = explicit
        .iter()
        .map(|(tool, backend)| {
            let binding = Binding {
                backend: backend.clone(),
                explicit: true,
            };
            (tool.clone(), binding)
        })
        .collect();
    for plugin in plugins.iter().filter(|p| p.worlds.tool && p.worlds.enricher) {
        for tool in &plugin.tools {
            let claimed = base_tool(&tool.name)
                .and_then(|t| t.category.as_deref())
                .is_some_and(|c| plugin.claims(c));
            if claimed && !bound.contains_key(&tool.name) {
                let binding = Binding {
                    backend: plugin.name.to_string(),
                    explicit: false,
                };
                bound.insert(tool.name.clone(), binding);
            }
        }
    }
    bound
}

/// The names taken so far, claimed in registration order.
pub struct Names<'a> {
    bindings: &'a BTreeMap<String, Binding>,
    /// Name → who has it, as a refusal states it.
    taken: HashMap<String, (String, Holder)>,
    refused: Vec<Refusal>,
}

impl<'a> Names<'a> {
    /// The reserved names, with the [`bindings`] in force.
    pub fn new(bindings: &'a BTreeMap<String, Binding>) -> Self {
        let mut taken = HashMap::new();
        for name in NATIVE_NAMES {
            let owner = "the name is reserved for the native tools".to_owned();
            taken.insert(name.to_owned(), (owner, Holder::Native));
        }
        for tool in base_catalog() {
            let owner = match bindings.get(&tool.name) {
                Some(Binding {
                    backend,
                    explicit: true,
                }) => (
                    format!("the name is the base-catalog tool's, bound to `{backend}` by `[bind]`"),
                    Holder::Bound(backend.clone()),
                ),
                Some(Binding { backend, .. }) => (
                    format!(
                        "the name is the base-catalog tool's, implemented by plugin `{backend}` \
                         (registered first; choose another with `[bind] {} = \"<source name>\"`)",
                        tool.name
                    ),
                    Holder::Source(format!("plugin `{backend}`")),
                ),
                None => (
                    format!(
                        "the name is reserved for the base-catalog tool (serve this one with \
                         `[bind] {} = \"<source name>\"`)",
                        tool.name
                    ),
                    Holder::Catalog,
                ),
            };
            taken.insert(tool.name.clone(), owner);
        }
        Self {
            bindings,
            taken,
            refused: Vec::new(),
        }
    }

    /// Claim `tool` for the source named `name` (`source` as a refusal
    /// states it, for example "plugin `x`").
    pub fn claim(&mut self, tool: &str, name: &str, source: &str) -> Claim {
        if base_tool(tool).is_some() && self.bindings.get(tool).is_some_and(|b| b.backend == name) {
            return Claim::Bound;
        }
        match self.taken.get(tool) {
            Some((owner, holder)) => {
                self.refused.push(Refusal {
                    tool: tool.to_owned(),
                    source: source.to_owned(),
                    owner: owner.clone(),
                    holder: holder.clone(),
                });
                Claim::Refused
            }
            None => {
                let owner = format!("{source} (registered first) provides it");
                self.taken
                    .insert(tool.to_owned(), (owner, Holder::Source(source.to_owned())));
                Claim::Serve
            }
        }
    }

    /// The tool plugins' tools that are served under their own definition,
    /// in registration order.
    pub fn plugin_tools<'p>(
        &mut self,
        plugins: &'p [Arc<Plugin>],
    ) -> Vec<(&'p Arc<Plugin>, &'p ToolDefinition)> {
        let mut served = Vec::new();
        for plugin in plugins.iter().filter(|p| p.worlds.tool) {
            let source = format!("plugin `{}`", plugin.name);
            for tool in &plugin.tools {
                if self.claim(&tool.name, &plugin.name, &source) == Claim::Serve {
                    served.push((plugin, tool));
                }
            }
        }
        served
    }

    /// What was refused, in the order claimed.
    pub fn into_refused(self) -> Vec<Refusal> {
        self.refused
    }
}

/// The refusals among `plugins` alone, as `toolhost plugins` reports them
/// (`explicit` is `[bind]`).
pub fn plugin_refusals(plugins: &[Arc<Plugin>], explicit: &BTreeMap<String, String>) -> Vec<Refusal> {
    let bindings = bindings(explicit, plugins);
    let mut names = Names::new(&bindings);
    names.plugin_tools(plugins);
    names.into_refused()
}

/// How many refused names a [`summary`] line spells out.
const SUMMARY_NAMES: usize = 6;

/// `refused` as reported: one line per source, in the order the sources
/// were refused. A source refused once gets the refusal itself; one refused
/// more often gets how many, who holds the names, and the first few of them.
pub fn summary(refused: &[Refusal]) -> Vec<String> {
    let mut sources: Vec<(&str, Vec<&Refusal>)> = Vec::new();
    for refusal in refused {
        match sources.iter_mut().find(|(s, _)| *s == refusal.source) {
            Some((_, group)) => group.push(refusal),
            None => sources.push((&refusal.source, vec![refusal])),
        }
    }
    sources
        .into_iter()
        .map(|(source, group)| match group.as_slice() {
            [one] => one.to_string(),
            _ => {
                let mut holders: BTreeMap<&Holder, usize> = BTreeMap::new();
                for r in &group {
                    *holders.entry(&r.holder).or_default() += 1;
                }
                let holders: Vec<String> = holders
                    .iter()
                    .map(|(h, n)| format!("{n} {}", h.phrase()))
                    .collect();
                let names: Vec<&str> = group
                    .iter()
                    .take(SUMMARY_NAMES)
                    .map(|r| r.tool.as_str())
                    .collect();
                let more = group.len().saturating_sub(SUMMARY_NAMES);
                let more = if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                };
                format!(
                    "{source}: {} tools not offered, their names are taken ({}): {}{more}; \
                     the others are served (`toolhost tools --explain NAME` says why and how to choose)",
                    group.len(),
                    holders.join(", "),
                    names.join(", "),
                )
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_names_are_refused_and_the_first_plugin_wins() {
        let explicit = BTreeMap::from([("create_issue".to_owned(), "tracker".to_owned())]);
        let bindings = bindings(&explicit, &[]);
        let mut names = Names::new(&bindings);
        assert_eq!(names.claim("read", "x", "plugin `x`"), Claim::Refused);
        assert_eq!(names.claim("write", "x", "plugin `x`"), Claim::Refused);
        assert_eq!(names.claim("get_issue", "x", "plugin `x`"), Claim::Refused);
        assert_eq!(names.claim("create_issue", "x", "plugin `x`"), Claim::Refused);
        assert_eq!(
            names.claim("create_issue", "tracker", "plugin `tracker`"),
            Claim::Bound
        );
        assert_eq!(names.claim("word_count", "text", "plugin `text`"), Claim::Serve);
        assert_eq!(names.claim("word_count", "x", "plugin `x`"), Claim::Refused);
        let refused = names.into_refused();
        assert_eq!(refused.len(), 5);
        let clash = refused[4].to_string();
        assert!(
            clash.contains("plugin `x` lists tool `word_count`")
                && clash.contains("plugin `text` (registered first)"),
            "{clash}"
        );
        assert!(refused[0].to_string().contains("native tools"));
        assert!(refused[2].to_string().contains("[bind] get_issue"));
        assert!(refused[3].to_string().contains("bound to `tracker`"));
    }

    #[test]
    fn the_summary_is_one_line_per_source() {
        let bindings = BTreeMap::new();
        let mut names = Names::new(&bindings);
        names.claim("word_count", "text", "plugin `text`");
        let tools = ["read", "grep", "word_count", "get_issue", "a", "b", "c"];
        for tool in tools {
            names.claim(tool, "other", "plugin `other`");
        }
        for tool in ["a", "b", "c"] {
            names.claim(tool, "third", "plugin `third`");
        }
        names.claim("glob", "lone", "plugin `lone`");
        let refused = names.into_refused();
        let lines = summary(&refused);
        assert_eq!(lines.len(), 3, "{lines:#?}");
        assert_eq!(
            lines[0],
            "plugin `other`: 4 tools not offered, their names are taken (2 reserved for the native \
             tools, 1 reserved for the base catalog, 1 provided by plugin `text`): read, grep, \
             word_count, get_issue; the others are served (`toolhost tools --explain NAME` says \
             why and how to choose)"
        );
        assert!(
            lines[1].starts_with("plugin `third`: 3 tools not offered, their names are taken (3 provided by plugin `other`): a, b, c;"),
            "{}",
            lines[1]
        );
        assert_eq!(lines[2], refused.last().unwrap().to_string());

        let mut names = Names::new(&bindings);
        for tool in NATIVE_NAMES.iter().chain(["get_issue", "get_issues"].iter()) {
            names.claim(tool, "x", "plugin `x`");
        }
        let line = &summary(&names.into_refused())[0];
        assert!(
            line.contains(": read, glob, grep, ls, web_fetch, write and 3 more;"),
            "{line}"
        );
    }

    #[test]
    fn every_native_tool_name_is_reserved() {
        let dir = tempfile::tempdir().unwrap();
        let root = crate::tools::Root::new(dir.path()).unwrap();
        let native = crate::tools::NativeTools::new(root, Default::default())
            .unwrap()
            .writable(true);
        let served: Vec<String> = native.specs().into_iter().map(|s| s.name).collect();
        assert_eq!(served, NATIVE_NAMES);
    }
}
