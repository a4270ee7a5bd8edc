//! A loopback HTTP/1.1 image server for tests.
//!
//! [`ImageServer::start`] binds `127.0.0.1:0` and serves images registered by path,
//! from memory ([`ImageServer::add`]) or streamed from a file on disk
//! ([`ImageServer::add_file`]). Each path has a [`Mode`] that decides how it is
//! answered: normally with a `Content-Length`, without one (the body ends when the
//! connection closes), as 404 or 503, slowly (a pause between chunks), or cut off
//! mid-stream (the full length announced, part of the body sent, then the
//! connection closed). The server counts requests per path.
//!
//! ```no_run
//! # async fn run() -> std::io::Result<()> {
//! use image_server::{ImageServer, Mode};
//!
//! let server = ImageServer::start().await?;
//! server.add("/tiny.qcow2", vec![7u8; 1024]);
//! server.set_mode("/tiny.qcow2", Mode::Cut { after: 100 });
//! let url = server.url_for("/tiny.qcow2"); // http://127.0.0.1:PORT/tiny.qcow2
//! # drop(url);
//! assert_eq!(server.requests("/tiny.qcow2"), 0);
//! # Ok(())
//! # }
//! ```
//!
//! Each connection carries one request and is closed after the response
//! (`Connection: close`). Only `GET` and `HEAD` are served. Dropping the server
//! stops it at once: the port is released and responses in flight are cut.
//! [`ImageServer::shutdown`] stops accepting and lets responses in flight finish.
//!
//! With a directory ([`Options::dir`]) a path that is not registered is looked up
//! as a file under it and served with a `Content-Length`; that is what the
//! `fake-image-server` binary does.

#![deny(missing_docs)]

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;

/// Bytes written per write when no [`Mode::Slow`] chunk size applies.
const CHUNK: usize = 64 * 1024;

/// The longest request head read.
const MAX_HEAD: usize = 16 * 1024;

/// How long a client may take to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// How a path is answered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// 200 with a `Content-Length` and the whole body.
    #[default]
    Normal,
    /// 200 without a `Content-Length`; the body ends when the connection closes.
    NoLength,
    /// 404 Not Found.
    NotFound,
    /// 503 Service Unavailable.
    Unavailable,
    /// 200 with a `Content-Length`, the body in chunks of `chunk` bytes with
    /// `delay` before each chunk after the first.
    Slow {
        /// Bytes per chunk (at least 1).
        chunk: usize,
        /// The pause between chunks.
        delay: Duration,
    },
    /// 200 announcing the full `Content-Length`, then only the first `after`
    /// bytes of the body, then the connection is closed.
    Cut {
        /// Bytes sent before the connection is closed.
        after: u64,
    },
}

/// Where an image's bytes come from.
#[derive(Clone, Debug)]
enum Content {
    Memory(Bytes),
    File(PathBuf),
}

impl Content {
    async fn len(&self) -> io::Result<u64> {
        match self {
            Content::Memory(b) => Ok(b.len() as u64),
            Content::File(p) => Ok(tokio::fs::metadata(p).await?.len()),
        }
    }
}

#[derive(Clone, Debug)]
struct Entry {
    content: Content,
    mode: Mode,
}

#[derive(Debug, Default)]
struct State {
    images: Mutex<HashMap<String, Entry>>,
    requests: Mutex<HashMap<String, u64>>,
    dir: Option<PathBuf>,
}

impl State {
    fn lookup(&self, path: &str) -> Option<Entry> {
        if let Some(e) = self.images.lock().expect("image table poisoned").get(path) {
            return Some(e.clone());
        }
        let file = under(self.dir.as_deref()?, path)?;
        file.is_file().then(|| Entry {
            content: Content::File(file),
            mode: Mode::Normal,
        })
    }
}

/// `path` as a file below `dir`, when it names one without leaving `dir`.
fn under(dir: &Path, path: &str) -> Option<PathBuf> {
    let rel = Path::new(path.trim_start_matches('/'));
    let mut out = dir.to_path_buf();
    let mut any = false;
    for c in rel.components() {
        match c {
            Component::Normal(part) => {
                out.push(part);
                any = true;
            }
            _ => return None,
        }
    }
    any.then_some(out)
}

