//! The conformance suite against kvm2 on two in-memory libvirt hosts served over
//! the libvirt remote protocol behind an in-process SSH server each, dialled with
//! kvm2's production SSH dialer: one trial per contract rule.

use std::process::ExitCode;
use std::sync::Arc;

fn main() -> ExitCode {
    conformance::suite::harness::main(Arc::new(kvm2::fixture::Kvm2Fixture::default()))
}
