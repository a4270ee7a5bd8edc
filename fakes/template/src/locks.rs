//! Per-name locks: operations on one instance name wait for each other, operations on
//! different names never do. An entry lives only while someone holds or awaits it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use conformance::Ctx;
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
    /// The context the release goes through, if any (mutants only): once it was
    /// cancelled or ran out, the release does not happen.
    through: Option<Ctx>,
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
            through: None,
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

impl NameGuard {
    /// The same guard, released by a step run under `ctx`: a call whose context was
    /// cancelled or ran out leaves the name locked for good.
    pub(crate) fn released_under(mut self, ctx: &Ctx) -> NameGuard {
        self.through = Some(ctx.clone());
        self
    }
}

impl Drop for NameGuard {
    fn drop(&mut self) {
        if self
            .through
            .as_ref()
            .is_some_and(|c| c.interrupted().is_some())
        {
            // The release never runs: the lock stays held and its entry stays.
            std::mem::forget(self.held.take());
            return;
        }
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

    #[tokio::test]
    async fn a_guard_released_under_a_cancelled_context_keeps_the_name() {
        let locks = NameLocks::default();
        let ctx = Ctx::with_timeout(Duration::from_secs(5));
        drop(locks.lock("a").await.released_under(&ctx));
        assert!(!locks.is_held("a"), "a live context releases the lock");
        let g = locks.lock("a").await.released_under(&ctx);
        ctx.token().cancel();
        drop(g);
        assert!(locks.is_held("a"), "a cancelled context leaves it held");
    }
}
