//! The call pipeline as the speculation engine's [`Target`]: prefetches are
//! prepared by the same steps as real calls (so a before-call block, a
//! validation error or a failed transform stops them) and executed by the
//! same backends, without progress, after-call or the caller's
//! cancellation.
//!
//! Where speculation is switched on: native local tools by `[speculation]
//! native`; `web_fetch` and tool-plugin tools by their host being listed in
//! `[speculation] hosts`; upstream tools by their server's `speculate` (on
//! unless the user turns it off: a tool is still called ahead of time only
//! when its value model says it is pure or read-only). The
//! host of a tool plugin's call is a claim (by the plugin or an enricher):
//! it is believed only if the plugin is granted that host or the user's
//! `[tools.X]` names it, else the call is not made ahead of time and the
//! refusal is logged.
//! Which native tool is answered from its file loaded whole, and which
//! are local, is the tools' own fact (`tools::facts`).
//! A native `read` is prefetched whole (cached under its normalised path
//! alone), and every slice a real read asks of it is answered from that by
//! the same code a direct read runs, so it is the same answer, line numbers,
//! continuation hint and total included. It is served only while the file
//! is still the one read (`tools::read_cache`: inode, ctime and the rest of its
//! stamp, or the content's digest), so a change made behind the host's back
//! (by the agent's own editor, even one that restores the mtime) is always
//! seen, and a write through the host need not drop the other files' reads.
//! A real native read that was not served runs the same way, whole, and
//! leaves its file in the cache for the reads that follow
//! (`call::run_kept`): the re-reads after the agent's edits elsewhere, or
//! another slice of the same file, under the same freshness check.
//! The directories of the files cached are watched
//! (`tools::Changes`, started with the catalog's build), and a file held
//! that changes behind the host's back (the agent's shell editing it) is
//! read again ahead of the agent (`Engine::changed`).
//! The other native tools are cached under their path normalised too.

use serde_json::{Map, Value};

use std::sync::Arc;

use super::call::{Prefetch, prepare};
use super::caller::Caller;
use super::catalog::{Backend, Bound, Core};
use super::control::{CallControl, error_text};
use crate::credentials::Lent;
use crate::output::CallOutput;
use crate::priority::Background;
use crate::speculation::Target;
use crate::speculation::cache::Partition;
use crate::speculation::engine::BoxFuture;
use crate::speculation::planner::DeclineReason;
use crate::speculation::settings::hostname;
use crate::tools::facts::WHOLE_FILE;
use crate::tools::{NativeTools, Urgency, is_local};

impl Target for Core {
    type Output = Prefetch;
    type Answer = CallOutput;
    /// The caller a call is made for; `None`, the host itself.
    type Principal = Option<Caller>;
    /// The caller's own credential the backend is lent, if the call has one.
    type Credential = Option<Lent>;

