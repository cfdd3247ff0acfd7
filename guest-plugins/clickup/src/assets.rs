//! ClickUp task attachments: listed from the task (`GET /task/{id}`
//! answers its `attachments`), uploaded as multipart/form-data (`POST
//! /task/{id}/attachment`, the file in field `attachment`), and downloaded
//! from the attachment's own `url`, which is on ClickUp's attachment host
//! (the user grants it). ClickUp's API has no call to delete an
//! attachment, so `delete_asset` is not served.

use provider_kit::api::{Body, encode, required, result};
use provider_kit::files::{Multipart, download_result, mime_of, upload_args};
use toolhost_sdk::{ToolError, ToolResult, Value, json};

use crate::ClickUp;

/// An attachment as the tools return it.
fn attachment(a: &Value) -> Value {
    json!({"id": a["id"], "filename": a["title"], "size": a["size"], "mimeType": a["mimetype"],
           "extension": a["extension"], "url": a["url"], "author": a["user"]["username"], "created_at": a["date"]})
}

impl ClickUp {
    fn attachments(&self, tool: &str, key: &str) -> Result<Vec<Value>, ToolError> {
        let task = self.api.get(tool, &format!("/task/{}", encode(key)))?.body;
        Ok(task["attachments"].as_array().cloned().unwrap_or_default())
    }

    fn task_key(tool: &str, args: &Value) -> Result<String, ToolError> {
        if args["context_type"].as_str() == Some("mr") {
            return Err(ToolError::InvalidArgs(format!(
                "ClickUp {tool}: ClickUp has no merge requests; use context_type `issue`"
            )));
        }
        required(args, "key")
    }

    pub fn get_assets(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_assets";
        let key = Self::task_key(tool, args)?;
        let assets: Vec<Value> = self.attachments(tool, &key)?.iter().map(attachment).collect();
        Ok(result(
            format!("{} attachment(s) on {key}", assets.len()),
            json!({"key": key, "assets": assets}),
        ))
    }

    pub fn download_asset(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "download_asset";
        let key = Self::task_key(tool, args)?;
        let id = required(args, "asset_id")?;
        let all = self.attachments(tool, &key)?;
        let found = all
            .iter()
            .find(|a| a["id"].as_str() == Some(id.as_str()))
            .ok_or_else(|| {
                ToolError::NotFound(format!(
                    "ClickUp {tool}: task {key} has no attachment `{}`",
                    id.escape_debug()
                ))
            })?;
        let url = found["url"]
            .as_str()
            .filter(|u| u.starts_with("https://") || u.starts_with("http://"));
        let url = url.ok_or_else(|| {
            ToolError::Failed(format!(
                "ClickUp {tool}: attachment `{}` has no download url",
                id.escape_debug()
            ))
        })?;
        let content = self.api.get(tool, url)?;
        let filename = found["title"].as_str().unwrap_or(&id).to_owned();
        let mime = found["mimetype"]
            .as_str()
            .or(content.header("content-type"))
            .unwrap_or_else(|| mime_of(&filename))
            .to_owned();
        download_result(
            "ClickUp",
            tool,
            &filename,
            &mime,
            &content.bytes,
            json!({"key": key, "asset_id": id}),
        )
    }

    pub fn upload_asset(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "upload_asset";
        let key = required(args, "key")?;
        let (filename, data) = upload_args("ClickUp", tool, args)?;
        let (content_type, body) = Multipart::new(&[&data, filename.as_bytes()])
            .text("filename", &filename)
            .file("attachment", &filename, mime_of(&filename), &data)
            .finish();
        let made = self
            .api
            .request(
                tool,
                "POST",
                &format!("/task/{}/attachment", encode(&key)),
                &[],
                Some(Body::Bytes {
                    content_type: &content_type,
                    data: &body,
                }),
            )?
            .body;
        Ok(result(
            format!("attached {filename} to {key} (attachment {})", made["id"]),
            json!({"key": key, "id": made["id"], "filename": made["title"], "extension": made["extension"],
                   "url": made["url"]}),
        ))
    }
}
