//! Requests that MCP cannot read, and what to answer them, saying what is
//! wrong:
//!
//! - a request of a method MCP defines whose params are of another shape
//!   (`tools/call` with an array for `arguments`): rmcp reads it as a custom
//!   one, which the front would answer "method not found"; it is answered
//!   invalid params;
//! - JSON that is no message at all (`params` that is no object): rmcp's
//!   parse fails, and it answered over stdio with no id, so a client waiting
//!   on that id waited forever, and over HTTP with `415 Unsupported Media
//!   Type`, as though the content type were wrong. It is answered under its
//!   id where one can be read, as JSON-RPC asks, over both transports
//!   ([`refusal`]); an HTTP body that is no JSON is a parse error.
//!
//! Owns the methods and the reasons; the transports (`crate::lines`, the
//! HTTP front's `wire`) and the front send the answers.

// rmcp marks MCP logging deprecated (SEP-2577); clients still use it.
#![allow(deprecated)]

use rmcp::model::{
    CallToolRequestParams, CompleteRequestParams, ErrorData, GetPromptRequestParams, InitializeRequestParams,
    PaginatedRequestParams, ReadResourceRequestParams, RequestId, SetLevelRequestParams,
    SubscribeRequestParams, UnsubscribeRequestParams,
};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::bounds::{MAX_ERROR_TEXT, cut, label};

/// The message of the invalid-params error for `method`'s `params`, if
/// `method` is one MCP gives params of a shape; `None` for any other
/// method.
pub(crate) fn invalid_params(method: &str, params: &Value) -> Option<String> {
    let why = why_not(method, params)?.unwrap_or_else(|| "they are not of the shape MCP gives them".into());
    Some(message(method, &why))
}

/// The answer to `text`, which is no message: under its id if it is a
/// request whose id can be read (JSON-RPC answers an invalid request under
/// its id where it can be told, else under none), invalid params if its
/// method is one MCP gives params of a shape and they are not, invalid
/// request otherwise, and a parse error if it is no JSON.
pub(crate) fn refusal(text: &[u8]) -> (Option<RequestId>, ErrorData) {
    let value: Value = match serde_json::from_slice(text) {
        Ok(value) => value,
        Err(e) => return (None, ErrorData::parse_error(format!("Parse error: {e}"), None)),
    };
    let method = value.get("method").and_then(Value::as_str);
    let id = method
        .and(value.get("id"))
        .and_then(|id| RequestId::deserialize(id).ok());
    let params = value.get("params").unwrap_or(&Value::Null);
    let error = match method.and_then(|m| Some((m, why_not(m, params)??))) {
        Some((method, why)) => ErrorData::invalid_params(message(method, &why), None),
        None => ErrorData::invalid_request("Invalid request: not a JSON-RPC message of MCP", None),
    };
    (id, error)
}

/// Why `params` are not what MCP gives `method`: `None` if `method` is not
/// one MCP gives params of a shape, `Some(None)` if they are its shape.
fn why_not(method: &str, params: &Value) -> Option<Option<String>> {
    Some(match method {
        "initialize" => why::<InitializeRequestParams>(params),
        "tools/call" => why::<CallToolRequestParams>(params),
        "prompts/get" => why::<GetPromptRequestParams>(params),
        "resources/read" => why::<ReadResourceRequestParams>(params),
        "resources/subscribe" => why::<SubscribeRequestParams>(params),
        "resources/unsubscribe" => why::<UnsubscribeRequestParams>(params),
        "completion/complete" => why::<CompleteRequestParams>(params),
        "logging/setLevel" => why::<SetLevelRequestParams>(params),
        "tools/list" | "prompts/list" | "resources/list" | "resources/templates/list" => {
            why::<Option<PaginatedRequestParams>>(params)
        }
        _ => return None,
    })
}

fn message(method: &str, why: &str) -> String {
    cut(
        format!("invalid params of {}: {why}", label(method)),
        MAX_ERROR_TEXT,
    )
}

/// Why `params` are not a `T`, or `None` if they are.
fn why<T: DeserializeOwned>(params: &Value) -> Option<String> {
    T::deserialize(params).err().map(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use rmcp::model::ErrorCode;
    use serde_json::json;

    use super::*;

    #[test]
    fn a_defined_method_with_params_of_another_shape_is_invalid_params_saying_why() {
        let message = invalid_params("tools/call", &json!({"name": "read", "arguments": [1]})).unwrap();
        assert!(message.starts_with("invalid params of tools/call: "), "{message}");
        assert!(message.contains("expected a map"), "{message}");
        let message = invalid_params("tools/call", &json!([1])).unwrap();
        assert!(message.starts_with("invalid params of tools/call: "), "{message}");
        assert!(invalid_params("logging/setLevel", &json!({"level": "loud"})).is_some());
        // A method MCP does not define is the front's to refuse as unknown.
        assert_eq!(invalid_params("foo/bar", &json!({})), None);
        // A huge value quoted back is cut.
        let huge = "x".repeat(100_000);
        let message = invalid_params("logging/setLevel", &json!({"level": huge})).unwrap();
        assert!(message.len() <= MAX_ERROR_TEXT, "{}", message.len());
    }

    #[test]
    fn json_that_is_no_message_is_refused_under_its_id_where_one_can_be_read() {
        let (id, error) = refusal(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":[1]}"#);
        assert_eq!(id, Some(RequestId::Number(7)));
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
        assert!(
            error.message.starts_with("invalid params of tools/call: "),
            "{error:?}"
        );
        // Its params fit; something else does not: invalid request.
        let (id, error) = refusal(br#"{"jsonrpc":"1.0","id":"a","method":"tools/list"}"#);
        assert_eq!(id, Some(RequestId::String("a".into())));
        assert_eq!(error.code, ErrorCode::INVALID_REQUEST);
        // No id to tell: none, a fraction, null, an answer, not an object.
        for json in [
            r#"{"jsonrpc":"2.0","method":"tools/call","params":[1]}"#,
            r#"{"jsonrpc":"2.0","id":9.5,"method":"tools/call","params":[1]}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":[1]}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":[1],"error":{}}"#,
            "[1]",
        ] {
            assert_eq!(refusal(json.as_bytes()).0, None, "{json}");
        }
        for text in [
            "",
            "garbage",
            r#"{"jsonrpc":"2.0","id":3,"method":"ping"} trailing"#,
        ] {
            let (id, error) = refusal(text.as_bytes());
            assert_eq!((id, error.code), (None, ErrorCode::PARSE_ERROR), "{text}");
        }
    }
}
