//! Outgoing HTTP through the host (the `http` import): a thin wrapper over
//! the generated types.
//!
//! [`fetch`] sends one request and waits for it. [`fetch_all`] sends several
//! at once and waits for all of them, so three requests of 300 ms take about
//! 300 ms, not 900; [`start`] and [`Pending::wait`] are the two halves, for a
//! plugin that does other work meanwhile. The host caps how many requests a
//! call and a plugin may have in flight (refusing a `start` past a cap with
//! [`HttpError::TooManyInFlight`]), and aborts those still in flight when
//! the call ends.
//!
//! Only hosts the user granted to this plugin are reachable, and secrets are
//! added to the request by the host. HTTP is part of the `tool-plugin` and
//! `full-plugin` worlds only: an enricher (`export_enricher!`) that calls
//! [`fetch`] makes its component import `http`, which the host offers to
//! tool plugins only.

use std::collections::VecDeque;

pub use crate::bindings::shared::toolhost::plugin::http::{HttpError, Pending, Request, Response};

use crate::bindings::shared::toolhost::plugin::http as wit;

/// Send `request` and wait for the whole response.
pub fn fetch(request: &Request) -> Result<Response, HttpError> {
    wit::fetch(request)
}

/// Send `request` and go on at once: [`Pending::wait`] takes its response,
/// and dropping the [`Pending`] aborts it. Refused at once if the host
/// would refuse to send it, or if as many requests as a cap allows are in
/// flight ([`HttpError::TooManyInFlight`]).
pub fn start(request: &Request) -> Result<Pending, HttpError> {
    wit::start(request)
}

/// Send every request at once and wait for all of them: one answer per
/// request, in order. Past the host's cap on requests in flight, each
/// further request waits for the oldest one still in flight to finish, so
/// any number of requests can be given.
pub fn fetch_all(requests: impl IntoIterator<Item = Request>) -> Vec<Result<Response, HttpError>> {
    let mut answers = Vec::new();
    let mut in_flight: VecDeque<(usize, Pending)> = VecDeque::new();
    for (i, request) in requests.into_iter().enumerate() {
        answers.push(None);
        loop {
            match start(&request) {
                Ok(pending) => in_flight.push_back((i, pending)),
                Err(HttpError::TooManyInFlight(cap)) => match in_flight.pop_front() {
                    Some((j, oldest)) => {
                        answers[j] = Some(Pending::wait(oldest));
                        continue;
                    }
                    None => answers[i] = Some(Err(HttpError::TooManyInFlight(cap))),
                },
                Err(refused) => answers[i] = Some(Err(refused)),
            }
            break;
        }
    }
    for (j, pending) in in_flight {
        answers[j] = Some(Pending::wait(pending));
    }
    answers
        .into_iter()
        .map(|a| a.expect("every request is answered once"))
        .collect()
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
