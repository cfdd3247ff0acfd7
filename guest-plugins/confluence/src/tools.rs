//! The Confluence knowledge-base tools, run against Confluence Cloud's REST
//! API v2 on the configured site (spaces, pages of a space, a page with its
//! storage-format body, create and update with version numbers) and v1's
//! CQL search (`/wiki/rest/api/search`), which v2 has no counterpart for.
//!
//! Spaces are named by key in the catalog and by id in v2, so a key is
//! looked up first. v2 pages by cursor: the next page's `cursor` (from the
//! `Link` header) is returned as `cursor`. Bodies are written in the
//! storage format from the model's Markdown and returned as stored.

use provider_kit::api::{Api, catalog_tool, encode, optional, required, result, uint, with_query};
use provider_kit::markdown::to_storage;
use toolhost_sdk::{CallContext, ToolDefinition, ToolError, ToolResult, Tools, Value, json};

use crate::Confluence;

impl Tools for Confluence {
    fn tools(&self) -> Vec<ToolDefinition> {
        let tool = |name, what| catalog_tool(name, "knowledge_base", what);
        vec![
            tool(
                "get_knowledge_base_spaces",
                "The Confluence spaces the token's user can see.",
            ),
            tool(
                "list_knowledge_base_pages",
                "The pages of a space, by space key; `cursor` pages on.",
            ),
            tool(
                "get_knowledge_base_page",
                "One page by id, with its body in storage format (XHTML).",
            ),
            tool(
                "search_knowledge_base",
                "Search pages by text (CQL), optionally in one space.",
            ),
            tool(
                "create_knowledge_base_page",
                "Create a page (Markdown, written in storage format).",
            ),
            tool(
                "update_knowledge_base_page",
                "Replace a page's body (and title); bumps its version.",
            ),
        ]
    }

    fn execute(&self, tool: &str, args: Value, _ctx: &CallContext<'_>) -> Result<ToolResult, ToolError> {
        let api = self.api.as_ref().ok_or_else(|| {
            ToolError::Failed(format!(
                "Confluence {tool}: config `base_url` (the site, e.g. https://acme.atlassian.net) is \
                 required to run the tools"
            ))
        })?;
        let call = Call { api, tool };
        match tool {
            "get_knowledge_base_spaces" => call.spaces(&args),
            "list_knowledge_base_pages" => call.pages(&args),
            "get_knowledge_base_page" => call.page(&args),
            "search_knowledge_base" => call.search(&args),
            "create_knowledge_base_page" => call.create(&args),
            "update_knowledge_base_page" => call.update(&args),
            other => Err(ToolError::NotFound(format!("Confluence has no tool `{other}`"))),
        }
    }
}

struct Call<'a> {
    api: &'a Api,
    tool: &'a str,
}

/// The `cursor` query value of a next-page URL.
fn cursor_of(next: &str) -> Option<String> {
    let query = next.split_once('?')?.1;
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix("cursor="))
        .map(decode)
}

