//! The standalone suite: `conformance run --provider-command 'CMD ARGS'` or
//! `--provider-socket PATH` checks a provider in any language over the process
//! protocol.

fn main() -> std::process::ExitCode {
    conformance::remote::standalone_main()
}
