//! A call's progress as its client is sent it: at most
//! [`MAX_PROGRESS_PER_CALL`] `notifications/progress` per call, and never
//! more than one report waiting for a client that reads slowly.
//!
//! A tool reports progress synchronously, as often as it likes; the reports
//! go through a one-value slot ([`tokio::sync::watch`]) to a task that sends
//! them, so a report that arrives before the last one was sent replaces it
//! (progress is a position: the newest is the one worth sending). The last
//! notification of the cap is held back for the call's final report, sent
//! when the call ends and before its result, so a client sees where the
//! call got to. Each message sent passes the gate, whichever source
//! reported it (a plugin, an upstream server). Owns that delivery; not what
//! a tool may report (the plugin host API cuts the message).

use std::sync::Arc;

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RoleServer};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::bounds::MAX_PROGRESS_PER_CALL;
use crate::gate::Gate;
use crate::plugin::ProgressFn;

/// Where a call's progress goes, and the task sending it to `peer` under
/// `token`, each message through `gate`. The task ends once the sink is
/// dropped and the final report is sent (or the client is gone): await it
/// before sending the result.
pub(super) fn relay(
    peer: Peer<RoleServer>,
    token: ProgressToken,
    gate: Arc<Gate>,
) -> (ProgressFn, JoinHandle<()>) {
    let (latest, mut reports) = watch::channel(None::<ProgressNotificationParam>);
    let sink: ProgressFn = Arc::new(move |progress, total, message| {
        let mut note = ProgressNotificationParam::new(token.clone(), progress);
        note.total = total;
        note.message = message;
        latest.send_replace(Some(note));
    });
    let sender = tokio::spawn(async move {
        let mut sent = 0;
        while reports.changed().await.is_ok() {
            sent += 1;
            if sent == MAX_PROGRESS_PER_CALL {
                // The last one allowed: the report standing when the call
                // ends (the sink is dropped and the slot closes).
                while reports.changed().await.is_ok() {}
            }
            let note = reports.borrow_and_update().clone().map(|mut note| {
                note.message = note.message.map(|m| gate.text(&m));
                note
            });
            if let Some(note) = note
                && peer.notify_progress(note).await.is_err()
            {
                return;
            }
            if sent == MAX_PROGRESS_PER_CALL {
                return;
            }
        }
    });
    (sink, sender)
}