/// Undo percent-encoding (the cursor is sent again through [`encode`]).
fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A CQL string literal.
fn quoted(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

impl Call<'_> {
    fn web_url(&self, links: &Value) -> Value {
        match links["webui"].as_str() {
            Some(path) => json!(format!("{}/wiki{path}", self.api.base)),
            None => Value::Null,
        }
    }

    fn page_brief(&self, p: &Value) -> Value {
        json!({"id": p["id"], "title": p["title"], "status": p["status"], "spaceId": p["spaceId"],
               "parentId": p["parentId"], "version": p["version"]["number"], "url": self.web_url(&p["_links"])})
    }

    /// The next page's cursor of a v2 list: the `Link` header, else
    /// `_links.next`.
    fn next_cursor(reply: &provider_kit::api::Reply) -> Option<String> {
        reply
            .next_link()
            .or_else(|| reply.body["_links"]["next"].as_str().map(str::to_owned))
            .and_then(|next| cursor_of(&next))
    }

    /// The id of the space with `key`.
    fn space_id(&self, key: &str) -> Result<String, ToolError> {
        let path = with_query("/wiki/api/v2/spaces", &[("keys", key.to_owned())]);
        let body = self.api.get(self.tool, &path)?.body;
        body["results"][0]["id"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| {
                ToolError::NotFound(format!("Confluence {}: no space with key `{key}`", self.tool))
            })
    }

    fn spaces(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let limit = uint(args, "limit", 50)?.clamp(1, 250);
        let reply = self.api.get(
            self.tool,
            &with_query("/wiki/api/v2/spaces", &[("limit", limit.to_string())]),
        )?;
        let spaces: Vec<Value> = reply.body["results"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| {
                json!({"id": s["id"], "key": s["key"], "name": s["name"], "type": s["type"],
                            "homepageId": s["homepageId"], "url": self.web_url(&s["_links"])})
            })
            .collect();
        let more = Self::next_cursor(&reply).is_some();
        Ok(result(
            format!("{} space(s)", spaces.len()),
            json!({"spaces": spaces, "has_more": more}),
        ))
    }

    fn pages(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let key = required(args, "spaceKey")?;
        let id = self.space_id(&key)?;
        let limit = uint(args, "limit", 25)?.clamp(1, 250);
        let query = [
            ("limit", limit.to_string()),
            ("cursor", optional(args, "cursor").unwrap_or_default()),
        ];
        let path = with_query(&format!("/wiki/api/v2/spaces/{}/pages", encode(&id)), &query);
        let reply = self.api.get(self.tool, &path)?;
        let pages: Vec<Value> = reply.body["results"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| self.page_brief(p))
            .collect();
        let cursor = Self::next_cursor(&reply);
        let summary = format!(
            "{} page(s) in {key}{}",
            pages.len(),
            if cursor.is_some() {
                " (more: pass `cursor`)"
            } else {
                ""
            }
        );
        Ok(result(
            summary,
            json!({"spaceKey": key, "pages": pages, "cursor": cursor}),
        ))
    }

    fn get_page(&self, id: &str) -> Result<Value, ToolError> {
        let path = format!("/wiki/api/v2/pages/{}?body-format=storage", encode(id));
        Ok(self.api.get(self.tool, &path)?.body)
    }

    fn page(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let id = required(args, "pageId")?;
        let p = self.get_page(&id)?;
        let mut value = self.page_brief(&p);
        value["body"] = p["body"]["storage"]["value"].clone();
        let summary = format!(
            "page {id}: {} (version {})",
            p["title"].as_str().unwrap_or(""),
            value["version"]
        );
        Ok(result(summary, value))
    }

    fn search(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let text = required(args, "query")?;
        let mut cql = format!("type = page AND text ~ {}", quoted(&text));
        if let Some(space) = optional(args, "spaceKey") {
            cql.push_str(&format!(" AND space = {}", quoted(&space)));
        }
        let limit = uint(args, "limit", 20)?.clamp(1, 100);
        let path = with_query(
            "/wiki/rest/api/search",
            &[("cql", cql.clone()), ("limit", limit.to_string())],
        );
        let body = self.api.get(self.tool, &path)?.body;
        let results: Vec<Value> = body["results"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| r["content"]["id"].is_string())
            .map(|r| {
                let url = r["url"].as_str().map(|u| format!("{}/wiki{u}", self.api.base));
                json!({"id": r["content"]["id"], "title": r["content"]["title"], "excerpt": r["excerpt"],
                       "url": url, "lastModified": r["lastModified"]})
            })
            .collect();
        let summary = format!("{} page(s) match `{text}`", results.len());
        Ok(result(
            summary,
            json!({"cql": cql, "results": results, "total": body["totalSize"]}),
        ))
    }

    fn create(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let key = required(args, "spaceKey")?;
        let title = required(args, "title")?;
        let content = required(args, "content")?;
        let space = self.space_id(&key)?;
        let mut body = json!({"spaceId": space, "status": "current", "title": title,
                              "body": {"representation": "storage", "value": to_storage(&content)}});
        if let Some(parent) = optional(args, "parentId") {
            body["parentId"] = json!(parent);
        }
        let made = self
            .api
            .send(self.tool, "POST", "/wiki/api/v2/pages", Some(&body))?
            .body;
        let value = self.page_brief(&made);
        Ok(result(
            format!(
                "created page {} in {key}: {title}",
                made["id"].as_str().unwrap_or("")
            ),
            value,
        ))
    }

    fn update(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let id = required(args, "pageId")?;
        let content = required(args, "content")?;
        let (title, version) = (optional(args, "title"), uint(args, "version", 0)?);
        // The edit must carry the title and the next version number: read
        // what the arguments do not say.
        let (title, current) = match (title, version) {
            (Some(t), v) if v > 0 => (t, v),
            (t, v) => {
                let p = self.get_page(&id)?;
                let stored = p["version"]["number"].as_u64().unwrap_or(1);
                (
                    t.unwrap_or_else(|| p["title"].as_str().unwrap_or("").to_owned()),
                    if v > 0 { v } else { stored },
                )
            }
        };
        let body = json!({"id": id, "status": "current", "title": title,
                          "body": {"representation": "storage", "value": to_storage(&content)},
                          "version": {"number": current + 1}});
        let path = format!("/wiki/api/v2/pages/{}", encode(&id));
        let saved = self.api.send(self.tool, "PUT", &path, Some(&body))?.body;
        let value = self.page_brief(&saved);
        Ok(result(
            format!("updated page {id}: {title} (version {})", current + 1),
            value,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_come_from_next_links() {
        assert_eq!(
            cursor_of("/wiki/api/v2/spaces/1/pages?limit=5&cursor=bmV4dDo1%3D%3D").as_deref(),
            Some("bmV4dDo1==")
        );
        assert_eq!(cursor_of("/wiki/api/v2/pages?limit=5"), None);
        assert_eq!(decode("a%2"), "a%2");
    }
}
