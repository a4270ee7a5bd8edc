//! The control socket: a Unix socket where each line is one JSON
//! [`Request`](super::Request) and each answer one JSON [`Reply`] line, in
//! order. Any number of clients may be connected; requests are carried out
//! one at a time per client, while the daemon keeps serving libvirt clients.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::task::{JoinHandle, JoinSet};

use super::exec::Control;
use super::proto::{MAX_LINE, Reply, decode_request};

/// A listening control socket; dropping it stops the listener and its
/// clients and removes the socket file.
#[derive(Debug)]
pub struct ControlServer {
    path: PathBuf,
    task: JoinHandle<()>,
}

impl ControlServer {
    /// Listens at `path` (a stale socket file is replaced). Needs a Tokio
    /// runtime.
    pub fn bind(path: &Path, control: Arc<Control>) -> io::Result<Self> {
        if path.exists() {
            std::fs::remove_file(path)?;
        }
        let listener = UnixListener::bind(path)?;
        let task = tokio::spawn(async move {
            let mut clients = JoinSet::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((stream, _)) = accepted else { continue };
                        clients.spawn(serve_client(stream, control.clone()));
                    }
                    Some(_) = clients.join_next(), if !clients.is_empty() => {}
                }
            }
        });
        Ok(ControlServer {
            path: path.to_path_buf(),
            task,
        })
    }

    /// The socket path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Answers one line: the reply to a request, or why it was refused.
pub fn answer(control: &Control, line: &str) -> Reply {
    match decode_request(line).and_then(|req| control.handle(req)) {
        Ok(result) => Reply {
            ok: true,
            result: Some(result),
            error: None,
        },
        Err(error) => Reply {
            ok: false,
            result: None,
            error: Some(error),
        },
    }
}

async fn serve_client(stream: UnixStream, control: Arc<Control>) {
    let (rd, mut wr) = stream.into_split();
    let mut rd = BufReader::new(rd);
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = match (&mut rd)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
            .await
        {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let reply = if n > MAX_LINE {
            // The rest of the line cannot be told from the next request.
            let r = refuse(format!("request longer than {MAX_LINE} bytes"));
            let _ = send(&mut wr, &r).await;
            return;
        } else {
            match std::str::from_utf8(&line) {
                Ok(text) if text.trim().is_empty() => continue,
                Ok(text) => answer(&control, text),
                Err(e) => refuse(format!("bad request: not UTF-8: {e}")),
            }
        };
        if send(&mut wr, &reply).await.is_err() {
            return;
        }
    }
}

fn refuse(error: String) -> Reply {
    Reply {
        ok: false,
        result: None,
        error: Some(error),
    }
}

async fn send(wr: &mut tokio::net::unix::OwnedWriteHalf, reply: &Reply) -> io::Result<()> {
    let mut out = serde_json::to_vec(reply).map_err(io::Error::other)?;
    out.push(b'\n');
    wr.write_all(&out).await
}
