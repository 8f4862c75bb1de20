//! The `tiny-harness` command line: a thin layer that parses arguments,
//! calls the library and formats what it returns.
//!
//! Exit codes: 0 for a result, 1 for an error result, 2 for a usage or
//! config error (including invalid JSON arguments).
//!
//! Text a plugin chose (descriptions, error messages, a rendered result)
//! reaches the terminal only through [`tiny_harness_host::display`], with
//! its control and bidi characters escaped; `--json` output carries it
//! exactly, as JSON.
//! The process exits as soon as its output is written, even if a plugin
//! left a thread blocked in a host call.

use std::fmt::Write as _;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use tiny_harness_host::display::{block, one_line};
use tiny_harness_host::{
    CompileCache, CompileOrigin, Config, DirMode, Grants, Host, HostBuilder, Journal, Plugin,
    PluginEngine, Provider, ToolCall, config::DEFAULT_FILE,
};

/// Exit code for a usage or config error.
const EXIT_USAGE: u8 = 2;

/// The most `call NAME -` reads from standard input, 64 MiB: far more than
/// the arguments of any real call, and a bound on what a runaway producer
/// (`yes | tiny-harness call ...`) can make the process hold in memory.
const MAX_STDIN_ARGUMENTS: u64 = 64 << 20;

#[derive(Parser)]
#[command(
    name = "tiny-harness",
    version,
    about = "Run sandboxed WebAssembly tools the way a model calls them",
    long_about = "Run sandboxed WebAssembly tools the way a model calls them.\n\n\
The host has no tools of its own: every tool comes from a plugin (a WebAssembly \
component) that the config loads and grants exactly what it may touch. Tools are \
named <plugin>/<server>.<tool>.",
    after_help = "Exit codes: 0 a result, 1 an error result, 2 a usage or config error.\n\n\
Text from plugins (descriptions, error messages, results) is shown with control and bidi \
characters escaped (\\x1b, \\r, \\u{202e}, ...), so it cannot move the cursor or forge lines; \
--json carries it exactly.\n\n\
Compiled plugins are cached in $TINY_HARNESS_CACHE_DIR, else $XDG_CACHE_HOME/tiny-harness, \
else ~/.cache/tiny-harness (a directory only you may write); --no-cache compiles afresh."
)]
struct Cli {
    /// The host config to load.
    #[arg(long, global = true, value_name = "PATH", default_value = DEFAULT_FILE)]
    config: PathBuf,

    /// Compile every plugin afresh, without reading or writing the compile cache.
    #[arg(long, global = true)]
    no_cache: bool,

    /// Append one JSON line per call to this file: time, call id, tool, hashes of the
    /// arguments, of the tool's definition and of the rendered result, and the outcome.
    #[arg(long, global = true, value_name = "FILE")]
    journal: Option<PathBuf>,

    /// With --journal, also record the arguments and the rendered result themselves.
    #[arg(long, global = true, requires = "journal")]
    journal_full: bool,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List every registered tool: name, idempotency, source plugin, input-schema sha256 and the first line of its description.
    Tools {
        /// Print a JSON array instead of a table (includes each input schema and any output schema, with their sha256).
        #[arg(long)]
        json: bool,
        /// Show each tool as this provider is sent it: its wire name and its definition in the
        /// provider's format (openai-chat, openai-responses, anthropic, gemini, bedrock, mcp).
        #[arg(long, value_name = "P")]
        provider: Option<Provider>,
    },
    /// List every loaded plugin: its component's sha256 and whether it is pinned, its tool count, and exactly what it is granted.
    Plugins {
        /// Print a JSON array instead of a table (includes the limits).
        #[arg(long)]
        json: bool,
    },
    /// Make one validated call and print the result as an untrusted block.
    Call {
        /// The tool's full name, <plugin>/<server>.<tool>.
        name: String,
        /// The arguments as a JSON object; `-` reads them from standard input.
        #[arg(default_value = "{}", value_name = "ARGS_JSON")]
        arguments: String,
        /// The call id shown in the result block.
        #[arg(long, default_value = "cli-1")]
        id: String,
        /// Print the outcome as JSON (result or error, and the rendered block).
        #[arg(long)]
        json: bool,
    },
}

