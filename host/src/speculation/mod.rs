//! Speculative prefetch: after a call, make the agent's likely next calls
//! ahead of time so that the real ones are answered at once.
//!
//! - `planner`: which follow-ups, from value models (pure);
//! - `projection`: the host's own argument projections;
//! - `cache`: the request-keyed cache with TTLs, byte bound, invalidation
//!   and joins of prefetches in flight;
//! - `learned`: links learned from the values that flow between calls;
//! - `json_text`: the JSON a text result holds, whole or cut short;
//! - `fanout`: how many of a link's candidates are worth prefetching,
//!   learned from the calls the agent really makes;
//! - `walk`: the lists the agent walks item by item, and the next item;
//! - `settings`: `[speculation]` in the configuration;
//! - `dispatcher`: background runs within global and per-host caps;
//! - `engine`: the glue: plan, project, prepare, dispatch, serve;
//! - `shared`: what this replica's entries are checked against when the
//!   prefetches are shared with other replicas (`crate::cluster`);
//! - `tally`: the counters and the fan-out summed over the replicas;
//! - `metrics`: what it all achieved.
//!
//! Only `pure` and `read-only` tools are ever called ahead of time.

pub(crate) mod cache;
pub(crate) mod dispatcher;
pub(crate) mod engine;
pub(crate) mod fanout;
mod json_text;
mod latency;
pub(crate) mod learned;
pub(crate) mod metrics;
pub(crate) mod planner;
pub(crate) mod projection;
mod repeats;
pub(crate) mod settings;
mod shared;
mod tally;
mod walk;

pub(crate) use engine::{Admit, Engine, Observed, Served, Target};
pub use fanout::RankStats;
pub use learned::{Form, LinkStats, MIN_SEEN, Source, Step};
pub use metrics::{Snapshot, Spent};
pub use settings::Settings;
