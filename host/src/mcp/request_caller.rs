//! The caller of the `/mcp` request being served, for what rmcp asks the
//! server outside a request handler. rmcp looks one tool up (`get_tool`,
//! to check a 2026-07-28 request's `Mcp-Param-*` headers against its
//! schema) with no request in hand, so the router serves each `/mcp`
//! request inside a task-local scope holding the [`Caller`] `auth` put on
//! it. Owns that scope only: who the caller is is `auth`'s to say, what
//! they may call the policy's.

use std::future::Future;

use crate::pipeline::Caller;

tokio::task_local! {
    static CALLER: Caller;
}

/// The caller `auth` established for `request`, if any (none without
/// `[auth]`).
pub(super) fn of<B>(request: &http::Request<B>) -> Option<Caller> {
    request.extensions().get::<Caller>().cloned()
}

/// `serving` run inside the scope of `caller`, or outside any scope.
pub(super) async fn within<F: Future>(caller: Option<Caller>, serving: F) -> F::Output {
    match caller {
        Some(caller) => CALLER.scope(caller, serving).await,
        None => serving.await,
    }
}

/// The caller of the request being served, if it runs in a scope.
pub(super) fn current() -> Option<Caller> {
    CALLER.try_with(Caller::clone).ok()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rmcp::ServerHandler;

    use super::*;
    use crate::mcp::McpServer;
    use crate::mcp::loopback::native_host;
    use crate::pipeline::Policy;

    /// rmcp's lookup of one tool answers for the caller of the request in
    /// scope as `tools/list` does: a tool the policy hides from Bob is not
    /// found for him, and still is for Alice and, out of any scope, for
    /// the session's own caller.
    #[tokio::test]
    async fn a_tool_hidden_from_the_caller_in_scope_is_not_found() {
        let host = native_host().await;
        let policy = "@id(\"all\")\npermit (principal, action, resource);\n\
                      @id(\"no-grep-for-bob\")\n\
                      forbid (principal == Toolhost::User::\"bob\", action, resource == Toolhost::Tool::\"grep\");\n";
        host.replace_policy(Some(Policy::parse(policy, "team.cedar").unwrap()));
        let server = McpServer::new(Arc::new(host), Default::default());
        let found = |who: &'static str| {
            let server = &server;
            CALLER.scope(Caller::named_by_embedder(who), async move {
                (
                    server.get_tool("grep").is_some(),
                    server.get_tool("read").is_some(),
                )
            })
        };
        assert_eq!(found("bob").await, (false, true));
        assert_eq!(found("alice").await, (true, true));
        assert!(server.get_tool("grep").is_some());
        assert!(server.get_tool("no-such-tool").is_none());
    }
}
