//! What the real-host tests share.

use std::time::SystemTime;

/// A short hex ID for one test run: the process and the time of day, so runs one
/// after another on the same host never pick the same names.
pub fn run_id() -> String {
    format!(
        "{:x}{:x}",
        std::process::id(),
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            % 0x10000
    )
}
