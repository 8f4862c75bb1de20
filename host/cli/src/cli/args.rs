//! The command line's grammar: every command, option and its `--help`
//! text, as clap parses them. What each command does is in the modules
//! beside this one.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use tiny_harness_host::Config;
use tiny_harness_host::Provider;

#[derive(Parser)]
#[command(
    name = "tiny-harness",
    version,
    about = "Run sandboxed WebAssembly tools the way a model calls them",
    long_about = "Run sandboxed WebAssembly tools the way a model calls them.\n\n\
The host has no tools of its own: every tool comes from a plugin (a WebAssembly \
component) that the config loads and grants exactly what it may touch. Tools are \
named <plugin>/<server>.<tool>.",
    after_help = "Exit codes: 0 a result, 1 an error result, 2 a usage or config error, 128+N when \
stopped by signal N (SIGINT, SIGTERM, SIGHUP; MCP servers are stopped with it; `serve` drains \
on the first SIGINT or SIGTERM and exits 0).\n\n\
Text from plugins (descriptions, error messages, results) is shown with control and bidi \
characters escaped (\\x1b, \\r, \\u{202e}, ...), so it cannot move the cursor or forge lines; \
--json carries it exactly.\n\n\
Compiled plugins are cached in $TINY_HARNESS_CACHE_DIR, else $XDG_CACHE_HOME/tiny-harness, \
else ~/.cache/tiny-harness (a directory only you may write); --no-cache compiles afresh."
)]
pub(super) struct Cli {
    /// The host config to load.
    #[arg(long, global = true, value_name = "PATH", default_value = Config::DEFAULT_FILE)]
    pub(super) config: PathBuf,

    /// Compile every plugin afresh, without reading or writing the compile cache.
    #[arg(long, global = true)]
    pub(super) no_cache: bool,

    /// Append one JSON line per call to this file: time, call id, tool, hashes of the
    /// arguments, of the tool's definition and of the rendered result, and the outcome.
    #[arg(long, global = true, value_name = "FILE")]
    pub(super) journal: Option<PathBuf>,

    /// With --journal, also record the arguments and the rendered result themselves.
    #[arg(long, global = true, requires = "journal")]
    pub(super) journal_full: bool,

    /// Refuse to run unless every tool and component is exactly as in the config's lock (NAME.lock beside NAME.toml),
    /// and never write the lock: for CI.
    #[arg(long, global = true)]
    pub(super) locked: bool,

    /// Show the log on standard error: what plugins write to stdout and stderr (with the
    /// plugin's name and the call's id), MCP servers' standard error and log messages.
    /// RUST_LOG, when set, chooses what is shown instead (RUST_LOG=tiny_harness::plugin=info).
    #[arg(long, short = 'v', global = true)]
    pub(super) verbose: bool,

    #[command(subcommand)]
    pub(super) command: Command,
}

