//! GitLab attachments: files uploaded to the project (`POST
//! /projects/:id/uploads`) and linked from an issue's or merge request's
//! description or notes as `/uploads/<secret>/<filename>`. GitLab has no
//! per-issue attachment list, so `get_assets` reads those links; an
//! asset's id is `<secret>/<filename>`, which the uploads API downloads and
//! deletes by. `upload_asset` uploads the file and links it in a new note,
//! which is how GitLab attaches a file to an issue.

use provider_kit::api::{Body, Listing, encode, required, result};
use provider_kit::files::{Multipart, download_result, mime_of, upload_args};
use toolhost_sdk::{ToolError, ToolResult, Value, json};

use crate::GitLab;

/// Notes read for links (GitLab's largest page).
const MAX_NOTES: u64 = 100;

/// GitLab's upload secrets: 32 hex digits.
const SECRET_LEN: usize = 32;

/// The reads an asset write makes stale.
pub fn stale_after(write: &str) -> &'static [&'static str] {
    match write {
        "upload_asset" => &["get_assets", "get_issue_comments", "get_issue"],
        "delete_asset" => &["get_assets", "download_asset"],
        _ => &[],
    }
}

/// An upload link found in Markdown.
#[derive(Debug, PartialEq)]
struct Link {
    secret: String,
    filename: String,
}

/// The `/uploads/<secret>/<filename>` links in `text`, in order.
fn links(text: &str) -> Vec<Link> {
    let mut found = Vec::new();
    for (at, _) in text.match_indices("/uploads/") {
        let rest = &text[at + "/uploads/".len()..];
        let Some((secret, tail)) = rest.split_at_checked(SECRET_LEN) else {
            continue;
        };
        if !secret.bytes().all(|b| b.is_ascii_hexdigit()) || !tail.starts_with('/') {
            continue;
        }
        let name: String = tail[1..]
            .chars()
            .take_while(|c| !matches!(c, ')' | ']' | '"' | '\'' | '<' | '>') && !c.is_whitespace())
            .collect();
        if !name.is_empty() {
            found.push(Link {
                secret: secret.to_ascii_lowercase(),
                filename: name,
            });
        }
    }
    found
}

/// An asset id, `<secret>/<filename>`, as its two path segments.
fn asset_path(tool: &str, args: &Value) -> Result<String, ToolError> {
    let id = required(args, "asset_id")?;
    match id.split_once('/') {
        Some((secret, name))
            if secret.len() == SECRET_LEN
                && secret.bytes().all(|b| b.is_ascii_hexdigit())
                && !name.is_empty()
                && !name.contains('/') =>
        {
            Ok(format!("{}/{}", encode(secret), encode(name)))
        }
        _ => Err(ToolError::InvalidArgs(format!(
            "GitLab {tool}: `asset_id` must be `<secret>/<filename>` from get_assets, not `{}`",
            id.escape_debug()
        ))),
    }
}

impl GitLab {
    /// The issue or merge request a call names: its path under the project
    /// and its key.
    fn target(&self, tool: &str, args: &Value) -> Result<(String, String), ToolError> {
        let key = required(args, "key")?;
        let n = crate::tools::iid(tool, args)?;
        let mr = args["context_type"].as_str() == Some("mr") || key.starts_with("mr#");
        Ok(if mr {
            (format!("merge_requests/{n}"), format!("mr#{n}"))
        } else {
            (format!("issues/{n}"), format!("#{n}"))
        })
    }

    pub fn get_assets(&self, p: &str, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_assets";
        let (target, key) = self.target(tool, args)?;
        let item = self.api.get(tool, &format!("{p}/{target}"))?.body;
        let path = format!("{p}/{target}/notes");
        let query = [("sort", "asc".to_owned()), ("order_by", "created_at".to_owned())];
        let listing = Listing {
            path: &path,
            query: &query,
            field: None,
            offset: 0,
            limit: MAX_NOTES,
            max_per_page: MAX_NOTES,
        };
        let (notes, _) = self.api.list(tool, &listing, |n| n["system"] != json!(true))?;
        let mut sources = vec![(
            item["description"].as_str().unwrap_or("").to_owned(),
            json!("description"),
        )];
        sources.extend(notes.iter().map(|n| {
            (
                n["body"].as_str().unwrap_or("").to_owned(),
                json!({"note": n["id"]}),
            )
        }));
        let web = item["web_url"].as_str().unwrap_or("");
        // The project's web URL: an issue's `web_url` minus `/-/issues/N`.
        let project_url = web.split("/-/").next().unwrap_or(web);
        let mut assets: Vec<Value> = Vec::new();
        for (text, source) in &sources {
            for link in links(text) {
                let id = format!("{}/{}", link.secret, link.filename);
                if assets.iter().any(|a| a["id"] == json!(id)) {
                    continue;
                }
                assets.push(
                    json!({"id": id, "filename": link.filename, "mimeType": mime_of(&link.filename),
                                   "url": format!("{project_url}/uploads/{id}"), "source": source}),
                );
            }
        }
        Ok(result(
            format!("{} attachment(s) linked from {key}", assets.len()),
            json!({"key": key, "assets": assets}),
        ))
    }

