//! Jira attachments as files: `upload_asset` (a multipart POST to the
//! issue's attachments, with the `X-Atlassian-Token: no-check` header Jira
//! requires against XSRF) and `download_asset` (the attachment's metadata,
//! then its content, which Jira Cloud answers with a redirect to its media
//! host).
//!
//! Listing and deleting attachments are plain JSON calls (`tools`).

use provider_kit::api::{Body, encode, required};
use provider_kit::files::{MAX_INLINE_BYTES, Multipart, download_result, mime_of, upload_args};
use toolhost_sdk::{ToolError, ToolResult, Value, json};

use crate::tools::{Call, issue_key};

impl Call<'_> {
    pub fn upload_asset(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let key = issue_key(self.tool, args, "key")?;
        let (filename, data) = upload_args("Jira", self.tool, args)?;
        let (content_type, body) = Multipart::new(&[&data])
            .file("file", &filename, mime_of(&filename), &data)
            .finish();
        let made = self.api.request(
            self.tool,
            "POST",
            &format!("/rest/api/3/issue/{}/attachments", encode(&key)),
            &[("x-atlassian-token", "no-check")],
            Some(Body::Bytes {
                content_type: &content_type,
                data: &body,
            }),
        )?;
        // Jira answers the list of attachments it made: one here.
        let a = made.body.get(0).cloned().unwrap_or_default();
        Ok(provider_kit::api::result(
            format!("attached {filename} to {key} (attachment {})", a["id"]),
            json!({"key": key, "id": a["id"], "filename": a["filename"], "size": a["size"],
                   "mimeType": a["mimeType"], "url": a["content"]}),
        ))
    }

    pub fn download_asset(&self, args: &Value) -> Result<ToolResult, ToolError> {
        if args["context_type"].as_str() == Some("mr") {
            return Err(ToolError::InvalidArgs(format!(
                "Jira {}: Jira has no merge requests; use context_type `issue`",
                self.tool
            )));
        }
        let key = issue_key(self.tool, args, "key")?;
        let id = required(args, "asset_id")?;
        let meta = self.get(&format!("/rest/api/3/attachment/{}", encode(&id)))?.body;
        let filename = meta["filename"].as_str().unwrap_or(&id).to_owned();
        // Refuse before fetching what cannot be returned.
        if let Some(size) = meta["size"].as_u64()
            && size > MAX_INLINE_BYTES as u64
        {
            return Err(ToolError::Failed(format!(
                "Jira {}: attachment {id} (`{}`) is {size} bytes; a download returns at most \
                 {MAX_INLINE_BYTES} bytes inline",
                self.tool,
                filename.escape_debug()
            )));
        }
        let content = self.get(&format!("/rest/api/3/attachment/content/{}", encode(&id)))?;
        let mime = meta["mimeType"]
            .as_str()
            .or(content.header("content-type"))
            .unwrap_or_else(|| mime_of(&filename))
            .to_owned();
        download_result(
            "Jira",
            self.tool,
            &filename,
            &mime,
            &content.bytes,
            json!({"key": key, "asset_id": id}),
        )
    }
}
