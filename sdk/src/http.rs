//! Outgoing HTTP through the host (the `http.fetch` import): a thin wrapper
//! over the generated types.
//!
//! Only hosts the user granted to this plugin are reachable, and secrets are
//! added to the request by the host. HTTP is part of the `tool-plugin` and
//! `full-plugin` worlds only: an enricher (`export_enricher!`) that calls
//! [`fetch`] makes its component import `http`, which the host offers to
//! tool plugins only.

pub use crate::bindings::shared::toolhost::plugin::http::{HttpError, Request, Response};

/// Send `request` and wait for the whole response.
pub fn fetch(request: &Request) -> Result<Response, HttpError> {
    crate::bindings::shared::toolhost::plugin::http::fetch(request)
}

/// `GET url` with no headers.
pub fn get(url: &str) -> Result<Response, HttpError> {
    fetch(&Request::get(url))
}

impl Request {
    /// A request with `method` and `url`, no headers and no body.
    pub fn new(method: &str, url: &str) -> Self {
        Request {
            method: method.to_owned(),
            url: url.to_owned(),
            headers: Vec::new(),
            body: None,
        }
    }

    /// A `GET` request.
    pub fn get(url: &str) -> Self {
        Self::new("GET", url)
    }

    /// A `POST` request with a JSON body (and `content-type`).
    pub fn post_json(url: &str, body: &serde_json::Value) -> Self {
        Self::new("POST", url)
            .header("content-type", "application/json")
            .body(body.to_string().into_bytes())
    }

    /// Add a header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Set the body.
    pub fn body(mut self, body: Vec<u8>) -> Self {
        self.body = Some(body);
        self
    }
}

impl Response {
    /// The body as UTF-8 text (invalid sequences replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body parsed as JSON.
    pub fn json(&self) -> Result<serde_json::Value, serde_json::Error> {
        serde_json::from_slice(&self.body)
    }

    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}
