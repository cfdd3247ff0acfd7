//! The call pipeline and [`Toolhost`], the library API over it.
//!
//! Tools come from four sources merged into one catalog, each tool with an
//! optional category: native tools, tool plugins' tools, upstream MCP
//! servers' tools, and base-catalog tools bound by configuration to a
//! backend (an upstream server or a tool plugin; an unbound catalog tool is
//! not listed). The listing is enriched when the catalog is built; a tool
//! hidden by the enrichers cannot be called either.
//!
//! A call runs: resolve → prepare-arguments (tool plugins) → coerce and
//! validate against the enriched schema → before-call → the enrichers'
//! transform-args (categorised tools only) → execute → after-call, then
//! speculation plans its follow-ups.
//!
//! One concept a module, each importing only those listed before it
//! (each file owns the impls of the types it declares; `prefetch`
//! implements speculation's trait for the catalog):
//! - `caller`: who makes a call ([`Caller`]) and how the host knows it;
//! - `control`: a call as its caller holds it ([`CallControl`]), a call
//!   that got no result ([`CallError`]) and an error as the model reads it
//!   ([`error_text`]);
//! - `policy`: who may call which tool ([`Policy`], Cedar), and how a
//!   call was decided ([`Decision`]);
//! - `audit`: the record of each call, who made it, how the policy
//!   decided it and how it ended ([`Audit`]);
//! - `validate`: arguments and structured results against their schemas;
//! - `catalog`: one build of the catalog from the [`Sources`]: gathering,
//!   ownership, enrichment, value models, the speculation that runs on it,
//!   and running a tool on its backend;
//! - `call`: the steps of one call on one catalog;
//! - `prefetch`: the catalog as the speculation engine's target;
//! - `pinned`: the catalog's listing under the pin, as last compared;
//! - `toolhost`: the [`Toolhost`] facade: the current catalog, rebuilt
//!   whole when a source changes, and what it reports;
//! - `builder`: assembling a [`Toolhost`] ([`ToolhostBuilder`]): loading
//!   and reaching the sources, each default stated, and what was left out
//!   ([`BuildReport`]).
//!
//! Not here: the MCP protocol (`mcp`), the speculation machinery
//! (`speculation`), the tool sources themselves (`tools`, `plugin`,
//! `upstream`).

mod ask;
mod audit;
mod builder;
mod call;
mod caller;
mod catalog;
mod control;
mod pinned;
mod policy;
mod prefetch;
mod toolhost;
mod validate;

pub use audit::{Audit, AuditError};
pub use builder::{BuildError, BuildReport, ToolhostBuilder};
pub(crate) use caller::check_claim_names;
pub use caller::{Caller, Via};
pub use catalog::{CatalogError, Options, Sources};
pub use control::{CallControl, CallError, error_text};
pub use policy::{Decision, Policy, PolicyError, Verdict};
pub use toolhost::Toolhost;
