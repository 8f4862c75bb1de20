//! `shell`: runs programs for the model, server `exec`, through the host's
//! `exec` interface. Despite its name it starts no shell of its own.
//!
//! One tool, `run`, with arguments `{program, args?, cwd?, stdin?,
//! timeout_ms?}`, returning a line of text (`exit 0`, `killed by signal 9
//! at the timeout`) and then JSON `{exit_code, signal, stdout, stderr,
//! truncated, timed_out}`. A program that exits non-zero, is killed or
//! times out is an ordinary result marked as an error; a program the
//! grants do not allow is a `denied` call error whose message names the
//! grant that would allow it, one that cannot be started a `failed` one.
//!
//! The config (`[plugins.<name>.config]`), every key optional:
//!
//! ```toml
//! env = { LANG = "C.UTF-8", TOKEN = "${TOKEN}" }  # set for every program
//! output_kib = 256                                # stdout + stderr per result
//! ```
//!
//! Guarantees:
//! - The plugin decides nothing about what may run or be reached: the host
//!   checks the program against the plugin's `exec` grants and the `cwd`
//!   against its granted directories, and confines the program by the
//!   kernel. `args` are passed as they are; nothing here interprets them.
//! - The model cannot set environment variables (`LD_PRELOAD` and the
//!   like): only the config's `env` is passed, and the host expands a
//!   `${NAME}` in it only for host variables the plugin is granted.
//! - A result never holds more than `output_kib` KiB of output (counted as
//!   JSON text, stdout and stderr together, each keeping its beginning),
//!   and `truncated` says when anything was cut. The host already caps
//!   each stream at the plugin's `result_kib` as it reads it, but a stream
//!   cut there would fill a whole result by itself, so keep `output_kib`
//!   below `result_kib` (a result over it reaches the model as
//!   `too_large`, with none of the output).

mod defs;
mod output;

use std::collections::BTreeMap;

use serde::Deserialize;
use tiny_harness_plugin::exec::Command;
use tiny_harness_plugin::{Config as PluginConfig, Context, Output, Plugin, Server, ToolError};
use tiny_harness_plugin::{tool, tools};

/// The server every tool of this plugin belongs to.
const SERVER: &str = "exec";

/// The default for [`Config::output_kib`]: a quarter of the host's default
/// result limit (1024 KiB), leaving room for the rest of the result.
const DEFAULT_OUTPUT_KIB: u32 = 256;

/// The largest [`Config::output_kib`]: the host's largest result limit.
const MAX_OUTPUT_KIB: u32 = 65_536;

/// The plugin's config: the host's `[plugins.<name>.config]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Environment variables set for every program, beyond the host's
    /// baseline; a value may name a granted host variable as `${NAME}`.
    #[serde(default)]
    env: BTreeMap<String, String>,
    /// The most output one result holds, in KiB of JSON text.
    #[serde(default = "default_output_kib")]
    output_kib: u32,
}

/// The default for [`Config::output_kib`].
fn default_output_kib() -> u32 {
    DEFAULT_OUTPUT_KIB
}

impl Config {
    /// Parses and checks the config JSON, saying what to fix when it is
    /// wrong.
    fn parse(config: &str) -> Result<Self, String> {
        let config: Config = serde_json::from_str(config).map_err(|err| {
            format!(
                "invalid shell plugin config: {err}; its keys are `env` (a table of \
                 environment variables for every program) and `output_kib` (1 to \
                 {MAX_OUTPUT_KIB}, default {DEFAULT_OUTPUT_KIB})"
            )
        })?;
        if !(1..=MAX_OUTPUT_KIB).contains(&config.output_kib) {
            return Err(format!(
                "invalid shell plugin config: `output_kib` must be from 1 to \
                 {MAX_OUTPUT_KIB}, not {}",
                config.output_kib
            ));
        }
        if let Some(name) = config
            .env
            .keys()
            .find(|name| name.is_empty() || name.contains(['=', '\0']))
        {
            return Err(format!(
                "invalid shell plugin config: {name:?} in `env` is not an environment \
                 variable name (it must be non-empty, without `=` or NUL)"
            ));
        }
        Ok(config)
    }
}

/// The arguments of `run`, as its input schema describes them.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Run {
    program: String,
    #[serde(default)]
    args: Vec<String>,
    cwd: Option<String>,
    #[serde(default)]
    stdin: String,
    timeout_ms: Option<u32>,
}

/// Runs one program and waits for it to end. No shell is involved:
/// `args` reach the program exactly as given (no globbing, quoting,
/// pipes or variables; run `sh` with `-c` for those, if it is granted).
/// Only programs the host config grants may run, confined to the
/// plugin's granted directories. Returns a line of text, then JSON
/// {exit_code, signal, stdout, stderr, truncated, timed_out}: exit_code
/// is null when a signal ended it; stdout and stderr are UTF-8 (invalid
/// bytes replaced); truncated means some output was cut; timed_out means
/// it was killed at its timeout. A non-zero exit is an error result.
#[tool(
    destructive,
    open_world,
    input_schema = defs::input_document,
    output_schema = defs::output_document
)]
fn run(cx: &Context, args: Run) -> Result<Output, ToolError> {
    let config = Config::parse(cx.config.json()).map_err(ToolError::Failed)?;
    if let Some(ms) = args.timeout_ms
        && !(1..=defs::MAX_TIMEOUT_MS).contains(&ms)
    {
        return Err(ToolError::InvalidArguments(format!(
            "`timeout_ms` must be from 1 to {}, not {ms}",
            defs::MAX_TIMEOUT_MS
        )));
    }
    let mut command = Command::new(args.program)
        .args(args.args)
        .stdin(args.stdin.into_bytes());
    if let Some(cwd) = args.cwd {
        command = command.cwd(cwd);
    }
    if let Some(ms) = args.timeout_ms {
        command = command.timeout_ms(ms);
    }
    for (name, value) in &config.env {
        command = command.env(name, value);
    }
    // A refusal is `denied` naming the grant, a failure to start `failed`.
    let ran = command.run()?;
    output::result(&ran, config.output_kib as usize * 1024)
}

/// The plugin: the `exec` server, once its config checks.
struct Shell;

impl Plugin for Shell {
    fn servers(config: &PluginConfig) -> Result<Vec<Server>, String> {
        Config::parse(config.json())?;
        Ok(vec![Server::new(SERVER, tools![run])])
    }
}

tiny_harness_plugin::export!(Shell);
