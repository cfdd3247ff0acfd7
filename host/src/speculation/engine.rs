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
//! the host of a `url` argument, else the value model's, compared by name;
//! the target refuses a host the tool's owner is not granted. Each projected
//! candidate is dispatched only if the configuration switches speculation
//! on for its tool and host and its learned probability (`fanout`) reaches
//! the floor.
//!
//! Calls are cached and looked up under their target's cache arguments
//! ([`Target::cache_args`]), and a call served gets the target's answer
//! from the entry ([`Target::answer`]): so a slice of a file is answered
//! from the whole file prefetched, and a real call whose arguments map to a
//! candidate offered credits that candidate's rank, whatever slice it asked.
//!
//! A real call that runs may fill the cache too ([`Engine::keeps`],
//! [`Engine::keep`]), where its whole result is what a prefetch would have
//! cached and is checked against its source before every use
//! (`self_validating`: a native read's whole file): the re-reads and other
//! slices that follow are answered from it, and counted apart from what
//! prefetches served (`reused`).
//!
//! Such results may also be fetched again when their source changes behind
//! the host's back (the agent's own edit of a file it read): the target
//! follows the sources of the results it caches ([`Target::follow`]) and
//! reports their changes ([`Engine::changed`]), and a changed result held
//! is prefetched anew, judged like a follow-up under its own origin
//! ([`CHANGED`]): agents that re-read what they edit keep it on, others
//! turn it off.
//!
//! Credentials: every entry belongs to the [`Partition`] of the credential
//! it was fetched with, which the target derives from who a call is made
//! for ([`Target::credential`]). A real call is looked up, joined and kept
//! within its own partition; the follow-ups planned from it run with the
//! credential of the caller who made it and land in that caller's
//! partition, so an answer fetched with one caller's credential reaches no
//! call made with another's, here or through Redis. Calls with the host's
//! own credential ([`Partition::SHARED`]) share as before.
//!
//! Invalidation: a call to a tool that may change anything drops the cached
//! results of the tools its value model `invalidates`; one that names none
//! drops those of its whole category, or everything if it has none (an
//! unknown writer could have changed anything). A cached result the target
//! says is no longer current (a file changed behind the host's back) is
//! never served; the results of tools whose every result is checked so
//! (`self_validating`) are not dropped by writers, since the check catches
//! what the write changed and nothing else is lost.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::cache::{Key, Lookup, Partition, Prefetched, SpecCache};
use super::dispatcher::{Dispatcher, Refused};
use super::fanout::{FanOut, FollowUpRank};
use super::json_text;
use super::latency::Latencies;
use super::learned::{self, Learned};
use super::metrics::{Metrics, Snapshot, Spent};
use super::planner::{self, DeclineReason};
use super::projection;
use super::repeats::Repeats;
use super::settings::{Settings, hostname};
use super::shared::Shared;
use super::tally::Tally;
use super::walk::{Walk, Walks};
use crate::cluster::{Cluster, Entry, Stored};
use crate::enrich::Enrichers;
use crate::priority::{Background, Foreground, Running};
use crate::value_model::{FollowUpLink, ValueModels};

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Whether a follow-up (a tool and its arguments as planned) may be called
/// ahead of time on behalf of the call that led to it: the host's policy
/// for that call's caller.
pub type Admit = Arc<dyn Fn(&str, &Map<String, Value>) -> bool + Send + Sync>;

/// What the engine needs of the call pipeline.
pub trait Target: Send + Sync + 'static {
    /// A call's result as cached.
    type Output: Clone + Send + Sync + 'static;
    /// What a call served from the cache gets.
    type Answer: Send + 'static;
    /// Whom a call is made for, as far as the credentials it runs with go;
    /// its default is the host itself.
    type Principal: Clone + Default + Send + Sync + 'static;
    /// The credentials one call runs with, resolved for its principal.
    type Credential: Send + 'static;

    /// The credential a call of `tool` made for `who` runs with, and the
    /// partition its answers belong to; `Err` (why) if `who` has none for
    /// it, and the call is then not made ahead of time. Resolving may wait
    /// (a token exchange).
    fn credential<'a>(
        &'a self,
        tool: &'a str,
        who: &'a Self::Principal,
    ) -> BoxFuture<'a, Result<(Partition, Self::Credential), String>>;

    /// Run a call up to execution (prepare, validate, before-call,
    /// transform); the final arguments, or why it may not run.
    fn prepare(
        &self,
        tool: String,
        args: Map<String, Value>,
    ) -> BoxFuture<'_, Result<Map<String, Value>, String>>;

    /// Execute a prepared call with `credential`, for the cache: what is
    /// cached under its [`Target::cache_args`]. It waits behind the real
    /// calls where `background` says.
    fn execute(
        &self,
        tool: String,
        args: Map<String, Value>,
        credential: Self::Credential,
        background: Background,
    ) -> BoxFuture<'_, Result<Self::Output, String>>;

    /// The arguments a prepared call's result is cached under: calls with
    /// the same are answered from one entry (their spellings of one path, or
    /// slices of one file, whose whole is what is cached).
    fn cache_args(&self, tool: &str, args: &Map<String, Value>) -> Map<String, Value>;

    /// The answer to a call from the entry cached under its cache
    /// arguments, exactly as running the call would answer it.
    fn answer(&self, tool: &str, args: &Map<String, Value>, cached: &Self::Output) -> Self::Answer;

    /// Bytes the output holds, for the cache bound.
    fn size(output: &Self::Output) -> usize;

    /// The tool's category, which selects the enrichers asked about it.
    fn category(&self, tool: &str) -> Option<String>;

    /// Whether the configuration lets `tool` be called ahead of time
    /// against `host` (its value model already allows it), or why not:
    /// [`DeclineReason::NotEnabled`], or [`DeclineReason::NotGranted`] for
    /// a host the tool's owner could not reach.
    fn may_prefetch(&self, tool: &str, host: Option<&str>) -> Result<(), DeclineReason>;

    /// Whether a cached output is still what the call would return now.
    fn is_current(&self, tool: &str, args: &Map<String, Value>, output: &Self::Output) -> bool;

    /// Whether every cached output of `tool` is checked by
    /// [`Target::is_current`] against its source, so that writers need not
    /// drop it (a file's stamp catches any write, through the host or not).
    fn self_validating(&self, tool: &str) -> bool;

    /// The tools a call to `tool` may have changed when its value model
    /// does not say: those of its category, or all of them.
    fn neighbours(&self, tool: &str) -> Vec<String>;

    /// Whether `tool` cannot be called without an argument named `arg`
    /// (its input schema requires it).
    fn requires(&self, _tool: &str, _arg: &str) -> bool {
        false
    }

    /// Whether a real call's result of `tool` may answer the same call
    /// again within its freshness (until a writer drops it), though
    /// nothing checks it against its source: a remote service's reads,
    /// whose state prefetches are trusted for as long; not the local
    /// files, which change behind the host's back.
    fn repeatable(&self, _tool: &str) -> bool {
        false
    }

    /// An output of `tool` is cached (prefetched, or kept from a real
    /// call): the target may watch its source from now on and report a
    /// change with [`Engine::changed`].
    fn follow(&self, _tool: &str, _output: &Self::Output) {}

    /// `output` as JSON other replicas can [decode](Target::decode), if it
    /// is worth sharing with them (not what is checked against this
    /// machine's own files).
    fn encode(&self, _tool: &str, _output: &Self::Output) -> Option<Value> {
        None
    }

    /// What [`Target::encode`] made of an output, if it is one `tool`
    /// could have answered (within its output cap); else why not. Another
    /// replica's word is no more than a plugin's.
    fn decode(&self, _tool: &str, _body: Value) -> Result<Self::Output, String> {
        Err("not shared".into())
    }
}

/// A call's result, as the engine learns and plans from it.
pub enum Observed {
    /// An error, or a result with nothing to read values from.
    Nothing,
    /// Its structured content.
    Json(Value),
    /// Its text, which may hold JSON (many servers send JSON as text).
    Text(String),
}

/// Text longer than this is not parsed for JSON.
const MAX_JSON_TEXT: usize = 4 << 20;

impl Observed {
    fn json(self) -> Option<Value> {
        match self {
            Self::Nothing => None,
            Self::Json(value) => Some(value),
            Self::Text(text) => (text.len() <= MAX_JSON_TEXT)
                .then(|| json_text::parse(&text))
                .flatten(),
        }
    }
}

/// The origin a result fetched again after its source changed is learned
/// under (no tool has this name).
pub const CHANGED: &str = "(changed)";
/// How likely a result held is to be asked again after its source changed,
/// before anything is learned: agents mostly re-read what they edit.
const CHANGED_PRIOR: f32 = 0.5;

