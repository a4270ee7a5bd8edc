//! The provider's process and its connection: spawning the command, its
//! stderr into a file and the capture, and the handshake on a new link.

use super::*;

/// How many of the provider's last stderr lines a start-up failure shows.
pub const STDERR_TAIL: usize = 20;

/// Where the provider's stderr lines go.
#[derive(Default)]
pub(super) struct StderrLog {
    pub(super) path: Mutex<Option<PathBuf>>,
    pub(super) held: Mutex<(Vec<String>, usize)>,
    /// The last [`STDERR_TAIL`] lines, blanked, and whether the stream ended.
    pub(super) tail: Mutex<(std::collections::VecDeque<String>, bool)>,
}

impl StderrLog {
    /// The last lines the provider wrote to stderr, once its stderr ended or after
    /// `wait` at most.
    pub(super) fn tail(&self, wait: Duration) -> Vec<String> {
        let until = std::time::Instant::now() + wait;
        loop {
            let t = self.tail.lock().unwrap_or_else(|e| e.into_inner());
            if t.1 || std::time::Instant::now() >= until {
                return t.0.iter().cloned().collect();
            }
            drop(t);
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Appends the held lines and `line` to the file, or holds them without one; the
    /// file is created even when there is nothing to write.
    pub(super) fn write(&self, line: Option<String>) {
        let path = self.path.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(l) = line {
            {
                let mut t = self.tail.lock().unwrap_or_else(|e| e.into_inner());
                if t.0.len() == STDERR_TAIL {
                    t.0.pop_front();
                }
                t.0.push_back(l.clone());
            }
            if held.1 + l.len() <= 1 << 20 {
                held.1 += l.len();
                held.0.push(l);
            }
        }
        let Some(path) = path else { return };
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path);
        if let Ok(mut f) = file {
            use std::io::Write as _;
            for l in held.0.drain(..) {
                let _ = writeln!(f, "{l}");
            }
            held.1 = 0;
        }
    }
}

/// Spawns `cmd` under `sh -c` with its stderr going to `log`.
pub(super) fn spawn_command(cmd: &str, log: Arc<StderrLog>) -> io::Result<Link> {
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| io::Error::new(e.kind(), format!("starting the provider command: {e}")))?;
    let stdin = child
        .stdin
        .take()
        .ok_or_else(|| io::Error::other("no stdin"))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| io::Error::other("no stdout"))?;
    if let Some(err) = child.stderr.take() {
        tokio::spawn(pump_stderr(err, log));
    }
    let child = Arc::new(Mutex::new(child));
    let status = child.clone();
    Ok(Link {
        reader: Box::new(stdout),
        writer: Box::new(KillOnDrop {
            w: stdin,
            child: child.clone(),
        }),
        exit_status: Some(Box::new(move || {
            let mut c = status.lock().unwrap_or_else(|e| e.into_inner());
            c.try_wait().ok().flatten().map(|s| s.to_string())
        })),
    })
}

/// The child's stdin; when the connection ends the child is killed.
struct KillOnDrop {
    w: tokio::process::ChildStdin,
    child: Arc<Mutex<tokio::process::Child>>,
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self
            .child
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .start_kill();
    }
}

impl AsyncWrite for KillOnDrop {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<io::Result<usize>> {
        std::pin::Pin::new(&mut self.w).poll_write(cx, buf)
    }
    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        std::pin::Pin::new(&mut self.w).poll_flush(cx)
    }
    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        std::pin::Pin::new(&mut self.w).poll_shutdown(cx)
    }
}

/// Records each of the provider's stderr lines at TRACE and hands it to `log`.
async fn pump_stderr(err: tokio::process::ChildStderr, log: Arc<StderrLog>) {
    let mut lines = tokio::io::BufReader::new(err).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        // The capture keeps the line as it came, where the runner looks for payloads;
        // the file gets it blanked.
        tracing::trace!(target: STDERR_TARGET, parent: None, "{line}");
        log.write(Some(crate::suite::secrets::redact(&line).into_owned()));
    }
    log.tail.lock().unwrap_or_else(|e| e.into_inner()).1 = true;
}

/// Opens a connection and initializes it.
pub(super) async fn connect(
    connector: &Connector,
    timeout: Duration,
) -> Result<(Arc<Conn>, InitializeResult), String> {
    let link = (connector)()
        .await
        .map_err(|e| format!("could not reach the provider: {e}"))?;
    let conn = Conn::start(link.reader, link.writer, link.exit_status);
    let params = InitializeParams {
        protocol_versions: vec![PROTOCOL_VERSION],
        suite_version: env!("CARGO_PKG_VERSION").to_owned(),
    };
    let r: InitializeResult = match conn.call("initialize", &params, timeout).await {
        Ok(r) => r,
        Err(CallError::NoReply(_)) => {
            conn.fail("no answer to initialize".into());
            return Err(format!(
                "the provider sent no answer to initialize within {timeout:?}"
            ));
        }
        Err(e) => {
            conn.fail(format!("initialize failed: {e}"));
            return Err(format!("initialize failed: {e}"));
        }
    };
    if r.protocol_version != PROTOCOL_VERSION {
        conn.fail("unsupported protocol version".into());
        return Err(format!(
            "the provider chose protocol version {}; the suite speaks {PROTOCOL_VERSION}",
            r.protocol_version
        ));
    }
    Ok((conn, r))
}
