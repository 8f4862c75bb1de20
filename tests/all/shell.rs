//! The `shell` plugin (`shell/exec.run`) over the host's `exec` interface:
//! a program runs only when granted, with its arguments as given (no
//! shell), in a guest `cwd` mapped to its host directory (or a private
//! one), with the config's environment and nothing else of the host's,
//! confined by the kernel to the plugin's grants, killed with its whole
//! process group at its timeout, and with its output capped. After every
//! refusal the plugin still runs programs.
//!
//! Submodules: `confinement` (what the kernel holds a program to),
//! `escape` (setsid, fork bombs, CPU and memory limits) and `limits`
//! (timeouts, process groups, output caps).

mod confinement;
mod escape;
mod limits;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tiny_harness_host::{CallOutcome, DirGrant, DirMode, Host, PluginSpec};
use tiny_harness_sandbox::grant::ExecGrant;

use crate::common::{call, error_code, host, json_of, result_of, spec, text_of};

/// The tool under test.
const RUN: &str = "shell/exec.run";

/// An exec grant for `program` as a config would give it, reading nothing
/// beyond the system set; the plugin may set any variable but the
/// loader's for it (what a narrower `env` refuses is tested in
/// `hostile.rs`).
fn grant(program: &str) -> ExecGrant {
    ExecGrant::resolve(program, Path::new("."), std::env::var_os("PATH").as_deref())
        .unwrap_or_else(|e| panic!("granting {program}: {e}"))
        .with_env(crate::common::mcp::any_env())
}

/// The shell plugin with `config`, granted `/bin/echo` (for
/// [`still_works`]) and `programs`.
fn shell(programs: &[&str], config: Value) -> PluginSpec {
    let mut spec = spec("shell", "shell");
    spec.grants.add_exec(grant("/bin/echo")).unwrap();
    for program in programs {
        spec.grants.add_exec(grant(program)).unwrap();
    }
    spec.config = config;
    spec
}

/// Grants `dir` (canonicalised) to `spec` at `guest`; returns the host path.
fn grant_dir(spec: &mut PluginSpec, dir: &Path, guest: &str, mode: DirMode) -> PathBuf {
    let host = dir.canonicalize().expect("a temporary directory");
    spec.grants
        .add_dir(DirGrant::new(host.clone(), guest, mode).unwrap())
        .unwrap();
    host
}

/// Calls `run` with `arguments`.
async fn run(host: &Host, arguments: Value) -> CallOutcome {
    call(host, RUN, arguments).await
}

/// `sh -c script` as `run`'s arguments.
fn sh(script: &str) -> Value {
    json!({ "program": "sh", "args": ["-c", script] })
}

/// The JSON of a result that must be a success (the program exited 0).
fn ok(outcome: &CallOutcome) -> Value {
    let result = result_of(outcome);
    assert!(!result.is_error, "expected exit 0: {result:?}");
    json_of(outcome)
}

/// The JSON of a result that must be an error result (the program ran but
/// did not exit 0).
fn failed(outcome: &CallOutcome) -> Value {
    let result = result_of(outcome);
    assert!(result.is_error, "expected an error result: {result:?}");
    json_of(outcome)
}

/// The message of a call that must have been refused as `denied`.
fn denied(outcome: &CallOutcome) -> String {
    assert_eq!(error_code(outcome), "denied", "{:?}", outcome.result);
    outcome.result.as_ref().unwrap_err().to_string()
}

/// A normal call on `host` works (after a refusal, say).
async fn still_works(host: &Host) {
    let outcome = run(
        host,
        json!({"program": "/bin/echo", "args": ["still", "works"]}),
    )
    .await;
    assert_eq!(ok(&outcome)["stdout"], "still works\n");
}

#[tokio::test]
async fn arguments_reach_the_program_as_given_without_a_shell() {
    let host = host(vec![shell(&[], json!({}))]).await;
    let args = ["a; rm -rf /", "$(whoami)", "*"];
    let outcome = run(&host, json!({"program": "/bin/echo", "args": args})).await;
    assert_eq!(
        ok(&outcome),
        json!({
            "exit_code": 0,
            "signal": null,
            "stdout": "a; rm -rf / $(whoami) *\n",
            "stderr": "",
            "truncated": false,
            "timed_out": false,
        })
    );
    assert_eq!(text_of(&outcome), "exit 0");
}

