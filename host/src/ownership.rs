//! Who serves a tool name: the rule that settles a clash between sources,
//! so that one plugin (or upstream server) listing a name that is taken
//! never stops the host.
//!
//! - The native tools' names (`read`, `glob`, `grep`, `ls`, `web_fetch`,
//!   `write`, `edit`) are reserved for the host, whether or not the native
//!   tools are served or writable: turning a setting on never changes who
//!   serves a name.
//! - A base-catalog name belongs to the catalog tool when that tool is
//!   *provided*: a backend is bound to it and a loaded enricher claims its
//!   category (a catalog tool no enricher claims is never listed). Such a
//!   tool is served only by its backend, with the catalog's schema; that
//!   backend (a tool plugin or an upstream server) may list a tool of that
//!   name, which is then that catalog tool's implementation (one tool, the
//!   catalog's schema, the plugin's hooks). A binding comes from `[bind]`,
//!   or else from a vendor's full plugin: the first plugin registered that
//!   both claims the tool's category and lists the tool implements it, so a
//!   provider's one `.wasm` dropped into the directory serves its tools
//!   with no `[bind]` at all. `[bind]` always wins, and is how a user picks
//!   between two vendors of one category.
//! - A tool plugin listing a base-catalog name it does not implement is
//!   refused: plugins are built for this host and its catalog.
//! - An upstream server is someone else's, named after its own API
//!   (GitHub's server lists `get_issue`, `create_issue`, `search_code`,
//!   ...): a toolhost in front of it must serve it under its own names. So
//!   an upstream tool whose name is a base-catalog name that is *not*
//!   provided takes the name, with its own schema, annotations and value
//!   model (the first server configured, if two list it). When the catalog
//!   tool is provided, the catalog tool wins and the upstream's tool is
//!   refused, the refusal naming both sources and the two lines that choose
//!   otherwise: a `prefix` in the server's `[[upstream]]` table (its tool
//!   served beside the catalog's, under the prefixed name), or
//!   `[bind] NAME = "SERVER"` (the server becomes the catalog tool's
//!   backend: the catalog's schema, its calls sent to the server's tool).
//!   A `[bind]` to the server itself of a catalog tool no enricher claims
//!   serves neither, and the refusal says to remove that line.
//! - Any other name goes to the first source registered: plugins in
//!   registration order, then upstream servers in configuration order.
//!
//! Every line a refusal suggests does what it says when followed: a
//! `[bind]` is suggested only where a loaded enricher claims the catalog
//! tool's category, so the catalog tool it binds is listed.
//!
//! A refused tool is left out with a [`Refusal`] naming both sides; the
//! source's other tools are served. `toolhost serve`, `call`, `tools` and
//! `plugins` report refusals the same way, as errors beside the load errors,
//! one line per source ([`summary`]): two vendors of one category clash on
//! every tool of it, and a line per tool would bury the load errors. Each
//! refusal in full stays with the tool (`toolhost tools --explain NAME`).
//! This module owns the rule; the tools' sources and backends are the
//! pipeline's.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
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

/// The categories some loaded enricher claims: a categorised tool (a
/// base-catalog one included) is listed only in one of them.
pub fn enriched_categories(plugins: &[Arc<Plugin>]) -> BTreeSet<String> {
    plugins
        .iter()
        .filter(|p| p.worlds.enricher)
        .flat_map(|p| p.categories.iter().cloned())
        .collect()
}

/// The names taken so far, claimed in registration order.
pub struct Names<'a> {
    bindings: &'a BTreeMap<String, Binding>,
    /// The categories a loaded enricher claims ([`enriched_categories`]).
    enriched: &'a BTreeSet<String>,
    /// Name → who has it, as a refusal states it.
    taken: HashMap<String, (String, Holder)>,
    /// Base-catalog names an upstream server's own tool took, the catalog
    /// tool being provided by nothing.
    yielded: HashSet<String>,
    refused: Vec<Refusal>,
}

