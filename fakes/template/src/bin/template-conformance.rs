//! Runs the conformance suite against the template provider and writes its report:
//! `cargo run -p template-provider --bin template-conformance -- --out reports/template`.

use std::process::ExitCode;
use std::sync::Arc;

fn main() -> ExitCode {
    conformance::suite::cli::main(Arc::new(template_provider::TemplateFixture::default()))
}
