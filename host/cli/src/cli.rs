//! The `tiny-harness` command line: a thin layer that parses arguments,
//! calls the library and formats what it returns.
//!
//! Exit codes: 0 for a result, 1 for an error result, 2 for a usage or
//! config error (including invalid JSON arguments), 128 + the signal's
//! number when SIGINT, SIGTERM or SIGHUP stops it (its MCP servers are
//! killed first).
//!
//! Text a plugin chose (descriptions, error messages, a rendered result)
//! reaches the terminal only through [`tiny_harness_core::display`], with
//! its control and bidi characters escaped; `--json` output carries it
//! exactly, as JSON.
//! The process exits as soon as its output is written, even if a plugin
//! left a thread blocked in a host call.

mod args;
mod inspect;
mod install;
mod mcp;
mod oci;
mod pins;
mod plugins;
mod replay;
mod scaffold;
mod tools;
mod workflow;

use std::io::{Read as _, Write as _};
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use args::{Cli, Command, McpAction, PinsAction, PluginAction, WorkflowAction};
use clap::Parser as _;
use tiny_harness_core::display::{block, one_line};
use tiny_harness_host::{Config, Host, HostBuilder, Journal, ToolCall};

/// Exit code for a usage or config error.
const EXIT_USAGE: u8 = 2;

/// The most `call NAME -` reads from standard input, 64 MiB: far more than
/// the arguments of any real call, and a bound on what a runaway producer
/// (`yes | tiny-harness call ...`) can make the process hold in memory.
const MAX_STDIN_ARGUMENTS: u64 = 64 << 20;

/// Runs the command line and returns the process's exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    log_to_stderr(cli.verbose);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return usage_error(anyhow::anyhow!("cannot start the async runtime: {e}")),
    };
    let outcome = runtime.block_on(async {
        // A signal ends the run where it is: dropping it drops the host,
        // which kills every MCP server's process group, so none outlives
        // the command (`kill`, Ctrl-C, a closed terminal).
        tokio::select! {
            outcome = run(cli) => outcome,
            signal = interrupted() => {
                eprintln!("tiny-harness: stopped by {}", signal.0);
                Ok(ExitCode::from(128 + signal.1))
            }
        }
    });
    // Do not wait for the runtime's blocking threads: a plugin stopped at
    // its deadline while blocked in a host call (opening a FIFO in a
    // granted directory) leaves one blocked for ever, and the work they
    // were doing is of no use now. Everything printed was flushed by
    // `emit`, so exiting at once loses nothing.
    runtime.shutdown_background();
    match outcome {
        Ok(code) => code,
        Err(e) => usage_error(e),
    }
}

/// Sends the host's log to standard error when asked (`--verbose`, or
/// `RUST_LOG` naming what to show); otherwise nothing is logged.
fn log_to_stderr(verbose: bool) {
    use tracing_subscriber::EnvFilter;
    let filter = match std::env::var("RUST_LOG") {
        Ok(filter) if !filter.trim().is_empty() => EnvFilter::new(filter),
        _ if verbose => EnvFilter::new("warn,tiny_harness=debug"),
        _ => return,
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}

/// Waits for SIGINT, SIGTERM or SIGHUP; returns its name and number. If
/// the handlers cannot be installed, waits for ever (the default
/// disposition then still ends the process).
async fn interrupted() -> (&'static str, u8) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term), Ok(mut hup)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => ("SIGINT", 2),
        _ = term.recv() => ("SIGTERM", 15),
        _ = hup.recv() => ("SIGHUP", 1),
    }
}

fn usage_error(e: anyhow::Error) -> ExitCode {
    // The error and its causes on one line, skipping a cause the message
    // already quotes (typed errors name their source in their own text).
    let mut line = e.to_string();
    for cause in e.chain().skip(1) {
        let cause = cause.to_string();
        if !line.contains(&cause) {
            line.push_str(": ");
            line.push_str(&cause);
        }
    }
    // Messages quote plugins (a `register` error) and paths: escaped, a
    // newline or escape sequence in them cannot forge or hide a line.
    eprintln!("tiny-harness: error: {}", one_line(&line));
    ExitCode::from(EXIT_USAGE)
}

