//! `serve`: the config's registry as an MCP server, over stdio or
//! streamable HTTP (the gateway is `tiny-harness-serve`; this module only
//! turns flags into its options).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use tiny_harness_host::{Config, HostBuilder};
use tiny_harness_serve::{Gateway, HttpOptions, ServeConfig, Tokens};
use tokio_util::sync::CancellationToken;

use super::session::{Globals, Heard, Session};

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
/// the process is stopped.
pub(super) async fn serve(globals: &Globals, args: ServeArgs) -> anyhow::Result<ExitCode> {
    // The tokens file and `[serve]` are checked before any plugin loads.
    let tokens = args.tokens.as_deref().map(Tokens::load).transpose()?;
    ServeConfig::from_config(&Config::load(&globals.config)?)?;
    let session = Session::open(globals, false, Heard::FailuresAndDrift).await?;
    let outcome = run(globals, &session, args, tokens).await;
    session.close(outcome).await
}

async fn run(
    globals: &Globals,
    session: &Session,
    args: ServeArgs,
    tokens: Option<Tokens>,
) -> anyhow::Result<ExitCode> {
    let config = ServeConfig::from_config(&session.config)?;
    let gateway = Gateway::new(session.host.clone(), config)
        .map_err(|e| e.in_config(&session.config.path))?;
    let shutdown = CancellationToken::new();
    if args.watch {
        let watcher = gateway.clone();
        let (path, config) = (session.config.path.clone(), session.config.clone());
        let (globals, stop) = (globals.clone(), shutdown.clone());
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
    match args.http {
        None => gateway.serve_stdio(shutdown.clone()).await?,
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
            bound.serve(shutdown.clone()).await?;
        }
    }
    shutdown.cancel();
    // The host served last (a reload may have replaced the first).
    gateway.host().shutdown().await;
    Ok(ExitCode::SUCCESS)
}
