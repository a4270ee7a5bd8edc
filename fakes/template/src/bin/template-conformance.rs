//! Runs the conformance suite against the template provider and writes the reports:
//! `cargo run -p template-provider --bin template-conformance -- --out reports/template`.

use std::process::ExitCode;
use std::sync::Arc;

use template_provider::TemplateFixture;

fn main() -> ExitCode {
    conformance::suite::cli::main(Arc::new(TemplateFixture::default()))
}
