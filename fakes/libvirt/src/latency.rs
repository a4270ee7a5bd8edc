//! Network latency on a byte stream: every byte written on one side reaches
//! the other side a fixed time later, in both directions, while bytes sent
//! after it keep flowing behind it. Calls in flight therefore overlap the way
//! they do on a real network link, unlike [`FakeLibvirt::set_latency`], which
//! holds each call inside the server (and so inside one of its
//! `max_requests` slots) for the round trip.
//!
//! ```
//! use std::time::Duration;
//! use libvirt_fake::FakeLibvirt;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let fake = FakeLibvirt::new();
//! // A pipe to a fake daemon behind a 10 ms round trip.
//! let _stream = fake.duplex_with_latency(Duration::from_millis(10));
//! # });
//! ```

use std::io;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, DuplexStream};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::fake::FakeLibvirt;

/// Buffer of the in-memory pipes (as [`FakeLibvirt::duplex`]).
const PIPE: usize = 1 << 20;
/// Largest piece read at once from either side.
const CHUNK: usize = 64 << 10;
/// Pieces travelling at once per direction; past that the sender waits, so a
/// link in flight holds at most `LINE * CHUNK` bytes per direction.
const LINE: usize = 256;

impl FakeLibvirt {
    /// Like [`FakeLibvirt::duplex`], with `round_trip` of network latency
    /// between the returned end and the fake daemon (half each way). Needs a
    /// Tokio runtime.
    pub fn duplex_with_latency(&self, round_trip: Duration) -> DuplexStream {
        delayed(self.duplex(), round_trip / 2)
    }
}

/// Puts `one_way` of latency in each direction in front of `inner`: returns
/// the near end of a pipe whose bytes reach `inner` `one_way` after they were
/// written, and whose reads see `inner`'s bytes `one_way` after `inner` sent
/// them. Ordering is kept and nothing waits for a reply before sending more.
/// When either side closes, the other sees end of file once the bytes still
/// travelling have arrived. Needs a Tokio runtime.
pub fn delayed<S>(inner: S, one_way: Duration) -> DuplexStream
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let (near, far) = tokio::io::duplex(PIPE);
    let (far_read, far_write) = tokio::io::split(far);
    let (inner_read, inner_write) = tokio::io::split(inner);
    tokio::spawn(direction(far_read, inner_write, one_way));
    tokio::spawn(direction(inner_read, far_write, one_way));
    near
}

/// Carries bytes from `from` to `to`, each piece delivered `delay` after it
/// was read.
async fn direction<R, W>(from: R, to: W, delay: Duration)
where
    R: AsyncRead + Send + 'static,
    W: AsyncWrite + Send + 'static,
{
    let (tx, rx) = mpsc::channel::<(Instant, Bytes)>(LINE);
    let sending = tokio::spawn(send(from, tx, delay));
    let _ = deliver(rx, to).await;
    // The receiving side is gone: stop reading as well.
    sending.abort();
}

async fn send<R: AsyncRead>(from: R, tx: mpsc::Sender<(Instant, Bytes)>, delay: Duration) {
    tokio::pin!(from);
    let mut buf = vec![0u8; CHUNK];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let piece = Bytes::copy_from_slice(&buf[..n]);
                if tx.send((Instant::now() + delay, piece)).await.is_err() {
                    return;
                }
            }
        }
    }
}

async fn deliver<W: AsyncWrite>(mut rx: mpsc::Receiver<(Instant, Bytes)>, to: W) -> io::Result<()> {
    tokio::pin!(to);
    while let Some((due, piece)) = rx.recv().await {
        tokio::time::sleep_until(due).await;
        to.write_all(&piece).await?;
    }
    to.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bytes_arrive_late_in_order_and_overlap() {
        let (a, b) = tokio::io::duplex(PIPE);
        let one_way = Duration::from_millis(30);
        let mut near = delayed(a, one_way);
        let (mut b_read, mut b_write) = tokio::io::split(b);
        let started = Instant::now();
        // Two writes back to back: the second does not wait for the first.
        near.write_all(b"one").await.unwrap();
        near.write_all(b"two").await.unwrap();
        let mut got = [0u8; 6];
        b_read.read_exact(&mut got).await.unwrap();
        let first = started.elapsed();
        assert_eq!(&got, b"onetwo");
        assert!(first >= one_way, "{first:?}");
        assert!(first < one_way * 3, "{first:?}");
        // And back.
        b_write.write_all(b"reply").await.unwrap();
        let mut back = [0u8; 5];
        near.read_exact(&mut back).await.unwrap();
        assert_eq!(&back, b"reply");
        assert!(started.elapsed() >= one_way * 2);
        // Closing one side reaches the other as end of file.
        drop(b_write);
        drop(b_read);
        let mut rest = Vec::new();
        near.read_to_end(&mut rest).await.unwrap();
        assert!(rest.is_empty());
    }
}
