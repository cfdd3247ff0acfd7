//! Files going to and coming from a provider's API, for the asset tools
//! (`upload_asset`, `download_asset`): multipart/form-data bodies, the
//! catalog's base64 `fileData`, and a downloaded file as a result.
//!
//! A file reaches `upload_asset` as base64 in the arguments: plugins have
//! no file access (no WASI filesystem, and the host offers no confined file
//! import to tool plugins), so the model hands over the bytes themselves.
//! A download comes back inline, bounded twice: the host refuses an answer
//! over the plugin's `max_output_kb` (an error naming the limit), and the
//! base64 of what is kept must fit that limit too, which the default does
//! for files up to [`MAX_INLINE_BYTES`].
//!
//! It owns no provider's field names or paths.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use toolhost_sdk::{Content, Media, ToolError, ToolResult, Value, json};

/// The largest file a download returns: its base64 (4/3 of it) and the
/// metadata fit the default `max_output_kb` (1024 KiB).
pub const MAX_INLINE_BYTES: usize = 700 * 1024;

/// Longest file name sent in a multipart header.
const MAX_FILENAME: usize = 255;

/// A multipart/form-data body (RFC 7578) being built.
pub struct Multipart {
    boundary: String,
    body: Vec<u8>,
}

impl Multipart {
    /// An empty form whose boundary does not occur in `parts` (the bytes
    /// that will go in it), so no part can end the form early.
    pub fn new(parts: &[&[u8]]) -> Self {
        let mut n: u64 = 0x746f_6f6c_686f_7374;
        let boundary = loop {
            let candidate = format!("----toolhost-{n:016x}");
            if !parts.iter().any(|p| contains(p, candidate.as_bytes())) {
                break candidate;
            }
            n = n.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        };
        Multipart {
            boundary,
            body: Vec::new(),
        }
    }

    /// Add a file field `name` holding `data`, as `filename` of type `mime`.
    pub fn file(mut self, name: &str, filename: &str, mime: &str, data: &[u8]) -> Self {
        let header = format!(
            "--{}\r\nContent-Disposition: form-data; name=\"{}\"; filename=\"{}\"\r\nContent-Type: {mime}\r\n\r\n",
            self.boundary,
            quoted(name),
            quoted(filename)
        );
        self.body.extend_from_slice(header.as_bytes());
        self.body.extend_from_slice(data);
        self.body.extend_from_slice(b"\r\n");
        self
    }

    /// Add a text field `name` holding `value`.
    pub fn text(mut self, name: &str, value: &str) -> Self {
        let part = format!(
            "--{}\r\nContent-Disposition: form-data; name=\"{}\"\r\n\r\n{value}\r\n",
            self.boundary,
            quoted(name)
        );
        self.body.extend_from_slice(part.as_bytes());
        self
    }

    /// The `content-type` header value and the finished body.
    pub fn finish(mut self) -> (String, Vec<u8>) {
        self.body
            .extend_from_slice(format!("--{}--\r\n", self.boundary).as_bytes());
        (
            format!("multipart/form-data; boundary={}", self.boundary),
            self.body,
        )
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// A header parameter value: quotes, backslashes and line breaks escaped
/// as browsers do (RFC 7578 section 4.2), so a name cannot add headers.
fn quoted(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "%22")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// The file an `upload_asset` call carries: its name (checked) and its
/// bytes (from base64 `fileData`).
pub fn upload_args(provider: &str, tool: &str, args: &Value) -> Result<(String, Vec<u8>), ToolError> {
    let invalid = |why: String| ToolError::InvalidArgs(format!("{provider} {tool}: {why}"));
    let filename = crate::api::required(args, "filename")?;
    if filename.len() > MAX_FILENAME
        || filename.contains(['/', '\\'])
        || filename.chars().any(char::is_control)
    {
        return Err(invalid(format!(
            "`filename` must be a plain file name of at most {MAX_FILENAME} bytes, not `{}`",
            filename.escape_debug()
        )));
    }
    let encoded = crate::api::required(args, "fileData")?;
    // Models wrap long base64 and sometimes send a data URL.
    let encoded = encoded
        .split_once(";base64,")
        .map_or(encoded.as_str(), |(_, d)| d);
    let clean: String = encoded.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    let data = STANDARD
        .decode(clean.as_bytes())
        .map_err(|e| invalid(format!("`fileData` is not valid base64: {e}")))?;
    Ok((filename, data))
}

/// The MIME type of a file name, from its extension (the common types an
/// issue carries), else `application/octet-stream`.
pub fn mime_of(filename: &str) -> &'static str {
    let ext = filename
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "pdf" => "application/pdf",
        "txt" | "log" => "text/plain",
        "md" => "text/markdown",
        "csv" => "text/csv",
        "json" => "application/json",
        "xml" => "application/xml",
        "html" | "htm" => "text/html",
        "zip" => "application/zip",
        "gz" => "application/gzip",
        _ => "application/octet-stream",
    }
}

