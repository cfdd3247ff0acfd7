//! The steps of one call on one catalog: resolve → prepare-arguments (tool
//! plugins) → coerce and validate against the enriched schema →
//! before-call → the enrichers' transform-args (categorised tools only) →
//! execute → after-call → the output-schema check.
//!
//! Errors before execute are returned as `Err` and skip after-call; a
//! failed execution is a result with `is_error` that after-call may still
//! rewrite. Cancellation ends a native or upstream call at once; a plugin
//! is told through its call context and returns `cancelled` at its next
//! check. Plugin failures in prepare-arguments, before-call and
//! transform-args fail closed (naming the plugin); a failed after-call is
//! logged and skipped.
//!
//! With speculation on, execute is preceded by a look in the prefetch cache
//! (keyed by the final arguments, so a prefetch that went through the same
//! steps is found, and by the partition of the credential the call runs
//! with, so no answer crosses credentials) and followed, in the background,
//! by planning the call's follow-ups, made for the same caller, from its
//! result (structured, or JSON in its text), and learning from the values it took; a call that may change anything
//! invalidates before and after it runs. A served result still goes through
//! after-call, so the agent sees what a direct call would have given.
//!
//! A successful result of a tool that declares an output schema (native
//! tools, upstream tools whose server gives one) is checked against it
//! after after-call: one that does not match, or has no structured block,
//! becomes an error result naming the fields, since an MCP client rejects
//! it anyway.
//!
//! Under a policy (`policy`), a real call is decided after its arguments
//! are validated, and a denied one ends there with an error naming the
//! rule; its follow-ups are prefetched only where the policy would allow
//! them to its caller.
//!
//! Whatever the call's outcome, it leaves through the gate (`gate`): the
//! result within the caps and redacted, an error's text redacted, of the
//! host's secrets and of the caller's own values the call ran with.
//!
//! A caller's own credential (a plugin's per-caller secrets, an upstream's
//! exchanged token) is resolved for the call's caller (`Core::resolve`,
//! through [`Target::credential`]) after the call is prepared and decided,
//! and lent to the backend for its execution alone; a caller with none
//! gets the resolution's error as the call's error result, naming the
//! plugin or server and what to set up.
//!
//! A call started as a task of its upstream server ([`start_task`]) goes
//! through the same steps up to execute, and its task's handle through the
//! gate; the task's later answers are the front's to route (`mcp`).
//!
//! A real native read that was not served runs whole ([`run_kept`]) and
//! leaves its file in the cache as a [`Prefetch::File`], for the reads
//! that follow; a remote read leaves its result, for its exact repeats.
//!
//! Free functions over the catalog's types (which own their impls in
//! `catalog`). Not here: how the catalog is built (`catalog`), running a
//! backend (`catalog`), the speculation machinery (`speculation`) and the
//! catalog as its target (`prefetch`, which imports this, not the
//! reverse), the tools.

use std::sync::Arc;
use std::time::Instant;

use serde_json::{Map, Value};

use super::ask;
use super::audit::Noted;
use super::caller::Caller;
use super::catalog::{Backend, Bound, Core, Generation};
use super::control::{CallControl, error_text};
use super::policy::{Decision, Policy};
use super::validate;
use crate::bounds::{MAX_QUOTED, excerpt, label};
use crate::credentials::Lent;
use crate::enrich::Enrichers;
use crate::gate::Gate;
use crate::output::{Block, CallOutput, ToolError};
use crate::plugin::{BeforeCallDecision, Hooks};
use crate::speculation::cache::Partition;
use crate::speculation::{Admit, Engine, Observed, Served, Target};
use crate::tool::TaskSupport;
use crate::tools::facts::WHOLE_FILE;
use crate::tools::{FileText, Urgency};
use crate::upstream::{Downstream, Upstream};