impl<'a> Names<'a> {
    /// The reserved names, with the [`bindings`] in force and the
    /// categories the loaded enrichers claim.
    pub fn new(bindings: &'a BTreeMap<String, Binding>, enriched: &'a BTreeSet<String>) -> Self {
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
                None => {
                    let category = tool.category.as_deref().unwrap_or_default();
                    // A `[bind]` serves the catalog tool only if an enricher
                    // of its category is loaded: suggest it only then.
                    let owner = if enriched.contains(category) {
                        format!(
                            "the name is reserved for the base-catalog tool (serve this one as its \
                             implementation, with the catalog's schema, with `[bind] {} = \"<source name>\"`)",
                            tool.name
                        )
                    } else {
                        format!(
                            "the name is reserved for the base-catalog tool (of category `{category}`, \
                             which no loaded enricher claims, so no `[bind]` would serve it)"
                        )
                    };
                    (owner, Holder::Catalog)
                }
            };
            taken.insert(tool.name.clone(), owner);
        }
        Self {
            bindings,
            enriched,
            taken,
            yielded: HashSet::new(),
            refused: Vec::new(),
        }
    }

    /// The category of base-catalog tool `tool`: `Ok` if a loaded enricher
    /// claims it, `Err` if none does.
    fn enriched_category(&self, tool: &str) -> Result<&'static str, &'static str> {
        let category = base_tool(tool)
            .and_then(|t| t.category.as_deref())
            .unwrap_or_default();
        if self.enriched.contains(category) {
            Ok(category)
        } else {
            Err(category)
        }
    }

    fn refuse(&mut self, tool: &str, source: &str, owner: String, holder: Holder) -> Claim {
        self.refused.push(Refusal {
            tool: tool.to_owned(),
            source: source.to_owned(),
            owner,
            holder,
        });
        Claim::Refused
    }

    /// Claim `tool` for the source named `name` (`source` as a refusal
    /// states it, for example "plugin `x`").
    pub fn claim(&mut self, tool: &str, name: &str, source: &str) -> Claim {
        if base_tool(tool).is_some() && self.bindings.get(tool).is_some_and(|b| b.backend == name) {
            return Claim::Bound;
        }
        match self.taken.get(tool) {
            Some((owner, holder)) => {
                let (owner, holder) = (owner.clone(), holder.clone());
                self.refuse(tool, source, owner, holder)
            }
            None => {
                let owner = format!("{source} (registered first) provides it");
                self.taken
                    .insert(tool.to_owned(), (owner, Holder::Source(source.to_owned())));
                Claim::Serve
            }
        }
    }

    /// Claim the tool `remote` of upstream server `server`, served as
    /// `prefix` + `remote`: the rule of a tool plugin's, but for a
    /// base-catalog name that is not provided, which the server's tool
    /// takes (see the module doc). A refusal says which `prefix` line
    /// serves the tool beside the name's holder.
    pub fn claim_upstream(&mut self, server: &str, prefix: &str, remote: &str) -> Claim {
        let tool = format!("{prefix}{remote}");
        let source = format!("upstream `{server}`");
        let beside = Beside::new(server, prefix, remote);
        let with_beside = |names: &mut Self, claim: Claim| {
            if let (Claim::Refused, Some(refusal)) = (claim, names.refused.last_mut()) {
                refusal.owner = format!("{} ({beside})", refusal.owner);
            }
            claim
        };
        if base_tool(&tool).is_none() {
            let claim = self.claim(&tool, server, &source);
            return with_beside(self, claim);
        }
        let binding = self.bindings.get(&tool).cloned();
        match (binding, self.enriched_category(&tool)) {
            (Some(b), Ok(_)) if b.backend == server => Claim::Bound,
            (Some(b), Err(category)) if b.backend == server && !self.yielded(&tool) => {
                let owner = format!(
                    "`[bind] {tool} = \"{server}\"` makes this server the base-catalog tool's backend, and no \
                     loaded enricher claims that tool's category `{category}`, so neither is served (remove \
                     that `[bind]` line to serve this one under its name)"
                );
                self.refuse(&tool, &source, owner, Holder::Bound(server.to_owned()))
            }
            (Some(b), Ok(_)) => {
                let (held, holder) = if b.explicit {
                    (
                        format!("bound to `{}` by `[bind]`", b.backend),
                        Holder::Bound(b.backend.clone()),
                    )
                } else {
                    (
                        format!("implemented by plugin `{}` (registered first)", b.backend),
                        Holder::Source(format!("plugin `{}`", b.backend)),
                    )
                };
                let owner = format!(
                    "the name is the base-catalog tool's, {held} ({beside}; or make this server the catalog \
                     tool's backend, with the catalog's schema and its calls sent to this tool, with \
                     `[bind] {tool} = \"{server}\"`)"
                );
                self.refuse(&tool, &source, owner, holder)
            }
            // The catalog tool is provided by nothing: the name is the first
            // server's that lists it.
            _ if self.yielded(&tool) => {
                let (owner, holder) = self.taken[&tool].clone();
                let claim = self.refuse(&tool, &source, owner, holder);
                with_beside(self, claim)
            }
            _ => {
                let owner = format!("{source} (configured first) provides it");
                self.taken
                    .insert(tool.clone(), (owner, Holder::Source(source.clone())));
                self.yielded.insert(tool);
                Claim::Serve
            }
        }
    }

    /// Whether base-catalog name `tool` went to an upstream server's own
    /// tool ([`Names::claim_upstream`]): the catalog tool is not served.
    pub fn yielded(&self, tool: &str) -> bool {
        self.yielded.contains(tool)
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

/// How an upstream server's refused tool is served beside the name's
/// holder: the `prefix` that renames it, as a refusal suggests it.
struct Beside<'a> {
    server: &'a str,
    prefix: String,
    remote: &'a str,
}

