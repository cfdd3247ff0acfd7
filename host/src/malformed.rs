//! Requests of a method MCP defines whose params are of another shape
//! (`tools/call` with an array for `arguments`). rmcp reads such a request
//! as a custom one, which the front would answer "method not found": it
//! answers invalid params instead, saying what is wrong.
//!
//! Owns only the methods and the reason; the front sends the error.

// rmcp marks MCP logging deprecated (SEP-2577); clients still use it.
#![allow(deprecated)]

use rmcp::model::{
    CallToolRequestParams, CompleteRequestParams, GetPromptRequestParams, InitializeRequestParams,
    PaginatedRequestParams, ReadResourceRequestParams, SetLevelRequestParams, SubscribeRequestParams,
    UnsubscribeRequestParams,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::bounds::{MAX_ERROR_TEXT, cut, label};

/// The message of the invalid-params error for `method`'s `params`, if
/// `method` is one MCP gives params of a shape; `None` for any other
/// method.
pub(super) fn invalid_params(method: &str, params: &Value) -> Option<String> {
    let why = match method {
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
    };
    let why = why.unwrap_or_else(|| "they are not of the shape MCP gives them".into());
    Some(cut(
        format!("invalid params of {}: {why}", label(method)),
        MAX_ERROR_TEXT,
    ))
}

/// Why `params` are not a `T`, or `None` if they are.
fn why<T: DeserializeOwned>(params: &Value) -> Option<String> {
    T::deserialize(params).err().map(|e| e.to_string())
}

#[cfg(test)]
mod tests {
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
}