/// Run one call through every step on this catalog, and its outcome
/// through the gate, as the caller is to see it; `prefetched` is set when
/// the answer came from the prefetch cache.
pub(super) async fn call(
    generation: &Generation,
    name: &str,
    args: Value,
    ctx: &CallControl,
    policy: Option<&Arc<Policy>>,
    noted: &mut Noted,
) -> Result<CallOutput, ToolError> {
    let gate = &generation.core.gate;
    let mut lent = None;
    let max = generation.core.max_output(name);
    let outcome = match run(generation, name, args, ctx, policy, noted, &mut lent).await {
        Ok(output) => Ok(gate.result(name, max, output)),
        Err(e) => Err(gate.error(e)),
    };
    // The caller's own credential, in every form the gate knows, as the
    // host's are: a backend cannot get it past by encoding it.
    let Some(lent) = lent else { return outcome };
    let own = Gate::new(lent.values());
    match outcome {
        Ok(output) => Ok(own.result(name, max, output)),
        Err(e) => Err(own.error(e)),
    }
}

async fn run(
    generation: &Generation,
    name: &str,
    args: Value,
    ctx: &CallControl,
    policy: Option<&Arc<Policy>>,
    noted: &mut Noted,
    lent: &mut Option<Lent>,
) -> Result<CallOutput, ToolError> {
    let judged = policy.map(|p| (&**p, &ctx.caller));
    let (bound, args) = prepare(
        &generation.core,
        name,
        args,
        judged,
        &mut noted.decision,
        ctx.client.as_deref(),
    )
    .await?;
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    let engine = generation.speculation.as_ref();
    let who = Some(ctx.caller.clone());
    let (partition, credential) = generation
        .core
        .credential(name, &who)
        .await
        .map_err(ToolError::Failed)?;
    lent.clone_from(&credential);
    if let Some(engine) = engine {
        engine.invalidate_for(name).await;
    }
    let served = match engine {
        Some(engine) => tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
            served = engine.serve(name, &args, partition) => served,
        },
        None => Served::Run,
    };
    // What the engine learns and plans from: the arguments the call ran with.
    let ran_with = engine.map(|_| args.clone());
    let ran = match (served, engine) {
        (Served::Prefetched(answer), _) => {
            noted.prefetched = true;
            Ok(answer)
        }
        (Served::Run, Some(engine)) => {
            let _first = engine.running(name);
            if engine.keeps(name) {
                run_kept(engine, &bound.backend, name, args, (partition, credential), ctx).await
            } else {
                bound.backend.execute(name, args, ctx, credential).await
            }
        }
        (Served::Run, None) => bound.backend.execute(name, args, ctx, credential).await,
    };
    let mut result = match ran {
        Ok(result) => result,
        Err(ToolError::Cancelled) => return Err(ToolError::Cancelled),
        Err(e) => CallOutput::error(error_text(&e)),
    };
    if let (Some(engine), Some(args)) = (engine, ran_with) {
        engine.invalidate_for(name).await;
        engine.plan_after(name, args, observed(&result), who, admit(generation, policy, ctx));
    }
    after_call(bound, name, &mut result).await;
    if !result.is_error
        && let Some(schema) = &bound.output_schema
        && let Err(message) = validate::check_output(name, schema, result.structured_content.as_ref())
    {
        tracing::warn!(tool = name, "{message}");
        result = CallOutput {
            details: result.details,
            ..CallOutput::error(message)
        };
    }
    Ok(result)
}

/// Start a call as a task of its upstream server (MCP 2025-11-25
/// `params.task`, the client's `task`): every step of a call up to execute
/// (the policy included), then the server's `CreateTaskResult` through the
/// gate. Only a tool whose server says it may run as a task
/// (`execution.taskSupport`) is started as one. Nothing of speculation:
/// a task's handle is no result to keep, learn from or plan after, and a
/// task may change anything.
pub(super) async fn start_task(
    generation: &Generation,
    name: &str,
    args: Value,
    task: Value,
    ctx: &CallControl,
    policy: Option<&Arc<Policy>>,
    noted: &mut Noted,
) -> Result<(Arc<Upstream>, Value), ToolError> {
    let started = start(generation, name, args, task, ctx, policy, noted).await;
    started.map_err(|e| generation.core.gate.error(e))
}

