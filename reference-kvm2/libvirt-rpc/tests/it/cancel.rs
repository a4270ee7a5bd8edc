//! Cancel safety: a call future dropped after any number of polls leaves the
//! connection usable, and one dropped before its first poll sends nothing.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use bytes::Bytes;
use libvirt_wire::{CallArgs, ConnectGetHostnameRet, Header, StorageVol};

use crate::server::{PATIENCE, reply_frame, spawn_auto};
use crate::server::{pair, quiet};

/// Polls the inner future at most `polls` times, then drops it.
/// Resolves to `Some(output)` if it finished within that many polls.
struct Cancellable<F> {
    inner: Option<Pin<Box<F>>>,
    polls: usize,
}

impl<F: Future> Cancellable<F> {
    fn new(inner: F, polls: usize) -> Self {
        Cancellable {
            inner: Some(Box::pin(inner)),
            polls,
        }
    }
}

impl<F: Future> Future for Cancellable<F> {
    type Output = Option<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if self.polls == 0 {
            self.inner = None;
            return Poll::Ready(None);
        }
        self.polls -= 1;
        let inner = self.inner.as_mut().expect("polled after completion");
        match inner.as_mut().poll(cx) {
            Poll::Ready(out) => {
                self.inner = None;
                Poll::Ready(Some(out))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

fn hostname_reply(h: &Header, args: &CallArgs) -> Option<Bytes> {
    match args {
        CallArgs::ConnectGetHostname(()) => Some(reply_frame(
            h,
            &ConnectGetHostnameRet {
                hostname: "host".into(),
            },
        )),
        _ => None,
    }
}

#[tokio::test]
async fn calls_dropped_after_any_number_of_polls() {
    let (client, task, server) = pair(quiet());
    let (seen, _auto) = spawn_auto(server, hostname_reply);
    let mut completed_at = None;
    for n in 0..64 {
        let before = seen.calls.load(Ordering::SeqCst);
        let out = Cancellable::new(client.connect_get_hostname(), n).await;
        if let Some(result) = out {
            assert_eq!(result.unwrap(), "host");
            completed_at = Some(n);
            break;
        }
        let fresh = tokio::time::timeout(PATIENCE, client.connect_get_hostname())
            .await
            .unwrap_or_else(|_| panic!("fresh call hung after dropping at poll {n}"));
        assert_eq!(fresh.unwrap(), "host", "after dropping at poll {n}");
        if n == 0 {
            // Dropped before its first poll: only the fresh call was sent.
            assert_eq!(seen.calls.load(Ordering::SeqCst), before + 1);
        }
    }
    let completed_at = completed_at.expect("the call never completed");
    assert!(completed_at >= 1);
    assert!(!task.is_finished());
}

#[tokio::test]
async fn uploads_dropped_after_any_number_of_polls() {
    let (client, task, server) = pair(quiet());
    let (seen, _auto) = spawn_auto(server, hostname_reply);
    let vol = StorageVol {
        pool: "p".into(),
        name: "v".into(),
        key: "/p/v".into(),
    };
    let mut opened = 0;
    for n in 0..64 {
        let out = Cancellable::new(client.storage_vol_upload(&vol, 0, 0, 0), n).await;
        let fresh = tokio::time::timeout(PATIENCE, client.connect_get_hostname())
            .await
            .unwrap_or_else(|_| panic!("fresh call hung after dropping at poll {n}"));
        assert_eq!(fresh.unwrap(), "host", "after dropping at poll {n}");
        if let Some(upload) = out {
            drop(upload.unwrap());
            opened += 1;
            break;
        }
    }
    assert_eq!(opened, 1);
    // Every stream the server opened was aborted, dropped calls included.
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let uploads = seen.uploads.load(Ordering::SeqCst);
        let aborts = seen.aborts.load(Ordering::SeqCst);
        assert!(aborts <= uploads);
        if uploads > 0 && aborts == uploads {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{uploads} streams opened, {aborts} aborted"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(
        seen.uploads.load(Ordering::SeqCst) >= 2,
        "some uploads were dropped mid-call"
    );
    assert!(!task.is_finished());
}
