//! The speculation engine: after a call, plan its likely follow-ups, project
//! their arguments, prepare them through the call pipeline (so a before-call
//! block or a validation error stops them), and run them in the background
//! into the cache; before a real call executes, serve it from the cache or
//! join its prefetch in flight.
//!
//! The pipeline is reached through [`Target`], so the engine knows nothing
//! of tool sources. Enrichers' `project-args` are asked first, in
//! registration order (the first that answers wins), then the host's own
//! projections; the per-host cap uses the enrichers' `rate-limit-host`, else
//! the value model's.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::cache::{Key, Lookup, Prefetched, SpecCache};
use super::dispatcher::{Dispatcher, Refused};
use super::metrics::{Metrics, Snapshot};
use super::planner::{self, DeclineReason, PlannerOptions};
use super::projection;
use crate::enrich::Enrichers;
use crate::value_model::{FollowUpLink, ValueModels};

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What the engine needs of the call pipeline.
pub trait Target: Send + Sync + 'static {
    /// A call's result as cached.
    type Output: Clone + Send + Sync + 'static;

    /// Run a call up to execution (prepare, validate, before-call,
    /// transform); the final arguments, or why it may not run.
    fn prepare(
        &self,
        tool: String,
        args: Map<String, Value>,
    ) -> BoxFuture<'_, Result<Map<String, Value>, String>>;

    /// Execute a prepared call.
    fn execute(&self, tool: String, args: Map<String, Value>) -> BoxFuture<'_, Result<Self::Output, String>>;

    /// Bytes the output holds, for the cache bound.
    fn size(output: &Self::Output) -> usize;
}

/// Engine settings.
#[derive(Debug, Clone)]
pub struct Options {
    pub planner: PlannerOptions,
    pub max_in_flight: usize,
    pub per_host: usize,
    pub timeout: Duration,
    pub cache_bytes: usize,
    /// TTL of results whose value model sets none.
    pub default_ttl: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            planner: PlannerOptions::default(),
            max_in_flight: 8,
            per_host: 4,
            timeout: Duration::from_secs(10),
            cache_bytes: 16 << 20,
            default_ttl: Duration::from_secs(30),
        }
    }
}

pub struct Engine<T: Target> {
    target: Arc<T>,
    models: Arc<ValueModels>,
    enrichers: Enrichers,
    options: Options,
    cache: Arc<SpecCache<T::Output>>,
    dispatcher: Dispatcher,
    metrics: Arc<Metrics>,
}

/// How a real call was answered.
pub enum Served<V> {
    /// From the cache or a joined prefetch.
    Prefetched(V),
    /// Not prefetched: run it.
    Run,
}

impl<T: Target> Engine<T> {
    pub fn new(target: Arc<T>, models: Arc<ValueModels>, enrichers: Enrichers, options: Options) -> Self {
        let dispatcher = Dispatcher::new(options.max_in_flight, options.per_host, options.timeout);
        let cache = Arc::new(SpecCache::new(options.cache_bytes));
        Self {
            target,
            models,
            enrichers,
            options,
            cache,
            dispatcher,
            metrics: Arc::default(),
        }
    }

    /// Before a real call executes: its prefetched result, if any. Only
    /// tools that may be speculated are ever looked up.
    pub async fn serve(&self, tool: &str, args: &Map<String, Value>) -> Served<T::Output> {
        if !self.models.get(tool).is_some_and(|m| m.is_speculatable()) {
            return Served::Run;
        }
        match self.cache.lookup(&Key::new(tool, args)) {
            Lookup::Hit(p) => {
                self.metrics.hit(p.took);
                Served::Prefetched(p.value)
            }
            Lookup::Pending(join) => {
                let waited = Instant::now();
                match join.wait().await {
                    Some(p) => {
                        self.metrics.join(p.took.saturating_sub(waited.elapsed()));
                        Served::Prefetched(p.value)
                    }
                    None => Served::Run,
                }
            }
            Lookup::Miss => Served::Run,
        }
    }

    /// Drop what a call to `tool` makes stale, if it may change anything.
    /// Called before and after the call runs, so a prefetch racing it is
    /// discarded too.
    pub fn invalidate_for(&self, tool: &str) {
        let Some(model) = self.models.get(tool) else {
            return;
        };
        if let Some(tools) = &model.invalidates {
            self.cache.invalidate(tools);
        }
    }

    /// After `tool` returned `result` (its structured result): plan and
    /// dispatch its follow-ups. Returns when they are dispatched, not done.
    pub async fn after_call(&self, tool: &str, result: &Value, intent: &[String]) {
        let plan = planner::plan(&self.models, tool, intent, &self.options.planner);
        for d in &plan.declined {
            self.metrics.declined(d.reason);
        }
        for call in plan.calls {
            let candidates = self.project(tool, result, &call.link).await;
            if candidates.is_empty() {
                self.metrics.declined(DeclineReason::NoArguments);
            }
            for args in candidates {
                self.dispatch(&call.link.tool, args).await;
            }
        }
    }