async fn start(
    generation: &Generation,
    name: &str,
    args: Value,
    task: Value,
    ctx: &CallControl,
    policy: Option<&Arc<Policy>>,
    noted: &mut Noted,
) -> Result<(Arc<Upstream>, Value), ToolError> {
    let judged = policy.map(|p| (&**p, &ctx.caller));
    let (bound, args) = prepare(
        &generation.core,
        name,
        args,
        judged,
        &mut noted.decision,
        ctx.client.as_deref(),
    )
    .await?;
    let runs_as_task = generation
        .core
        .listing
        .tools
        .iter()
        .find(|t| t.name == name)
        .and_then(|t| t.meta.execution?.task_support)
        .is_some_and(|s| s != TaskSupport::Forbidden);
    let Backend::Upstream(server, remote) = &bound.backend else {
        return Err(ToolError::Failed(format!(
            "Tool {} cannot run as a task: only an upstream server's tools can",
            label(name)
        )));
    };
    if !runs_as_task {
        return Err(ToolError::Failed(format!(
            "Tool {} cannot run as a task: upstream `{}` does not say it may (`execution.taskSupport`)",
            label(name),
            server.config.name
        )));
    }
    if let Some(engine) = &generation.speculation {
        engine.invalidate_for(name).await;
    }
    let gate = &generation.core.gate;
    let created = tokio::select! {
        biased;
        _ = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
        created = server.start_task(remote, args, task, ctx.client.clone()) => created?,
    };
    let created = gate.message(created).ok_or_else(|| {
        ToolError::Failed(format!(
            "Tool {name}: its task was withheld: it held a secret value"
        ))
    })?;
    Ok((server.clone(), created))
}

/// Under a policy, what lets a follow-up of this call be made ahead of
/// time: the policy would allow it to this call's caller.
fn admit(generation: &Generation, policy: Option<&Arc<Policy>>, ctx: &CallControl) -> Option<Admit> {
    let (policy, caller, core) = (policy?.clone(), ctx.caller.clone(), generation.core.clone());
    Some(Arc::new(move |tool: &str, args: &Map<String, Value>| {
        core.facts(tool)
            .is_some_and(|facts| policy.decide(&caller, &facts, args).allowed())
    }))
}

/// What the speculation engine reads of a result: its structured content,
/// else its first text (which may be JSON); nothing of an error.
fn observed(result: &CallOutput) -> Observed {
    if result.is_error {
        return Observed::Nothing;
    }
    if let Some(structured) = &result.structured_content {
        return Observed::Json(structured.clone());
    }
    let text = result.content.iter().find_map(|block| match block {
        Block::Text(text) => Some(text.text.clone()),
        _ => None,
    });
    text.map_or(Observed::Nothing, Observed::Text)
}

/// The after-call hook of the tool's plugin, if it has one, laid over
/// `result`; a failed hook is logged and skipped.
async fn after_call(bound: &Bound, name: &str, result: &mut CallOutput) {
    let Backend::Plugin(plugin, hooks) = &bound.backend else {
        return;
    };
    if !hooks.contains(Hooks::AFTER_CALL) {
        return;
    }
    match plugin.after_call(name, result, result.is_error).await {
        Ok(Some(over)) => {
            // Each field set replaces the old one whole (no merge).
            if let Some(content) = over.content {
                result.content = content;
            }
            if let Some(structured) = over.structured {
                result.structured_content = structured;
            }
            if let Some(details) = over.details {
                result.details = Some(details);
            }
            if let Some(flag) = over.is_error {
                result.is_error = flag;
            }
        }
        Ok(None) => {}
        Err(e) => tracing::warn!(tool = name, "after-call skipped: {e}"),
    }
}

