//! Reporters: pure functions from a [`Report`](super::outcome::Report) to a file
//! format, and [`write_all`] to put the chosen formats in a directory.
//!
//! Each format has its own module: [`json`] (the versioned `report.json`, described by
//! `schema/report.schema.json`), [`junit`] (one testsuite per provider, one testcase
//! per rule), [`markdown`] and [`html`] (one self-contained page). The human formats
//! share their ordering and wording through a private view module.

mod files;
pub mod html;
pub mod json;
pub mod junit;
pub mod markdown;
mod view;

pub use files::{Format, find_payload, write_all};
pub use view::human_duration;