    async fn project(&self, tool: &str, result: &Value, link: &FollowUpLink) -> Vec<Map<String, Value>> {
        let category = crate::catalog::base_tool(tool).and_then(|t| t.category.as_deref());
        for plugin in self.enrichers.for_category(category) {
            match plugin.project_args(tool, result, link).await {
                Ok(Some(items)) => return items.into_iter().take(projection::MAX_PER_LINK).collect(),
                Ok(None) => {}
                Err(e) => tracing::debug!(tool, "project-args skipped: {e}"),
            }
        }
        projection::project(tool, result, link)
    }

    async fn host_for(&self, tool: &str, args: &Map<String, Value>) -> Option<String> {
        let category = crate::catalog::base_tool(tool).and_then(|t| t.category.as_deref());
        for plugin in self.enrichers.for_category(category) {
            if let Ok(Some(host)) = plugin.rate_limit_host(tool, args).await {
                return Some(host);
            }
        }
        let from_url = args
            .get("url")
            .and_then(Value::as_str)
            .and_then(|u| reqwest::Url::parse(u).ok());
        from_url
            .and_then(|u| u.host_str().map(str::to_owned))
            .or_else(|| self.models.get(tool)?.rate_limit_host.clone())
    }

    async fn dispatch(&self, tool: &str, args: Map<String, Value>) {
        let args = match self.target.prepare(tool.to_owned(), args).await {
            Ok(args) => args,
            Err(reason) => {
                tracing::debug!(tool, "prefetch refused: {reason}");
                self.metrics.declined(DeclineReason::Refused);
                return;
            }
        };
        let Some(ticket) = self.cache.begin(Key::new(tool, &args)) else {
            return;
        };
        let host = self.host_for(tool, &args).await;
        let ttl = self
            .models
            .get(tool)
            .and_then(|m| m.cost.freshness_ttl_s)
            .map_or(self.options.default_ttl, |s| Duration::from_secs(s.into()));
        let (target, cache, tool_name) = (self.target.clone(), self.cache.clone(), tool.to_owned());
        let prefetch = async move {
            let start = Instant::now();
            if let Ok(value) = target.execute(tool_name, args).await {
                let bytes = T::size(&value);
                cache.complete(
                    ticket,
                    Prefetched {
                        value,
                        took: start.elapsed(),
                    },
                    bytes,
                    ttl,
                );
            }
        };
        match self.dispatcher.dispatch(host.as_deref(), prefetch) {
            Ok(()) => self.metrics.dispatched(),
            Err(Refused::ShutDown) => {}
            Err(_) => self.metrics.declined(DeclineReason::Capped),
        }
    }

    pub fn stats(&self) -> Snapshot {
        self.cache.sweep();
        self.metrics.snapshot(self.cache.wasted())
    }

    pub fn in_flight(&self) -> usize {
        self.dispatcher.in_flight()
    }

    /// Cancel every prefetch.
    pub async fn shutdown(&self) {
        self.dispatcher.shutdown().await;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use serde_json::json;
    use tokio::sync::Notify;

    use super::*;
    use crate::value_model::{CostModel, Layer, SideEffect, ValueModel};

    /// A backend of files: `read` returns the current content; `write`
    /// changes it. Reads can be held until released, to race them.
    #[derive(Default)]
    struct Files {
        content: Mutex<std::collections::HashMap<String, String>>,
        executions: AtomicUsize,
        hold: Mutex<Option<Arc<Notify>>>,
        refuse: Mutex<Option<String>>,
    }

    impl Target for Files {
        type Output = String;

        fn prepare(
            &self,
            tool: String,
            args: Map<String, Value>,
        ) -> BoxFuture<'_, Result<Map<String, Value>, String>> {
            Box::pin(async move {
                match self.refuse.lock().unwrap().as_ref() {
                    Some(path) if args.get("path") == Some(&json!(path)) => Err(format!("{tool} blocked")),
                    _ => Ok(args),
                }
            })
        }

        fn execute(&self, tool: String, args: Map<String, Value>) -> BoxFuture<'_, Result<String, String>> {
            Box::pin(async move {
                let hold = self.hold.lock().unwrap().clone();
                let path = args["path"].as_str().unwrap().to_owned();
                // Read the state when the call starts, as a real backend would.
                let seen = self
                    .content
                    .lock()
                    .unwrap()
                    .get(&path)
                    .cloned()
                    .unwrap_or_default();
                if let Some(h) = hold {
                    h.notified().await;
                }
                self.executions.fetch_add(1, Ordering::SeqCst);
                assert_eq!(tool, "read");
                Ok(seen)
            })
        }