    /// A plugin's tool with secrets each caller brings, or an upstream's
    /// acting as each caller, runs with the caller's own, in the partition
    /// of its keyed hash; every other call runs with the host's own
    /// credentials, the same for each caller: the shared partition. A
    /// prefetch (`who` is the caller whose call planned it) runs with that
    /// caller's.
    fn credential<'a>(
        &'a self,
        tool: &'a str,
        who: &'a Option<Caller>,
    ) -> BoxFuture<'a, Result<(Partition, Self::Credential), String>> {
        Box::pin(async move {
            let resolved = self
                .resolve(tool, who.as_ref())
                .await
                .map_err(|e| e.to_string())?;
            let partition = resolved.partition.map_or(Partition::SHARED, Partition::of);
            Ok((partition, resolved.lent))
        })
    }

    fn prepare(
        &self,
        tool: String,
        args: Map<String, Value>,
    ) -> BoxFuture<'_, Result<Map<String, Value>, String>> {
        Box::pin(async move {
            // The policy was asked when the prefetch was planned (the
            // engine's admission, for the caller whose call planned it).
            prepare(self, &tool, Value::Object(args), None, &mut None, None)
                .await
                .map(|(_, args)| args)
                .map_err(|e| error_text(&e))
        })
    }

    fn execute(
        &self,
        tool: String,
        args: Map<String, Value>,
        credential: Self::Credential,
        background: Background,
    ) -> BoxFuture<'_, Result<Prefetch, String>> {
        Box::pin(async move {
            let bound = self
                .tools
                .get(&tool)
                .ok_or_else(|| format!("Tool {tool} not found"))?;
            let ctx = CallControl::new(format!("prefetch-{tool}")).in_background(background);
            if let Backend::Native(native) = &bound.backend
                && tool == WHOLE_FILE
            {
                ctx.wait_turn().await;
                let file = native
                    .load(&args, Urgency::Prefetch)
                    .await
                    .map_err(|e| error_text(&e))?;
                return Ok(Prefetch::File(Arc::new(file)));
            }
            let result = bound
                .backend
                .execute(&tool, args, &ctx, credential)
                .await
                .map_err(|e| error_text(&e))?;
            // An upstream's error result is not worth serving again.
            if result.is_error {
                return Err(result.text());
            }
            Ok(Prefetch::Result(Arc::new(result)))
        })
    }

    fn cache_args(&self, tool: &str, args: &Map<String, Value>) -> Map<String, Value> {
        match self.tools.get(tool) {
            Some(Bound {
                backend: Backend::Native(native),
                ..
            }) => native.cache_args(tool, args),
            Some(bound) => without_defaults(&bound.schema, args),
            None => args.clone(),
        }
    }

    fn answer(&self, _tool: &str, args: &Map<String, Value>, cached: &Prefetch) -> CallOutput {
        match cached {
            // As the pipeline turns a failed execution into a result.
            Prefetch::File(file) => {
                NativeTools::slice(file, args).unwrap_or_else(|e| CallOutput::error(error_text(&e)))
            }
            Prefetch::Result(result) => CallOutput::clone(result),
        }
    }

    fn size(output: &Prefetch) -> usize {
        match output {
            Prefetch::File(file) => file.size(),
            Prefetch::Result(result) => result.size(),
        }
    }

    fn category(&self, tool: &str) -> Option<String> {
        self.tools.get(tool)?.category.clone()
    }

    fn may_prefetch(&self, tool: &str, host: Option<&str>) -> Result<(), DeclineReason> {
        let on = |enabled: bool| enabled.then_some(()).ok_or(DeclineReason::NotEnabled);
        let Some(bound) = self.tools.get(tool) else {
            return on(false);
        };
        let host_allowed = host.is_some_and(|h| self.settings.allows_host(h));
        match &bound.backend {
            Backend::Native(_) if is_local(tool) => on(self.settings.native),
            Backend::Native(_) => on(host_allowed),
            Backend::Plugin(plugin, _) => {
                on(host_allowed)?;
                let host = host.unwrap_or_default();
                let vouched = self.models.user_host(tool).is_some_and(|h| hostname(h) == host);
                if vouched || granted(plugin.http_hosts(), host) {
                    return Ok(());
                }
                tracing::warn!(
                    "prefetch of `{tool}` refused: its host is claimed to be `{host}`, which plugin `{}` is not granted",
                    plugin.name
                );
                Err(DeclineReason::NotGranted)
            }
            Backend::Upstream(server, _) => on(server.config.speculate),
        }
    }

    fn is_current(&self, tool: &str, _args: &Map<String, Value>, output: &Prefetch) -> bool {
        match (self.tools.get(tool).map(|b| &b.backend), output) {
            (Some(Backend::Native(native)), Prefetch::File(file)) => native.is_current(file),
            (_, Prefetch::File(_)) => false,
            (_, Prefetch::Result(_)) => true,
        }
    }

    fn requires(&self, tool: &str, arg: &str) -> bool {
        self.tools
            .get(tool)
            .and_then(|b| b.schema.get("required")?.as_array())
            .is_some_and(|required| required.iter().any(|r| r == arg))
    }

    /// An upstream server's reads: its state is as trusted for exact
    /// repeats as for prefetches, within the same freshness.
    fn repeatable(&self, tool: &str) -> bool {
        matches!(
            self.tools.get(tool).map(|b| &b.backend),
            Some(Backend::Upstream(..))
        )
    }

    fn self_validating(&self, tool: &str) -> bool {
        tool == WHOLE_FILE && matches!(self.tools.get(tool).map(|b| &b.backend), Some(Backend::Native(_)))
    }

    fn follow(&self, tool: &str, output: &Prefetch) {
        if let (Some(changes), Prefetch::File(file)) = (&self.changes, output)
            && self.self_validating(tool)
        {
            changes.follow(&file.path());
        }
    }

    /// A result is shared with the other replicas as MCP carries it (with
    /// its `details`); a native tool's is not: it is this machine's files
    /// (or this replica's web policy), which another replica's need not be.
    fn encode(&self, tool: &str, output: &Prefetch) -> Option<Value> {
        let Prefetch::Result(result) = output else {
            return None;
        };
        self.output_cap(tool)?;
        let details = result.details.clone();
        let mcp = serde_json::to_value(crate::output::mcp::to_mcp(CallOutput::clone(result))).ok()?;
        Some(serde_json::json!({"result": mcp, "details": details}))
    }

    /// Another replica's result, held to what `tool`'s own backend may
    /// answer here: a native tool's is never taken, and a result over the
    /// tool's output cap is refused.
    fn decode(&self, tool: &str, mut body: Value) -> Result<Prefetch, String> {
        let cap = self
            .output_cap(tool)
            .ok_or_else(|| format!("`{tool}` is not a tool whose results replicas share"))?;
        let details = body.get_mut("details").map(Value::take).filter(|d| !d.is_null());
        let result = body
            .get_mut("result")
            .map(Value::take)
            .ok_or_else(|| "not a result".to_owned())?;
        let mcp = serde_json::from_value(result).map_err(|e| format!("not a result: {e}"))?;
        let mut result = crate::output::mcp::from_mcp(mcp);
        result.details = details;
        if result.size() > cap {
            return Err(format!(
                "{} bytes, over the tool's output cap of {cap}",
                result.size()
            ));
        }
        Ok(Prefetch::Result(Arc::new(result)))
    }

    fn neighbours(&self, tool: &str) -> Vec<String> {
        let category = self.tools.get(tool).and_then(|b| b.category.as_deref());
        self.tools
            .iter()
            .filter(|(_, b)| category.is_none() || b.category.as_deref() == category)
            .map(|(name, _)| name.clone())
            .collect()
    }
}

