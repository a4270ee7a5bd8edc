//! What a run prints of the provider's log lines and spans: `--log-level` (else
//! `RUST_LOG`; nothing without either) and `--log-format text|json` choose what
//! reaches stderr, never what the suite captures, so CRE-SECRET and GEN-LOGGING judge
//! every line whatever is printed. Printed lines have every cloud-init payload
//! blanked.

use std::io::Write;

use tracing_subscriber::Layer as _;
use tracing_subscriber::fmt::MakeWriter;

use crate::suite::capture::Printer;
use crate::suite::secrets;

/// How printed log lines look.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One line of text per event.
    Text,
    /// One JSON object per event.
    Json,
}

/// The layer that prints what `filter` (an `EnvFilter` directive such as `warn` or
/// `kvm2=debug`) lets through in `format` to `out`; `Err` names a bad filter.
pub fn printer<W>(filter: &str, format: LogFormat, out: W) -> Result<Printer, String>
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .map_err(|e| format!("{filter:?} is not a log filter: {e}"))?;
    let writer = Redacting(out);
    Ok(match format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_writer(writer)
            .with_ansi(false)
            .with_filter(filter)
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_writer(writer)
            .with_filter(filter)
            .boxed(),
    })
}

/// A writer that blanks every cloud-init payload from what it is given before passing
/// it on; the formatting layer writes each event in one call.
struct Redacting<W>(W);

impl<'a, W: MakeWriter<'a>> MakeWriter<'a> for Redacting<W> {
    type Writer = RedactingWriter<W::Writer>;
    fn make_writer(&'a self) -> Self::Writer {
        RedactingWriter(self.0.make_writer())
    }
}

/// One [`Redacting`] write.
pub struct RedactingWriter<W>(W);

impl<W: Write> Write for RedactingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        self.0.write_all(secrets::redact(&text).as_bytes())?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Shared {
        type Writer = Shared;
        fn make_writer(&'a self) -> Shared {
            self.clone()
        }
    }

    #[test]
    fn the_printer_prints_only_what_its_filter_lets_through() {
        use tracing_subscriber::prelude::*;
        let out = Shared::default();
        let layer = printer("warn", LogFormat::Text, out.clone()).unwrap();
        let sub = tracing_subscriber::registry().with(Some(layer));
        tracing::subscriber::with_default(sub, || {
            tracing::warn!("printed");
            tracing::debug!("not printed");
        });
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert!(
            text.contains("printed") && !text.contains("not printed"),
            "{text}"
        );

        let json = Shared::default();
        let layer = printer("info", LogFormat::Json, json.clone()).unwrap();
        let sub = tracing_subscriber::registry().with(Some(layer));
        tracing::subscriber::with_default(sub, || tracing::info!(op = "get", "hello"));
        let line = String::from_utf8(json.0.lock().unwrap().clone()).unwrap();
        let v: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
        assert_eq!(v["fields"]["message"], "hello");
        assert!(printer("=", LogFormat::Text, Shared::default()).is_err());
    }
}