#[derive(Subcommand)]
pub(super) enum Command {
    /// List every registered tool: name, idempotency, source plugin, input-schema sha256 and the first line of its description.
    Tools {
        /// Print a JSON array instead of a table (includes each input schema and any output schema, with their sha256).
        #[arg(long)]
        json: bool,
        /// Show each tool as this provider is sent it: its wire name and its definition in the
        /// provider's format (openai-chat, openai-responses, anthropic, gemini, bedrock, mcp).
        #[arg(long, value_name = "P")]
        provider: Option<Provider>,
        /// With --provider gemini: send each input schema as `parameters`, rewritten into
        /// Gemini's OpenAPI subset (each lossy rewrite shown), instead of unchanged as
        /// `parametersJsonSchema`.
        #[arg(long, requires = "provider")]
        gemini_subset: bool,
        /// Also register and list the twelve intrinsics (create_plan, ..., emit_ui), under
        /// their bare names.
        #[arg(long)]
        intrinsics: bool,
        /// Instead of listing, print the deferred tools ([search] defer, a plugin's defer =
        /// true) that best fit QUERY, best first, with each score's parts: what a model's
        /// search finds. `-` reads one query per line from standard input and prints one JSON
        /// line per query. Exit code 1 when a query is refused, 2 when nothing is deferred.
        #[arg(long, value_name = "QUERY", conflicts_with_all = ["provider", "intrinsics"])]
        search: Option<String>,
        /// With --search: at most N tools (1 to 20; default 5).
        #[arg(long, value_name = "N", requires = "search")]
        limit: Option<usize>,
    },
    /// List every loaded plugin: its component's sha256 and whether it is pinned, its tool count, and exactly what it is granted.
    Plugins {
        /// Print a JSON array instead of a table (includes the limits).
        #[arg(long)]
        json: bool,
    },
    /// Make one validated call and print the result as an untrusted block.
    Call {
        /// The tool's full name, <plugin>/<server>.<tool>, or an intrinsic's bare name
        /// (list_skills, create_plan, ...; one that changes a task needs --workflow).
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
        /// Run an intrinsic against the workflow state in this file (a new task if it is
        /// missing): its command is applied and the new state written atomically; a refused
        /// call leaves the file as it was.
        #[arg(long, value_name = "STATE.json")]
        workflow: Option<PathBuf>,
        /// With --workflow, the acting participant the host binds to the call.
        #[arg(long, value_name = "ID", requires = "workflow")]
        actor: Option<String>,
    },
    /// Work with recorded workflows.
    Workflow {
        #[command(subcommand)]
        action: WorkflowAction,
    },
    /// Run what a model asked for: the tool calls of a recorded provider response (one JSON
    /// document, or JSON Lines of turns), one loop iteration per turn, through the registry and
    /// the sandbox. Prints each call's result block, or with --json the provider-format
    /// tool-result messages of each turn.
    Replay {
        /// The recorded response(s).
        file: PathBuf,
        /// The provider whose format they are in (openai-chat, openai-responses, anthropic,
        /// gemini, bedrock, mcp).
        #[arg(long, value_name = "P")]
        provider: Provider,
        /// Print, per turn, the calls and the provider's tool-result messages as JSON.
        #[arg(long)]
        json: bool,
        /// Offer the intrinsics too and apply their calls, turn by turn in the response's
        /// order, to the workflow state in this file (a new task if it is missing); the new state
        /// is written atomically after the last turn.
        #[arg(long, value_name = "STATE.json")]
        workflow: Option<PathBuf>,
        /// With --workflow, the acting participant the host binds to the intrinsic calls.
        #[arg(long, value_name = "ID", requires = "workflow")]
        actor: Option<String>,
    },
    /// Serve the registry to MCP clients, over stdio (the default) or streamable HTTP: every call
    /// runs behind the same validation, pins and sandbox as `call`. The config's [serve] section
    /// names the clients and the tools each sees (docs/serve.md).
    Serve {
        /// Serve one client on standard input and output (the default): for a client that starts
        /// tiny-harness itself, as a desktop assistant's "mcpServers" entry does.
        #[arg(long, conflicts_with = "http")]
        stdio: bool,
        /// Serve streamable HTTP at ADDR, path /mcp (127.0.0.1:8787 when ADDR is left out;
        /// port 0 picks a free one, printed on stderr). Without --tokens or [serve.oauth] only a
        /// loopback address is served, to one client named `anonymous`.
        #[arg(long, value_name = "ADDR", num_args = 0..=1,
              default_missing_value = tiny_harness_serve::DEFAULT_ADDR)]
        http: Option<std::net::SocketAddr>,
        /// With --http, require a bearer token from this file on every request: one `NAME TOKEN`
        /// line per client, each with a [serve.clients.NAME] entry; the file must be readable by
        /// its owner only (chmod 600).
        #[arg(long, value_name = "FILE", requires = "http")]
        tokens: Option<PathBuf>,
        /// With --http, also accept this Host header (name or name:port; repeat for more). Only
        /// loopback names are accepted otherwise.
        #[arg(long, value_name = "HOST", requires = "http")]
        allow_host: Vec<String>,
        /// With --http, accept requests from this browser origin (scheme://host[:port], :* for
        /// any port; repeat for more). A request that sends any other Origin is refused.
        #[arg(long, value_name = "ORIGIN", requires = "http")]
        allow_origin: Vec<String>,
        /// Build the host again when the config, its lock or a plugin's .wasm file changes, and
        /// tell the clients their tool list changed; calls in flight finish on the old version, and a
        /// reload that fails (logged in one line) keeps the old version serving.
        #[arg(long)]
        watch: bool,
    },
    /// Compare tools with their pins in the config's lock (NAME.lock beside NAME.toml), or pin them again.
    Pins {
        #[command(subcommand)]
        action: PinsAction,
    },
    /// Add, import, install, diagnose and log in to MCP servers.
    Mcp {
        #[command(subcommand)]
        action: McpAction,
    },
    /// Look into, start, publish and add plugin components.
    Plugin {
        #[command(subcommand)]
        action: PluginAction,
    },
    /// Run a plugin's cases files: each names the plugin (a component, with the command that
    /// builds it, or a Rust crate to build), its grants, the programs and pages it reaches as
    /// scripted (nothing runs, nothing is sent), and calls with what must come back. Each
    /// call goes through the host as a model's would. Prints a line per case, with the call,
    /// what was expected and what came back for each that failed. Exit code 1 when a case
    /// fails, 2 when a file cannot be run (one line says why). The format:
    /// docs/plugin-authoring.md.
    Test {
        /// The cases files (TOML, or JSON when the name ends in .json).
        #[arg(required = true, value_name = "CASES")]
        files: Vec<PathBuf>,
        /// Run this component instead of the one each file names (and build nothing): one
        /// file of cases for a plugin written in several languages.
        #[arg(long, value_name = "FILE.wasm")]
        plugin: Option<PathBuf>,
        /// Name the plugin NAME instead of what each file says.
        #[arg(long, value_name = "NAME")]
        name: Option<String>,
    },
}

