//! A blocking client of the control socket, for the `ctl` command and for
//! tests: one connection, one request line and one reply line at a time.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use super::proto::{Reply, Request, Response};

/// A connection to a daemon's control socket.
#[derive(Debug)]
pub struct ControlClient {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl ControlClient {
    /// Connects to the control socket at `path`.
    pub fn connect(path: &Path) -> Result<Self, String> {
        let stream = UnixStream::connect(path).map_err(|e| {
            format!(
                "failed to connect to the control socket {}: {e}",
                path.display()
            )
        })?;
        let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
        let writer = stream
            .try_clone()
            .map_err(|e| format!("failed to clone the control socket: {e}"))?;
        Ok(ControlClient {
            reader: BufReader::new(stream),
            writer,
        })
    }

    /// Sends one raw line and returns the reply line as it came.
    pub fn raw(&mut self, line: &str) -> Result<String, String> {
        let mut out = line.trim_end().to_owned();
        out.push('\n');
        self.writer
            .write_all(out.as_bytes())
            .map_err(|e| format!("failed to send the request: {e}"))?;
        let mut reply = String::new();
        match self.reader.read_line(&mut reply) {
            Ok(0) => Err("the daemon closed the control connection".into()),
            Ok(_) => Ok(reply),
            Err(e) => Err(format!("failed to read the reply: {e}")),
        }
    }

    /// Sends a request; a refusal comes back as its error text.
    pub fn call(&mut self, req: &Request) -> Result<Response, String> {
        let line = serde_json::to_string(req).map_err(|e| e.to_string())?;
        let reply = self.raw(&line)?;
        let reply: Reply =
            serde_json::from_str(&reply).map_err(|e| format!("malformed reply {reply:?}: {e}"))?;
        match (reply.ok, reply.result, reply.error) {
            (true, Some(r), _) => Ok(r),
            (_, _, Some(e)) => Err(e),
            _ => Err("a reply with neither result nor error".into()),
        }
    }
}
