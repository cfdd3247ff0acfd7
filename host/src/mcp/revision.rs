//! The MCP revisions the front serves, and what differs between them for
//! toolhost: up to 2025-11-25 a client opens a session with `initialize`
//! and is sent `tools/list_changed` on it; on 2026-07-28 there are no
//! sessions (each request carries its version in `_meta`, a client may ask
//! `server/discover` first), change notifications travel only on a
//! `subscriptions/listen` stream the client opens, and lists carry cache
//! hints. Version negotiation, the per-request metadata and the HTTP
//! `Mcp-Method` / `Mcp-Name` header checks are rmcp's; this module owns the
//! version list, the tools list's cache hints and the listen stream.

use std::borrow::Cow;

use rmcp::ErrorData as McpError;
use rmcp::model::{CacheScope, ListToolsResult, ProtocolVersion, SubscriptionFilter};
use rmcp::service::{SubscriptionContext, SubscriptionSendError};
use tokio::sync::watch;

/// Every revision up to 2026-07-28; a newer rmcp that knows a later one
/// does not serve it until toolhost is tested against it.
pub(super) fn supported() -> Cow<'static, [ProtocolVersion]> {
    Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2026_07_28))
}

/// The tools list as sent under `version`. From 2026-07-28 on, it carries
/// cache hints: the list may change at any moment (a watched plugin
/// directory reloads, an upstream server changes its tools), so it is fresh
/// only when sent, and a client that caches it listens for
/// `tools/list_changed`; it is shaped by this user's configuration and
/// plugins, so it is private.
pub(super) fn tools_list(mut result: ListToolsResult, version: Option<&ProtocolVersion>) -> ListToolsResult {
    if sessionless(version) {
        result.ttl_ms = Some(0);
        result.cache_scope = Some(CacheScope::Private);
    }
    result
}

/// Whether `version` is 2026-07-28 or later: no session, and tasks are
/// its extension's, not 2025-11-25's.
pub(super) fn sessionless(version: Option<&ProtocolVersion>) -> bool {
    version.is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// Of what a `subscriptions/listen` asks for, toolhost has tool-list
/// changes to tell (it serves no resources, and advertises no prompt-list
/// changes).
pub(super) fn accepted(requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
    let mut accepted = SubscriptionFilter::default();
    accepted.tools_list_changed = requested.tools_list_changed.filter(|&on| on);
    Some(accepted)
}

/// Send `tools/list_changed` on the stream at each catalog rebuild until
/// the client cancels it, the connection closes or the host is dropped
/// (then the stream ends gracefully).
pub(super) async fn listen(
    mut rebuilt: watch::Receiver<u64>,
    subscription: SubscriptionContext,
) -> Result<(), McpError> {
    if subscription.accepted().tools_list_changed != Some(true) {
        subscription.cancelled().await;
        return Ok(());
    }
    loop {
        tokio::select! {
            () = subscription.cancelled() => return Ok(()),
            changed = rebuilt.changed() => {
                if changed.is_err() {
                    return Ok(());
                }
                match subscription.sink().notify_tool_list_changed().await {
                    Ok(()) => {}
                    Err(SubscriptionSendError::SubscriptionClosed) => return Ok(()),
                    Err(e) => tracing::debug!("tools/list_changed not sent on a subscription: {e}"),
                }
            }
        }
    }
}