/// Writes `text` and a newline to standard output. A reader that went away
/// (`tiny-harness tools | head`) is not an error worth a panic.
fn emit(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}").and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(anyhow::anyhow!("cannot write to standard output: {e}"))
        }
        _ => Ok(()),
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    // Parse the arguments before loading anything: a typo in the JSON should
    // not wait for plugins to compile.
    let arguments = match &cli.command {
        Command::Call { arguments, .. } => Some(parse_arguments(arguments)?),
        Command::Mcp {
            action: McpAction::Import { file, wasm },
        } => return pins::import(file, wasm),
        Command::Mcp {
            action:
                McpAction::Add {
                    name,
                    env,
                    write,
                    wasm,
                    command,
                },
        } => {
            let request = crate::tooling::add::Request {
                name: name.clone(),
                env: env.clone(),
                writable: write.clone(),
                wasm: wasm.clone(),
            };
            return mcp::add(&cli.config, &request, command);
        }
        Command::Mcp {
            action:
                McpAction::Install {
                    server,
                    upgrade,
                    timeout,
                    max_size,
                },
        } => {
            let limits = crate::tooling::install::InstallLimits::new(
                std::time::Duration::from_secs(*timeout),
                max_size << 20,
            );
            let options = crate::tooling::install::Options::new(*upgrade, cli.locked, limits);
            return install::install(&cli.config, server.as_deref(), options).await;
        }
        Command::Workflow {
            action: WorkflowAction::Apply { file, from },
        } => return workflow::apply(file, from.as_deref()),
        Command::Plugin {
            action: PluginAction::Inspect { file, json },
        } => return inspect::inspect(file, *json, cli.no_cache).await,
        Command::Plugin {
            action:
                PluginAction::Publish {
                    file,
                    reference,
                    user,
                    password_stdin,
                },
        } => {
            let login = oci::Login {
                user: user.as_deref(),
                password_stdin: *password_stdin,
            };
            return oci::publish(file, reference, &login, cli.no_cache).await;
        }
        Command::Plugin {
            action:
                PluginAction::Add {
                    name,
                    reference,
                    upgrade,
                    user,
                    password_stdin,
                },
        } => {
            let login = oci::Login {
                user: user.as_deref(),
                password_stdin: *password_stdin,
            };
            let reference = reference.as_deref();
            return oci::add(&cli.config, name, reference, *upgrade, &login, cli.no_cache).await;
        }
        Command::Plugin {
            action:
                PluginAction::New {
                    name,
                    lang,
                    dir,
                    sdk,
                },
        } => {
            let told = scaffold::scaffold(name, *lang, dir.as_deref(), sdk.as_deref())?;
            emit(&told)?;
            return Ok(ExitCode::SUCCESS);
        }
        _ => None,
    };
    let config = Config::load(&cli.config)?;
    let mut builder = HostBuilder::new()
        .config(&config)
        .locked(cli.locked)
        .intrinsics(intrinsics(&cli.command));
    if cli.no_cache {
        builder = builder.compile_cache(None);
    }
    let journal = match &cli.journal {
        Some(path) => {
            let journal = Journal::open(path, cli.journal_full)
                .map_err(|e| anyhow::anyhow!("cannot open the journal {}: {e}", path.display()))?;
            let journal = std::sync::Arc::new(journal);
            builder = builder.recorder(journal.clone());
            Some(journal)
        }
        None => None,
    };
    let host = builder.build().await?;
    if let Some((shared, own)) = host.lock_taken_from() {
        let written = if cli.locked {
            "under --locked it is not written; run once without --locked to write it"
        } else {
            "it is written now, and the shared file is left as it is"
        };
        eprintln!(
            "tiny-harness: note: this config's pins now live in a lock of its own, {}; they were \
             taken from {}, which every config in that directory used to share ({written})",
            one_line(&own.display().to_string()),
            one_line(&shared.display().to_string()),
        );
    }
    let quiet = matches!(
        cli.command,
        Command::Plugins { .. }
            | Command::Mcp {
                action: McpAction::Doctor { .. }
                    | McpAction::Login { .. }
                    | McpAction::Logout { .. }
            }
    );
    if !quiet {
        // A call hears only of its own server; the rest of a config's
        // troubles are for `tools`, `plugins` and that server's calls.
        let only = match &cli.command {
            Command::Call { name, .. } => Some(
                host.registry()
                    .server_of(name)
                    .map(|(plugin, server)| (plugin.to_owned(), server.to_owned())),
            ),
            _ => None,
        };
        warn_failed_sources(&host, only.as_ref().map(Option::as_ref));
    }
    // `pins` shows the differences itself; `plugins` is a report.
    if matches!(
        cli.command,
        Command::Tools { .. } | Command::Call { .. } | Command::Replay { .. }
    ) {
        for line in pins::drift_warnings(&host) {
            eprintln!("tiny-harness: warning: {line}");
        }
    }
    let code = command(cli, &host, &config, arguments, journal.as_deref()).await;
    // Close every MCP session cleanly: stdin closed, a grace period, then
    // the process group killed.
    host.shutdown().await;
    code
}

/// One warning line per MCP server that could not be used; with `only`,
/// for that one server (`Some(None)`: for none).
fn warn_failed_sources(host: &Host, only: Option<Option<&(String, String)>>) {
    for (plugin, source) in host.mcp_sources() {
        if let Some(only) = only
            && only != Some(&(plugin.clone(), source.server().to_owned()))
        {
            continue;
        }
        if let tiny_harness_mcp::State::Failed(why) = source.status().state {
            eprintln!(
                "tiny-harness: warning: plugin {}: mcp server {}: {}",
                one_line(&plugin),
                one_line(source.server()),
                one_line(&why)
            );
        }
    }
}