/// A call up to execution (real or prefetched): resolve, prepare-arguments, validate,
/// the policy (for a real call: `judged`, its policy and caller, the
/// decision left in `decision`), before-call, transform-args. The policy
/// reads the arguments as validated, before any plugin's hook that
/// follows sees them: a denied call runs no plugin code past
/// prepare-arguments. A question a plugin's before-call asks goes to
/// `client`, the session that made the call; a prefetch has none, and so
/// never asks.
pub(super) async fn prepare<'c>(
    core: &'c Core,
    name: &str,
    args: Value,
    judged: Option<(&Policy, &Caller)>,
    decision: &mut Option<Decision>,
    client: Option<&dyn Downstream>,
) -> Result<(&'c Bound, Map<String, Value>), ToolError> {
    let bound = core
        .tools
        .get(name)
        .ok_or_else(|| ToolError::NotFound(format!("Tool {} not found", label(name))))?;
    let mut args = match args {
        Value::Object(map) => map,
        Value::Null => Map::new(),
        other => {
            return Err(ToolError::InvalidArgs(format!(
                "the arguments of tool \"{name}\" must be a JSON object, received {}",
                excerpt(&other, MAX_QUOTED, false)
            )));
        }
    };
    let hooks = match &bound.backend {
        Backend::Plugin(_, hooks) => *hooks,
        _ => Hooks::empty(),
    };
    if let Backend::Plugin(plugin, _) = &bound.backend
        && hooks.contains(Hooks::PREPARE_ARGUMENTS)
    {
        args = plugin.prepare_arguments(name, args).await.map_err(|e| match e {
            crate::plugin::PluginError::Rejected { message, .. } => ToolError::InvalidArgs(message),
            other => ToolError::Failed(other.to_string()),
        })?;
    }
    validate::check(name, &bound.schema, &mut args).map_err(ToolError::InvalidArgs)?;
    if let Some((policy, caller)) = judged
        && let Some(facts) = core.facts(name)
    {
        let decided = decision.insert(policy.decide(caller, &facts, &args));
        if let Some(reason) = decided.reason() {
            return Err(ToolError::Failed(reason.to_owned()));
        }
    }
    if let Backend::Plugin(plugin, _) = &bound.backend
        && hooks.contains(Hooks::BEFORE_CALL)
    {
        let mut verdict = plugin.before_call(name, &args).await;
        if let Ok(BeforeCallDecision::Ask(question)) = verdict {
            let answer = ask::user(&plugin.name, name, &question, client).await?;
            verdict = plugin.after_ask(name, &args, answer).await;
        }
        match verdict {
            Ok(BeforeCallDecision::Allow) => {}
            Ok(BeforeCallDecision::Block(reason)) if reason.is_empty() => {
                return Err(ToolError::Failed(format!("Tool {name} execution was blocked")));
            }
            Ok(BeforeCallDecision::Block(reason)) => return Err(ToolError::Failed(reason)),
            // `after-ask` is refused an `ask` of its own (`plugin::calls`).
            Ok(BeforeCallDecision::Ask(_)) => {
                return Err(ToolError::Failed(format!("plugin `{}` asked twice", plugin.name)));
            }
            Err(e) => return Err(ToolError::Failed(e.to_string())),
        }
    }
    if !bound.transformers.is_empty() {
        args = Enrichers::transform_chain(&bound.transformers, name, args)
            .await
            .map_err(|e| ToolError::Failed(e.to_string()))?;
    }
    Ok((bound, args))
}

/// A prefetched result, as the cache keeps it.
#[derive(Clone)]
pub(super) enum Prefetch {
    /// A native read's whole file, which answers any slice of it.
    File(Arc<FileText>),
    Result(Arc<CallOutput>),
}

/// Run a real call the engine [keeps](Engine::keeps) the result of: a
/// native read loads its file whole (after the same latency, so still one
/// backend call) and answers its slice from it, as a direct read does; the
/// engine keeps the file. A remote read's result is kept whole for the
/// exact repeats that follow (in the partition of the credential it ran
/// with); other native tools run as usual.
async fn run_kept(
    engine: &Engine<Core>,
    backend: &Backend,
    name: &str,
    args: Map<String, Value>,
    (partition, credential): (Partition, Option<Lent>),
    ctx: &CallControl,
) -> Result<CallOutput, ToolError> {
    let start = Instant::now();
    let native = match backend {
        Backend::Native(native) if name == WHOLE_FILE => native,
        Backend::Native(_) => return backend.execute(name, args, ctx, None).await,
        // A remote read: kept for its exact repeats, unless it failed.
        _ => {
            let result = backend.execute(name, args.clone(), ctx, credential).await?;
            if result.is_error {
                return Ok(result);
            }
            let result = Prefetch::Result(Arc::new(result));
            return Ok(engine.keep(name, &args, partition, result, start.elapsed()));
        }
    };
    let file = tokio::select! {
        biased;
        _ = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
        file = native.load(&args, Urgency::Call) => file?,
    };
    let file = Prefetch::File(Arc::new(file));
    Ok(engine.keep(name, &args, partition, file, start.elapsed()))
}