        fn size(output: &String) -> usize {
            output.len()
        }
    }

    fn engine(files: Arc<Files>, ttl: Option<u32>) -> Engine<Files> {
        let mut models = ValueModels::with_builtins();
        let read = ValueModel {
            cost: CostModel {
                freshness_ttl_s: ttl,
                ..CostModel::default()
            },
            ..ValueModel::default()
        };
        models.add("read", Layer::User, &read);
        let write = ValueModel {
            side_effect: Some(SideEffect::MutatesLocal),
            invalidates: Some(vec!["read".into()]),
            ..ValueModel::default()
        };
        models.add("write", Layer::User, &write);
        Engine::new(files, Arc::new(models), Enrichers::default(), Options::default())
    }

    fn args(path: &str) -> Map<String, Value> {
        json!({"path": path}).as_object().unwrap().clone()
    }

    async fn settle(e: &Engine<Files>) {
        while e.in_flight() > 0 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn glob_prefetches_reads_that_real_calls_then_hit() {
        let files = Arc::new(Files::default());
        files
            .content
            .lock()
            .unwrap()
            .insert("a.rs".into(), "fn a() {}".into());
        let e = engine(files.clone(), Some(60));
        e.after_call("glob", &json!({"paths": ["a.rs", "b.rs"]}), &[])
            .await;
        settle(&e).await;
        assert_eq!(files.executions.load(Ordering::SeqCst), 2);
        assert!(matches!(e.serve("read", &args("a.rs")).await, Served::Prefetched(s) if s == "fn a() {}"));
        assert!(matches!(e.serve("read", &args("c.rs")).await, Served::Run));
        let stats = e.stats();
        assert_eq!((stats.dispatched, stats.hits), (2, 1));
        // The same chain again is not skipped because read ran before; the
        // fresh entries simply are not fetched twice.
        e.after_call("glob", &json!({"paths": ["a.rs"]}), &[]).await;
        settle(&e).await;
        assert_eq!(files.executions.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_write_between_prefetch_and_real_call_is_seen() {
        let files = Arc::new(Files::default());
        files.content.lock().unwrap().insert("a.rs".into(), "old".into());
        let e = engine(files.clone(), Some(60));
        e.after_call("glob", &json!({"paths": ["a.rs"]}), &[]).await;
        settle(&e).await;
        // The write happens after the prefetch landed.
        e.invalidate_for("write");
        files.content.lock().unwrap().insert("a.rs".into(), "new".into());
        e.invalidate_for("write");
        assert!(
            matches!(e.serve("read", &args("a.rs")).await, Served::Run),
            "the stale prefetch must not be served"
        );
    }

    #[tokio::test]
    async fn a_write_racing_a_prefetch_in_flight_is_seen_by_joined_calls() {
        let files = Arc::new(Files::default());
        files.content.lock().unwrap().insert("a.rs".into(), "old".into());
        let hold = Arc::new(Notify::new());
        *files.hold.lock().unwrap() = Some(hold.clone());
        let e = Arc::new(engine(files.clone(), Some(60)));
        e.after_call("glob", &json!({"paths": ["a.rs"]}), &[]).await;
        let joined = {
            let e = e.clone();
            tokio::spawn(async move { matches!(e.serve("read", &args("a.rs")).await, Served::Run) })
        };
        tokio::task::yield_now().await;
        e.invalidate_for("write");
        files.content.lock().unwrap().insert("a.rs".into(), "new".into());
        e.invalidate_for("write");
        hold.notify_one();
        assert!(
            joined.await.unwrap(),
            "the joined call runs for real after the write"
        );
    }

    #[tokio::test]
    async fn a_real_call_joins_a_prefetch_in_flight() {
        let files = Arc::new(Files::default());
        files.content.lock().unwrap().insert("a.rs".into(), "body".into());
        let hold = Arc::new(Notify::new());
        *files.hold.lock().unwrap() = Some(hold.clone());
        let e = Arc::new(engine(files.clone(), Some(60)));
        e.after_call("glob", &json!({"paths": ["a.rs"]}), &[]).await;
        let real = {
            let e = e.clone();
            tokio::spawn(async move {
                match e.serve("read", &args("a.rs")).await {
                    Served::Prefetched(s) => Some(s),
                    Served::Run => None,
                }
            })
        };
        // Single-threaded runtime: one yield runs the real call up to its wait.
        tokio::task::yield_now().await;
        hold.notify_one();
        assert_eq!(real.await.unwrap().as_deref(), Some("body"));
        assert_eq!(
            files.executions.load(Ordering::SeqCst),
            1,
            "one backend call served both"
        );
        assert_eq!(e.stats().joins, 1);
    }

    #[tokio::test]
    async fn ttl_expiry_and_refusals() {
        let files = Arc::new(Files::default());
        *files.refuse.lock().unwrap() = Some("secret.rs".into());
        let e = engine(files.clone(), Some(0));
        e.after_call("glob", &json!({"paths": ["a.rs", "secret.rs"]}), &[])
            .await;
        settle(&e).await;
        assert_eq!(
            files.executions.load(Ordering::SeqCst),
            1,
            "the refused prefetch never ran"
        );
        assert!(
            matches!(e.serve("read", &args("a.rs")).await, Served::Run),
            "expired"
        );
        let stats = e.stats();
        assert_eq!(stats.declined.get("refused"), Some(&1));
        assert_eq!(stats.wasted, 1);
    }
}