pub struct Engine<T: Target> {
    target: Arc<T>,
    models: Arc<ValueModels>,
    enrichers: Enrichers,
    settings: Settings,
    cache: Arc<SpecCache<T::Output>>,
    dispatcher: Dispatcher,
    fanout: Arc<FanOut>,
    /// Links learned from the values that flow between calls.
    learned: Arc<Learned>,
    /// The real calls in flight, which prefetches wait behind.
    foreground: Arc<Foreground>,
    /// How long each tool's calls take: what a prefetch of it saves.
    latencies: Arc<Latencies>,
    /// Which tools' exact repeats get the same answer again.
    repeats: Arc<Repeats>,
    /// Results held for a repeat that runs anyway, to compare its answer
    /// with ([`Repeats`]).
    repeated: Arc<Mutex<HashMap<Key, T::Output>>>,
    metrics: Arc<Metrics>,
    /// What the runs this one resumed from spent of the budget: a restart
    /// does not start the share of extra calls afresh.
    spent_before: Arc<SpentBefore>,
    /// Follow-ups being planned in the background.
    planning: Arc<AtomicUsize>,
    /// The lists the agent walks, and the next item of each.
    walks: Arc<Walks<T::Principal>>,
    /// The replicas this one shares prefetches with, if any.
    shared: Option<Arc<Shared<T::Output>>>,
    /// What is counted here, added to the replicas' totals.
    tally: Option<Arc<Tally>>,
}

/// Results held for repeats being compared, at most; past this they are
/// forgotten (their repeats then simply prove nothing).
const MAX_REPEATED: usize = 64;

/// A real call running ([`Engine::running`]): timed when it ends.
pub struct RealCall {
    _running: Running,
    tool: String,
    started: Instant,
    latencies: Arc<Latencies>,
}

impl Drop for RealCall {
    fn drop(&mut self) {
        self.latencies.observe(&self.tool, self.started.elapsed());
    }
}

/// Counts a background planning task until it ends, however it ends.
struct Planning(Arc<AtomicUsize>);

impl Drop for Planning {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// How a real call was answered.
pub enum Served<V> {
    /// From the cache or a joined prefetch.
    Prefetched(V),
    /// Not prefetched: run it.
    Run,
}

/// How a cached result was found.
enum How {
    Hit,
    Kept,
    Joined(Duration),
    /// In Redis, from a prefetch another replica made.
    Cluster,
}

/// One candidate follow-up call, made for `who`: an item of a walk, if
/// it is one, with its place in the walk.
struct Candidate<P> {
    tool: String,
    args: Map<String, Value>,
    origin: FollowUpRank,
    prior: f32,
    who: P,
    walk: Option<(Arc<Walk<P>>, usize)>,
}

impl<T: Target> Engine<T> {
    pub fn new(target: Arc<T>, models: Arc<ValueModels>, enrichers: Enrichers, settings: Settings) -> Self {
        let dispatcher = Dispatcher::new(settings.max_in_flight, settings.per_host, settings.timeout());
        let metrics = Arc::new(Metrics::default());
        let cache = Arc::new(SpecCache::new(settings.cache_bytes(), metrics.wasted_counter()));
        Self {
            target,
            models,
            enrichers,
            settings,
            cache,
            dispatcher,
            fanout: Arc::default(),
            learned: Arc::default(),
            foreground: Foreground::new(metrics.waited_counter()),
            latencies: Arc::default(),
            repeats: Arc::default(),
            repeated: Arc::default(),
            metrics,
            spent_before: Arc::default(),
            planning: Arc::default(),
            walks: Arc::default(),
            shared: None,
            tally: None,
        }
    }

    /// This engine sharing its prefetches and invalidations with the other
    /// replicas of `cluster`.
    pub fn with_cluster(mut self, cluster: Option<Arc<Cluster>>) -> Self {
        self.tally = cluster.as_ref().map(|c| {
            Tally::start(
                c.clone(),
                self.metrics.clone(),
                self.fanout.clone(),
                self.learned.clone(),
            )
        });
        self.shared = cluster.map(|c| Shared::new(c, self.cache.clone(), self.fanout.clone()));
        self
    }

    /// An engine for a rebuilt catalog: what was learned (fan-out) and
    /// counted carries over; the cache does not, nor do this engine's
    /// prefetches in flight (shut it down, which counts what it never served
    /// as wasted), so no result computed for the old catalog is served from
    /// the new one.
    pub fn renew(&self, target: Arc<T>, models: Arc<ValueModels>) -> Self {
        let settings = self.settings.clone();
        let cluster = self.shared.as_ref().map(|s| s.cluster().clone());
        let renewed = Self {
            target,
            models,
            enrichers: self.enrichers.clone(),
            dispatcher: Dispatcher::new(settings.max_in_flight, settings.per_host, settings.timeout()),
            cache: Arc::new(SpecCache::new(
                settings.cache_bytes(),
                self.metrics.wasted_counter(),
            )),
            settings,
            fanout: self.fanout.clone(),
            learned: self.learned.clone(),
            foreground: self.foreground.clone(),
            latencies: self.latencies.clone(),
            repeats: self.repeats.clone(),
            repeated: Arc::default(),
            metrics: self.metrics.clone(),
            spent_before: self.spent_before.clone(),
            planning: Arc::default(),
            // A step's key is an entry of the old cache, never served again.
            walks: Arc::default(),
            shared: None,
            tally: self.tally.clone(),
        };
        renewed.with_shared(cluster)
    }

    fn with_shared(mut self, cluster: Option<Arc<Cluster>>) -> Self {
        self.shared = cluster.map(|c| Shared::new(c, self.cache.clone(), self.fanout.clone()));
        self
    }

    /// A real call of `tool` runs, not served from the cache: prefetches
    /// wait behind it until the guard is dropped, which times it.
    pub fn running(&self, tool: &str) -> RealCall {
        RealCall {
            _running: self.foreground.enter(),
            tool: tool.to_owned(),
            started: Instant::now(),
            latencies: self.latencies.clone(),
        }
    }

    /// Before a real call executes with a credential of `partition`: its
    /// answer from a prefetch made with one of the same, if any. Only
    /// tools that may be speculated are ever looked up, and what their
    /// arguments took from recent results is learned.
    pub async fn serve(
        &self,
        tool: &str,
        args: &Map<String, Value>,
        partition: Partition,
    ) -> Served<T::Answer> {
        self.metrics.real_call();
        self.lookup(tool, args, partition).await
    }

    async fn lookup(&self, tool: &str, args: &Map<String, Value>, partition: Partition) -> Served<T::Answer> {
        if !self.models.get(tool).is_some_and(|m| m.is_speculatable()) {
            return Served::Run;
        }
        if self.settings.learn {
            self.learned.called(tool, args);
        }
        let key = Key::new(tool, &self.target.cache_args(tool, args), partition);
        let fate = self.fanout.called(&key);
        self.walks.called(&key);
        let found = match self.cache.lookup(&key) {
            Lookup::Hit(p) => Some((p, How::Hit)),
            Lookup::Kept(p) if self.target.self_validating(tool) || self.repeats.trusted(tool) => {
                Some((p, How::Kept))
            }
            // A repeat of a tool not proven to answer repeats alike runs,
            // and its answer is compared with this one ([`Engine::keep`]).
            Lookup::Kept(p) => {
                let mut repeated = self.repeated.lock().unwrap_or_else(|p| p.into_inner());
                if repeated.len() >= MAX_REPEATED {
                    repeated.clear();
                }
                repeated.insert(key.clone(), p.value);
                None
            }
            Lookup::Pending(join) => {
                let waited = Instant::now();
                join.wait().await.map(|p| (p, How::Joined(waited.elapsed())))
            }
            Lookup::Miss => None,
        };
        let found = match (found, &self.shared) {
            (found, None) | (found @ Some((_, How::Kept)), _) => found,
            (Some(found), Some(shared)) if shared.confirm(tool).await => Some(found),
            (_, Some(shared)) => self.lookup_cluster(shared, tool, &key).await,
        };
        let Some((p, how)) = found else {
            self.metrics.missed(fate);
            return Served::Run;
        };
        if !self.target.is_current(tool, args, &p.value) {
            self.cache.discard(&key);
            self.metrics.stale();
            self.metrics.missed(fate);
            return Served::Run;
        }
        match how {
            How::Hit => self.metrics.hit(p.took),
            How::Kept => self.metrics.reused(),
            How::Joined(waited) => self.metrics.join(p.took.saturating_sub(waited)),
            How::Cluster => {
                self.metrics.cluster_hit(p.took);
                // The replica that made it holds it too, and counts it
                // wasted if it drops it unused: tell it this one was used.
                if let Some(shared) = &self.shared {
                    shared.cluster().served(tool, &key.shared()).await;
                }
            }
        }
        Served::Prefetched(self.target.answer(tool, args, &p.value))
    }

