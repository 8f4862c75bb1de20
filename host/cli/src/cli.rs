//! The `tiny-harness` command line: a thin layer that parses arguments,
//! calls the library and formats what it returns.
//!
//! Exit codes: 0 for a result, 1 for an error result, 2 for a usage or
//! config error (including invalid JSON arguments), 128 + the signal's
//! number when SIGINT, SIGTERM or SIGHUP stops it (its MCP servers are
//! killed first); `serve` drains on its first SIGTERM or SIGINT instead,
//! and exits 0 once drained (`cli/serve.rs`).
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
mod search;
mod serve;
mod session;
mod test;
mod tools;
mod workflow;

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use args::{Cli, Command, McpAction, PinsAction, PluginAction, WorkflowAction};
use session::{Globals, Heard, Session};
use tiny_harness_core::display::{block, one_line};
use tiny_harness_host::{Journal, Provider, ToolCall};

/// Exit code for a usage or config error.
const EXIT_USAGE: u8 = 2;

/// The most `call NAME -` reads from standard input, 64 MiB: far more than
/// the arguments of any real call, and a bound on what a runaway producer
/// (`yes | tiny-harness call ...`) can make the process hold in memory.
const MAX_STDIN_ARGUMENTS: u64 = 64 << 20;

/// Runs the command line and returns the process's exit code.
pub fn main() -> ExitCode {
    let cli = args::parse();
    let serving = matches!(cli.command, Command::Serve { .. });
    log_to_stderr(cli.verbose, serving);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return usage_error(anyhow::anyhow!("cannot start the async runtime: {e}")),
    };
    let outcome = runtime.block_on(async {
        // `serve` answers its signals itself: the first SIGTERM or SIGINT
        // drains it (cli/serve.rs).
        if serving {
            return run(cli).await;
        }
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
/// `RUST_LOG` naming what to show); otherwise nothing is logged, except
/// that `serve` logs one line per request and every warning.
fn log_to_stderr(verbose: bool, serving: bool) {
    use tracing_subscriber::EnvFilter;
    let filter = match std::env::var("RUST_LOG") {
        Ok(filter) if !filter.trim().is_empty() => EnvFilter::new(filter),
        _ if verbose => EnvFilter::new("warn,tiny_harness=debug"),
        // rmcp's own lines (a response nobody reads after a cancellation,
        // a client gone mid-stream) say nothing an operator can act on.
        _ if serving => EnvFilter::new("warn,rmcp=off,tiny_harness::serve=info"),
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

/// Runs the command `cli` names: one arm per command, each a function of
/// its own. Those that work on files alone (`mcp import`, `mcp add`, `mcp
/// install`, `workflow apply`, `plugin ...`) never build a host; the rest
/// run against a host built from the config ([`Session`]).
async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let Cli {
        config,
        no_cache,
        journal,
        journal_full,
        locked,
        verbose: _,
        command,
    } = cli;
    let globals = Globals {
        config,
        no_cache,
        journal,
        journal_full,
        locked,
    };
    match command {
        Command::Tools {
            search: Some(query),
            limit,
            json,
            ..
        } => {
            let session = Session::open(&globals, false, Heard::FailuresAndDrift).await?;
            let code = search::search(&session.host, &query, limit, json);
            session.close(code).await
        }
        Command::Tools {
            json,
            provider,
            gemini_subset,
            intrinsics,
            search: None,
            limit: _,
        } => tools(&globals, json, provider, gemini_subset, intrinsics).await,
        Command::Plugins { json } => plugins(&globals, json).await,
        Command::Call {
            name,
            arguments,
            id,
            json,
            workflow,
            actor,
        } => call(&globals, name, &arguments, id, json, workflow, actor).await,
        Command::Workflow { action } => workflow_command(action),
        Command::Replay {
            file,
            provider,
            json,
            workflow,
            actor,
        } => replay(&globals, &file, provider, json, workflow, actor).await,
        Command::Pins { action } => pins_command(&globals, action).await,
        Command::Mcp { action } => mcp_command(&globals, action).await,
        Command::Plugin { action } => plugin_command(&globals, action).await,
        Command::Test {
            files,
            plugin,
            name,
        } => test::test(&files, plugin.as_deref(), name.as_deref()).await,
        Command::Serve {
            stdio: _,
            http,
            tokens,
            allow_host,
            allow_origin,
            watch,
        } => {
            let args = serve::ServeArgs {
                http,
                tokens,
                allow_host,
                allow_origin,
                watch,
            };
            serve::serve(&globals, args).await
        }
    }
}

/// `tools`: every registered tool, or with `--provider` each as that
/// provider is sent it.
async fn tools(
    globals: &Globals,
    json: bool,
    provider: Option<Provider>,
    gemini_subset: bool,
    intrinsics: bool,
) -> anyhow::Result<ExitCode> {
    let session = Session::open(globals, intrinsics, Heard::FailuresAndDrift).await?;
    let printed = match provider {
        Some(provider) => {
            let gemini = if gemini_subset {
                tiny_harness_provider::GeminiSchema::Subset(
                    tiny_harness_provider::SchemaLimits::DEFAULT,
                )
            } else {
                tiny_harness_provider::GeminiSchema::JsonSchema
            };
            tools::print_wire_tools(&session.host, provider, gemini, json)
        }
        None => tools::print_tools(&session.host, json),
    };
    session.close(printed.map(|()| ExitCode::SUCCESS)).await
}

/// `plugins`: every loaded plugin, what it is granted, its MCP servers.
async fn plugins(globals: &Globals, json: bool) -> anyhow::Result<ExitCode> {
    let session = Session::open(globals, false, Heard::Nothing).await?;
    let printed = plugins::print_plugins(&session.host, json);
    session.close(printed.map(|()| ExitCode::SUCCESS)).await
}

/// `call`: one validated call of a tool, or of an intrinsic (against a
/// workflow state with `--workflow`).
async fn call(
    globals: &Globals,
    name: String,
    arguments: &str,
    id: String,
    json: bool,
    workflow: Option<PathBuf>,
    actor: Option<String>,
) -> anyhow::Result<ExitCode> {
    // Parse the arguments before loading anything: a typo in the JSON should
    // not wait for plugins to compile.
    let arguments = parse_arguments(arguments)?;
    let intrinsic = workflow::intrinsic(&name).is_some();
    let session = Session::open(
        globals,
        intrinsic || workflow.is_some(),
        Heard::CallOf(&name),
    )
    .await?;
    let call = ToolCall {
        id,
        name,
        arguments,
    };
    let outcome = match workflow {
        Some(state) => workflow::call(&session.host, &call, &state, actor.as_deref(), json).await,
        None if intrinsic => workflow::call_unbound(&session.host, &call, json).await,
        None => call_tool(&session, &call, json, globals.journal.as_deref()).await,
    };
    session.close(outcome).await
}

/// A call of a plugin's or an MCP server's tool, printed as its block (or
/// as JSON); exit code 1 for an error result.
async fn call_tool(
    session: &Session,
    call: &ToolCall,
    json: bool,
    journal_path: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    let host = &session.host;
    // Each `call` is one iteration of the tool loop: MCP servers list
    // their tools again before it and refuse changed ones.
    host.begin_iteration();
    let mut outcome = host.invoke(call).await;
    // A person at the terminal is asked to log in, once, and the call made
    // again (a step-up included); without one the outcome says what to run.
    if mcp::offer_login(host, &outcome).await {
        outcome = host.invoke(call).await;
    }
    if json {
        emit(&tiny_harness_core::display::json_pretty(
            &outcome.to_json(),
        )?)?;
    } else {
        // The block's lines stay lines; the plugin's escape sequences,
        // carriage returns and bidi overrides show as escapes instead of
        // acting on the terminal.
        emit(&block(outcome.render()))?;
    }
    if let Some(error) = session.journal.as_deref().and_then(Journal::take_error) {
        let path = journal_path.unwrap_or(Path::new("")).display();
        anyhow::bail!("the call ran but could not be written to the journal {path}: {error}");
    }
    Ok(if outcome.is_error() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `workflow apply`: a recorded command list replayed.
fn workflow_command(action: WorkflowAction) -> anyhow::Result<ExitCode> {
    match action {
        WorkflowAction::Apply { file, from } => workflow::apply(&file, from.as_deref()),
    }
}

/// `replay`: the tool calls of a recorded provider response, turn by turn
/// (the intrinsics too, with `--workflow`).
async fn replay(
    globals: &Globals,
    file: &Path,
    provider: Provider,
    json: bool,
    workflow: Option<PathBuf>,
    actor: Option<String>,
) -> anyhow::Result<ExitCode> {
    let session = Session::open(globals, workflow.is_some(), Heard::FailuresAndDrift).await?;
    let bound = workflow.as_deref().map(|state| (state, actor.as_deref()));
    let outcome = replay::replay(&session.host, file, provider, json, bound).await;
    session.close(outcome).await
}

/// `pins diff` and `pins update`.
async fn pins_command(globals: &Globals, action: PinsAction) -> anyhow::Result<ExitCode> {
    let session = Session::open(globals, false, Heard::Failures).await?;
    let outcome = match action {
        PinsAction::Diff { server } => {
            pins::diff(&session.host, &session.config, server.as_deref()).await
        }
        PinsAction::Update { server } => pins::update(&session.host, server.as_deref()).await,
    };
    session.close(outcome).await
}

/// `mcp ...`: `import`, `add` and `install` work on files; `doctor`,
/// `login` and `logout` on a host built from the config.
async fn mcp_command(globals: &Globals, action: McpAction) -> anyhow::Result<ExitCode> {
    match action {
        McpAction::Import { file, wasm } => pins::import(&file, &wasm),
        McpAction::Add {
            name,
            env,
            write,
            wasm,
            command,
        } => {
            let request = crate::tooling::add::Request {
                name,
                env,
                writable: write,
                wasm,
            };
            mcp::add(&globals.config, &request, &command)
        }
        McpAction::Install {
            server,
            upgrade,
            timeout,
            max_size,
        } => {
            let limits = crate::tooling::install::InstallLimits::new(
                std::time::Duration::from_secs(timeout),
                max_size << 20,
            );
            let options = crate::tooling::install::Options::new(upgrade, globals.locked, limits);
            install::install(&globals.config, server.as_deref(), options).await
        }
        McpAction::Doctor { server } => {
            let session = Session::open(globals, false, Heard::Nothing).await?;
            let outcome = mcp::doctor(&session.host, &server).await;
            session.close(outcome).await
        }
        McpAction::Login {
            server,
            scopes,
            no_browser,
            wait,
        } => {
            let session = Session::open(globals, false, Heard::Nothing).await?;
            let outcome = mcp::login(&session.host, &server, scopes, !no_browser, wait).await;
            session.close(outcome).await
        }
        McpAction::Logout { server } => {
            let session = Session::open(globals, false, Heard::Nothing).await?;
            let outcome = mcp::logout(&session.host, &server).await;
            session.close(outcome).await
        }
    }
}

/// `plugin ...`: components looked into, published, added or started;
/// none of these builds a host.
async fn plugin_command(globals: &Globals, action: PluginAction) -> anyhow::Result<ExitCode> {
    match action {
        PluginAction::Inspect { file, json } => {
            inspect::inspect(&file, json, globals.no_cache).await
        }
        PluginAction::Publish {
            file,
            reference,
            user,
            password_stdin,
        } => {
            let login = oci::Login {
                user: user.as_deref(),
                password_stdin,
            };
            oci::publish(&file, &reference, &login, globals.no_cache).await
        }
        PluginAction::Add {
            name,
            reference,
            upgrade,
            user,
            password_stdin,
        } => {
            let login = oci::Login {
                user: user.as_deref(),
                password_stdin,
            };
            let reference = reference.as_deref();
            oci::add(
                &globals.config,
                &name,
                reference,
                upgrade,
                &login,
                globals.no_cache,
            )
            .await
        }
        PluginAction::New {
            name,
            lang,
            dir,
            sdk,
        } => {
            let told = scaffold::scaffold(&name, lang, dir.as_deref(), sdk.as_deref())?;
            emit(&told)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The arguments of `call`: `text` as JSON, or for `-` standard input (at
/// most [`MAX_STDIN_ARGUMENTS`]) as JSON.
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