impl<'a> Beside<'a> {
    /// The server's name made a prefix (`github` → `github_`), in the
    /// characters a tool name may hold; one that differs from the `current`
    /// prefix, so the tool's name changes.
    fn new(server: &'a str, current: &str, remote: &'a str) -> Self {
        let stem: String = server
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let mut prefix = format!("{}_", stem.trim_end_matches('_'));
        if prefix == "_" {
            prefix = "upstream_".to_owned();
        }
        if prefix == current {
            prefix = format!("{current}{prefix}");
        }
        Self {
            server,
            prefix,
            remote,
        }
    }
}

impl std::fmt::Display for Beside<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Self {
            server,
            prefix,
            remote,
        } = self;
        write!(
            f,
            "serve this one beside it as `{prefix}{remote}` with `prefix = \"{prefix}\"` in the `[[upstream]]` \
             table named `{server}`, which prefixes all its tools"
        )
    }
}

/// The refusals among `plugins` alone, as `toolhost plugins` reports them
/// (`explicit` is `[bind]`).
pub fn plugin_refusals(plugins: &[Arc<Plugin>], explicit: &BTreeMap<String, String>) -> Vec<Refusal> {
    let bindings = bindings(explicit, plugins);
    let enriched = enriched_categories(plugins);
    let mut names = Names::new(&bindings, &enriched);
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
        let enriched = BTreeSet::from(["issue_tracker".to_owned()]);
        let mut names = Names::new(&bindings, &enriched);
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

        // With no enricher of its category, a `[bind]` would not serve the
        // catalog tool: it is not suggested.
        let none = BTreeSet::new();
        let mut names = Names::new(&bindings, &none);
        assert_eq!(names.claim("get_issue", "x", "plugin `x`"), Claim::Refused);
        let refusal = names.into_refused()[0].to_string();
        assert!(
            refusal.contains("category `issue_tracker`, which no loaded enricher claims")
                && !refusal.contains("[bind] get_issue"),
            "{refusal}"
        );
    }

    /// The conflict rule for an upstream server's tools named like
    /// base-catalog tools (GitHub's MCP server's real names), each case
    /// with what its refusal says.
    #[test]
    fn an_upstream_tool_takes_a_catalog_name_only_when_the_catalog_tool_is_not_provided() {
        let binding = |backend: &str, explicit: bool| Binding {
            backend: backend.to_owned(),
            explicit,
        };
        let bindings = BTreeMap::from([
            // Bound to another backend, enriched: the catalog tool is provided.
            ("create_issue".to_owned(), binding("jira", true)),
            // A full plugin's, enriched by it: provided.
            ("update_issue".to_owned(), binding("linear", false)),
            // Bound to this server, enriched: it implements the catalog tool.
            ("get_issue".to_owned(), binding("github", true)),
            // Bound elsewhere, but nothing enriches `git_repository`: the
            // catalog tool would never be listed.
            ("search_code".to_owned(), binding("gitlab", true)),
            // Bound to this server, nothing enriches it: neither is served.
            ("get_commit".to_owned(), binding("github", true)),
        ]);
        let enriched = BTreeSet::from(["issue_tracker".to_owned()]);
        let mut names = Names::new(&bindings, &enriched);
        let claim = |names: &mut Names, tool: &str| names.claim_upstream("github", "", tool);
        assert_eq!(claim(&mut names, "get_issue"), Claim::Bound);
        assert_eq!(claim(&mut names, "create_issue"), Claim::Refused);
        assert_eq!(claim(&mut names, "update_issue"), Claim::Refused);
        assert_eq!(claim(&mut names, "search_code"), Claim::Serve);
        assert_eq!(claim(&mut names, "get_commit"), Claim::Refused);
        // Unbound, in a category an enricher claims: still nothing serves it.
        assert_eq!(claim(&mut names, "add_issue_comment"), Claim::Serve);
        assert_eq!(claim(&mut names, "list_issues"), Claim::Serve);
        assert_eq!(claim(&mut names, "read"), Claim::Refused);
        assert!(names.yielded("search_code") && names.yielded("add_issue_comment"));
        assert!(!names.yielded("get_issue") && !names.yielded("list_issues"));
        // A second server, and a plugin, after the first server took them.
        assert_eq!(
            names.claim_upstream("mirror", "", "add_issue_comment"),
            Claim::Refused
        );
        assert_eq!(names.claim_upstream("mirror", "", "list_issues"), Claim::Refused);
        // A tool plugin never takes a catalog name it does not implement.
        assert_eq!(
            names.claim("list_project_versions", "p", "plugin `p`"),
            Claim::Refused
        );
        let refused: Vec<String> = names.into_refused().iter().map(ToString::to_string).collect();
        let [create, update, commit, read, mirror_comment, mirror_list, plugin] = refused.as_slice() else {
            panic!("{refused:#?}");
        };
        assert_eq!(
            create,
            "upstream `github` lists tool `create_issue`, but the name is the base-catalog tool's, bound to \
             `jira` by `[bind]` (serve this one beside it as `github_create_issue` with `prefix = \"github_\"` \
             in the `[[upstream]]` table named `github`, which prefixes all its tools; or make this server \
             the catalog tool's backend, with the catalog's schema and its calls sent to this tool, with \
             `[bind] create_issue = \"github\"`): that tool is refused, the others are served"
        );
        assert!(
            update.contains("implemented by plugin `linear` (registered first)")
                && update.contains("`prefix = \"github_\"`")
                && update.contains("`[bind] update_issue = \"github\"`"),
            "{update}"
        );
        assert!(
            commit.contains("`[bind] get_commit = \"github\"` makes this server")
                && commit.contains("category `git_repository`")
                && commit.contains("remove that `[bind]` line to serve this one under its name"),
            "{commit}"
        );
        assert!(
            read.contains("reserved for the native tools") && read.contains("as `github_read`"),
            "{read}"
        );
        for (line, tool) in [
            (mirror_comment, "add_issue_comment"),
            (mirror_list, "list_issues"),
        ] {
            assert!(
                line.starts_with(&format!(
                    "upstream `mirror` lists tool `{tool}`, but upstream `github`"
                )) && line.contains(&format!("as `mirror_{tool}` with `prefix = \"mirror_\"`")),
                "{line}"
            );
        }
        assert!(plugin.contains("reserved for the base-catalog tool"), "{plugin}");
    }

    #[test]
    fn the_suggested_prefix_is_a_tool_name_prefix_that_changes_the_name() {
        assert_eq!(Beside::new("github", "", "get_issue").prefix, "github_");
        assert_eq!(Beside::new("my server.", "", "x").prefix, "my_server_");
        assert_eq!(Beside::new("gh", "gh_", "x").prefix, "gh_gh_");
        assert_eq!(Beside::new("__", "", "x").prefix, "upstream_");
    }

    #[test]
    fn the_summary_is_one_line_per_source() {
        let bindings = BTreeMap::new();
        let enriched = BTreeSet::new();
        let mut names = Names::new(&bindings, &enriched);
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

        let mut names = Names::new(&bindings, &enriched);
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