/// The output schema of a tool that answers with [`download_result`].
pub fn download_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "filename": {"type": "string"},
            "mimeType": {"type": "string"},
            "size": {"type": "integer", "minimum": 0},
            "content_base64": {"type": "string", "contentEncoding": "base64"}
        },
        "required": ["filename", "mimeType", "size", "content_base64"]
    })
}

/// A downloaded file as a result: a summary and, as the structured result,
/// the metadata (`meta`, an object) with `filename`, `mimeType`, `size` and
/// the content as base64 under `content_base64` ([`download_schema`]); an
/// image is also an image block the model can see. A file over
/// [`MAX_INLINE_BYTES`] is an error naming it.
pub fn download_result(
    provider: &str,
    tool: &str,
    filename: &str,
    mime: &str,
    data: &[u8],
    mut meta: Value,
) -> Result<ToolResult, ToolError> {
    if data.len() > MAX_INLINE_BYTES {
        return Err(ToolError::Failed(format!(
            "{provider} {tool}: `{}` is {} bytes; a download returns at most {MAX_INLINE_BYTES} bytes \
             inline (its base64 must fit the plugin's max_output_kb)",
            filename.escape_debug(),
            data.len()
        )));
    }
    let mime = mime.split(';').next().unwrap_or(mime).trim();
    if let Value::Object(m) = &mut meta {
        m.insert("filename".into(), filename.into());
        m.insert("mimeType".into(), mime.into());
        m.insert("size".into(), data.len().into());
        m.insert("content_base64".into(), STANDARD.encode(data).into());
    }
    let summary = format!(
        "{filename} ({mime}, {} bytes), base64 in content_base64",
        data.len()
    );
    let mut result = crate::api::result(summary, meta);
    if mime.starts_with("image/") && mime != "image/svg+xml" {
        result
            .content
            .push(Content::Image(Media::new(data.to_vec(), mime)));
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multipart_bodies_have_a_boundary_the_file_does_not_hold() {
        let clash = b"x----toolhost-746f6f6c686f7374y";
        let (ctype, body) = Multipart::new(&[clash])
            .text("filename", "a.txt")
            .file("file", "a\"b.txt", "text/plain", clash)
            .finish();
        let boundary = ctype.strip_prefix("multipart/form-data; boundary=").unwrap();
        assert_ne!(boundary, "----toolhost-746f6f6c686f7374");
        let text = String::from_utf8(body).unwrap();
        assert!(text.starts_with(&format!("--{boundary}\r\n")));
        assert!(text.contains("name=\"file\"; filename=\"a%22b.txt\"\r\nContent-Type: text/plain\r\n\r\n"));
        assert!(text.ends_with(&format!("\r\n--{boundary}--\r\n")));
        assert!(text.contains("name=\"filename\"\r\n\r\na.txt\r\n--"));
        assert_eq!(text.matches(boundary).count(), 3);
    }

    #[test]
    fn uploads_take_base64_and_plain_names() {
        let args = json!({"filename": "a.png", "fileData": "aGVs\nbG8="});
        assert_eq!(upload_args("P", "t", &args).unwrap().1, b"hello");
        let data_url = json!({"filename": "a.png", "fileData": "data:image/png;base64,aGVsbG8="});
        assert_eq!(upload_args("P", "t", &data_url).unwrap().1, b"hello");
        assert!(upload_args("P", "t", &json!({"filename": "../x", "fileData": ""})).is_err());
        let bad = upload_args("P", "t", &json!({"filename": "a", "fileData": "!!"})).unwrap_err();
        assert!(matches!(bad, ToolError::InvalidArgs(m) if m.contains("base64")));
        assert_eq!(mime_of("Shot.PNG"), "image/png");
        assert_eq!(mime_of("noext"), "application/octet-stream");
    }

    #[test]
    fn downloads_are_bounded_and_images_are_shown() {
        let r = download_result("P", "t", "a.png", "image/png", b"\x89PNG", json!({"id": "1"})).unwrap();
        assert!(
            matches!(&r.content[1], Content::Image(m) if m.mime_type == "image/png" && m.data == b"\x89PNG")
        );
        let meta = r.structured.as_ref().unwrap();
        assert_eq!(meta["content_base64"], "iVBORw==");
        let big = vec![0u8; MAX_INLINE_BYTES + 1];
        assert!(download_result("P", "t", "a.bin", "application/octet-stream", &big, json!({})).is_err());
    }
}