#[tokio::test]
async fn a_non_zero_exit_is_an_error_result_with_the_output() {
    let host = host(vec![shell(&["sh"], json!({}))]).await;
    let outcome = run(&host, sh("echo partial; echo oops >&2; exit 3")).await;
    let data = failed(&outcome);
    assert_eq!(
        (&data["exit_code"], &data["signal"]),
        (&json!(3), &Value::Null)
    );
    assert_eq!(
        (&data["stdout"], &data["stderr"]),
        (&json!("partial\n"), &json!("oops\n"))
    );
    assert_eq!(text_of(&outcome), "exit 3");
    still_works(&host).await;
}

#[tokio::test]
async fn a_program_killed_by_a_signal_is_an_error_result() {
    let host = host(vec![shell(&["sh"], json!({}))]).await;
    let outcome = run(&host, sh("kill -TERM $$")).await;
    let data = failed(&outcome);
    assert_eq!(
        (&data["exit_code"], &data["signal"], &data["timed_out"]),
        (&Value::Null, &json!(15), &json!(false))
    );
    assert_eq!(text_of(&outcome), "killed by signal 15");
}

#[tokio::test]
async fn output_that_is_not_utf8_is_decoded_lossily() {
    let host = host(vec![shell(&["sh"], json!({}))]).await;
    let outcome = run(&host, sh("printf 'ok\\377'; printf '\\376err' >&2")).await;
    let data = ok(&outcome);
    assert_eq!(
        (&data["stdout"], &data["stderr"]),
        (&json!("ok\u{fffd}"), &json!("\u{fffd}err"))
    );
}

#[tokio::test]
async fn a_bad_config_is_refused_when_the_plugin_loads() {
    for (config, named) in [
        (json!({"output_kib": 0}), "output_kib"),
        (json!({"env": {"A=B": "c"}}), "A=B"),
        (json!({"shell": "/bin/sh"}), "shell"),
    ] {
        let err = tiny_harness_host::HostBuilder::new()
            .plugin(shell(&[], config.clone()))
            .build()
            .await
            .expect_err("a bad config");
        let message = err.to_string();
        assert!(message.contains(named), "{config}: {message}");
        assert!(!message.contains('\n'), "{config}: {message}");
    }
}

#[tokio::test]
async fn a_program_not_granted_is_denied_naming_the_grant() {
    let host = host(vec![shell(&[], json!({}))]).await;
    let outcome = run(
        &host,
        json!({"program": "python3", "args": ["-c", "print(1)"]}),
    )
    .await;
    let message = denied(&outcome);
    assert!(
        message.contains(r#"exec = [{ program = "python3" }]"#),
        "{message}"
    );
    still_works(&host).await;
}

#[tokio::test]
async fn arguments_outside_the_grants_patterns_are_denied_naming_the_argument() {
    let mut spec = shell(&[], json!({}));
    let patterns = ["%s", "[a-z]+"].map(String::from);
    spec.grants
        .add_exec(
            grant("/usr/bin/printf")
                .with_args(tiny_harness_sandbox::grant::ArgPatterns::new(&patterns).unwrap()),
        )
        .unwrap();
    let host = host(vec![spec]).await;
    let printf = |args: Value| json!({"program": "/usr/bin/printf", "args": args});
    let outcome = run(&host, printf(json!(["%s", "hello"]))).await;
    assert_eq!(ok(&outcome)["stdout"], "hello");
    // Every argument is checked, in full: not a prefix, not a substring.
    for (args, index, arg) in [
        (json!(["%s", "Hello"]), 2, "Hello"),
        (json!(["%s", "hello; id"]), 2, "hello; id"),
        (json!(["%d", "hello"]), 1, "%d"),
    ] {
        let message = denied(&run(&host, printf(args)).await);
        assert!(
            message.contains(&format!(
                "argument {index} {arg:?} of program \"/usr/bin/printf\""
            )),
            "{message}"
        );
        assert!(message.contains("args = [...]"), "{message}");
    }
    still_works(&host).await;
}

#[tokio::test]
async fn cwd_is_a_guest_path_inside_a_granted_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let mut spec = shell(&["/bin/pwd"], json!({}));
    let root = grant_dir(&mut spec, dir.path(), "/workspace", DirMode::ReadOnly);
    let host = host(vec![spec]).await;
    for (guest, expected) in [("/workspace/sub", root.join("sub")), ("/workspace", root)] {
        let outcome = run(&host, json!({"program": "/bin/pwd", "cwd": guest})).await;
        assert_eq!(
            ok(&outcome)["stdout"],
            format!("{}\n", expected.display()),
            "{guest}"
        );
    }
    for outside in [
        "/etc",
        "/",
        "/workspace/..",
        "/workspace/sub/../..",
        "/workspace2",
        "sub",
    ] {
        let outcome = run(&host, json!({"program": "/bin/pwd", "cwd": outside})).await;
        denied(&outcome);
        still_works(&host).await;
    }
}

