//! Which client session each of a server's tasks belongs to, so that the
//! server's `notifications/tasks/status` (MCP 2025-11-25) reach that
//! session and no other ([`Owners`]). The front registers a task when it
//! starts it and withdraws it when its session lets it go; a status for a
//! task no session holds is dropped. Not here: the tasks themselves (the
//! front's), the calls that start them (`upstream`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

/// Where the status of one task goes: its session, which sends it under
/// the session's own task id.
pub trait TaskWatcher: Send + Sync {
    /// The server says task `status` (a `Task`, its `taskId` the server's).
    fn status(self: Arc<Self>, status: Value);
}

/// The server's tasks held by sessions, by the server's task id.
#[derive(Default)]
pub(super) struct Owners {
    watchers: Mutex<HashMap<String, Arc<dyn TaskWatcher>>>,
}

impl Owners {
    fn watchers(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<dyn TaskWatcher>>> {
        self.watchers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn own(&self, task: &str, watcher: Arc<dyn TaskWatcher>) {
        self.watchers().insert(task.to_owned(), watcher);
    }

    pub(super) fn disown(&self, task: &str) {
        self.watchers().remove(task);
    }

    /// A status the server sent: to the session holding its task, if one
    /// does.
    pub(super) fn status(&self, status: Value) {
        let watcher = status
            .get("taskId")
            .and_then(Value::as_str)
            .and_then(|id| self.watchers().get(id).cloned());
        if let Some(watcher) = watcher {
            watcher.status(status);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    struct Seen(Mutex<Vec<Value>>);

    impl TaskWatcher for Seen {
        fn status(self: Arc<Self>, status: Value) {
            self.0.lock().unwrap().push(status);
        }
    }

    #[test]
    fn a_status_reaches_the_session_holding_its_task_only() {
        let owners = Owners::default();
        let (a, b) = (Arc::new(Seen(Mutex::default())), Arc::new(Seen(Mutex::default())));
        owners.own("t1", a.clone());
        owners.own("t2", b.clone());
        owners.status(json!({"taskId": "t1", "status": "completed"}));
        owners.status(json!({"taskId": "t3", "status": "completed"}));
        owners.disown("t2");
        owners.status(json!({"taskId": "t2", "status": "completed"}));
        assert_eq!(a.0.lock().unwrap().len(), 1);
        assert!(b.0.lock().unwrap().is_empty());
    }
}
