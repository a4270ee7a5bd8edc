//! `render`: a `report.json` made elsewhere (another machine, an earlier run) written
//! again in other formats with the same renderers a run uses. A report of an earlier
//! minor version is written in this suite's version of the format.

use std::path::{Path, PathBuf};

use super::{EXIT_ERROR, EXIT_USAGE};
use crate::suite::outcome::REPORT_SCHEMA_VERSION;
use crate::suite::report::{Format, json, write_all};

/// The flags of `render`.
#[derive(Clone, Debug, clap::Args)]
pub struct RenderArgs {
    /// The `report.json` to read.
    #[arg(value_name = "REPORT.json")]
    pub report: PathBuf,

    /// Formats to write, comma separated.
    #[arg(
        long,
        value_delimiter = ',',
        value_enum,
        default_value = "junit,md,html",
        value_name = "FORMAT,..."
    )]
    pub format: Vec<Format>,

    /// Directory to write them to. Default: the directory of REPORT.json.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// What `render --help` says of the exit codes.
pub const RENDER_EXIT_HELP: &str = "Exit codes: 0 written, 2 the report could not be read \
(missing, not JSON, not a report, or a report of another major schema version), 3 a file \
could not be written.";

/// Reads the report `args` names and writes it in the asked formats; returns the
/// exit code.
pub fn render(args: RenderArgs) -> u8 {
    let mut report = match json::read(&args.report) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    // What is written has the shape of this suite's format, whichever minor version
    // was read.
    report.schema_version = REPORT_SCHEMA_VERSION.to_owned();
    let out = args.out.unwrap_or_else(|| parent_of(&args.report));
    match write_all(&report, &out, &args.format) {
        Ok(paths) => {
            for p in &paths {
                eprintln!("wrote {}", p.display());
            }
            0
        }
        Err(e) => {
            eprintln!("error: failed to write the reports: {e}");
            EXIT_ERROR
        }
    }
}

/// The directory a file is in; `.` for a bare file name.
fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}
