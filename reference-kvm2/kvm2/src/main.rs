//! The `kvm2` command: `kvm2 conformance [suite options]` runs the conformance
//! suite against kvm2 on the embedded in-memory libvirt hosts and writes the report.

use std::ffi::OsString;
use std::process::ExitCode;
use std::sync::Arc;

fn main() -> ExitCode {
    let mut args: Vec<OsString> = std::env::args_os().collect();
    match args.get(1).and_then(|a| a.to_str()) {
        Some("conformance") => {
            let program = args.remove(0);
            args[0] = format!("{} conformance", program.to_string_lossy()).into();
            let fixture = Arc::new(kvm2::fixture::Kvm2Fixture::default());
            ExitCode::from(conformance::suite::cli::main_with(fixture, args))
        }
        _ => {
            eprintln!("usage: kvm2 conformance [options]  (see `kvm2 conformance --help`)");
            ExitCode::from(2)
        }
    }
}
