//! Per-name locks: operations on one instance name wait for each other, operations on
//! different names never do. An entry lives only while someone holds or awaits it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::OwnedMutexGuard;

type Table = Arc<Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>>;

/// A table of async locks keyed by name.
#[derive(Default)]
pub(crate) struct NameLocks {
    table: Table,
}

/// Holds one name's lock; dropping it releases the lock and, when nobody else
/// wants it, removes the entry.
pub(crate) struct NameGuard {
    table: Table,
    key: String,
    entry: Arc<tokio::sync::Mutex<()>>,
    held: Option<OwnedMutexGuard<()>>,
}

impl NameLocks {
    /// Waits for the lock of `key`. Cancel safe: dropping the future gives up the wait.
    pub(crate) async fn lock(&self, key: &str) -> NameGuard {
        let entry = self
            .table
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(key.to_owned())
            .or_default()
            .clone();
        let mut guard = NameGuard {
            table: self.table.clone(),
            key: key.to_owned(),
            entry: entry.clone(),
            held: None,
        };
        guard.held = Some(entry.lock_owned().await);
        guard
    }

    /// Whether someone holds the lock of `key` right now.
    pub(crate) fn is_held(&self, key: &str) -> bool {
        self.table
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(key)
            .is_some_and(|m| m.try_lock().is_err())
    }
}

impl Drop for NameGuard {
    fn drop(&mut self) {
        self.held.take();
        let mut table = self.table.lock().unwrap_or_else(|e| e.into_inner());
        // The table's reference and ours: nobody else holds or awaits the entry.
        if Arc::strong_count(&self.entry) == 2 {
            table.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn one_name_waits_other_names_do_not() {
        let locks = NameLocks::default();
        let a = locks.lock("a").await;
        assert!(locks.is_held("a"));
        let b = tokio::time::timeout(Duration::from_millis(50), locks.lock("b")).await;
        assert!(b.is_ok(), "a different name must not wait");
        let again = tokio::time::timeout(Duration::from_millis(50), locks.lock("a")).await;
        assert!(again.is_err(), "the same name must wait");
        drop(a);
        drop(b);
        assert!(locks.table.lock().unwrap().is_empty());
    }
}