async fn command(
    cli: Cli,
    host: &Host,
    config: &Config,
    arguments: Option<serde_json::Value>,
    journal: Option<&Journal>,
) -> anyhow::Result<ExitCode> {
    let host = host.clone();
    match cli.command {
        Command::Tools {
            json,
            provider: Some(provider),
            gemini_subset,
            ..
        } => {
            let gemini = if gemini_subset {
                tiny_harness_provider::GeminiSchema::Subset(
                    tiny_harness_provider::SchemaLimits::DEFAULT,
                )
            } else {
                tiny_harness_provider::GeminiSchema::JsonSchema
            };
            tools::print_wire_tools(&host, provider, gemini, json)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Tools { json, .. } => {
            tools::print_tools(&host, json)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Plugins { json } => {
            plugins::print_plugins(&host, json)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Replay {
            file,
            provider,
            json,
            workflow,
            actor,
        } => {
            let bound = workflow.as_deref().map(|state| (state, actor.as_deref()));
            replay::replay(&host, &file, provider, json, bound).await
        }
        Command::Pins {
            action: PinsAction::Diff { server },
        } => pins::diff(&host, config, server.as_deref()).await,
        Command::Pins {
            action: PinsAction::Update { server },
        } => pins::update(&host, server.as_deref()).await,
        Command::Mcp {
            action: McpAction::Doctor { server },
        } => mcp::doctor(&host, &server).await,
        Command::Mcp {
            action:
                McpAction::Login {
                    server,
                    scopes,
                    no_browser,
                    wait,
                },
        } => mcp::login(&host, &server, scopes, !no_browser, wait).await,
        Command::Mcp {
            action: McpAction::Logout { server },
        } => mcp::logout(&host, &server).await,
        Command::Mcp { .. } | Command::Workflow { .. } | Command::Plugin { .. } => {
            unreachable!("handled before the config is loaded")
        }
        Command::Call {
            name,
            id,
            json,
            workflow: Some(state),
            actor,
            ..
        } => {
            let call = ToolCall {
                id,
                name,
                arguments: arguments.unwrap_or_default(),
            };
            workflow::call(&host, &call, &state, actor.as_deref(), json).await
        }
        Command::Call { name, id, json, .. } if workflow::intrinsic(&name).is_some() => {
            let call = ToolCall {
                id,
                name,
                arguments: arguments.unwrap_or_default(),
            };
            workflow::call_unbound(&host, &call, json).await
        }
        Command::Call { name, id, json, .. } => {
            let call = ToolCall {
                id,
                name,
                arguments: arguments.unwrap_or_default(),
            };
            // Each `call` is one iteration of the tool loop: MCP servers
            // list their tools again before it and refuse changed ones.
            host.begin_iteration();
            let mut outcome = host.invoke(&call).await;
            // A person at the terminal is asked to log in, once, and the
            // call made again (a step-up included); without one the
            // outcome says what to run.
            if mcp::offer_login(&host, &outcome).await {
                outcome = host.invoke(&call).await;
            }
            if json {
                emit(&tiny_harness_core::display::json_pretty(
                    &outcome.to_json(),
                )?)?;
            } else {
                // The block's lines stay lines; the plugin's escape
                // sequences, carriage returns and bidi overrides show as
                // escapes instead of acting on the terminal.
                emit(&block(outcome.render()))?;
            }
            if let Some(error) = journal.and_then(|j| j.take_error()) {
                let path = cli.journal.as_deref().unwrap_or(Path::new("")).display();
                anyhow::bail!(
                    "the call ran but could not be written to the journal {path}: {error}"
                );
            }
            Ok(if outcome.is_error() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
    }
}

/// Where compiled plugins are cached: `$TINY_HARNESS_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/tiny-harness`, else `~/.cache/tiny-harness`; none if
/// none of these is set (or the chosen one is empty).
/// Whether `command` needs the intrinsics: listing them, a call of one,
/// or a call or replay against a workflow.
fn intrinsics(command: &Command) -> bool {
    matches!(
        command,
        Command::Tools {
            intrinsics: true,
            ..
        } | Command::Call {
            workflow: Some(_),
            ..
        } | Command::Replay {
            workflow: Some(_),
            ..
        }
    ) || matches!(command, Command::Call { name, .. } if workflow::intrinsic(name).is_some())
}

fn parse_arguments(text: &str) -> anyhow::Result<serde_json::Value> {
    let owned;
    let text = if text == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .lock()
            .take(MAX_STDIN_ARGUMENTS + 1)
            .read_to_end(&mut buf)
            .context("cannot read the arguments from standard input")?;
        if u64::try_from(buf.len()).unwrap_or(u64::MAX) > MAX_STDIN_ARGUMENTS {
            anyhow::bail!(
                "ARGS_JSON on standard input is more than {} MiB; pass the arguments of one call, at most that",
                MAX_STDIN_ARGUMENTS >> 20
            );
        }
        owned = String::from_utf8(buf).map_err(|e| {
            anyhow::anyhow!(
                "ARGS_JSON on standard input is not UTF-8 text ({e}); pass one JSON object"
            )
        })?;
        owned.as_str()
    } else {
        text
    };
    serde_json::from_str(text).map_err(|e| {
        anyhow::anyhow!(
            "ARGS_JSON is not valid JSON ({e}); pass one JSON object, for example '{{\"path\":\"README.md\"}}'"
        )
    })
}