    pub fn download_asset(&self, p: &str, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "download_asset";
        let (_, key) = self.target(tool, args)?;
        let file = asset_path(tool, args)?;
        let reply = self.api.get(tool, &format!("{p}/uploads/{file}"))?;
        let id = required(args, "asset_id")?;
        let filename = id.rsplit('/').next().unwrap_or(&id).to_owned();
        let mime = reply
            .header("content-type")
            .filter(|m| !m.starts_with("application/octet-stream"))
            .unwrap_or_else(|| mime_of(&filename))
            .to_owned();
        download_result(
            "GitLab",
            tool,
            &filename,
            &mime,
            &reply.bytes,
            json!({"key": key, "asset_id": id}),
        )
    }

    pub fn upload_asset(&self, p: &str, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "upload_asset";
        let (target, key) = self.target(tool, args)?;
        let (filename, data) = upload_args("GitLab", tool, args)?;
        let (content_type, body) = Multipart::new(&[&data])
            .file("file", &filename, mime_of(&filename), &data)
            .finish();
        let upload = self
            .api
            .request(
                tool,
                "POST",
                &format!("{p}/uploads"),
                &[],
                Some(Body::Bytes {
                    content_type: &content_type,
                    data: &body,
                }),
            )?
            .body;
        let markdown = upload["markdown"].as_str().unwrap_or("").to_owned();
        let id = links(upload["url"].as_str().unwrap_or(""))
            .into_iter()
            .next()
            .map(|l| format!("{}/{}", l.secret, l.filename))
            .ok_or_else(|| {
                ToolError::Failed(format!(
                    "GitLab {tool}: the upload's answer has no `/uploads/<secret>/<filename>` url"
                ))
            })?;
        // Linking the file in a note attaches it to the issue (GitLab's own UI does the same).
        let note = self
            .api
            .send(
                tool,
                "POST",
                &format!("{p}/{target}/notes"),
                Some(&json!({"body": markdown})),
            )?
            .body;
        Ok(result(
            format!("attached {filename} to {key} (note {})", note["id"]),
            json!({"key": key, "id": id, "filename": filename, "url": upload["full_path"], "markdown": markdown,
                   "note": note["id"]}),
        ))
    }

    pub fn delete_asset(&self, p: &str, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "delete_asset";
        let (_, key) = self.target(tool, args)?;
        let file = asset_path(tool, args)?;
        self.api
            .send(tool, "DELETE", &format!("{p}/uploads/{file}"), None)?;
        let id = required(args, "asset_id")?;
        Ok(result(
            format!("deleted upload {id} (linked from {key})"),
            json!({"key": key, "asset_id": id}),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upload_links_are_found_in_markdown() {
        let text = "See ![dk](/uploads/66dbcd21ec5d24ed6ea225176098d52b/dk.png) and \
                    [log](/uploads/0123456789abcdef0123456789ABCDEF/build%20log.txt), not /uploads/short/x";
        assert_eq!(
            links(text),
            vec![
                Link {
                    secret: "66dbcd21ec5d24ed6ea225176098d52b".into(),
                    filename: "dk.png".into()
                },
                Link {
                    secret: "0123456789abcdef0123456789abcdef".into(),
                    filename: "build%20log.txt".into()
                },
            ]
        );
        let id = |s: &str| asset_path("t", &json!({"asset_id": s}));
        assert_eq!(
            id("66dbcd21ec5d24ed6ea225176098d52b/dk.png").unwrap(),
            "66dbcd21ec5d24ed6ea225176098d52b/dk.png"
        );
        assert!(id("../../x").is_err() && id("66dbcd21ec5d24ed6ea225176098d52b/a/b").is_err());
    }
}
