//! `serve`: the config's registry as an MCP server, over stdio or
//! streamable HTTP (the gateway is `tiny-harness-serve`; this module only
//! turns flags into its options, and signals into a drain or a stop).
//!
//! Signals: the first SIGTERM or SIGINT drains the gateway
//! ([`tiny_harness_serve::Bound::serve_until`]) and exits 0 once it is
//! drained and the MCP servers are stopped; a second one, or SIGHUP,
//! stops it at once (128 + the signal's number). A signal while the host
//! is being built stops it there, as for every command.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tiny_harness_host::{Config, HostBuilder};
use tiny_harness_serve::{Gateway, HttpOptions, ServeConfig, Tokens};
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio_util::sync::CancellationToken;

use super::session::{Globals, Heard, Session};

/// How long the MCP servers are given to exit after a second signal
/// (their process groups are killed then).
const STOP_NOW_WAIT: Duration = Duration::from_secs(1);

/// How `serve` was asked to serve.
pub(super) struct ServeArgs {
    /// `--http ADDR`; stdio without it.
    pub(super) http: Option<SocketAddr>,
    /// `--tokens FILE`.
    pub(super) tokens: Option<PathBuf>,
    /// `--allow-host`.
    pub(super) allow_host: Vec<String>,
    /// `--allow-origin`.
    pub(super) allow_origin: Vec<String>,
    /// `--watch`.
    pub(super) watch: bool,
}

/// Builds the host and serves it until the client goes away (stdio) or
/// a signal stops it.
pub(super) async fn serve(globals: &Globals, args: ServeArgs) -> anyhow::Result<ExitCode> {
    // Listened for before anything else, so that no signal meets the
    // default disposition (which would leave MCP servers behind).
    let mut signals = Signals::install();
    // The tokens file and `[serve]` are checked before any plugin loads.
    let tokens = args.tokens.as_deref().map(Tokens::load).transpose()?;
    ServeConfig::from_config(&Config::load(&globals.config)?)?;
    let session = tokio::select! {
        session = Session::open(globals, false, Heard::FailuresAndDrift) => session?,
        stopped = signals.next() => return Ok(stopped_by(stopped)),
    };
    match run(globals, &session, args, tokens, signals).await {
        Ok(Ended::AtOnce(code)) => {
            // Stopped at once: the MCP servers get a moment to exit, then
            // dropping what stops them kills their process groups.
            let _ = tokio::time::timeout(STOP_NOW_WAIT, session.close(Ok(code))).await;
            Ok(code)
        }
        Ok(Ended::Done) => session.close(Ok(ExitCode::SUCCESS)).await,
        Err(error) => session.close(Err(error)).await,
    }
}

/// How serving ended.
enum Ended {
    /// The client went away, or the gateway was drained.
    Done,
    /// A second signal, or SIGHUP, stopped it at once, with this code.
    AtOnce(ExitCode),
}

async fn run(
    globals: &Globals,
    session: &Session,
    args: ServeArgs,
    tokens: Option<Tokens>,
    mut signals: Signals,
) -> anyhow::Result<Ended> {
    let config = ServeConfig::from_config(&session.config)?;
    let gateway = Gateway::new(session.host.clone(), config)
        .map_err(|e| e.in_config(&session.config.path))?;
    // Cancelled by the first SIGTERM or SIGINT: the gateway drains.
    let drain = CancellationToken::new();
    // Cancelled by a second one, or SIGHUP: the gateway stops at once.
    let shutdown = CancellationToken::new();
    let stopped_by_signal: Arc<OnceLock<(&'static str, u8)>> = Arc::new(OnceLock::new());
    let listener = {
        let (drain, shutdown) = (drain.clone(), shutdown.clone());
        let stopped = stopped_by_signal.clone();
        tokio::spawn(async move {
            loop {
                let (name, number) = signals.next().await;
                if name != "SIGHUP" && !drain.is_cancelled() {
                    drain.cancel();
                    continue;
                }
                let _ = stopped.set((name, number));
                shutdown.cancel();
                return;
            }
        })
    };
    // The watcher stops when serving does (or at once, with `shutdown`).
    let stop_watching = shutdown.child_token();
    if args.watch {
        let watcher = gateway.clone();
        let (path, config) = (session.config.path.clone(), session.config.clone());
        let (globals, stop) = (globals.clone(), stop_watching.clone());
        let recorder = session.journal.clone();
        tokio::spawn(async move {
            let rebuild = move |config: Config| {
                let mut builder = HostBuilder::new().config(&config).locked(globals.locked);
                if globals.no_cache {
                    builder = builder.compile_cache(None);
                }
                if let Some(journal) = &recorder {
                    builder = builder.recorder(journal.clone());
                }
                builder.build()
            };
            watcher.watch(path, config, rebuild, stop).await;
        });
    }
    let served = serve_on(&gateway, args, tokens, drain, shutdown.clone()).await;
    stop_watching.cancel();
    if served.is_ok() && !shutdown.is_cancelled() {
        // The host served last (a reload may have replaced the first); a
        // second signal meanwhile stops it at once.
        let host = gateway.host();
        tokio::select! {
            () = host.shutdown() => {}
            () = shutdown.cancelled() => {}
        }
    }
    listener.abort();
    shutdown.cancel();
    if let Some(stopped) = stopped_by_signal.get() {
        return Ok(Ended::AtOnce(stopped_by(*stopped)));
    }
    served?;
    Ok(Ended::Done)
}

/// Serves `gateway` over the transport `args` names until the client goes
/// away (stdio), a drain ends or `shutdown` is cancelled.
async fn serve_on(
    gateway: &Gateway,
    args: ServeArgs,
    tokens: Option<Tokens>,
    drain: CancellationToken,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    match args.http {
        None => gateway.serve_stdio_until(drain, shutdown).await?,
        Some(addr) => {
            let mut options = HttpOptions::new(addr);
            options.tokens = tokens;
            options.allowed_hosts = args.allow_host;
            options.allowed_origins = args.allow_origin;
            let bound = gateway.bind_http(options, shutdown.clone()).await?;
            // The address actually bound (a port of 0 chosen by the
            // kernel), for whoever started the gateway.
            eprintln!(
                "tiny-harness: serving http://{}{}",
                bound.local_addr()?,
                tiny_harness_serve::MCP_PATH
            );
            bound.serve_until(drain, shutdown).await?;
        }
    }
    Ok(())
}

/// The exit code of a stop by `signal` (its name and number), said on
/// standard error.
fn stopped_by(signal: (&'static str, u8)) -> ExitCode {
    eprintln!("tiny-harness: stopped by {}", signal.0);
    ExitCode::from(128 + signal.1)
}

/// SIGINT, SIGTERM and SIGHUP, listened for. If they cannot be, none is
/// ever heard (the default disposition then ends the process).
struct Signals(Option<[Signal; 3]>);

impl Signals {
    fn install() -> Signals {
        match (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) {
            (Ok(int), Ok(term), Ok(hup)) => Signals(Some([int, term, hup])),
            _ => Signals(None),
        }
    }

    /// The next signal: its name and number.
    async fn next(&mut self) -> (&'static str, u8) {
        let Some([int, term, hup]) = &mut self.0 else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = int.recv() => ("SIGINT", 2),
            _ = term.recv() => ("SIGTERM", 15),
            _ = hup.recv() => ("SIGHUP", 1),
        }
    }
}