    /// What another replica prefetched for `key`, if Redis holds it under
    /// the tool's generation now.
    async fn lookup_cluster(
        &self,
        shared: &Shared<T::Output>,
        tool: &str,
        key: &Key,
    ) -> Option<(Prefetched<T::Output>, How)> {
        let (generation, stored) = shared.cluster().fetch(tool, &key.shared()).await?;
        shared.observe(tool, generation);
        let entry = match stored {
            Stored::Entry(entry) => entry,
            Stored::Absent => return None,
            Stored::Refused(why) => return self.refuse_shared(tool, &why),
        };
        let took = entry.took();
        let value = match self.target.decode(tool, entry.body) {
            Ok(value) => value,
            Err(why) => return self.refuse_shared(tool, &why),
        };
        // Written by a replica, yet bounded as any entry of this cache.
        if T::size(&value) > self.settings.cache_bytes() {
            return None;
        }
        Some((Prefetched { value, took }, How::Cluster))
    }

    /// An entry in Redis for `tool` is not to be believed: counted, logged
    /// (the tool and why; never the entry), and the call runs.
    fn refuse_shared<X>(&self, tool: &str, why: &str) -> Option<X> {
        self.metrics.cluster_refused();
        tracing::warn!("cluster: a shared result of `{tool}` in Redis was refused ({why}): running the call");
        None
    }

    /// Whether a real call of `tool` that was not served should be run for
    /// its whole result and [kept](Engine::keep): where that result is
    /// checked against its source before each use, or answers exact repeats
    /// within its freshness ([`Target::repeatable`]), and the configuration
    /// lets the tool be called ahead of time (the same switch).
    pub fn keeps(&self, tool: &str) -> bool {
        self.models.get(tool).is_some_and(|m| m.is_speculatable())
            && (self.target.self_validating(tool) || self.target.repeatable(tool))
            && self.target.may_prefetch(tool, None).is_ok()
    }

    /// A real call of `tool` (one [`Engine::keeps`]) ran with a credential
    /// of `partition` and got `output` in `took`: keep it for the calls
    /// that follow with one of the same, and answer this one from it.
    pub fn keep(
        &self,
        tool: &str,
        args: &Map<String, Value>,
        partition: Partition,
        output: T::Output,
        took: Duration,
    ) -> T::Answer {
        let answer = self.target.answer(tool, args, &output);
        let key = Key::new(tool, &self.target.cache_args(tool, args), partition);
        let held = self
            .repeated
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&key);
        if let Some(held) = held {
            // Compared as the target encodes them; what it does not encode
            // is never proven alike.
            let (before, now) = (self.target.encode(tool, &held), self.target.encode(tool, &output));
            self.repeats.compared(tool, before.is_some() && before == now);
        }
        let bytes = T::size(&output);
        self.target.follow(tool, &output);
        let item = Prefetched { value: output, took };
        self.cache.keep(key, item, bytes, self.ttl(tool));
        answer
    }

    /// The source of `tool`'s result for `args` (a tool [`Engine::keeps`])
    /// changed behind the host's back: if the cache holds that result, it
    /// is dropped (wasted if no call used it) and fetched again ahead of the
    /// next call, while that is [likely](FanOut::likely) for [`CHANGED`].
    /// The host notices the change, so the result is the host's own
    /// ([`Partition::SHARED`]): what changes behind its back are its files.
    pub async fn changed(&self, tool: &str, args: Map<String, Value>) {
        if !self.keeps(tool) {
            return;
        }
        let key = Key::new(tool, &self.target.cache_args(tool, &args), Partition::SHARED);
        let Some(held) = self.cache.held(&key) else {
            return;
        };
        if self.target.is_current(tool, &args, &held) {
            return;
        }
        self.cache.drop_entry(&key);
        let origin = FollowUpRank {
            from: CHANGED.to_owned(),
            to: tool.to_owned(),
            rank: 0,
        };
        let candidate = Candidate {
            tool: tool.to_owned(),
            args,
            origin,
            prior: CHANGED_PRIOR,
            who: T::Principal::default(),
            walk: None,
        };
        self.dispatch(candidate).await;
    }

    fn ttl(&self, tool: &str) -> Duration {
        self.models
            .get(tool)
            .and_then(|m| m.cost.freshness_ttl_s)
            .map_or(self.settings.default_ttl(), |s| Duration::from_secs(s.into()))
    }

    /// Drop what a call to `tool` makes stale, if it may change anything,
    /// here and on every replica of the cluster. Called before and after
    /// the call runs, so a prefetch racing it is discarded too.
    pub async fn invalidate_for(&self, tool: &str) {
        let model = self.models.get(tool);
        if model.is_some_and(|m| m.side_effect().is_speculatable()) {
            return;
        }
        let mut tools = match model.and_then(|m| m.invalidates.clone()) {
            Some(tools) => tools,
            None => self.target.neighbours(tool),
        };
        tools.retain(|t| !self.target.self_validating(t));
        self.cache.invalidate(&tools);
        if let Some(shared) = &self.shared {
            shared.invalidate(&tools).await;
        }
    }

    /// [`Engine::plan`] for `who`, with every follow-up admitted.
    #[cfg(test)]
    pub async fn after_call(
        &self,
        tool: &str,
        args: &Map<String, Value>,
        result: &Value,
        intent: &[String],
        who: &T::Principal,
    ) {
        self.plan(tool, args, result, intent, who, None).await;
    }

    /// After `tool` ran for `who` with `args` and returned `result` (as
    /// JSON): plan and dispatch its follow-ups, declared and learned, made
    /// for `who`, those `admit` lets through if given. Returns when they
    /// are dispatched, not done.
    async fn plan(
        &self,
        tool: &str,
        args: &Map<String, Value>,
        result: &Value,
        intent: &[String],
        who: &T::Principal,
        admit: Option<&Admit>,
    ) {
        let admitted = |c: &Candidate<T::Principal>| {
            let ok = admit.is_none_or(|admit| admit(&c.tool, &c.args));
            if !ok {
                self.metrics.declined(DeclineReason::Refused);
            }
            ok
        };
        let plan = planner::plan(&self.models, tool, intent, &self.settings.planner());
        for d in &plan.declined {
            self.metrics.declined(d.reason);
        }
        for call in plan.calls {
            let projected = self.project(tool, result, &call.link).await;
            if projected.is_empty() {
                self.metrics.declined(DeclineReason::NoArguments);
            }
            for (rank, projected) in projected.into_iter().enumerate() {
                let candidate = Candidate {
                    args: self.carried(&call.link.tool, args, projected),
                    tool: call.link.tool.clone(),
                    origin: FollowUpRank {
                        from: tool.to_owned(),
                        to: call.link.tool.clone(),
                        rank,
                    },
                    prior: call.link.probability,
                    who: who.clone(),
                    walk: None,
                };
                if admitted(&candidate) {
                    self.dispatch(candidate).await;
                }
            }
        }
        let declared: Vec<&str> = self
            .models
            .get(tool)
            .and_then(|m| m.follow_ups.as_ref())
            .map_or(Vec::new(), |links| {
                links.iter().map(|l| l.tool.as_str()).collect()
            });
        let learned = if self.settings.learn {
            self.learned.links_from(tool)
        } else {
            Vec::new()
        };
        for planned in learned {
            let to = &planned.link.to;
            // Where a declared link joins the two tools, its projection is
            // planned and its per-rank record learns: candidates a learned
            // link offered too would count against that record.
            if declared.contains(&to.as_str()) {
                continue;
            }
            // What is learned never widens what may be called ahead of time.
            if !self.models.get(to).is_some_and(|m| m.is_speculatable()) {
                self.metrics.declined(DeclineReason::NotSpeculatable);
                continue;
            }
            let items = self.learned.project(&planned, args, result);
            if items.is_empty() {
                continue;
            }
            let walk = Walk {
                from: tool.to_owned(),
                to: to.clone(),
                items,
                who: who.clone(),
                admit: admit.cloned(),
            };
            self.walk_on(Arc::new(walk), 0).await;
        }
    }

    /// Offer item `place` of `walk`: the first when its list comes back,
    /// each next one once the agent called the one before (`walk`). The
    /// first is learned as rank 0 and every next one as rank 1: the chance
    /// an agent goes on from an item it opened, whichever it was.
    async fn walk_on(&self, walk: Arc<Walk<T::Principal>>, place: usize) {
        let Some(args) = walk.items.get(place) else {
            return;
        };
        if let Some(admit) = &walk.admit
            && !admit(&walk.to, args)
        {
            self.metrics.declined(DeclineReason::Refused);
            return;
        }
        let origin = FollowUpRank {
            from: walk.from.clone(),
            to: walk.to.clone(),
            rank: place.min(1),
        };
        let candidate = Candidate {
            tool: walk.to.clone(),
            args: args.clone(),
            prior: learned::PRIOR,
            origin,
            who: walk.who.clone(),
            walk: Some((walk.clone(), place)),
        };
        self.dispatch(candidate).await;
    }

    /// The link `from`'s value model declares to `to`, if any.
    fn declared(&self, from: &str, to: &str) -> Option<&FollowUpLink> {
        self.models
            .get(from)?
            .follow_ups
            .as_ref()?
            .iter()
            .find(|l| l.tool == to)
    }