#[derive(Subcommand)]
pub(super) enum PluginAction {
    /// Describe a component: its size and sha256 (what a config's sha256 pins), the
    /// tiny-harness:plugin version it targets, what it imports and so which grants it can
    /// use, and the tools and MCP servers it registers. Of its code only `register` runs,
    /// sandboxed, with no grants and an empty config; a component that does not load is
    /// described as far as it can be read, with why. Exit code 1 when it does not load.
    Inspect {
        /// The component (.wasm), or builtin:NAME for one bundled in this binary.
        file: PathBuf,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Publish a component to an OCI registry, as a Wasm OCI artifact (config
    /// application/vnd.wasm.config.v0+json, one application/wasm layer, as wkg writes),
    /// annotated with its world and the tools it registers. Only a component that loads in
    /// this host is published. Prints the digests and the reference to add it by.
    /// Credentials: --user with --password-stdin, else the Docker config
    /// (~/.docker/config.json, its credential helpers). A loopback registry is reached over
    /// plain HTTP, any other over HTTPS only.
    Publish {
        /// The component (.wasm).
        file: PathBuf,
        /// Where: oci://HOST[:PORT]/REPOSITORY:TAG.
        reference: String,
        /// The registry user (with --password-stdin).
        #[arg(long)]
        user: Option<String>,
        /// Read the password (or token) from standard input.
        #[arg(long)]
        password_stdin: bool,
    },
    /// Add a component from an OCI registry to the config (--config) as [plugins.NAME]:
    /// resolves the reference, downloads the component by its digest (bounded in size and
    /// time), checks it and that it loads in this host, keeps it in NAME.store/oci.components
    /// beside the config, and writes path = "oci://HOST/REPO:TAG@sha256:MANIFEST" and its
    /// sha256, with the grants its imports can use as comments (nothing is granted). A start
    /// then runs that component from the store, with no network; a missing one is fetched
    /// by its digest, never by its tag. --upgrade NAME follows its tag (or the reference
    /// given) to what it names now and prints what moved: digests, tools added, removed or
    /// changed.
    Add {
        /// The plugin's name in the config.
        name: String,
        /// oci://HOST[:PORT]/REPOSITORY:TAG or oci://HOST[:PORT]/REPOSITORY@sha256:DIGEST
        /// (optional with --upgrade: the config's, followed by its tag).
        reference: Option<String>,
        /// Move a plugin added before to what its tag names now.
        #[arg(long)]
        upgrade: bool,
        /// The registry user (with --password-stdin).
        #[arg(long)]
        user: Option<String>,
        /// Read the password (or token) from standard input.
        #[arg(long)]
        password_stdin: bool,
    },
    /// Start a new plugin that builds, registers and passes its own test at once, with a
    /// config to try it with (marked dev = true) and a cases.toml of calls that `tiny-harness
    /// test` runs. Rust: a crate on the guest SDK (tools as functions, schemas from their
    /// types) whose `cargo test` runs the cases through this binary; until the SDK is
    /// published, it uses it by the path of the checkout this binary was built from (or
    /// --sdk). Python and JavaScript: the app, the world's WIT, a build.sh that installs
    /// componentize-py or componentize-js pinned, and a test.sh that runs the cases. Prints
    /// how to build, test and try it.
    New {
        /// Its name: 1 to 64 characters of a-z, 0-9, '_' and '-', starting with a letter.
        /// It names the crate, the server and the plugin in the config.
        name: String,
        /// The language.
        #[arg(long, value_enum, default_value_t = super::scaffold::Lang::Rust)]
        lang: super::scaffold::Lang,
        /// Where to write it (default: ./NAME). It must not exist or be empty.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// The tiny-harness checkout whose guest SDK (plugins/sdk) a Rust plugin uses (default:
        /// the one this binary was built from).
        #[arg(long, value_name = "PATH")]
        sdk: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
pub(super) enum WorkflowAction {
    /// Replay a recorded command list (JSON Lines of workflow commands) from a new task and
    /// print the final state as JSON. Exit code 1 at the first refused command.
    Apply {
        /// The commands, one JSON object per line.
        file: PathBuf,
        /// Start from this workflow state instead of a new task.
        #[arg(long, value_name = "STATE.json")]
        from: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
pub(super) enum PinsAction {
    /// Show, field by field, how each tool differs from its pin (MCP servers are listed
    /// again first). Exit code 1 when anything differs.
    Diff {
        /// Only this server (<plugin>/<server>) or plugin.
        server: Option<String>,
    },
    /// Register the tools again as they are now and rewrite their pins in the lock.
    Update {
        /// Only this server (<plugin>/<server>) or plugin.
        server: Option<String>,
    },
}

#[derive(Subcommand)]
pub(super) enum McpAction {
    /// Print the [plugins.mcp] block, grants included, for a Claude Desktop, Cursor or
    /// VS Code MCP config, for you to review and paste. Secret values are not copied:
    /// they become ${NAME} references to host variables.
    Import {
        /// The JSON config (claude_desktop_config.json, .cursor/mcp.json, .vscode/mcp.json).
        file: PathBuf,
        /// The path written for the mcp plugin's component (default: the one bundled in
        /// this binary).
        #[arg(long, default_value = "builtin:mcp")]
        wasm: String,
    },
    /// Install the servers of the config (--config) that npx, npm exec, bunx, uvx, uv tool
    /// run or pipx run would fetch at every start: each package with its dependencies, once,
    /// into NAME.store beside NAME.toml, its exact version and integrity pinned in the lock.
    /// They then start from there, confined, offline. A server the lock records is installed
    /// exactly as recorded; --upgrade is the one way to move it. Each server is printed as it
    /// starts and ends; one that cannot be installed is skipped, with why, and the others go
    /// on (exit code 1 if none could be installed, or under --locked if any was skipped).
    Install {
        /// One server (<server> or <plugin>/<server>); all of them when left out.
        server: Option<String>,
        /// Install the newest version of SERVER and record it in the lock.
        #[arg(long, requires = "server")]
        upgrade: bool,
        /// The longest one server's install may take, in seconds, every step together
        /// (npm's and pip's own request timeouts fit inside it); 1 to 3600.
        #[arg(long, value_name = "SECS", default_value_t = 300,
              value_parser = clap::value_parser!(u64).range(1..=3600))]
        timeout: u64,
        /// The most room one server's install may take while it is made, in MiB: what it
        /// downloads, its package manager's cache, and what that unpacks to, together (no
        /// one file larger either); past it the install is refused and nothing kept. 1 to
        /// 65536.
        #[arg(long, value_name = "MIB", default_value_t = 512,
              value_parser = clap::value_parser!(u64).range(1..=65536))]
        max_size: u64,
    },
    /// Start a stdio server of the config as the host starts it, confined, under strace,
    /// through an MCP handshake: every file access and connection it was denied, and the
    /// config lines that would allow them. Exit code 1 when something was denied.
    Doctor {
        /// The server: <server> or <plugin>/<server>.
        server: String,
    },
    /// Log in to an HTTP server of the config that asks for OAuth: discover its
    /// authorization server, register this client (or use the pre-registered one), open the
    /// authorization URL in a browser ($BROWSER, else the desktop's opener; it is printed
    /// too) and wait for the redirect to 127.0.0.1. The tokens go to NAME.tokens beside
    /// NAME.toml, readable only by you; the host attaches and refreshes them. A server whose
    /// oauth grant is client_credentials or enterprise needs no browser: this only checks that
    /// the host can obtain its token.
    Login {
        /// The server: <server> or <plugin>/<server>.
        server: String,
        /// A scope to ask for beyond those the server names (repeatable).
        #[arg(long = "scope", value_name = "SCOPE")]
        scopes: Vec<String>,
        /// Print the URL without opening a browser.
        #[arg(long)]
        no_browser: bool,
        /// How long to wait for the browser's redirect, in seconds.
        #[arg(long, value_name = "SECS", default_value_t = 300)]
        wait: u64,
    },
    /// Forget the login of an HTTP server (its tokens in NAME.tokens).
    Logout {
        /// The server: <server> or <plugin>/<server>.
        server: String,
    },
    /// Add a stdio MCP server to the config (--config), with the grants its launcher needs to
    /// run confined: read of its interpreter and package, each absolute path among its
    /// arguments as a directory (read-only unless --write), no network. Prints what it
    /// granted, for review.
    #[command(
        after_help = "Examples:\n  tiny-harness mcp add files -- node /opt/mcp/server-filesystem/dist/index.js /srv/docs\n  tiny-harness mcp add time --env TZ -- /home/me/.venvs/mcp/bin/python -m mcp_server_time"
    )]
    Add {
        /// The server's name: the middle part of its tools' names (a-z, 0-9, _ and -).
        name: String,
        /// A variable for the server: K (the host's K, granted by name), K=${VAR} (the
        /// host's VAR) or K=V (the value V, written into the config). Repeatable.
        #[arg(long = "env", short = 'e', value_name = "K[=V]")]
        env: Vec<String>,
        /// A directory among its arguments to grant read-write instead of read-only.
        /// Repeatable.
        #[arg(long = "write", value_name = "DIR")]
        write: Vec<PathBuf>,
        /// The component written for a new [plugins.mcp] (default: the bundled one).
        #[arg(long, default_value = "builtin:mcp")]
        wasm: String,
        /// The server's command and its arguments, after `--`.
        #[arg(last = true, required = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
}

/// The global options each command takes no notice of, by the command's
/// path: hidden from its `--help`, and refused when given to it.
const UNUSED_GLOBALS: &[(&[&str], &[&str])] = &[
    (
        &["test"],
        &["config", "no_cache", "journal", "journal_full", "locked"],
    ),
    (
        &["plugin", "new"],
        &["config", "no_cache", "journal", "journal_full", "locked"],
    ),
    (
        &["plugin", "inspect"],
        &["config", "journal", "journal_full", "locked"],
    ),
];

/// Parses the command line (exiting with clap's message and code 2 on a
/// mistake), with each command's `--help` showing only the global options
/// it uses.
pub(super) fn parse() -> Cli {
    use clap::{CommandFactory as _, FromArgMatches as _};
    let mut command = Cli::command();
    for (path, ids) in UNUSED_GLOBALS {
        command = hide(command, path, ids);
    }
    let matches = command.clone().get_matches();
    let (mut leaf, mut path) = (&matches, Vec::new());
    while let Some((name, sub)) = leaf.subcommand() {
        path.push(name);
        leaf = sub;
    }
    if let Some((_, ids)) = UNUSED_GLOBALS.iter().find(|(p, _)| *p == path.as_slice())
        && let Some(id) = ids
            .iter()
            .find(|id| leaf.value_source(id) == Some(clap::parser::ValueSource::CommandLine))
    {
        let flag = format!("--{}", flag_of(id));
        command
            .error(
                clap::error::ErrorKind::ArgumentConflict,
                format!(
                    "{flag} does nothing with `{}`: leave it out",
                    path.join(" ")
                ),
            )
            .exit();
    }
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

/// The option a global's id is spelled as.
fn flag_of(id: &str) -> &'static str {
    match id {
        "no_cache" => "no-cache",
        "journal_full" => "journal-full",
        "journal" => "journal",
        "locked" => "locked",
        _ => "config",
    }
}

/// `command` with the global options `ids` hidden in its subcommand at
/// `path`: a hidden option of the same name there, which clap does not
/// propagate the global one over, takes them, so that `parse` can refuse
/// them.
fn hide(command: clap::Command, path: &[&str], ids: &[&'static str]) -> clap::Command {
    match path.split_first() {
        None => ids.iter().fold(command, |command, id| {
            command.arg(
                clap::Arg::new(*id)
                    .long(flag_of(id))
                    .num_args(0..=1)
                    .action(clap::ArgAction::Append)
                    .hide(true),
            )
        }),
        Some((first, rest)) => command.mut_subcommand(*first, |sub| hide(sub, rest, ids)),
    }
}
