//! Serves the template provider's fixture over the process protocol, on stdin and
//! stdout or on a Unix socket, so the suite checks it out of process:
//! `conformance run --provider-command 'template-serve'`.
//!
//! `--mutant NAME` serves one of the template's mutants instead, or one of the
//! bridge mutants below, which misbehave the way a provider in another process could
//! and must not look better through the bridge than they are:
//! `remote-ignores-deadline` (runs every operation without its deadline or
//! cancellation), `remote-no-spans` (runs every operation outside the request's span,
//! so no span or log line reaches the suite), `remote-secret-in-log` (logs the
//! cloud-init payload in a telemetry notification), `remote-secret-on-stderr`
//! (writes it to stderr) and `remote-leaks-everywhere` (every Create puts its payload
//! in log lines at every level, a span field and stderr; the second Create of a rule
//! panics with it, the third fails with it in its message and its source). It also
//! serves the lying fixtures of `FIXTURE_LIES` by name (`fingerprint-never-changes`,
//! `fingerprint-ignores-parts`, `inventory-always-empty`, `inventory-names-a-stranger`,
//! `faults-fire-and-do-nothing`).
//!
//! `--mutant remote-late-telemetry` serves a correct variant instead: every
//! operation leaves a task behind that opens a span and logs under the operation's
//! span after the operation answered, as background work may; `serve` must drop that
//! telemetry, so every rule still passes.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use conformance::fixture::{Fixture, ProviderWrap, WrapFixture, WrapProviders};
use conformance::{
    BoxFuture, Checker, CreateRequest, Ctx, Instance, Listing, Profile, Provider, ProviderId,
};
use template_provider::mutants::MUTANTS;
use template_provider::{FIXTURE_LIES, TemplateFixture};

/// Correct variants that only behave differently over the protocol.
const BRIDGE_VARIANTS: &[&str] = &["remote-late-telemetry"];

/// The bridge mutants, each with the rule it must fail through the bridge.
const BRIDGE_MUTANTS: &[(&str, &str)] = &[
    ("remote-ignores-deadline", "GEN-CANCEL"),
    ("remote-no-spans", "GEN-SPANS"),
    ("remote-secret-in-log", "CRE-SECRET"),
    ("remote-secret-on-stderr", "CRE-SECRET"),
    ("remote-leaks-everywhere", "CRE-SECRET"),
];

#[derive(Debug, Parser)]
#[command(
    name = "template-serve",
    about = "Serves the template provider over the conformance process protocol"
)]
struct Args {
    /// Serve this mutant instead of the correct provider.
    #[arg(long, value_name = "NAME")]
    mutant: Option<String>,
    /// Create waits until Running (`create-return=blocking`).
    #[arg(long)]
    blocking: bool,
    /// One unreachable site fails the whole listing (`list-partial=fail-whole`).
    #[arg(long)]
    fail_whole: bool,
    /// Listen on this Unix socket instead of stdin and stdout.
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let fixture: Arc<dyn Fixture> = match args.mutant.as_deref() {
        None => {
            let mut f = TemplateFixture::default();
            if args.blocking {
                f = f.blocking();
            }
            if args.fail_whole {
                f = f.fail_whole();
            }
            Arc::new(f)
        }
        Some(name) => {
            if let Some(m) = MUTANTS.iter().find(|m| m.name == name) {
                Arc::new((m.build)())
            } else if let Some((_, _, _, lie)) = FIXTURE_LIES.iter().find(|l| l.0 == name) {
                Arc::new(TemplateFixture::lying(*lie))
            } else if let Some(n) = BRIDGE_MUTANTS
                .iter()
                .map(|(n, _)| n)
                .chain(BRIDGE_VARIANTS)
                .find(|n| **n == name)
            {
                let twist: &'static str = n;
                Arc::new(WrapFixture::new(
                    TemplateFixture::default(),
                    Box::new(move |tb| {
                        let wrap: ProviderWrap =
                            Box::new(move |inner| Arc::new(TwistedProvider { inner, twist }));
                        Box::new(WrapProviders::new(tb, wrap))
                    }),
                ))
            } else {
                eprintln!("template-serve: no mutant named {name:?}");
                return ExitCode::from(2);
            }
        }
    };
    let served = match &args.socket {
        Some(path) => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .and_then(|rt| rt.block_on(conformance::remote::serve_socket(fixture, path))),
        None => conformance::remote::serve_stdio(fixture),
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("template-serve: {e}");
            ExitCode::FAILURE
        }
    }
}