/// `args` without those whose value is the default the tool's input schema
/// declares: a call that spells out a default (`page_size: 100`) asks for
/// the answer of the call that leaves it out, and is answered from it.
fn without_defaults(schema: &Value, args: &Map<String, Value>) -> Map<String, Value> {
    let default = |name: &str| schema.get("properties")?.get(name)?.get("default");
    args.iter()
        .filter(|(name, value)| default(name) != Some(*value))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect()
}

/// Whether `host` is one of `grants` (a plugin's HTTP grants), by host name.
fn granted(grants: &[String], host: &str) -> bool {
    let host = hostname(host);
    grants.iter().any(|g| hostname(g) == host)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::pipeline::{Policy, Toolhost};
    use crate::speculation::Settings;
    use crate::tools::{Root, WebSettings};

    async fn host(root: &std::path::Path, speculation: Settings) -> Toolhost {
        let native = NativeTools::new(Root::new(root).unwrap(), WebSettings::default()).unwrap();
        Toolhost::native(native, speculation).await.unwrap()
    }

    async fn call(host: &Toolhost, tool: &str, args: Value) -> CallOutput {
        host.call_tool(tool, args, &CallControl::new("t")).await.unwrap()
    }

    /// Lines of a file: empty ones, long ones, a carriage return, non-ASCII.
    fn text() -> impl Strategy<Value = String> {
        let line = prop_oneof![
            Just(String::new()),
            "[a-z ]{1,12}",
            Just("x".repeat(300)),
            Just("tab\tand CR\r".to_owned()),
            Just("é ü 名".to_owned()),
        ];
        (prop::collection::vec(line, 0..40), any::<bool>())
            .prop_map(|(lines, trailing)| lines.join("\n") + if trailing { "\n" } else { "" })
    }

    /// One path, spelled as agents spell it.
    fn spelling() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            "src/f.txt",
            "./src/f.txt",
            "src//f.txt",
            "src/./f.txt",
            "src/../src/f.txt",
        ])
    }

    #[tokio::test]
    async fn a_follow_up_the_policy_denies_the_caller_is_not_prefetched() {
        let policy = r#"
@id("all") permit (principal, action, resource);
@id("no-secrets") forbid (principal, action, resource == Toolhost::Tool::"read")
when { context.args.path like "*secret*" };
"#;
        for (file, dispatched) in [("src/f.txt", 1), ("src/secret.txt", 0)] {
            let dir = tempfile::tempdir().unwrap();
            std::fs::create_dir(dir.path().join("src")).unwrap();
            std::fs::write(dir.path().join(file), "text\n").unwrap();
            let on = host(dir.path(), Settings::default()).await;
            on.replace_policy(Some(Policy::parse(policy, "test").unwrap()));
            call(&on, "glob", json!({"pattern": "**/*.txt"})).await;
            on.settle().await;
            assert_eq!(on.stats().unwrap().dispatched, dispatched, "{file}");
        }
    }

    #[test]
    fn a_default_spelled_out_is_keyed_as_left_out() {
        let schema = json!({"properties": {
            "page_size": {"type": "integer", "default": 100},
            "sort": {"type": "string"},
        }});
        let key = |args: Value| without_defaults(&schema, args.as_object().unwrap());
        assert_eq!(key(json!({"id": "a", "page_size": 100})), key(json!({"id": "a"})));
        assert_ne!(key(json!({"id": "a", "page_size": 5})), key(json!({"id": "a"})));
        assert_ne!(
            key(json!({"id": "a", "sort": "asc"})),
            key(json!({"id": "a"})),
            "no default declared: the argument may change the answer"
        );
    }

    proptest! {
        #![proptest_config(crate::fuzzing::config(48))]

        /// Any slice of a prefetched file, asked under any spelling of its
        /// path, is served from the prefetch and is, byte for byte, what a
        /// direct read answers: content, line numbers, continuation hint,
        /// total, and the error for an offset past the end.
        #[test]
        fn every_slice_served_from_a_prefetched_file_is_the_direct_read(
            text in text(),
            slices in prop::collection::vec((spelling(), prop::option::of(0u64..45), prop::option::of(1u64..45)), 1..6),
        ) {
            let dir = tempfile::tempdir().unwrap();
            std::fs::create_dir(dir.path().join("src")).unwrap();
            std::fs::write(dir.path().join("src/f.txt"), &text).unwrap();
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async {
                let on = host(dir.path(), Settings::default()).await;
                let off = host(dir.path(), Settings::off()).await;
                call(&on, "glob", json!({"pattern": "**/*.txt"})).await;
                on.settle().await;
                prop_assert_eq!(on.stats().unwrap().dispatched, 1);
                for (n, (path, offset, limit)) in slices.into_iter().enumerate() {
                    let mut args = json!({"path": path});
                    if let Some(offset) = offset {
                        args["offset"] = offset.max(1).into();
                    }
                    if let Some(limit) = limit {
                        args["limit"] = limit.into();
                    }
                    let served = call(&on, "read", args.clone()).await;
                    prop_assert_eq!(on.stats().unwrap().hits, n as u64 + 1, "{} was not served", args);
                    let direct = call(&off, "read", args.clone()).await;
                    prop_assert_eq!(served, direct, "{}", args);
                }
                Ok::<(), TestCaseError>(())
            })?;
        }
    }
}
