//! A client socket that asks the reactor for room to write only while a
//! write is waiting for it.
//!
//! Tokio's own streams register for readable and writable readiness at once,
//! edge-triggered. The kernel reports room to write every time the peer
//! reads what was sent (the read frees buffer space on the sender's side),
//! so with those streams a daemon idle between calls is woken once for each
//! reply its client reads, finds nothing to do, and sleeps again before the
//! next call wakes it: two sleeps and wake-ups per call where one does
//! (seen with `strace`: an `epoll_wait` answering `EPOLLOUT` alone between
//! every `sendto` and the next call's `recvfrom`). libvirtd's event loop asks
//! for `POLLOUT` only while it has bytes queued for a client; so does this
//! socket: reads wait on a registration for readable readiness alone, writes
//! go straight to the socket, and only a write the socket refuses for want of
//! room registers a duplicate of the descriptor for writable readiness, kept
//! while writes keep having to wait and dropped once one goes through at the
//! first try.

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use socket2::SockRef;
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};

/// A connected stream socket (Unix or TCP) served by [`crate::FakeLibvirt`];
/// see the module documentation for why it is not tokio's own stream.
#[derive(Debug)]
pub struct QuietSocket<T: AsRawFd> {
    read: AsyncFd<T>,
    /// A duplicate descriptor registered for writable readiness, present
    /// only while writes wait for room.
    write: Option<AsyncFd<OwnedFd>>,
}

/// A descriptor owned for as long as its registration lives: the standard
/// library's sockets and [`OwnedFd`] (the condition of
/// [`AsyncFd::register_with_interest`]).
trait Owned: AsRawFd + AsFd {}
impl Owned for std::os::unix::net::UnixStream {}
impl Owned for std::net::TcpStream {}
impl Owned for OwnedFd {}

fn register<T: Owned>(fd: T, interest: Interest) -> io::Result<AsyncFd<T>> {
    // SAFETY: an `Owned` value owns its descriptor, keeps it open until it
    // is dropped and always reports the same one.
    Ok(unsafe { AsyncFd::register_with_interest(fd, interest) }?)
}

impl<T: AsRawFd + AsFd> QuietSocket<T> {
    /// Takes over a connected, non-blocking socket. Needs a Tokio runtime
    /// with I/O enabled.
    #[allow(private_bounds)]
    fn new(socket: T) -> io::Result<Self>
    where
        T: Owned,
    {
        Ok(QuietSocket {
            read: register(socket, Interest::READABLE)?,
            write: None,
        })
    }

    fn sock(&self) -> SockRef<'_> {
        SockRef::from(self.read.get_ref())
    }
}

impl QuietSocket<std::os::unix::net::UnixStream> {
    /// Takes over an accepted tokio Unix stream.
    pub fn unix(stream: tokio::net::UnixStream) -> io::Result<Self> {
        Self::new(stream.into_std()?)
    }
}

impl QuietSocket<std::net::TcpStream> {
    /// Takes over an accepted tokio TCP stream.
    pub fn tcp(stream: tokio::net::TcpStream) -> io::Result<Self> {
        Self::new(stream.into_std()?)
    }
}

fn would_block<T>(r: &io::Result<T>) -> bool {
    matches!(r, Err(e) if e.kind() == io::ErrorKind::WouldBlock)
}

impl<T: AsRawFd + AsFd + Unpin> AsyncRead for QuietSocket<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            let mut guard = ready!(self.read.poll_read_ready(cx))?;
            // SAFETY: `recv` only writes into the slice, and the bytes it
            // reports are marked filled below; nothing reads the rest.
            let unfilled: &mut [MaybeUninit<u8>] = unsafe { buf.unfilled_mut() };
            let room = unfilled.len();
            match guard.try_io(|fd| SockRef::from(fd.get_ref()).recv(unfilled)) {
                Ok(Ok(n)) => {
                    if n < room {
                        // A short read drained the socket: the next read
                        // waits for the next edge rather than trying a
                        // `recv` bound to fail.
                        guard.clear_ready();
                    }
                    // SAFETY: `recv` initialised the first `n` bytes.
                    unsafe { buf.assume_init(n) };
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(e)) => return Poll::Ready(Err(e)),
                // Readiness was stale and is now cleared: wait again.
                Err(_would_block) => continue,
            }
        }
    }
}

impl<T: AsRawFd + AsFd + Unpin> AsyncWrite for QuietSocket<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let first = self.sock().send(data);
        if !would_block(&first) {
            // Room without waiting: stop listening for it.
            self.write = None;
            return Poll::Ready(first);
        }
        loop {
            if self.write.is_none() {
                let dup = self.read.get_ref().as_fd().try_clone_to_owned()?;
                self.write = Some(register(dup, Interest::WRITABLE)?);
            }
            let this = &*self;
            let waiting = this.write.as_ref().expect("registered above");
            let mut guard = ready!(waiting.poll_write_ready(cx))?;
            let sent = this.sock().send(data);
            if would_block(&sent) {
                guard.clear_ready();
                continue;
            }
            return Poll::Ready(sent);
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.sock().shutdown(std::net::Shutdown::Write) {
            // A peer already gone has nothing left to be told.
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Poll::Ready(Ok(())),
            other => Poll::Ready(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::net::UnixStream;
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::QuietSocket;

    fn pair() -> (QuietSocket<UnixStream>, QuietSocket<UnixStream>) {
        let (a, b) = UnixStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        b.set_nonblocking(true).unwrap();
        (QuietSocket::new(a).unwrap(), QuietSocket::new(b).unwrap())
    }

    #[tokio::test]
    async fn a_write_larger_than_the_socket_holds_waits_for_the_reader() {
        let (mut a, mut b) = pair();
        // Far more than a Unix socket's buffers: the writer must wait for
        // room at least once, on its write registration.
        let sent: Vec<u8> = (0..8u32 << 20).map(|i| (i % 251) as u8).collect();
        let expected = sent.clone();
        let writer = tokio::spawn(async move {
            a.write_all(&sent).await.unwrap();
            a.shutdown().await.unwrap();
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(
            !writer.is_finished(),
            "the writer did not have to wait, so waiting was not tested"
        );
        let mut got = Vec::new();
        tokio::time::timeout(Duration::from_secs(30), b.read_to_end(&mut got))
            .await
            .expect("the reader got everything in time")
            .unwrap();
        assert!(
            got == expected,
            "{} bytes read, not what was sent",
            got.len()
        );
        writer.await.unwrap();
    }

    #[tokio::test]
    async fn a_write_that_goes_through_at_once_drops_the_write_registration() {
        let (mut a, mut b) = pair();
        a.write.get_or_insert(
            super::register(
                std::os::fd::AsFd::as_fd(a.read.get_ref())
                    .try_clone_to_owned()
                    .unwrap(),
                tokio::io::Interest::WRITABLE,
            )
            .unwrap(),
        );
        a.write_all(b"ping").await.unwrap();
        assert!(
            a.write.is_none(),
            "the registration outlived the need for it"
        );
        let mut got = [0u8; 4];
        b.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"ping");
    }
}
