//! The MCP Inspector's command-line client (npm
//! `@modelcontextprotocol/inspector`, pinned in `tests/mcp/package.json`)
//! drives `serve` as a developer checking a server would: over stdio,
//! starting `serve` itself, and over streamable HTTP, at both protocol
//! eras it speaks (`legacy`: 2025-11-25 with `initialize`; `modern`:
//! 2026-07-28).

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::super::{npm, sandbox, shared_cache, wait_live_for};
use super::{EVERY_FS_TOOL, Gateway};

/// How long one run of the Inspector may take: far beyond a real run
/// (about half a second; a few seconds for a stdio server it has to stop).
const RUN_LIMIT: Duration = Duration::from_secs(60);

/// The Inspector's exit code for a result with `isError` (its `TOOL_ERROR`).
const TOOL_ERROR: i32 = 5;

/// Where the Inspector finds the server.
#[derive(Debug)]
enum Server<'a> {
    /// `serve --config CONFIG` over stdio, started by the Inspector.
    Stdio(&'a Path),
    /// A gateway's `/mcp` URL.
    Http(&'a str),
}

/// Runs `mcp-inspector --cli` at `era` against `server` with `method`'s
/// flags, and returns its output and the one JSON object it printed.
fn inspect(home: &Path, era: &str, server: &Server, method: &[&str]) -> (Output, Value) {
    let mut command = Command::new("node");
    command
        .arg(npm::inspector_js())
        .args(["--cli", "--format", "json", "--protocol-era", era])
        // The Inspector keeps a catalog and secrets under ~/.mcp-inspector:
        // a home of the test's own, so that nothing lands in the user's.
        .env("HOME", home)
        .current_dir(home);
    match server {
        Server::Http(url) => {
            command
                .args(["--transport", "http", "--server-url", url])
                .args(method);
        }
        Server::Stdio(config) => {
            // The server's command comes after `--`, so that its own
            // `--config` is not taken for the Inspector's.
            command
                .arg("-e")
                .arg(format!(
                    "TINY_HARNESS_CACHE_DIR={}",
                    shared_cache().display()
                ))
                .args(method)
                .arg("--")
                .arg(env!("CARGO_BIN_EXE_tiny-harness"))
                .args(["serve", "--config"])
                .arg(config);
        }
    }
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node runs");
    let output = wait_live_for(child, RUN_LIMIT, "the MCP Inspector");
    let printed = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "{era} {server:?} {method:?}: not one JSON object ({e}): {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (output, printed)
}

/// The untrusted block `text` after its nonce (the opening tag's
/// attributes on), checking that `text` is one whole block: its opening
/// tag first, its closing tag (with the same nonce) last and nowhere else.
fn inside_block(text: &str) -> &str {
    let open = text
        .strip_prefix("<tool-result-")
        .unwrap_or_else(|| panic!("not an untrusted block: {text}"));
    let nonce = &open[..open.find(' ').unwrap()];
    let close = format!("</tool-result-{nonce}>");
    assert_eq!(text.matches(&close).count(), 1, "{text}");
    open[nonce.len()..]
        .strip_suffix(&close)
        .unwrap_or_else(|| panic!("the block does not end the text: {text}"))
}

#[test]
fn the_inspectors_cli_lists_and_calls_over_stdio_and_http_at_both_eras() {
    let dir = sandbox();
    let config = dir.path().join("tiny-harness.toml");
    let home = tempfile::tempdir().unwrap();
    let gateway = Gateway::start(dir.path(), &[]);
    let url = gateway.url();
    for era in ["legacy", "modern"] {
        for server in [Server::Stdio(&config), Server::Http(&url)] {
            let what = format!("{era} {server:?}");
            let (output, listed) = inspect(home.path(), era, &server, &["--method", "tools/list"]);
            assert!(
                output.status.success(),
                "{what}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            let names: Vec<&str> = listed["result"]["tools"]
                .as_array()
                .unwrap_or_else(|| panic!("{what}: {listed}"))
                .iter()
                .map(|tool| tool["name"].as_str().unwrap())
                .collect();
            assert_eq!(names, EVERY_FS_TOOL, "{what}");

            let (output, called) = inspect(
                home.path(),
                era,
                &server,
                &[
                    "--method",
                    "tools/call",
                    "--tool-name",
                    "fs__workspace.read_file",
                    "--tool-arg",
                    "path=hello.txt",
                ],
            );
            assert!(
                output.status.success(),
                "{what}: {called} {}",
                String::from_utf8_lossy(&output.stderr)
            );
            let result = &called["result"];
            assert_eq!(result["isError"], false, "{what}: {result}");
            let inside = inside_block(result["content"][0]["text"].as_str().unwrap());
            assert!(
                inside.starts_with(" tool=\"fs/workspace.read_file\" "),
                "{what}: {inside}"
            );
            // The file's text, inside the block, after the line that says
            // it is data.
            let (preamble, data) = inside
                .split_once("not instructions")
                .unwrap_or_else(|| panic!("{what}: {inside}"));
            assert!(!preamble.contains("hello"), "{what}: {inside}");
            assert!(
                data.contains("\nhello from the workspace\n"),
                "{what}: {inside}"
            );
            assert_eq!(result["structuredContent"]["total_lines"], 1, "{what}");

            // No `path`: refused before anything runs, as a result (the
            // Inspector prints it, and exits with its tool-error code).
            let (output, refused) = inspect(
                home.path(),
                era,
                &server,
                &[
                    "--method",
                    "tools/call",
                    "--tool-name",
                    "fs__workspace.read_file",
                ],
            );
            assert_eq!(output.status.code(), Some(TOOL_ERROR), "{what}: {refused}");
            let result = &refused["result"];
            assert_eq!(result["isError"], true, "{what}: {result}");
            assert_eq!(
                result["_meta"]["io.tiny-harness/code"], "invalid_arguments",
                "{what}: {result}"
            );
            let inside = inside_block(result["content"][0]["text"].as_str().unwrap());
            assert!(
                inside.contains("status=\"error\" code=\"invalid_arguments\""),
                "{what}: {inside}"
            );
        }
    }
    let log = gateway.log();
    assert!(
        log.contains("client=\"anonymous\" method=\"tools/call\" tool=\"fs__workspace.read_file\"")
            && log.contains("outcome=\"invalid_arguments\""),
        "{log}"
    );
}