    /// A declared link's projected arguments, with those of the call that
    /// ran which the target requires and the projection did not fill: a
    /// listing's `owner` and `repo` go to the item it lists. An optional
    /// one (a listing's `limit`) is not carried: the agent's own call of
    /// the target would not have it, and would miss the prefetch.
    fn carried(
        &self,
        target: &str,
        ran: &Map<String, Value>,
        mut args: Map<String, Value>,
    ) -> Map<String, Value> {
        for (name, value) in ran {
            if !args.contains_key(name) && self.target.requires(target, name) {
                args.insert(name.clone(), value.clone());
            }
        }
        args
    }

    /// [`Engine::plan`] in the background, so the call that ran is
    /// answered without waiting for its follow-ups to be planned. Every
    /// call is counted among the recent ones at once, in the order they
    /// ran, whatever it returned; its result is learned from in the
    /// background, its follow-ups made for `who`. Under `admit`, only the
    /// follow-ups it lets through.
    pub fn plan_after(
        self: &Arc<Self>,
        tool: &str,
        args: Map<String, Value>,
        result: Observed,
        who: T::Principal,
        admit: Option<Admit>,
    ) {
        let pending = self.learned.ran(tool, &args);
        self.planning.fetch_add(1, Ordering::SeqCst);
        let guard = Planning(self.planning.clone());
        let (engine, tool) = (self.clone(), tool.to_owned());
        tokio::spawn(async move {
            let _guard = guard;
            for (walk, place) in engine.walks.advanced() {
                engine.walk_on(walk, place).await;
            }
            let result = result.json();
            pending.index(result.as_ref());
            if let Some(result) = result {
                engine
                    .plan(&tool, &args, &result, &[], &who, admit.as_ref())
                    .await;
            }
        });
    }

