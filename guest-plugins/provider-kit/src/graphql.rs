//! GraphQL over a provider's API (Linear, Fireflies): one `POST` of
//! `{query, variables}` to the endpoint, answered with `data` or an error
//! in [`Api`]'s vocabulary.
//!
//! GraphQL servers report most failures in the body, often with HTTP 200
//! (or 400 for a rate limit, as Linear does): a response with `errors` is
//! an error even if it carries partial `data`, so a tool never returns half
//! an answer as if it were whole. Each error's HTTP-like status comes from
//! its `extensions.status` / `extensions.statusCode`, else from its code
//! (`AUTHENTICATION_ERROR`, `auth_failed`, `RATELIMITED`,
//! `object_not_found`, `invalid_arguments`...), else from the HTTP status;
//! the message quotes the provider's `errors[].message`.
//!
//! It owns no provider's queries: each plugin writes its own.

use toolhost_sdk::{ToolError, Value, json, serde_json};

use crate::api::{Api, NOT_RETRIED, provider_message};

impl Api {
    /// Run `query` (a document with one named operation) with `variables`
    /// at `path` under the base URL; the `data` object, or the error.
    pub fn graphql(&self, tool: &str, path: &str, query: &str, variables: Value) -> Result<Value, ToolError> {
        let url = format!("{}{path}", self.base);
        let body = json!({"query": query, "variables": variables});
        let response = self.exchange(tool, "POST", &url, Some(&body))?;
        let text = response.text();
        let parsed: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        let waited = response.header(NOT_RETRIED).map(str::to_owned);
        let errors = parsed
            .get("errors")
            .and_then(Value::as_array)
            .filter(|e| !e.is_empty());
        if let Some(errors) = errors {
            let status = errors
                .iter()
                .find_map(error_status)
                .unwrap_or(if response.status >= 400 {
                    response.status
                } else {
                    0
                });
            let said = messages(errors).unwrap_or_else(|| provider_message(&text));
            if status == 0 {
                return Err(ToolError::Failed(format!("{} {tool}: {said}", self.provider)));
            }
            return Err(self.status_error(tool, "POST", &url, status, &said, waited.as_deref()));
        }
        if !(200..300).contains(&response.status) {
            let said = provider_message(&text);
            return Err(self.status_error(tool, "POST", &url, response.status, &said, waited.as_deref()));
        }
        match parsed.get("data") {
            Some(data) if data.is_object() => Ok(data.clone()),
            _ => Err(ToolError::Failed(format!(
                "{} {tool}: the answer carried no `data`",
                self.provider
            ))),
        }
    }
}

/// What the errors say: each `message`, with Linear's
/// `extensions.userPresentableMessage` when it adds something. Bounded.
fn messages(errors: &[Value]) -> Option<String> {
    let said: Vec<String> = errors
        .iter()
        .filter_map(|e| {
            let message = e.get("message").and_then(Value::as_str)?;
            let detail = e
                .pointer("/extensions/userPresentableMessage")
                .and_then(Value::as_str)
                .filter(|d| *d != message);
            Some(match detail {
                Some(d) => format!("{message} ({d})"),
                None => message.to_owned(),
            })
        })
        .collect();
    (!said.is_empty()).then(|| provider_message(&json!({"message": said.join("; ")}).to_string()))
}

/// The HTTP-like status one GraphQL error stands for, if it says.
fn error_status(error: &Value) -> Option<u16> {
    let ext = error.get("extensions");
    let given = ["status", "statusCode"]
        .iter()
        .find_map(|k| ext.and_then(|e| e.get(*k)).and_then(Value::as_u64))
        .and_then(|s| u16::try_from(s).ok())
        .filter(|s| *s >= 400);
    if given.is_some() {
        return given;
    }
    let code = ext
        .and_then(|e| e.get("code"))
        .or_else(|| error.get("code"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_ascii_lowercase();
    // Linear says "not found" with an input-error code.
    let message = error.get("message").and_then(Value::as_str).unwrap_or_default();
    if message.starts_with("Entity not found") {
        return Some(404);
    }
    Some(match code.as_str() {
        c if c.contains("authentication") || c.contains("auth_failed") || c == "unauthenticated" => 401,
        c if c.contains("forbidden") || c.contains("privilege") => 403,
        c if c.contains("ratelimit") || c.contains("too_many_requests") => 429,
        c if c.contains("not_found") => 404,
        c if c.contains("invalid") || c.contains("bad_user_input") || c.contains("validation") => 400,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_statuses_come_from_extensions_then_codes() {
        let status = |e: Value| error_status(&e);
        assert_eq!(
            status(json!({"message": "x", "extensions": {"status": 404}})),
            Some(404)
        );
        assert_eq!(
            status(json!({"message": "x", "extensions": {"code": "RATELIMITED", "statusCode": 429}})),
            Some(429)
        );
        assert_eq!(
            status(json!({"message": "x", "extensions": {"code": "AUTHENTICATION_ERROR"}})),
            Some(401)
        );
        assert_eq!(
            status(json!({"message": "x", "code": "invalid_arguments"})),
            Some(400)
        );
        assert_eq!(status(json!({"message": "Entity not found: Issue"})), Some(404));
        assert_eq!(status(json!({"message": "boom"})), None);
    }
}