/// Runs the command line and returns the process's exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return usage_error(anyhow::anyhow!("cannot start the async runtime: {e}")),
    };
    let outcome = runtime.block_on(run(cli));
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
        Command::Tools { .. } | Command::Plugins { .. } => None,
    };
    let config = Config::load(&cli.config)?;
    let cache = if cli.no_cache {
        None
    } else {
        cache_dir().map(CompileCache::new)
    };
    let engine = PluginEngine::with_compile_cache(cache)
        .map_err(|e| anyhow::anyhow!("cannot start the WebAssembly engine: {e}"))?;
    let mut builder = HostBuilder::with_engine(engine);
    let journal = match &cli.journal {
        Some(path) => {
            let journal = Journal::open(path, cli.journal_full)
                .map_err(|e| anyhow::anyhow!("cannot open the journal {}: {e}", path.display()))?;
            let journal = std::sync::Arc::new(journal);
            builder.journal(journal.clone());
            Some(journal)
        }
        None => None,
    };
    builder.load_config(&config).await?;
    let host = builder.build();
    match cli.command {
        Command::Tools {
            json,
            provider: Some(provider),
        } => {
            print_wire_tools(&host, provider, json)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Tools { json, .. } => {
            print_tools(&host, json)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Plugins { json } => {
            print_plugins(&host, json)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Call { name, id, json, .. } => {
            let call = ToolCall {
                id,
                name,
                arguments: arguments.unwrap_or_default(),
            };
            let outcome = host.invoke(&call).await;
            if json {
                emit(&serde_json::to_string_pretty(&outcome.to_json())?)?;
            } else {
                // The block's lines stay lines; the plugin's escape
                // sequences, carriage returns and bidi overrides show as
                // escapes instead of acting on the terminal.
                emit(&block(outcome.render()))?;
            }
            if let Some(error) = journal.as_ref().and_then(|j| j.take_error()) {
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
fn cache_dir() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = std::env::var_os("TINY_HARNESS_CACHE_DIR") {
        return (!dir.is_empty()).then(|| PathBuf::from(dir));
    }
    var("XDG_CACHE_HOME")
        .map(|dir| PathBuf::from(dir).join("tiny-harness"))
        .or_else(|| var("HOME").map(|home| PathBuf::from(home).join(".cache/tiny-harness")))
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

fn print_tools(host: &Host, json: bool) -> anyhow::Result<()> {
    let registry = host.registry();
    if json {
        let tools: Vec<serde_json::Value> = registry
            .tools()
            .map(|t| {
                serde_json::json!({
                    "name": t.name.as_str(),
                    "plugin": t.name.plugin(),
                    "server": t.name.server(),
                    "tool": t.name.tool(),
                    "description": t.definition.description,
                    "idempotent": t.definition.annotations.retry_safe(),
                    "annotations": t.definition.annotations,
                    "input_schema_sha256": t.schema_hash().as_str(),
                    "input_schema": t.definition.input_schema,
                    "output_schema_sha256": t.output_schema_hash().map(|h| h.as_str()),
                    "output_schema": t.definition.output_schema,
                })
            })
            .collect();
        return emit(&serde_json::to_string_pretty(&tools)?);
    }
    if registry.is_empty() {
        return emit("no tools: the config loads no plugin that supplies any");
    }
    let width = registry
        .tools()
        .map(|t| one_line(t.name.as_str()).len())
        .max()
        .unwrap_or(4);
    let mut table = format!(
        "{:width$}  {:10}  {:12}  {:64}  DESCRIPTION",
        "NAME", "IDEMPOTENT", "PLUGIN", "INPUT SCHEMA SHA256"
    );
    for t in registry.tools() {
        // The plugin's own words: the first line, escaped, so that the row
        // stays one row and the terminal does only what the table asks.
        let description = summary(&t.definition.description);
        let _ = write!(
            table,
            "\n{:width$}  {:10}  {:12}  {:64}  {}",
            one_line(t.name.as_str()),
            if t.definition.annotations.retry_safe() {
                "yes"
            } else {
                "no"
            },
            one_line(t.name.plugin()),
            t.schema_hash().as_str(),
            one_line(&description)
        );
    }
    emit(&table)
}

/// `tools --provider`: each tool's wire name and its definition as
/// `provider` is sent it (in `--json`), and for Gemini how many lossy
/// schema rewrites it needed.
fn print_wire_tools(host: &Host, provider: Provider, json: bool) -> anyhow::Result<()> {
    let registry = host.registry();
    let request = provider.encode_registry(&registry);
    let entries = request.entries();
    let rewrites = |name: &str| {
        request
            .rewrites
            .iter()
            .find(|r| r.tool == name)
            .map(|r| r.rewrites.as_slice())
            .unwrap_or_default()
    };
    let lossy = |name: &str| rewrites(name).iter().filter(|w| w.lossy).count();
    let rows: Vec<(&str, &str, usize, Option<&serde_json::Value>)> = registry
        .tools()
        .zip(entries.iter().map(Some).chain(std::iter::repeat(None)))
        .map(|(tool, entry)| {
            let name = tool.name.as_str();
            let wire = request.codec.encode(name).unwrap_or("");
            (name, wire, lossy(name), entry.copied())
        })
        .collect();
    if json {
        let list: Vec<serde_json::Value> = rows
            .iter()
            .map(|(name, wire, _, definition)| {
                let mut view =
                    serde_json::json!({"name": name, "wire_name": wire, "definition": definition});
                let changed = rewrites(name);
                if !changed.is_empty() {
                    view["schema_rewrites"] = changed
                        .iter()
                        .map(|w| serde_json::json!({"pointer": w.pointer, "what": w.what, "lossy": w.lossy}))
                        .collect();
                }
                view
            })
            .collect();
        return emit(&serde_json::to_string_pretty(&list)?);
    }
    if rows.is_empty() {
        return emit("no tools: the config loads no plugin that supplies any");
    }
    let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(4).max(4);
    let mut table = format!("{:width$}  WIRE NAME ({provider})", "NAME");
    for (name, wire, lossy, _) in &rows {
        let _ = write!(table, "\n{:width$}  {}", one_line(name), one_line(wire));
        if *lossy > 0 {
            let plural = if *lossy == 1 { "" } else { "s" };
            let _ = write!(
                table,
                "  ({lossy} lossy schema rewrite{plural}; see --json)"
            );
        }
    }
    emit(&table)
}

/// The most characters of a description the `tools` table shows.
const SUMMARY_CHARS: usize = 200;

/// A description's first line, at most [`SUMMARY_CHARS`] long, with ` …`
/// when there is more (the whole is in `tools --json`).
fn summary(description: &str) -> String {
    let trimmed = description.trim();
    let first = trimmed.lines().next().unwrap_or("");
    let cut: String = first.chars().take(SUMMARY_CHARS).collect();
    if cut.len() < trimmed.len() {
        format!("{cut} …")
    } else {
        cut
    }
}

/// What a plugin is granted, in one line: `dirs: GUEST=HOST (mode), ...;
/// env: NAME, ...`, or `nothing`.
fn describe_grants(grants: &Grants) -> String {
    let mut parts = Vec::new();
    if !grants.dirs.is_empty() {
        let dirs: Vec<String> = grants
            .dirs
            .iter()
            .map(|d| format!("{}={} ({})", d.guest, d.host.display(), mode_name(d.mode)))
            .collect();
        parts.push(format!("dirs: {}", dirs.join(", ")));
    }
    if !grants.env.is_empty() {
        parts.push(format!("env: {}", grants.env.join(", ")));
    }
    if parts.is_empty() {
        "nothing".into()
    } else {
        parts.join("; ")
    }
}

fn mode_name(mode: DirMode) -> &'static str {
    match mode {
        DirMode::ReadOnly => "read-only",
        DirMode::ReadWrite => "read-write",
    }
}

fn print_plugins(host: &Host, json: bool) -> anyhow::Result<()> {
    let registry = host.registry();
    let plugins: Vec<(&str, &Plugin)> = registry
        .sources()
        .filter_map(|(name, source)| Some((name, source.as_any().downcast_ref::<Plugin>()?)))
        .collect();
    let tool_count = |name: &str| registry.tools().filter(|t| t.name.plugin() == name).count();
    if json {
        let list: Vec<serde_json::Value> = plugins
            .iter()
            .map(|(name, plugin)| {
                let grants = plugin.grants();
                let limits = plugin.limits();
                serde_json::json!({
                    "name": name,
                    "path": plugin.wasm_path().display().to_string(),
                    "sha256": plugin.sha256(),
                    "pinned": plugin.is_pinned(),
                    "tools": tool_count(name),
                    "from_compile_cache": plugin.compile_origin() == CompileOrigin::Cached,
                    "grants": {
                        "dirs": grants.dirs.iter().map(|d| serde_json::json!({
                            "host": d.host.display().to_string(),
                            "guest": d.guest,
                            "mode": mode_name(d.mode),
                        })).collect::<Vec<_>>(),
                        "env": grants.env,
                    },
                    "limits": {
                        "memory_mib": limits.memory_bytes >> 20,
                        "timeout_ms": u64::try_from(limits.timeout.as_millis()).unwrap_or(u64::MAX),
                        "result_kib": limits.result_bytes >> 10,
                        "result_parts": limits.result_parts,
                        "open_files": limits.open_files,
                        "arguments_kib": limits.arguments_bytes >> 10,
                        "tools": limits.registration.tools,
                        "servers": limits.registration.servers,
                        "description_kib": limits.registration.description_bytes >> 10,
                        "title_kib": limits.registration.title_bytes >> 10,
                        "schema_kib": limits.registration.schema_bytes >> 10,
                        "schema_cost": limits.registration.schema_cost,
                        "registration_kib": limits.registration.total_bytes >> 10,
                    },
                })
            })
            .collect();
        return emit(&serde_json::to_string_pretty(&list)?);
    }
    if plugins.is_empty() {
        return emit("no plugins: the config loads none");
    }
    let width = plugins
        .iter()
        .map(|(n, _)| one_line(n).len())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut table = format!(
        "{:width$}  {:5}  {:64}  {:6}  GRANTS",
        "NAME", "TOOLS", "SHA256", "PINNED"
    );
    for (name, plugin) in &plugins {
        let _ = write!(
            table,
            "\n{:width$}  {:5}  {:64}  {:6}  {}",
            one_line(name),
            tool_count(name),
            one_line(plugin.sha256()),
            if plugin.is_pinned() { "yes" } else { "no" },
            // Host paths and variable names may hold any byte but NUL.
            one_line(&describe_grants(plugin.grants()))
        );
    }
    emit(&table)
}