struct TwistedProvider {
    inner: Arc<dyn Provider>,
    twist: &'static str,
}

impl TwistedProvider {
    /// `remote-late-telemetry`: a task that outlives the operation opens a span and
    /// logs under the operation's span once the operation has answered.
    fn linger(&self, ctx: &Ctx) {
        if self.twist != "remote-late-telemetry" {
            return;
        }
        let span = ctx.span().clone();
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            let late = tracing::info_span!(parent: &span, "template.late");
            tracing::info!(parent: &late, "background work done");
            tracing::warn!(parent: &span, "late line");
        });
    }

    /// The context the inner provider gets.
    fn ctx(&self, ctx: &Ctx) -> Ctx {
        match self.twist {
            "remote-ignores-deadline" => Ctx::new().in_span(ctx.span().clone()),
            "remote-no-spans" => ctx.clone().in_span(tracing::Span::none()),
            _ => ctx.clone(),
        }
    }
}

#[deny(clippy::missing_trait_methods)]
impl Provider for TwistedProvider {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn profile(&self) -> Profile {
        self.inner.profile()
    }
    fn create<'a>(
        &'a self,
        ctx: &'a Ctx,
        req: &'a CreateRequest,
    ) -> BoxFuture<'a, conformance::Result<ProviderId>> {
        Box::pin(async move {
            match self.twist {
                "remote-secret-in-log" => {
                    tracing::debug!(parent: ctx.span(), "user data {}", req.cloud_init.expose())
                }
                "remote-secret-on-stderr" => eprintln!("user data {}", req.cloud_init.expose()),
                "remote-leaks-everywhere" => leak_everywhere(self.inner.name(), ctx, req)?,
                _ => {}
            }
            let r = self.inner.create(&self.ctx(ctx), req).await;
            self.linger(ctx);
            r
        })
    }
    fn get<'a>(
        &'a self,
        ctx: &'a Ctx,
        id: &'a ProviderId,
    ) -> BoxFuture<'a, conformance::Result<Instance>> {
        Box::pin(async move {
            let r = self.inner.get(&self.ctx(ctx), id).await;
            self.linger(ctx);
            r
        })
    }
    fn delete<'a>(
        &'a self,
        ctx: &'a Ctx,
        id: &'a ProviderId,
    ) -> BoxFuture<'a, conformance::Result<()>> {
        Box::pin(async move {
            let r = self.inner.delete(&self.ctx(ctx), id).await;
            self.linger(ctx);
            r
        })
    }
    fn list_by_tag<'a>(
        &'a self,
        ctx: &'a Ctx,
        tag: &'a str,
    ) -> BoxFuture<'a, conformance::Result<Listing>> {
        Box::pin(async move {
            let r = self.inner.list_by_tag(&self.ctx(ctx), tag).await;
            self.linger(ctx);
            r
        })
    }
    fn checker(&self) -> Option<&dyn Checker> {
        self.inner.checker()
    }
}

/// `remote-leaks-everywhere`: the payload in every place a provider could put it.
fn leak_everywhere(provider: &str, ctx: &Ctx, req: &CreateRequest) -> conformance::Result<()> {
    let data = req.cloud_init.expose();
    tracing::error!(parent: ctx.span(), "user data {data}");
    tracing::warn!(parent: ctx.span(), "user data {data}");
    tracing::info!(parent: ctx.span(), "user data {data}");
    tracing::debug!(parent: ctx.span(), user_data = data, "seed");
    tracing::trace!(parent: ctx.span(), "user data {data:?}");
    drop(tracing::info_span!(parent: ctx.span(), "template.seed", user_data = data));
    eprintln!("user data {data}");
    if req.name.ends_with("-2") {
        panic!("cannot write user data {data}");
    }
    if req.name.ends_with("-3") {
        let cause = std::io::Error::other(format!("rejected user data {data:?}"));
        return Err(conformance::Error::permanent(
            provider,
            conformance::Op::Create,
            format!("refused user data {data}"),
        )
        .with_source(cause));
    }
    Ok(())
}