/// Settings for [`ImageServer::start_with`].
#[derive(Clone, Debug)]
pub struct Options {
    /// The address to listen on; `127.0.0.1:0` by default.
    pub listen: SocketAddr,
    /// A directory whose files are served (with a `Content-Length`) at paths
    /// that are not registered.
    pub dir: Option<PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            dir: None,
        }
    }
}

/// A running image server. Stops when dropped.
#[derive(Debug)]
pub struct ImageServer {
    addr: SocketAddr,
    state: Arc<State>,
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
}

fn normalise(path: &str) -> String {
    if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("/{path}")
    }
}

impl ImageServer {
    /// Starts a server on `127.0.0.1:0`.
    pub async fn start() -> io::Result<ImageServer> {
        ImageServer::start_with(Options::default()).await
    }

    /// Starts a server with `opts`.
    pub async fn start_with(opts: Options) -> io::Result<ImageServer> {
        let listener = TcpListener::bind(opts.listen).await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(State {
            dir: opts.dir,
            ..State::default()
        });
        let stop = CancellationToken::new();
        let task = tokio::spawn(accept_loop(listener, state.clone(), stop.clone()));
        Ok(ImageServer {
            addr,
            state,
            stop,
            task: Some(task),
        })
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The server's base URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The URL of `path` on this server.
    pub fn url_for(&self, path: &str) -> String {
        format!("{}{}", self.url(), normalise(path))
    }

    fn put(&self, path: &str, content: Content) {
        let mut images = self.state.images.lock().expect("image table poisoned");
        let path = normalise(path);
        let mode = images
            .get(&path)
            .map(|e| e.mode.clone())
            .unwrap_or_default();
        images.insert(path, Entry { content, mode });
    }

    /// Serves `bytes` at `path` (keeping the path's mode; [`Mode::Normal`] for a
    /// new path).
    pub fn add(&self, path: &str, bytes: impl Into<Bytes>) {
        self.put(path, Content::Memory(bytes.into()));
    }

    /// Serves the file at `file` at `path`, read from disk on every request
    /// (keeping the path's mode; [`Mode::Normal`] for a new path).
    pub fn add_file(&self, path: &str, file: impl Into<PathBuf>) {
        self.put(path, Content::File(file.into()));
    }

    /// Sets how `path` is answered; a path with no image yet gets an empty one.
    pub fn set_mode(&self, path: &str, mode: Mode) {
        let mut images = self.state.images.lock().expect("image table poisoned");
        images
            .entry(normalise(path))
            .and_modify(|e| e.mode = mode.clone())
            .or_insert(Entry {
                content: Content::Memory(Bytes::new()),
                mode,
            });
    }

    /// Stops serving `path` (it answers 404 unless the directory has it).
    pub fn remove(&self, path: &str) {
        self.state
            .images
            .lock()
            .expect("image table poisoned")
            .remove(&normalise(path));
    }

    /// Requests received for `path` so far, whatever they were answered with.
    pub fn requests(&self, path: &str) -> u64 {
        self.state
            .requests
            .lock()
            .expect("request table poisoned")
            .get(&normalise(path))
            .copied()
            .unwrap_or(0)
    }

    /// Stops accepting connections and waits for the responses in flight.
    pub async fn shutdown(mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for ImageServer {
    fn drop(&mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            // Aborting the accept task drops its listener and every connection.
            task.abort();
        }
    }
}

async fn accept_loop(listener: TcpListener, state: Arc<State>, stop: CancellationToken) {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let state = state.clone();
                conns.spawn(async move {
                    let _ = serve(stream, &state).await;
                });
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    drop(listener);
    while conns.join_next().await.is_some() {}
}

/// Reads the request head (through the blank line).
async fn read_head(stream: &mut TcpStream) -> io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    loop {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "closed before the end of the request head",
            ));
        }
        head.extend_from_slice(&buf[..n]);
        if head.windows(4).any(|w| w == b"\r\n\r\n") {
            return Ok(head);
        }
        if head.len() > MAX_HEAD {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "request head too long",
            ));
        }
    }
}