#[tokio::test]
async fn a_cwd_in_a_nested_grant_is_the_directory_the_plugin_sees_there() {
    // `/workspace/data` is a grant of its own inside `/workspace`, whose
    // directory has a `data` of its own too.
    let outer = tempfile::tempdir().unwrap();
    let inner = tempfile::tempdir().unwrap();
    std::fs::create_dir(outer.path().join("data")).unwrap();
    std::fs::write(outer.path().join("data/which"), "outer").unwrap();
    std::fs::write(inner.path().join("which"), "inner").unwrap();
    let mut spec = shell(&["/bin/pwd"], json!({}));
    grant_dir(&mut spec, outer.path(), "/workspace", DirMode::ReadWrite);
    let inner = grant_dir(
        &mut spec,
        inner.path(),
        "/workspace/data",
        DirMode::ReadOnly,
    );
    // What a plugin sees at `/workspace/data` is the inner grant.
    let mut fs = crate::common::spec("fs", "fs");
    for dir in spec.grants.dirs() {
        fs.grants.add_dir(dir.clone()).unwrap();
    }
    let host = host(vec![spec, fs]).await;
    let read = call(
        &host,
        "fs/workspace.read_file",
        json!({"path": "/workspace/data/which"}),
    )
    .await;
    assert_eq!(text_of(&read), "inner");
    let outcome = run(
        &host,
        json!({"program": "/bin/pwd", "cwd": "/workspace/data"}),
    )
    .await;
    assert_eq!(ok(&outcome)["stdout"], format!("{}\n", inner.display()));
}

#[tokio::test]
async fn a_cwd_in_a_grant_named_through_a_symlink_is_allowed() {
    // A library caller may name a granted directory through a symlink; the
    // plugin's own view of it (the WASI preopen) works all the same.
    let dir = tempfile::tempdir().unwrap();
    let links = tempfile::tempdir().unwrap();
    let link = links.path().join("link");
    std::os::unix::fs::symlink(dir.path(), &link).unwrap();
    let mut spec = shell(&["/bin/pwd"], json!({}));
    spec.grants
        .add_dir(DirGrant::new(link, "/workspace", DirMode::ReadOnly).unwrap())
        .unwrap();
    let host = host(vec![spec]).await;
    let outcome = run(&host, json!({"program": "/bin/pwd", "cwd": "/workspace"})).await;
    let real = dir.path().canonicalize().unwrap();
    assert_eq!(ok(&outcome)["stdout"], format!("{}\n", real.display()));
}

#[tokio::test]
async fn a_cwd_through_a_symlink_out_of_the_grant_is_denied() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), dir.path().join("escape")).unwrap();
    let mut spec = shell(&["/bin/pwd"], json!({}));
    grant_dir(&mut spec, dir.path(), "/workspace", DirMode::ReadWrite);
    let host = host(vec![spec]).await;
    let outcome = run(
        &host,
        json!({"program": "/bin/pwd", "cwd": "/workspace/escape"}),
    )
    .await;
    denied(&outcome);
    still_works(&host).await;
}

