//! Runs every conformance rule against the template provider, one libtest trial per
//! rule: `cargo test -p template-provider --test conformance`.

use std::process::ExitCode;
use std::sync::Arc;

use template_provider::TemplateFixture;

fn main() -> ExitCode {
    conformance::suite::harness::main(Arc::new(TemplateFixture::default()))
}
