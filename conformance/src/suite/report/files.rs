//! The report formats by name, and writing them to a directory.

use std::io;
use std::path::{Path, PathBuf};

use crate::suite::outcome::Report;

/// A report format the suite writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, clap::ValueEnum)]
pub enum Format {
    /// `report.json`, the versioned machine-readable report.
    Json,
    /// `junit.xml`, for CI test-result viewers.
    Junit,
    /// `report.md`, for pull requests and repositories.
    #[value(name = "md", alias = "markdown")]
    Markdown,
    /// `report.html`, one self-contained page.
    Html,
}

impl Format {
    /// Every format, in the order they are written.
    pub const ALL: [Format; 4] = [Format::Json, Format::Junit, Format::Markdown, Format::Html];

    /// The file the format is written to.
    pub fn file_name(self) -> &'static str {
        match self {
            Format::Json => "report.json",
            Format::Junit => "junit.xml",
            Format::Markdown => "report.md",
            Format::Html => "report.html",
        }
    }

    /// Renders `report` in this format.
    pub fn render(self, report: &Report) -> String {
        match self {
            Format::Json => super::json::render(report),
            Format::Junit => super::junit::render(report),
            Format::Markdown => super::markdown::render(report),
            Format::Html => super::html::render(report),
        }
    }
}

/// Writes `report` into `dir` (created if missing) in each of `formats`, once each,
/// and returns the paths written, in [`Format::ALL`] order.
///
/// Each file is written beside its final name and then renamed, so a reader never
/// sees half a report.
pub fn write_all(report: &Report, dir: &Path, formats: &[Format]) -> io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).map_err(|e| at("create", dir, e))?;
    let mut written = Vec::new();
    for format in Format::ALL.iter().filter(|f| formats.contains(f)) {
        let path = dir.join(format.file_name());
        let partial = dir.join(format!(".{}.partial", format.file_name()));
        // Results are blanked when they are made; this blanks whatever else a
        // report quotes (a fixture's environment, a waiver's reason) all the same.
        let text = format.render(report);
        let text = crate::suite::secrets::redact(&text);
        std::fs::write(&partial, text.as_bytes()).map_err(|e| at("write", &partial, e))?;
        std::fs::rename(&partial, &path).map_err(|e| at("rename", &partial, e))?;
        written.push(path);
    }
    Ok(written)
}

/// An I/O error that names what was being done and to which path.
fn at(doing: &str, path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{doing} {}: {e}", path.display()))
}

/// The first of `paths` that holds a cloud-init payload (a payload's token, whichever
/// run handed it out), named; `None` when every file is clean.
pub fn find_payload(paths: &[std::path::PathBuf]) -> Option<String> {
    paths.iter().find_map(|p| {
        let text = std::fs::read_to_string(p).unwrap_or_default();
        crate::suite::secrets::any_in(&text)
            .then(|| format!("a cloud-init payload in {}", p.display()))
    })
}
