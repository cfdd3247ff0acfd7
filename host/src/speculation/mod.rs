//! Speculative prefetch: after a call, make the agent's likely next calls
//! ahead of time so that the real ones are answered at once.
//!
//! - `planner`: which follow-ups, from value models (pure);
//! - `projection`: the host's own argument projections;
//! - `cache`: the request-keyed cache with TTLs, byte bound, invalidation
//!   and joins of prefetches in flight;
//! - `dispatcher`: background runs within global and per-host caps;
//! - `engine`: the glue: plan, project, prepare, dispatch, serve;
//! - `metrics`: what it all achieved.
//!
//! Only `pure` and `read-only` tools are ever called ahead of time.

pub mod cache;
pub mod dispatcher;
pub mod engine;
pub mod metrics;
pub mod planner;
pub mod projection;