    /// Wait until nothing is being planned or prefetched.
    pub async fn idle(&self) {
        while self.planning.load(Ordering::SeqCst) > 0 || self.in_flight() > 0 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    async fn project(&self, tool: &str, result: &Value, link: &FollowUpLink) -> Vec<Map<String, Value>> {
        let category = self.target.category(tool);
        for plugin in self.enrichers.for_category(category.as_deref()) {
            match plugin.project_args(tool, result, link).await {
                Ok(Some(items)) => return items.into_iter().take(projection::MAX_PER_LINK).collect(),
                Ok(None) => {}
                Err(e) => tracing::debug!(tool, "project-args skipped: {e}"),
            }
        }
        projection::project(tool, result, link)
    }

    async fn host_for(&self, tool: &str, args: &Map<String, Value>) -> Option<String> {
        let category = self.target.category(tool);
        for plugin in self.enrichers.for_category(category.as_deref()) {
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

    async fn dispatch(&self, c: Candidate<T::Principal>) {
        // By name alone, so that spellings of one host share its cap.
        let host = self.host_for(&c.tool, &c.args).await.map(|h| hostname(&h));
        if let Err(reason) = self.target.may_prefetch(&c.tool, host.as_deref()) {
            self.metrics.declined(reason);
            return;
        }
        let args = match self.target.prepare(c.tool.clone(), c.args).await {
            Ok(args) => args,
            Err(reason) => {
                tracing::debug!(tool = c.tool, "prefetch refused: {reason}");
                self.metrics.declined(DeclineReason::Refused);
                return;
            }
        };
        let (partition, credential) = match self.target.credential(&c.tool, &c.who).await {
            Ok(resolved) => resolved,
            Err(reason) => {
                tracing::debug!(tool = c.tool, "prefetch refused: {reason}");
                self.metrics.declined(DeclineReason::Refused);
                return;
            }
        };
        let key = Key::new(&c.tool, &self.target.cache_args(&c.tool, &args), partition);
        let ttl = self.ttl(&c.tool);
        if let Some((walk, place)) = c.walk {
            // An agent may skip items: a call of any item of the list goes
            // on to the one after it, so the items not offered yet are
            // remembered too, keyed as their calls would be.
            if place == 0 {
                for (later, item) in walk.items.iter().enumerate().skip(1) {
                    let key = Key::new(&walk.to, &self.target.cache_args(&walk.to, item), partition);
                    self.walks.offered(key, walk.clone(), later, ttl);
                }
            }
            self.walks.offered(key.clone(), walk, place, ttl);
        }
        let shared_args = key.shared();
        // The generation the prefetch is made under, read before it runs;
        // and if a replica already prefetched it, Redis serves it.
        let generation = match &self.shared {
            Some(shared) => match shared.cluster().fetch(&c.tool, &shared_args).await {
                Some((_, Stored::Entry(_))) => return,
                // A refused entry is overwritten by this prefetch's own.
                Some((generation, Stored::Absent | Stored::Refused(_))) => {
                    shared.observe(&c.tool, generation);
                    Some(generation)
                }
                None => None,
            },
            None => None,
        };
        let likely = self
            .fanout
            .likely(&c.origin, c.prior, self.settings.probability_floor);
        let chance = self.fanout.chance(&c.origin, c.prior);
        if !self.cache.holds(&key) {
            self.fanout.gone(&key);
        }
        self.fanout.offer(key.clone(), c.origin, ttl);
        // Remembered with the offer, so a real call that matches it says
        // why it was not served.
        let decline = |reason| {
            self.metrics.declined(reason);
            self.fanout.declined(&key, reason);
        };
        if !likely {
            decline(DeclineReason::Unlikely);
            return;
        }
        if !self.within_budget() {
            decline(DeclineReason::ExtraCalls);
            return;
        }
        if !self.worth_it(&c.tool, chance) {
            decline(DeclineReason::NotWorthIt);
            return;
        }
        let Some(mut ticket) = self.cache.begin(key.clone()) else {
            return;
        };
        let reserved = match self.dispatcher.reserve(host.as_deref()) {
            Ok(reserved) => reserved,
            Err(Refused::ShutDown) => return,
            Err(_) => {
                decline(DeclineReason::Capped);
                return;
            }
        };
        ticket.arm();
        self.metrics.dispatched();
        // Half its time, so that waiting leaves it time to run.
        let background = Background::new(self.foreground.clone(), self.settings.timeout() / 2);
        let (target, cache, tool) = (self.target.clone(), self.cache.clone(), c.tool);
        let cluster = self.shared.as_ref().map(|s| s.cluster().clone());
        let prefetch = async move {
            let start = Instant::now();
            if let Ok(value) = target.execute(tool.clone(), args, credential, background).await {
                // Followed before it is served too: an agent often edits a
                // file a listing showed it and only then reads it.
                target.follow(&tool, &value);
                let bytes = T::size(&value);
                let took = start.elapsed();
                let body = cluster
                    .as_ref()
                    .and(generation)
                    .and_then(|g| Some((g, target.encode(&tool, &value)?)));
                cache.complete(ticket, Prefetched { value, took }, bytes, ttl);
                if let (Some(cluster), Some((generation, body))) = (cluster, body) {
                    let entry = Entry {
                        generation,
                        took_us: took.as_micros().min(u128::from(u64::MAX)) as u64,
                        body,
                    };
                    cluster.store(&tool, &shared_args, entry, ttl).await;
                }
            }
        };
        self.dispatcher.spawn(reserved, prefetch);
    }

    /// Whether one more prefetch keeps the backend calls that prefetches
    /// added (made and not used yet, or never) within their share of the
    /// real calls (`[speculation] max_extra_calls`), counted since the first
    /// run this one resumed from. Until that share reaches the in-flight
    /// cap, the cap is the allowance: a host with no history may still try
    /// its first links, and one with a history keeps to the share.
    fn within_budget(&self) -> bool {
        let (unused, allowance) = self.allowance();
        unused < allowance
    }

    /// The prefetches made and not used yet, and how many may be: a share
    /// of the real calls, or `max_in_flight` until that share reaches it.
    fn allowance(&self) -> (f64, f64) {
        let spent = self.spent();
        let share = f64::from(self.settings.max_extra_calls) * spent.real_calls as f64;
        (spent.unused as f64, share.max(self.settings.max_in_flight as f64))
    }

    /// The expected-saving gate: whether a prefetch of `tool` the agent
    /// calls with probability `chance` is expected to save more of its
    /// wait (`chance` × the tool's latency, as its real calls took) than
    /// it costs (the other
    /// outcome × the price of a backend call nobody uses). The price is
    /// `call_cost_ms`, raised as the unused prefetches fill the budget
    /// (doubled at half of it), so that what is left of the budget goes to
    /// the surest and slowest calls. A tool never timed yet (nor priced by
    /// its value model) is given the benefit of the doubt: the budget
    /// bounds what that costs. A self-validating tool (a native file read,
    /// checked against its file before each use) makes no backend call, so
    /// it is not priced as one: the floor and the budget bound it. A price
    /// of 0 switches the gate off.
    fn worth_it(&self, tool: &str, chance: f64) -> bool {
        if self.settings.call_cost_ms <= 0.0 || self.target.self_validating(tool) {
            return true;
        }
        let latency = self.latencies.of(tool).or_else(|| {
            let model = self.models.get(tool)?;
            model.cost.latency_ms_p50.map(f64::from)
        });
        let Some(latency) = latency else {
            return true;
        };
        let (unused, allowance) = self.allowance();
        let pressure = allowance / (allowance - unused).max(1.0);
        chance * latency > (1.0 - chance) * f64::from(self.settings.call_cost_ms) * pressure
    }

    fn spent(&self) -> Spent {
        self.spent_before.load().plus(self.metrics.spent())
    }

    /// Start from what an earlier run learned and spent: its links, the
    /// record of each rank of their candidates, and its share of extra
    /// calls, so that a restart neither forgets nor starts a fresh budget.
    pub fn resume(&self, earlier: &Snapshot) {
        self.learned.adopt(&earlier.learned);
        self.fanout.resume(&earlier.ranks);
        self.spent_before.store(earlier.budget);
    }

    pub fn stats(&self) -> Snapshot {
        self.cache.sweep();
        let prior = |from: &str, to: &str| {
            if from == CHANGED {
                return CHANGED_PRIOR;
            }
            self.declared(from, to).map_or(0.5, |l| l.probability)
        };
        self.metrics.snapshot(
            self.cache.unserved(),
            self.fanout.table(prior),
            self.learned.table(),
            self.spent(),
        )
    }

    pub fn in_flight(&self) -> usize {
        self.dispatcher.in_flight()
    }

    /// The session ends: cancel every prefetch, and count every one never
    /// served (running or held) as wasted.
    pub async fn shutdown(&self) {
        self.dispatcher.shutdown().await;
        self.cache.flush();
        if let Some(tally) = &self.tally {
            tally.flush(false).await;
        }
    }
}

/// The budget spent by earlier runs, read on every prefetch considered:
/// two counters rather than a lock on the hot path.
#[derive(Debug, Default)]
struct SpentBefore {
    real_calls: AtomicU64,
    unused: AtomicU64,
}

impl SpentBefore {
    fn load(&self) -> Spent {
        Spent {
            real_calls: self.real_calls.load(Ordering::Relaxed),
            unused: self.unused.load(Ordering::Relaxed),
        }
    }

    fn store(&self, spent: Spent) {
        self.real_calls.store(spent.real_calls, Ordering::Relaxed);
        self.unused.store(spent.unused, Ordering::Relaxed);
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
        /// Whether its reads are [`Target::self_validating`].
        checked: bool,
    }

    impl Target for Files {
        type Output = String;
        type Answer = String;
        type Principal = ();
        type Credential = ();

        fn credential<'a>(
            &'a self,
            _tool: &'a str,
            _who: &'a (),
        ) -> BoxFuture<'a, Result<(Partition, ()), String>> {
            Box::pin(async { Ok((Partition::SHARED, ())) })
        }

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

        fn execute(
            &self,
            tool: String,
            args: Map<String, Value>,
            _credential: (),
            background: Background,
        ) -> BoxFuture<'_, Result<String, String>> {
            Box::pin(async move {
                // As the pipeline's backends do before they start.
                background.wait_turn().await;
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

        fn cache_args(&self, _tool: &str, args: &Map<String, Value>) -> Map<String, Value> {
            // A slice of a file is answered from the whole file.
            Map::from_iter([("path".to_owned(), args["path"].clone())])
        }

        fn answer(&self, _tool: &str, args: &Map<String, Value>, cached: &String) -> String {
            match args.get("offset").and_then(Value::as_u64) {
                Some(offset) => cached.chars().skip(offset as usize).collect(),
                None => cached.clone(),
            }
        }

        fn size(output: &String) -> usize {
            output.len()
        }

        fn category(&self, _tool: &str) -> Option<String> {
            None
        }

        fn may_prefetch(&self, _tool: &str, host: Option<&str>) -> Result<(), DeclineReason> {
            host.is_none().then_some(()).ok_or(DeclineReason::NotEnabled)
        }

        fn is_current(&self, _tool: &str, args: &Map<String, Value>, output: &String) -> bool {
            // Changed behind the host's back: the backend knows.
            let path = args["path"].as_str().unwrap();
            self.content.lock().unwrap().get(path) == Some(output)
        }

        fn neighbours(&self, _tool: &str) -> Vec<String> {
            vec!["read".into()]
        }

        fn self_validating(&self, tool: &str) -> bool {
            self.checked && tool == "read"
        }
    }

    fn engine(files: Arc<Files>, ttl: Option<u32>) -> Engine<Files> {
        let mut models = crate::tools::facts::value_models();
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
        // These tests plan without the calls that give the results: no
        // share of them to stay within; and their files answer at once, so
        // no prefetch of them would be worth a backend call's price.
        let settings = Settings {
            max_extra_calls: 1000.0,
            call_cost_ms: 0.0,
            ..Settings::default()
        };
        Engine::new(files, Arc::new(models), Enrichers::default(), settings)
    }

    fn args(path: &str) -> Map<String, Value> {
        json!({"path": path}).as_object().unwrap().clone()
    }

    /// A glob that found `paths`, and the follow-ups planned from it.
    async fn glob(e: &Engine<Files>, paths: &[&str]) {
        e.after_call("glob", &Map::new(), &json!({ "paths": paths }), &[], &())
            .await;
        settle(e).await;
    }

    /// A grep that matched `paths`, and the follow-ups planned from it.
    async fn grep(e: &Engine<Files>, paths: &[&str]) {
        let matches: Vec<Value> = paths.iter().map(|p| json!({"path": p})).collect();
        e.after_call("grep", &Map::new(), &json!({"matches": matches}), &[], &())
            .await;
        settle(e).await;
    }

    async fn settle(e: &Engine<Files>) {
        while e.in_flight() > 0 {
            tokio::task::yield_now().await;
        }
    }

    /// A call made ahead of time with no real call to wait for.
    fn alone() -> Background {
        Background::new(Foreground::new(Arc::default()), Duration::ZERO)
    }

    #[tokio::test]
    async fn a_prefetch_waits_behind_the_real_calls_in_flight() {
        let files = Arc::new(Files::default());
        files.content.lock().unwrap().insert("a.rs".into(), "a".into());
        let e = engine(files.clone(), Some(60));
        let real = e.running("read");
        e.after_call("glob", &Map::new(), &json!({"paths": ["a.rs"]}), &[], &())
            .await;
        while e.stats().waited == 0 {
            tokio::task::yield_now().await;
        }
        assert_eq!(
            files.executions.load(Ordering::SeqCst),
            0,
            "not before the real call ends"
        );
        drop(real);
        settle(&e).await;
        assert_eq!(files.executions.load(Ordering::SeqCst), 1);
        assert!(
            matches!(e.serve("read", &args("a.rs"), Partition::SHARED).await, Served::Prefetched(s) if s == "a")
        );
    }

    #[tokio::test]
    async fn a_renewed_engine_serves_nothing_of_the_old_one_but_keeps_its_counts() {
        let files = Arc::new(Files::default());
        files.content.lock().unwrap().insert("a.rs".into(), "old".into());
        let old = engine(files.clone(), Some(60));
        glob(&old, &["a.rs"]).await;
        let renewed = old.renew(files.clone(), old.models.clone());
        old.shutdown().await;
        assert!(matches!(
            renewed.serve("read", &args("a.rs"), Partition::SHARED).await,
            Served::Run
        ));
        assert_eq!(renewed.stats().dispatched, 1);
        glob(&renewed, &["a.rs"]).await;
        assert!(
            matches!(renewed.serve("read", &args("a.rs"), Partition::SHARED).await, Served::Prefetched(s) if s == "old")
        );
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
        glob(&e, &["a.rs", "b.rs"]).await;
        assert_eq!(files.executions.load(Ordering::SeqCst), 2);
        assert!(
            matches!(e.serve("read", &args("a.rs"), Partition::SHARED).await, Served::Prefetched(s) if s == "fn a() {}")
        );
        assert!(matches!(
            e.serve("read", &args("c.rs"), Partition::SHARED).await,
            Served::Run
        ));
        let stats = e.stats();
        assert_eq!((stats.dispatched, stats.hits), (2, 1));
        // The same chain again is not skipped because read ran before; the
        // fresh entries simply are not fetched twice.
        glob(&e, &["a.rs"]).await;
        assert_eq!(files.executions.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_write_between_prefetch_and_real_call_is_seen() {
        let files = Arc::new(Files::default());
        files.content.lock().unwrap().insert("a.rs".into(), "old".into());
        let e = engine(files.clone(), Some(60));
        glob(&e, &["a.rs"]).await;
        // The write happens after the prefetch landed.
        e.invalidate_for("write").await;
        files.content.lock().unwrap().insert("a.rs".into(), "new".into());
        e.invalidate_for("write").await;
        assert!(
            matches!(
                e.serve("read", &args("a.rs"), Partition::SHARED).await,
                Served::Run
            ),
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
        e.after_call("glob", &Map::new(), &json!({"paths": ["a.rs"]}), &[], &())
            .await;
        let joined = {
            let e = e.clone();
            tokio::spawn(async move {
                matches!(
                    e.serve("read", &args("a.rs"), Partition::SHARED).await,
                    Served::Run
                )
            })
        };
        tokio::task::yield_now().await;
        e.invalidate_for("write").await;
        files.content.lock().unwrap().insert("a.rs".into(), "new".into());
        e.invalidate_for("write").await;
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
        e.after_call("glob", &Map::new(), &json!({"paths": ["a.rs"]}), &[], &())
            .await;
        let real = {
            let e = e.clone();
            tokio::spawn(async move {
                match e.serve("read", &args("a.rs"), Partition::SHARED).await {
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
        glob(&e, &["a.rs", "secret.rs"]).await;
        assert_eq!(
            files.executions.load(Ordering::SeqCst),
            1,
            "the refused prefetch never ran"
        );
        assert!(
            matches!(
                e.serve("read", &args("a.rs"), Partition::SHARED).await,
                Served::Run
            ),
            "expired"
        );
        let stats = e.stats();
        assert_eq!(stats.declined.get("refused"), Some(&1));
        assert_eq!(stats.wasted, 1);
    }

    #[tokio::test]
    async fn a_file_changed_behind_the_hosts_back_is_not_served() {
        let files = Arc::new(Files::default());
        files.content.lock().unwrap().insert("a.rs".into(), "old".into());
        let e = engine(files.clone(), Some(60));
        glob(&e, &["a.rs"]).await;
        // No call through the host: only the target can tell.
        files.content.lock().unwrap().insert("a.rs".into(), "new".into());
        assert!(matches!(
            e.serve("read", &args("a.rs"), Partition::SHARED).await,
            Served::Run
        ));
        assert_eq!(e.stats().stale, 1);
    }

    #[tokio::test]
    async fn a_writer_without_invalidates_drops_its_neighbours() {
        let files = Arc::new(Files::default());
        files.content.lock().unwrap().insert("a.rs".into(), "x".into());
        let mut models = crate::tools::facts::value_models();
        let unknown_writer = ValueModel {
            side_effect: Some(SideEffect::MutatesExternal),
            ..ValueModel::default()
        };
        models.add("deploy", Layer::User, &unknown_writer);
        let e = Engine::new(
            files.clone(),
            Arc::new(models),
            Enrichers::default(),
            Settings::default(),
        );
        glob(&e, &["a.rs"]).await;
        e.invalidate_for("grep").await;
        assert!(
            matches!(
                e.serve("read", &args("a.rs"), Partition::SHARED).await,
                Served::Prefetched(_)
            ),
            "grep changes nothing"
        );
        glob(&e, &["a.rs"]).await;
        // A tool with no model at all is as unknown as a declared writer.
        e.invalidate_for("no_model_at_all").await;
        assert!(matches!(
            e.serve("read", &args("a.rs"), Partition::SHARED).await,
            Served::Run
        ));
        glob(&e, &["a.rs"]).await;
        e.invalidate_for("deploy").await;
        assert!(matches!(
            e.serve("read", &args("a.rs"), Partition::SHARED).await,
            Served::Run
        ));
    }

    #[tokio::test]
    async fn a_call_not_served_is_counted_by_what_became_of_its_candidate() {
        let files = Arc::new(Files::default());
        let e = engine(files.clone(), Some(60));
        let missed = |e: &Engine<Files>, why: &str| e.stats().missed.get(why).copied().unwrap_or(0);
        let _ = e.serve("read", &args("never-listed.rs"), Partition::SHARED).await;
        assert_eq!(missed(&e, "not_offered"), 1);
        glob(&e, &["a.rs"]).await;
        e.invalidate_for("deploy").await;
        let _ = e.serve("read", &args("a.rs"), Partition::SHARED).await;
        assert_eq!(missed(&e, "prefetched"), 1, "made, then dropped by a write");
        // The agent always reads the first of three results, so the third
        // stops being prefetched; a call for it says so.
        for i in 0..12 {
            let paths = [format!("{i}-a"), format!("{i}-b"), format!("{i}-c")];
            grep(&e, &paths.each_ref().map(String::as_str)).await;
            let _ = e.serve("read", &args(&paths[0]), Partition::SHARED).await;
        }
        grep(&e, &["x-a", "x-b", "x-c"]).await;
        let _ = e.serve("read", &args("x-c"), Partition::SHARED).await;
        assert_eq!(missed(&e, "unlikely"), 1, "{:?}", e.stats().missed);
    }

    #[tokio::test]
    async fn ranks_the_agent_never_calls_stop_being_prefetched_until_it_does() {
        let files = Arc::new(Files::default());
        let e = engine(files.clone(), Some(60));
        // The agent always reads the first of three results.
        for i in 0..12 {
            let paths = [format!("{i}-a"), format!("{i}-b"), format!("{i}-c")];
            grep(&e, &paths.each_ref().map(String::as_str)).await;
            let _ = e.serve("read", &args(&paths[0]), Partition::SHARED).await;
        }
        let before = files.executions.load(Ordering::SeqCst);
        grep(&e, &["x-a", "x-b", "x-c"]).await;
        assert_eq!(
            files.executions.load(Ordering::SeqCst) - before,
            1,
            "only the first result is still worth prefetching"
        );
        assert!(e.stats().declined.get("unlikely").is_some_and(|n| *n >= 2));
        // The agent starts reading second results: they are counted without
        // being prefetched, and come back.
        for i in 0..12 {
            let paths = [format!("{i}-p"), format!("{i}-q")];
            grep(&e, &paths.each_ref().map(String::as_str)).await;
            let _ = e.serve("read", &args(&paths[1]), Partition::SHARED).await;
        }
        let before = files.executions.load(Ordering::SeqCst);
        grep(&e, &["y-a", "y-b"]).await;
        assert_eq!(files.executions.load(Ordering::SeqCst) - before, 2);
    }

    fn slice(path: &str, offset: u64) -> Map<String, Value> {
        json!({"path": path, "offset": offset})
            .as_object()
            .unwrap()
            .clone()
    }

    #[tokio::test]
    async fn a_slice_is_answered_from_the_whole_prefetch_and_credits_its_rank() {
        let files = Arc::new(Files::default());
        files
            .content
            .lock()
            .unwrap()
            .insert("a.rs".into(), "0123456".into());
        let e = engine(files.clone(), Some(60));
        glob(&e, &["a.rs"]).await;
        assert!(
            matches!(e.serve("read", &slice("a.rs", 4), Partition::SHARED).await, Served::Prefetched(s) if s == "456")
        );
        assert!(
            matches!(e.serve("read", &args("a.rs"), Partition::SHARED).await, Served::Prefetched(s) if s == "0123456")
        );
        assert_eq!(
            files.executions.load(Ordering::SeqCst),
            1,
            "one prefetch served both"
        );
        let ranks = e.stats().ranks;
        assert_eq!((ranks[0].offered, ranks[0].used), (1, 1), "{ranks:?}");
    }

    #[tokio::test]
    async fn a_kept_real_read_serves_the_reads_that_follow_counted_apart() {
        let files = Arc::new(Files {
            checked: true,
            ..Files::default()
        });
        files
            .content
            .lock()
            .unwrap()
            .insert("a.rs".into(), "0123456".into());
        let e = engine(files.clone(), Some(60));
        assert!(e.keeps("read"));
        assert!(!e.keeps("glob"), "its results are not checked against a source");
        assert!(!e.keeps("write"));
        assert!(matches!(
            e.serve("read", &slice("a.rs", 2), Partition::SHARED).await,
            Served::Run
        ));
        let whole = files
            .execute("read".into(), args("a.rs"), (), alone())
            .await
            .unwrap();
        let answer = e.keep(
            "read",
            &slice("a.rs", 2),
            Partition::SHARED,
            whole,
            Duration::from_millis(5),
        );
        assert_eq!(answer, "23456", "the real call's own slice");
        assert!(
            matches!(e.serve("read", &slice("a.rs", 4), Partition::SHARED).await, Served::Prefetched(s) if s == "456")
        );
        // What is kept is not prefetched again.
        glob(&e, &["a.rs"]).await;
        assert_eq!(files.executions.load(Ordering::SeqCst), 1);
        let stats = e.stats();
        assert_eq!(
            (stats.hits, stats.reused, stats.dispatched, stats.unserved),
            (0, 1, 0, 0),
            "not counted as served by prefetch"
        );
        // Changed behind the host's back: never served.
        files.content.lock().unwrap().insert("a.rs".into(), "new".into());
        assert!(matches!(
            e.serve("read", &args("a.rs"), Partition::SHARED).await,
            Served::Run
        ));
        e.shutdown().await;
        let stats = e.stats();
        assert_eq!((stats.reused, stats.stale, stats.wasted), (1, 1, 0));
    }

    #[tokio::test]
    async fn a_result_held_whose_source_changed_is_fetched_again_ahead() {
        let files = Arc::new(Files {
            checked: true,
            ..Files::default()
        });
        files.content.lock().unwrap().insert("a.rs".into(), "old".into());
        let e = engine(files.clone(), Some(60));
        let whole = files
            .execute("read".into(), args("a.rs"), (), alone())
            .await
            .unwrap();
        e.keep(
            "read",
            &args("a.rs"),
            Partition::SHARED,
            whole,
            Duration::from_millis(5),
        );
        // Reported but unchanged, or not held: nothing to fetch.
        e.changed("read", args("a.rs")).await;
        e.changed("read", args("other.rs")).await;
        assert_eq!(files.executions.load(Ordering::SeqCst), 1);
        files.content.lock().unwrap().insert("a.rs".into(), "new".into());
        e.changed("read", args("a.rs")).await;
        settle(&e).await;
        assert_eq!(files.executions.load(Ordering::SeqCst), 2);
        assert!(
            matches!(e.serve("read", &args("a.rs"), Partition::SHARED).await, Served::Prefetched(s) if s == "new")
        );
        let stats = e.stats();
        assert_eq!((stats.dispatched, stats.hits, stats.stale), (1, 1, 0));
        let rank = stats.ranks.iter().find(|r| r.from == CHANGED).unwrap();
        assert_eq!((rank.offered, rank.used), (1, 1));
    }

    #[tokio::test]
    async fn one_unused_offer_does_not_turn_a_rank_off() {
        let files = Arc::new(Files::default());
        let e = engine(files.clone(), Some(60));
        glob(&e, &["never-read.rs"]).await;
        glob(&e, &["next.rs"]).await;
        assert_eq!(files.executions.load(Ordering::SeqCst), 2);
        assert_eq!(e.stats().declined.get("unlikely"), None);
    }

    #[tokio::test]
    async fn every_prefetch_never_served_is_wasted_by_the_end_of_the_session() {
        let files = Arc::new(Files::default());
        for path in ["a.rs", "b.rs", "c.rs", "d.rs"] {
            files.content.lock().unwrap().insert(path.into(), path.into());
        }
        let hold = Arc::new(Notify::new());
        let e = engine(files.clone(), Some(60));
        // The third result's share of the prior is under the floor: a and b.
        glob(&e, &["a.rs", "b.rs", "c.rs"]).await;
        assert!(matches!(
            e.serve("read", &args("a.rs"), Partition::SHARED).await,
            Served::Prefetched(_)
        ));
        // One more, still running when the session ends.
        *files.hold.lock().unwrap() = Some(hold.clone());
        e.after_call("glob", &Map::new(), &json!({"paths": ["d.rs"]}), &[], &())
            .await;
        let during = e.stats();
        assert_eq!(
            (during.dispatched, during.hits, during.wasted, during.unserved),
            (3, 1, 0, 2)
        );
        e.shutdown().await;
        let after = e.stats();
        assert_eq!((after.wasted, after.unserved), (2, 0), "b held and d running");
        // A renewed engine carries the count on.
        let renewed = e.renew(files.clone(), e.models.clone());
        assert_eq!(renewed.stats().wasted, 2);
    }

    #[tokio::test]
    async fn tools_the_configuration_leaves_off_are_never_dispatched() {
        let files = Arc::new(Files::default());
        let mut models = crate::tools::facts::value_models();
        let hosted = ValueModel {
            rate_limit_host: Some("api.example.com".into()),
            ..ValueModel::default()
        };
        models.add("read", Layer::User, &hosted);
        let e = Engine::new(
            files.clone(),
            Arc::new(models),
            Enrichers::default(),
            Settings::default(),
        );
        glob(&e, &["a.rs"]).await;
        assert_eq!(files.executions.load(Ordering::SeqCst), 0);
        assert_eq!(e.stats().declined.get("not_enabled"), Some(&1));
    }

    /// A remote service: `list` and `get` read, `put` writes; each call
    /// answers its arguments and counts.
    #[derive(Default)]
    struct Service {
        calls: Mutex<Vec<(String, Map<String, Value>)>>,
    }

    /// A caller's partition: their name's bytes; the host's is shared.
    fn partition_of(who: &str) -> Partition {
        if who.is_empty() {
            return Partition::SHARED;
        }
        let mut id = [0; crate::speculation::cache::PARTITION_BYTES];
        id[..who.len()].copy_from_slice(who.as_bytes());
        Partition::of(id)
    }

    impl Target for Service {
        type Output = Value;
        type Answer = Value;
        /// A caller by name; the host is `""`.
        type Principal = &'static str;
        /// The caller whose data the service answers with.
        type Credential = &'static str;

        fn credential<'a>(
            &'a self,
            _tool: &'a str,
            who: &'a &'static str,
        ) -> BoxFuture<'a, Result<(Partition, &'static str), String>> {
            Box::pin(async move { Ok((partition_of(who), *who)) })
        }

        fn prepare(
            &self,
            _tool: String,
            args: Map<String, Value>,
        ) -> BoxFuture<'_, Result<Map<String, Value>, String>> {
            Box::pin(async move { Ok(args) })
        }

        fn execute(
            &self,
            tool: String,
            args: Map<String, Value>,
            credential: &'static str,
            _background: Background,
        ) -> BoxFuture<'_, Result<Value, String>> {
            Box::pin(async move {
                self.calls.lock().unwrap().push((tool, args.clone()));
                let mut answer = args;
                if !credential.is_empty() {
                    answer.insert("data_of".into(), json!(credential));
                }
                Ok(Value::Object(answer))
            })
        }

        fn cache_args(&self, _tool: &str, args: &Map<String, Value>) -> Map<String, Value> {
            args.clone()
        }

        fn answer(&self, _tool: &str, _args: &Map<String, Value>, cached: &Value) -> Value {
            cached.clone()
        }

        fn size(output: &Value) -> usize {
            output.to_string().len()
        }

        fn category(&self, _tool: &str) -> Option<String> {
            None
        }

        fn may_prefetch(&self, _tool: &str, _host: Option<&str>) -> Result<(), DeclineReason> {
            Ok(())
        }

        fn is_current(&self, _tool: &str, _args: &Map<String, Value>, _output: &Value) -> bool {
            true
        }

        fn self_validating(&self, _tool: &str) -> bool {
            false
        }

        fn neighbours(&self, _tool: &str) -> Vec<String> {
            vec!["list".into(), "get".into()]
        }

        fn repeatable(&self, tool: &str) -> bool {
            tool.starts_with("status")
        }

        fn encode(&self, _tool: &str, output: &Value) -> Option<Value> {
            Some(output.clone())
        }
    }

    fn service(settings: Settings) -> (Arc<Service>, Arc<Engine<Service>>) {
        let mut models = ValueModels::default();
        let read = ValueModel {
            side_effect: Some(SideEffect::ReadOnly),
            ..ValueModel::default()
        };
        models.add("list", Layer::User, &read);
        models.add("get", Layer::User, &read);
        models.add("status", Layer::User, &read);
        models.add("status_of_ci", Layer::User, &read);
        let service = Arc::new(Service::default());
        let engine = Engine::new(service.clone(), Arc::new(models), Enrichers::default(), settings);
        (service, Arc::new(engine))
    }

    /// A real call of `tool` answering `result` (as JSON text, as many
    /// servers send it); whether speculation served it.
    async fn real(e: &Arc<Engine<Service>>, tool: &str, args: Value, result: Value) -> bool {
        real_for(e, "", tool, args, result).await.is_some()
    }

    /// [`real`], made for `who`: the answer it was served, if it was.
    async fn real_for(
        e: &Arc<Engine<Service>>,
        who: &'static str,
        tool: &str,
        args: Value,
        result: Value,
    ) -> Option<Value> {
        let args = args.as_object().unwrap().clone();
        let served = match e.serve(tool, &args, partition_of(who)).await {
            Served::Prefetched(answer) => Some(answer),
            Served::Run => None,
        };
        e.plan_after(tool, args, Observed::Text(result.to_string()), who, None);
        e.idle().await;
        served
    }

    #[tokio::test]
    async fn an_answer_prefetched_with_one_callers_credential_is_served_to_no_other() {
        let (service, e) = service(Settings::default());
        list_then_get_twice(&e).await;
        service.calls.lock().unwrap().clear();
        real_for(&e, "alice", "list", json!({}), pages(&["ccc-3", "x-3"])).await;
        let calls = service.calls.lock().unwrap().clone();
        assert!(
            calls.contains(&("get".into(), json!({"id": "ccc-3"}).as_object().unwrap().clone())),
            "alice's listing planned her get: {calls:?}"
        );
        assert_eq!(
            real_for(&e, "bob", "get", json!({"id": "ccc-3"}), json!({})).await,
            None,
            "bob is not served what was fetched with alice's credential"
        );
        assert_eq!(
            real_for(&e, "", "get", json!({"id": "ccc-3"}), json!({})).await,
            None,
            "nor is the host's own call"
        );
        assert_eq!(
            real_for(&e, "alice", "get", json!({"id": "ccc-3"}), json!({})).await,
            Some(json!({"id": "ccc-3", "data_of": "alice"})),
            "alice is, with her own data"
        );
    }

    /// Twice a listing, then its first item: enough to learn `list → get`.
    async fn list_then_get_twice(e: &Arc<Engine<Service>>) {
        for ids in [["aaa-1", "x-1"], ["bbb-2", "x-2"]] {
            real(e, "list", json!({}), pages(&ids)).await;
            real(e, "get", json!({"id": ids[0]}), json!({})).await;
        }
    }

    fn pages(ids: &[&str]) -> Value {
        let results: Vec<Value> = ids
            .iter()
            .map(|id| json!({"id": id, "created_by": {"id": "user-1"}}))
            .collect();
        json!({"object": "list", "results": results})
    }

    #[tokio::test]
    async fn a_link_no_one_declared_is_learned_from_text_results_and_then_served() {
        let (service, e) = service(Settings::default());
        real(&e, "list", json!({"q": "a"}), pages(&["aaa-1", "bbb-2"])).await;
        assert!(!real(&e, "get", json!({"id": "bbb-2"}), json!({})).await);
        real(&e, "list", json!({"q": "b"}), pages(&["ccc-3", "ddd-4"])).await;
        assert!(!real(&e, "get", json!({"id": "ccc-3"}), json!({})).await);
        assert!(
            service.calls.lock().unwrap().is_empty(),
            "nothing planned from a link seen once"
        );
        real(
            &e,
            "list",
            json!({"q": "c"}),
            pages(&["eee-5", "fff-6", "ggg-7", "hhh-8"]),
        )
        .await;
        let prefetched: Vec<Value> = service
            .calls
            .lock()
            .unwrap()
            .iter()
            .map(|(_, a)| a["id"].clone())
            .collect();
        // The first listed item's own id, never its creator's; the next
        // once the agent opened it.
        assert_eq!(prefetched, [json!("eee-5")]);
        assert!(!prefetched.contains(&json!("user-1")));
        assert!(real(&e, "get", json!({"id": "eee-5"}), json!({})).await);
        let learned = e.stats().learned;
        assert_eq!(
            (learned[0].from.as_str(), learned[0].to.as_str()),
            ("list", "get")
        );
        assert_eq!(learned[0].projection, "id ← results[*].id");
    }

    #[tokio::test]
    async fn a_learned_list_is_prefetched_item_by_item_as_the_agent_walks_it() {
        let (service, e) = service(Settings::default());
        list_then_get_twice(&e).await;
        let prefetched = || -> Vec<Value> {
            let calls = service.calls.lock().unwrap();
            calls.iter().map(|(_, a)| a["id"].clone()).collect()
        };
        service.calls.lock().unwrap().clear();
        let ids = ["c-1", "c-2", "c-3", "c-4", "c-5", "c-6"];
        real(&e, "list", json!({}), pages(&ids)).await;
        assert_eq!(prefetched(), [json!("c-1")], "only the first item at once");
        assert!(real(&e, "get", json!({"id": "c-1"}), json!({})).await);
        assert_eq!(prefetched(), [json!("c-1"), json!("c-2")], "then the next");
        assert!(real(&e, "get", json!({"id": "c-2"}), json!({})).await);
        // An agent that skips items goes on from where it is, past the
        // first three of the list.
        assert!(!real(&e, "get", json!({"id": "c-4"}), json!({})).await);
        assert_eq!(prefetched().last(), Some(&json!("c-5")));
        assert!(real(&e, "get", json!({"id": "c-5"}), json!({})).await);
        assert_eq!(prefetched().last(), Some(&json!("c-6")));
        assert!(real(&e, "get", json!({"id": "c-6"}), json!({})).await);
        assert_eq!(prefetched().len(), 5, "nothing past the end of the list");
        assert_eq!(e.stats().hits, 4);
    }

    #[tokio::test]
    async fn a_follow_up_is_prefetched_only_when_its_expected_saving_exceeds_its_cost() {
        let (service, e) = service(Settings::default());
        list_then_get_twice(&e).await;
        service.calls.lock().unwrap().clear();
        // A fast service: a candidate the agent takes one time in two
        // saves half a millisecond, less than half a wasted call costs.
        e.latencies.observe("get", Duration::from_millis(1));
        real(&e, "list", json!({}), pages(&["ccc-3", "ddd-4"])).await;
        assert!(service.calls.lock().unwrap().is_empty());
        assert!(e.stats().declined.get("not_worth_it").is_some_and(|n| *n >= 1));
        // The agent calls it: the miss says why.
        assert!(!real(&e, "get", json!({"id": "ccc-3"}), json!({})).await);
        assert_eq!(e.stats().missed.get("not_worth_it"), Some(&1));
        // The same service slowed down to a vendor's 300 ms: worth it.
        for _ in 0..20 {
            e.latencies.observe("get", Duration::from_millis(300));
        }
        real(&e, "list", json!({}), pages(&["eee-5", "fff-6"])).await;
        let calls = service.calls.lock().unwrap().clone();
        assert_eq!(calls.first().map(|(_, a)| a["id"].clone()), Some(json!("eee-5")));
    }

    #[tokio::test]
    async fn exact_repeats_are_served_only_once_repeats_of_the_tool_answered_alike() {
        let (_, e) = service(Settings::default());
        // A repeat, answered `answer` when it runs; whether it was served.
        let repeat = |tool: &'static str, answer: Value| {
            let e = e.clone();
            async move {
                let args = json!({"repo": "r"}).as_object().unwrap().clone();
                match e.serve(tool, &args, Partition::SHARED).await {
                    Served::Prefetched(_) => true,
                    Served::Run => {
                        assert!(e.keeps(tool));
                        e.keep(tool, &args, Partition::SHARED, answer, Duration::from_millis(5));
                        false
                    }
                }
            }
        };
        assert!(!repeat("status", json!({"state": "done"})).await);
        for _ in 0..crate::speculation::repeats::MIN_SAME {
            assert!(
                !repeat("status", json!({"state": "done"})).await,
                "not proven yet"
            );
        }
        assert!(repeat("status", json!({"state": "done"})).await, "proven alike");
        // A tool whose repeat got another answer (a CI run progressing) is
        // never answered from what it held again.
        assert!(!repeat("status_of_ci", json!({"state": "queued"})).await);
        assert!(!repeat("status_of_ci", json!({"state": "running"})).await);
        for _ in 0..crate::speculation::repeats::MIN_SAME + 1 {
            assert!(!repeat("status_of_ci", json!({"state": "done"})).await);
        }
    }

    #[tokio::test]
    async fn what_is_learned_never_makes_a_writer_called_ahead_of_time() {
        let (service, e) = service(Settings::default());
        for ids in [["aaa-1"], ["bbb-2"], ["ccc-3"]] {
            real(&e, "list", json!({}), pages(&ids)).await;
            real(&e, "put", json!({"id": ids[0]}), json!({})).await;
        }
        assert!(service.calls.lock().unwrap().is_empty());
        assert!(
            e.stats().learned.is_empty(),
            "calls of a writer are not learned from"
        );
    }

    #[tokio::test]
    async fn prefetches_stop_when_their_unused_calls_reach_their_share_of_the_real_ones() {
        let settings = Settings {
            max_extra_calls: 0.0,
            max_in_flight: 1,
            ..Settings::default()
        };
        let (service, e) = service(settings);
        list_then_get_twice(&e).await;
        // Nothing used yet, no share: the in-flight cap is all there is.
        real(&e, "list", json!({}), pages(&["ccc-3", "ddd-4", "eee-5"])).await;
        real(&e, "list", json!({}), pages(&["fff-6", "ggg-7", "hhh-8"])).await;
        let stats = e.stats();
        assert_eq!(service.calls.lock().unwrap().len(), 1, "{stats:?}");
        assert!(
            stats.declined.get("extra_calls").is_some_and(|n| *n >= 1),
            "{stats:?}"
        );
    }

    #[tokio::test]
    async fn a_restart_resumes_the_budget_its_earlier_runs_spent() {
        let settings = Settings {
            max_extra_calls: 0.25,
            max_in_flight: 2,
            ..Settings::default()
        };
        // The same calls, after a run that spent nothing and after one that
        // spent its share: 29 unused in 100 real calls.
        let mut dispatched = Vec::new();
        for unused in [0, 29] {
            let (service, e) = service(settings.clone());
            e.resume(&Snapshot {
                budget: Spent {
                    real_calls: 100,
                    unused,
                },
                ..Snapshot::default()
            });
            list_then_get_twice(&e).await;
            real(&e, "list", json!({}), pages(&["ccc-3", "ddd-4"])).await;
            let stats = e.stats();
            assert_eq!(stats.budget.real_calls, 105, "{stats:?}");
            // The service sees only prefetches: these real calls are the test's.
            dispatched.push(service.calls.lock().unwrap().len());
        }
        assert!(dispatched[0] > 0, "a budget left: prefetches made");
        assert_eq!(dispatched[1], 0, "the budget spent before the restart: none");
    }
}