async fn simple(stream: &mut TcpStream, status: &str, extra: &str) -> io::Result<()> {
    let body = format!("{status}\n");
    let msg = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(msg.as_bytes()).await
}

async fn serve(mut stream: TcpStream, state: &State) -> io::Result<()> {
    let head = match tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut stream)).await {
        Ok(Ok(h)) => h,
        Ok(Err(_)) | Err(_) => return Ok(()),
    };
    let line = head.split(|b| *b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut words = line.split_whitespace();
    let (Some(method), Some(target), Some(version)) = (words.next(), words.next(), words.next())
    else {
        simple(&mut stream, "400 Bad Request", "").await?;
        return stream.shutdown().await;
    };
    if !version.starts_with("HTTP/1.") {
        simple(&mut stream, "505 HTTP Version Not Supported", "").await?;
        return stream.shutdown().await;
    }
    let path = target
        .split(['?', '#'])
        .next()
        .unwrap_or_default()
        .to_owned();
    *state
        .requests
        .lock()
        .expect("request table poisoned")
        .entry(path.clone())
        .or_insert(0) += 1;
    let head_only = match method {
        "GET" => false,
        "HEAD" => true,
        _ => {
            simple(
                &mut stream,
                "405 Method Not Allowed",
                "Allow: GET, HEAD\r\n",
            )
            .await?;
            return stream.shutdown().await;
        }
    };
    let Some(entry) = state.lookup(&path) else {
        simple(&mut stream, "404 Not Found", "").await?;
        return stream.shutdown().await;
    };
    match entry.mode {
        Mode::NotFound => simple(&mut stream, "404 Not Found", "").await?,
        Mode::Unavailable => {
            simple(&mut stream, "503 Service Unavailable", "Retry-After: 1\r\n").await?;
        }
        mode => {
            let len = match entry.content.len().await {
                Ok(len) => len,
                Err(_) => {
                    simple(&mut stream, "404 Not Found", "").await?;
                    return stream.shutdown().await;
                }
            };
            let length_header = if mode == Mode::NoLength {
                String::new()
            } else {
                format!("Content-Length: {len}\r\n")
            };
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n{length_header}Connection: close\r\n\r\n"
            );
            stream.write_all(head.as_bytes()).await?;
            if !head_only {
                let (limit, chunk, delay) = match mode {
                    Mode::Slow { chunk, delay } => (len, chunk.max(1), Some(delay)),
                    Mode::Cut { after } => (after.min(len), CHUNK, None),
                    _ => (len, CHUNK, None),
                };
                write_body(&mut stream, &entry.content, limit, chunk, delay).await?;
            }
        }
    }
    stream.flush().await?;
    stream.shutdown().await
}

/// Writes the first `limit` bytes of `content` in chunks of `chunk` bytes, with
/// `delay` before every chunk after the first.
async fn write_body(
    stream: &mut TcpStream,
    content: &Content,
    limit: u64,
    chunk: usize,
    delay: Option<Duration>,
) -> io::Result<()> {
    match content {
        Content::Memory(bytes) => {
            let body = &bytes[..limit as usize];
            for (i, part) in body.chunks(chunk).enumerate() {
                if i > 0
                    && let Some(d) = delay
                {
                    stream.flush().await?;
                    tokio::time::sleep(d).await;
                }
                stream.write_all(part).await?;
            }
        }
        Content::File(path) => {
            let mut file = tokio::fs::File::open(path).await?;
            let mut buf = vec![0u8; chunk];
            let mut sent = 0u64;
            let mut first = true;
            while sent < limit {
                let want = (limit - sent).min(chunk as u64) as usize;
                let n = fill(&mut file, &mut buf[..want]).await?;
                if n == 0 {
                    break;
                }
                if !first && let Some(d) = delay {
                    stream.flush().await?;
                    tokio::time::sleep(d).await;
                }
                first = false;
                stream.write_all(&buf[..n]).await?;
                sent += n as u64;
            }
        }
    }
    Ok(())
}

/// Reads until `buf` is full or the file ends; returns the bytes read.
async fn fill(file: &mut tokio::fs::File, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..]).await? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests;