#[tokio::test]
async fn without_a_cwd_a_program_runs_in_a_private_directory_removed_afterwards() {
    let host = host(vec![shell(&["sh"], json!({}))]).await;
    let outcome = run(&host, sh("pwd; ls -A; echo scratch > made; cat made")).await;
    let stdout = ok(&outcome)["stdout"].as_str().unwrap().to_owned();
    let lines: Vec<&str> = stdout.lines().collect();
    let [private, "scratch"] = lines[..] else {
        panic!("not an empty, writable directory: {stdout:?}")
    };
    assert!(Path::new(private).is_absolute(), "{private}");
    assert!(!Path::new(private).exists(), "{private} was left behind");
}

#[tokio::test]
async fn with_a_cwd_a_program_still_has_a_private_temporary_directory() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = shell(&["sh"], json!({}));
    grant_dir(&mut spec, dir.path(), "/workspace", DirMode::ReadOnly);
    let host = host(vec![spec]).await;
    let mut arguments = sh("t=$(mktemp) && echo scratch > \"$t\" && cat \"$t\" && echo \"$t\"");
    arguments["cwd"] = "/workspace".into();
    let outcome = run(&host, arguments).await;
    let data = ok(&outcome);
    let stdout = data["stdout"].as_str().unwrap();
    let [scratch, temp] = stdout.lines().collect::<Vec<_>>()[..] else {
        panic!("{data}")
    };
    assert_eq!(scratch, "scratch");
    assert!(!Path::new(temp).exists(), "{temp} was left behind");
}

#[tokio::test]
async fn stdin_is_passed_and_closed() {
    let host = host(vec![shell(&["/bin/cat"], json!({}))]).await;
    let outcome = run(
        &host,
        json!({"program": "/bin/cat", "stdin": "line one\nline two\n"}),
    )
    .await;
    assert_eq!(ok(&outcome)["stdout"], "line one\nline two\n");

    // More than a pipe holds, echoed back while it is written: the host
    // must read the output while it writes the input.
    let big: String = (0..20_000).map(|i| format!("{i:09}\n")).collect();
    let outcome = run(
        &host,
        json!({"program": "/bin/cat", "stdin": big, "timeout_ms": 20_000}),
    )
    .await;
    let data = ok(&outcome);
    assert_eq!(data["timed_out"], false);
    assert!(
        data["stdout"] == big.as_str(),
        "the input did not come back whole"
    );
}

#[tokio::test]
async fn only_the_configs_environment_reaches_the_program() {
    let ungranted = "CARGO_MANIFEST_DIR";
    assert!(
        std::env::var_os(ungranted).is_some(),
        "cargo sets {ungranted} for the tests"
    );
    let mut spec = shell(
        &["/usr/bin/env"],
        json!({"env": {
            "SHELL_TEST_GREETING": "hello there",
            "SHELL_TEST_FROM_HOST": "${CARGO_PKG_NAME}",
        }}),
    );
    spec.grants.add_env("CARGO_PKG_NAME").unwrap();
    let host = host(vec![spec]).await;
    let outcome = run(&host, json!({"program": "/usr/bin/env"})).await;
    let stdout = ok(&outcome)["stdout"].as_str().unwrap().to_owned();
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines.contains(&"SHELL_TEST_GREETING=hello there"),
        "{stdout}"
    );
    assert!(
        lines.contains(&"SHELL_TEST_FROM_HOST=tiny-harness-tests"),
        "{stdout}"
    );
    assert!(
        !lines
            .iter()
            .any(|l| l.starts_with(&format!("{ungranted}="))),
        "an ungranted host variable leaked: {stdout}"
    );
}

#[tokio::test]
async fn naming_an_ungranted_host_variable_in_the_environment_is_denied() {
    let spec = shell(
        &["/usr/bin/env"],
        json!({"env": {"SHELL_TEST_LEAK": "${CARGO_MANIFEST_DIR}"}}),
    );
    let host = host(vec![spec]).await;
    let message = denied(&run(&host, json!({"program": "/usr/bin/env"})).await);
    assert!(message.contains("CARGO_MANIFEST_DIR"), "{message}");
    assert!(
        !message.contains(env!("CARGO_MANIFEST_DIR")),
        "the value leaked: {message}"
    );
}
