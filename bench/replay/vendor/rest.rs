//! The loopback fake of GitHub's REST API for the provider replay: it
//! answers each request the GitHub provider makes with what the API
//! answered the recorded call that made the same request (`mapping`),
//! under the same model of the world's state as the fake MCP server
//! (`fake`: epochs cut at every recorded write, covered or not, the closest
//! epoch's recording answering), after a latency; it logs every request
//! with where the driver was when it arrived.
//!
//! A list read answers the page asked for out of the recorded page that
//! holds its first item (a prefetch asks 20 commits where the agent asked
//! 100). A write answers its recorded result only while it is the current
//! call. Anything else is "not found", logged as unknown.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::Result;
use axum::extract::State;
use axum::http::{Method, StatusCode, Uri, header};
use serde_json::{Value, json};

use super::Trajectory;
use super::fake::{Cursor, closest, epochs, listen};
use super::mapping::{Answer, Covered, Mapped, Route};

/// One request the fake received.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub route: Route,
    /// The path and query as sent.
    pub target: String,
    /// Since the fake started.
    pub at: Duration,
    pub cursor: Cursor,
    /// Whether no recorded call answers it.
    pub unknown: bool,
}

/// The recorded answers of one trajectory.
struct Recorded {
    calls: Vec<Option<Covered>>,
    /// Route → the covered reads with that route, in order.
    reads: HashMap<Route, Vec<usize>>,
    epochs: Vec<usize>,
}

pub struct Rest {
    trajectories: Vec<Recorded>,
    latency: Duration,
    started: Instant,
    cursor: Mutex<Cursor>,
    log: Mutex<Vec<Request>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The part of a recorded list page that `asked` (`per_page`, `page`)
/// wants, if the page holds its first item (or both are empty at the same
/// offset); an answer that is no list as it is.
fn slice(answer: &Answer, asked: Option<(u64, u64)>) -> Option<Value> {
    let (Some((start, field)), Some((per_page, page))) = (answer.page, asked) else {
        return Some(answer.body.clone());
    };
    // A search with no hits has no `items` at all.
    let none = Vec::new();
    let items = match field {
        Some(f) => answer.body[f].as_array().unwrap_or(&none),
        None => answer.body.as_array()?,
    };
    let from = (page.saturating_sub(1) * per_page).checked_sub(start)?;
    let len = items.len() as u64;
    if from >= len && !(from == 0 && len == 0) {
        return None;
    }
    let part: Vec<Value> = items
        .iter()
        .skip(from as usize)
        .take(per_page as usize)
        .cloned()
        .collect();
    Some(match field {
        Some(f) => {
            let mut body = answer.body.clone();
            body[f] = Value::Array(part);
            body
        }
        None => Value::Array(part),
    })
}

impl Rest {
    /// Over `trajectories`, each call as `mapped` (per trajectory, per call).
    pub fn new(trajectories: &[Trajectory], mapped: &[Vec<Mapped>], latency: Duration) -> Self {
        let recorded = trajectories
            .iter()
            .zip(mapped)
            .map(|(t, calls)| {
                let calls: Vec<Option<Covered>> = calls
                    .iter()
                    .map(|m| match m {
                        Mapped::Covered(c) => Some((**c).clone()),
                        Mapped::Uncovered(_) => None,
                    })
                    .collect();
                let mut reads: HashMap<Route, Vec<usize>> = HashMap::new();
                for (i, c) in calls.iter().enumerate() {
                    if let Some(c) = c.as_ref().filter(|c| c.method == "GET") {
                        reads.entry(c.route.clone()).or_default().push(i);
                    }
                }
                Recorded {
                    calls,
                    reads,
                    epochs: epochs(t),
                }
            })
            .collect();
        Self {
            trajectories: recorded,
            latency,
            started: Instant::now(),
            cursor: Mutex::default(),
            log: Mutex::default(),
        }
    }

    /// Serve it on loopback: its origin, the provider's `base_url`.
    pub async fn serve(self: &Arc<Self>) -> Result<String> {
        let router = axum::Router::new().fallback(handle).with_state(self.clone());
        listen(router).await
    }

    pub fn set(&self, cursor: Cursor) {
        *lock(&self.cursor) = cursor;
    }

    pub fn requests(&self) -> Vec<Request> {
        lock(&self.log).clone()
    }

    /// The status and body answering `method` on `route` (page `asked`)
    /// with the driver at `at`, or `None` when no recorded call answers it.
    fn answer(
        &self,
        method: &str,
        route: &Route,
        asked: Option<(u64, u64)>,
        at: Cursor,
    ) -> Option<(u16, Value)> {
        let a = self.trajectories.get(at.trajectory)?;
        if method != "GET" {
            // A write is never made ahead: it is the current call's.
            let c = a.calls.get(at.call)?.as_ref()?;
            let touched = c.route == *route || c.also.iter().any(|p| Route::parse(p).0 == *route);
            return (c.method != "GET" && touched).then(|| (c.answer.status, c.answer.body.clone()));
        }
        let calls = a.reads.get(route)?;
        let chosen = closest(calls, &a.epochs, at.call)?;
        let epoch = a.epochs[chosen];
        // Of that epoch's recordings of the route, the page holding the
        // first item asked for.
        calls
            .iter()
            .filter(|i| a.epochs[**i] == epoch)
            .filter_map(|i| a.calls[*i].as_ref())
            .find_map(|c| Some((c.answer.status, slice(&c.answer, asked)?)))
    }
}

async fn handle(
    State(rest): State<Arc<Rest>>,
    method: Method,
    uri: Uri,
    _body: axum::body::Bytes,
) -> impl axum::response::IntoResponse {
    let target = uri
        .path_and_query()
        .map_or_else(|| uri.path().to_owned(), |p| p.as_str().to_owned());
    let (route, asked) = Route::parse(&target);
    let cursor = *lock(&rest.cursor);
    let answer = rest.answer(method.as_str(), &route, asked, cursor);
    lock(&rest.log).push(Request {
        method: method.to_string(),
        route,
        target,
        at: rest.started.elapsed(),
        cursor,
        unknown: answer.is_none(),
    });
    tokio::time::sleep(rest.latency).await;
    let (status, body) = answer.unwrap_or_else(|| (404, json!({"message": "Not Found"})));
    (
        StatusCode::from_u16(status).unwrap_or(StatusCode::NOT_FOUND),
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
}
