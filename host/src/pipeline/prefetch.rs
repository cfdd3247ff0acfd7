//! The call pipeline as the speculation engine's [`Target`]: prefetches are
//! prepared by the same steps as real calls (so a before-call block, a
//! validation error or a failed transform stops them) and executed by the
//! same backends, without progress, after-call or the caller's
//! cancellation.
//!
//! Where speculation is switched on: native local tools by `[speculation]
//! native`; `web_fetch` and tool-plugin tools by their host being listed in
//! `[speculation] hosts`; upstream tools by their server's `speculate`. The
//! host of a tool plugin's call is a claim (by the plugin or an enricher):
//! it is believed only if the plugin is granted that host or the user's
//! `[tools.X]` names it, else the call is not made ahead of time and the
//! refusal is logged.
//! A native `read` carries the stamp of its file, taken before reading, and
//! is served only while the file still has that stamp, so a change made
//! behind the host's back (by the agent's own editor) is always seen, and a
//! write through the host need not drop the other files' reads.

use serde_json::{Map, Value};

use super::{Backend, CallContext, Core, execute};
use crate::output::CallOutput;
use crate::speculation::Target;
use crate::speculation::engine::BoxFuture;
use crate::speculation::planner::DeclineReason;
use crate::speculation::settings::hostname;
use crate::tools::{NativeTools, Stamp};

/// A prefetched result, as the cache keeps it.
#[derive(Clone)]
pub(super) struct Prefetch {
    pub result: CallOutput,
    stamp: Option<Stamp>,
}

impl Target for Core {
    type Output = Prefetch;

    fn prepare(
        &self,
        tool: String,
        args: Map<String, Value>,
    ) -> BoxFuture<'_, Result<Map<String, Value>, String>> {
        Box::pin(async move {
            Core::prepare(self, &tool, Value::Object(args))
                .await
                .map(|(_, args)| args)
                .map_err(|e| super::error_text(&e))
        })
    }

    fn execute(&self, tool: String, args: Map<String, Value>) -> BoxFuture<'_, Result<Prefetch, String>> {
        Box::pin(async move {
            let bound = self
                .tools
                .get(&tool)
                .ok_or_else(|| format!("Tool {tool} not found"))?;
            let stamp = match &bound.backend {
                Backend::Native(native) => native.stamp(&tool, &args),
                _ => None,
            };
            let ctx = CallContext::new(format!("prefetch-{tool}"));
            let result = execute(&bound.backend, &tool, args, &ctx)
                .await
                .map_err(|e| super::error_text(&e))?;
            // An upstream's error result is not worth serving again.
            if result.is_error {
                return Err(result.text());
            }
            Ok(Prefetch { result, stamp })
        })
    }

    fn size(output: &Prefetch) -> usize {
        output.result.size()
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
            Backend::Native(_) if NativeTools::is_local(tool) => on(self.settings.native),
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

    fn is_current(&self, tool: &str, args: &Map<String, Value>, output: &Prefetch) -> bool {
        match self.tools.get(tool).map(|b| &b.backend) {
            Some(Backend::Native(native)) if tool == "read" => {
                output.stamp.is_some() && native.stamp(tool, args) == output.stamp
            }
            _ => true,
        }
    }

    fn self_validating(&self, tool: &str) -> bool {
        tool == "read" && matches!(self.tools.get(tool).map(|b| &b.backend), Some(Backend::Native(_)))
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

/// Whether `host` is one of `grants` (a plugin's HTTP grants), by host name.
fn granted(grants: &[String], host: &str) -> bool {
    let host = hostname(host);
    grants.iter().any(|g| hostname(g) == host)
}
