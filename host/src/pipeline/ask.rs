//! A plugin's question to the user before a call runs (contract 0.3's
//! `before-call` answering `ask`), put to the client session that made the
//! call as an MCP form elicitation (`elicitation/create`), and the client's
//! answer read back as the plugin's `ask-answer`.
//!
//! The host writes what the user sees around the plugin's words: a first
//! line naming the plugin and the tool, then the plugin's bounded message
//! (checked by `plugin::calls`), and a form of the host's own (a yes/no
//! `confirm`, or a `choice` among the plugin's options). A call with no
//! client (a prefetch, the host's own call) or whose client did not
//! declare form elicitation fails, naming the plugin: nothing is guessed.
//! The question holds one of the session's relayed round trips
//! (`MAX_RELAYED_PER_SESSION`, shared with upstream servers' questions) and
//! waits [`ASK_TIMEOUT`] at most. No plugin instance is held meanwhile: the
//! answer goes to a fresh `after-ask` call. Not the checks of the question
//! (`plugin::calls`) nor the session's transport (`mcp::asked`).

use rmcp::model::{
    ClientResult, ElicitRequest, ElicitRequestParams, ElicitationAction, ElicitationSchema, ServerRequest,
};
use serde_json::{Value, json};

use crate::bounds::ASK_TIMEOUT;
use crate::output::ToolError;
use crate::plugin::{Answer, Question};
use crate::upstream::{Downstream, Unanswered};

/// Ask the user `question` of `plugin`'s before-call of `tool`, through
/// `client`; the answer, or the call's error naming why there is none.
pub(super) async fn user(
    plugin: &str,
    tool: &str,
    question: &Question,
    client: Option<&dyn Downstream>,
) -> Result<Answer, ToolError> {
    let refused = |why: &str| {
        ToolError::Failed(format!(
            "plugin `{plugin}` asks the user before `{tool}` runs, and {why}: the call is not made"
        ))
    };
    let Some(client) = client else {
        return Err(refused(
            "this call has no client to ask (it is made ahead of time, or by the host)",
        ));
    };
    let forms = client
        .capabilities()
        .and_then(|c| c.elicitation)
        // An empty `elicitation` declares forms (MCP 2025-11-25).
        .is_some_and(|e| e.form.is_some() || e.url.is_none());
    if !forms {
        return Err(refused("the client did not declare form elicitation"));
    }
    let Ok(_slot) = client.slots().clone().try_acquire_owned() else {
        return Err(refused("the client session has as many questions open as it may"));
    };
    let (property, schema) = match &question.options {
        None => ("confirm", json!({"type": "boolean", "title": "Go ahead?"})),
        Some(options) => (
            "choice",
            json!({"type": "string", "title": "Choose one", "enum": options}),
        ),
    };
    let requested_schema = ElicitationSchema::from_json_schema(
        json!({"type": "object", "properties": {property: schema}, "required": [property]})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    )
    .map_err(|e| ToolError::Failed(format!("plugin `{plugin}`: its question makes no form: {e}")))?;
    let message = format!(
        "The plugin `{plugin}` asks before the tool `{tool}` runs:\n\n{}",
        question.message
    );
    let request =
        ServerRequest::ElicitRequest(ElicitRequest::new(ElicitRequestParams::FormElicitationParams {
            meta: None,
            message,
            requested_schema,
        }));
    let answer = match client.ask(request, ASK_TIMEOUT).await {
        Ok(ClientResult::ElicitResult(answer)) => answer,
        Ok(_) => return Err(refused("the client answered with something else than the form")),
        Err(Unanswered::Late(wait)) => {
            return Err(refused(&format!(
                "the client gave no answer within {} s",
                wait.as_secs()
            )));
        }
        Err(Unanswered::Failed(e)) => return Err(refused(&format!("the client gave no answer: {e}"))),
    };
    Ok(match answer.action {
        ElicitationAction::Decline => Answer::Declined,
        ElicitationAction::Cancel => Answer::Cancelled,
        ElicitationAction::Accept => {
            let given = answer.content.as_ref().and_then(|c| c.get(property));
            match (&question.options, given) {
                (None, Some(Value::Bool(true))) => Answer::Accepted(None),
                (None, Some(Value::Bool(false))) => Answer::Declined,
                (Some(options), Some(Value::String(choice))) if options.contains(choice) => {
                    Answer::Accepted(Some(choice.clone()))
                }
                _ => return Err(refused("the client's answer does not fit the form it was sent")),
            }
        }
        _ => {
            return Err(refused(
                "the client answered with an action this host does not know",
            ));
        }
    })
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use rmcp::model::{ClientCapabilities, ElicitationCapability};
    use tokio::sync::Semaphore;

    use super::*;
    use crate::upstream::{Asked, session_slots};

    /// A client that declares forms and never answers: rmcp's deadline
    /// passes, which it reports as late; the deadline it was given is kept.
    struct Silent(Arc<Semaphore>, Mutex<Option<Duration>>);

    impl Downstream for Silent {
        fn capabilities(&self) -> Option<ClientCapabilities> {
            let mut declared = ClientCapabilities::default();
            declared.elicitation = Some(ElicitationCapability::new());
            Some(declared)
        }
        fn slots(&self) -> &Arc<Semaphore> {
            &self.0
        }
        fn ask(&self, _: ServerRequest, deadline: Duration) -> Asked<'_> {
            *self.1.lock().unwrap() = Some(deadline);
            Box::pin(async move { Err(Unanswered::Late(deadline)) })
        }
    }

    #[tokio::test]
    async fn a_question_nobody_answers_ends_at_its_own_deadline_named_as_such() {
        let client = Silent(session_slots(), Mutex::new(None));
        let question = Question {
            message: "Delete notes.md?".into(),
            options: None,
        };
        let Err(ToolError::Failed(message)) = user("asker", "delete", &question, Some(&client)).await else {
            panic!("an unanswered question let the call run")
        };
        assert_eq!(*client.1.lock().unwrap(), Some(ASK_TIMEOUT));
        assert!(
            message.contains("plugin `asker` asks the user before `delete` runs")
                && message.contains("no answer within 300 s")
                && !message.contains("relay_timeout_s"),
            "{message}"
        );
        assert_eq!(
            client.0.available_permits(),
            crate::bounds::MAX_RELAYED_PER_SESSION,
            "the slot is given back"
        );
    }
}
