//! `tiny-harness test CASES...`: a plugin's calls and what must come back,
//! written as data, run through the host with scripted programs and
//! files; a failure shows the call, what was expected and what came back;
//! a file that cannot be run is one line, exit 2.

use super::{mkfifo, run_in, stderr, stdout, workspace_root};

/// The shell plugin granted `wc` and `git` in the config's short forms,
/// with `wc` scripted: one case that holds, two that do not.
const SHELL: &str = r#"
[plugin]
path = "builtin:shell"
name = "shell"
tools = ["exec.run"]
grants = { exec = ["wc", { program = "git" }] }

[[program]]
program = "wc"
args = ["-l", "notes.txt"]
stdout = "2 notes.txt\n"

[[case]]
name = "wc answers as scripted"
tool = "exec.run"
arguments = { program = "wc", args = ["-l", "notes.txt"] }
contains = "2 notes.txt"
ran = [["wc", "-l", "notes.txt"]]

[[case]]
name = "a program not granted"
tool = "exec.run"
arguments = { program = "rm", args = ["-rf", "/"] }
contains = "removed"

[[case]]
name = "a program not scripted"
tool = "exec.run"
arguments = { program = "git", args = ["status"] }
error = "failed"
message = "no answer"
ran = []
"#;

/// The fs plugin with a temporary read-write directory holding one file.
const FS: &str = r#"
[plugin]
path = "builtin:fs"
name = "fs"
grants = { dirs = [{ guest = "/work", mode = "read-write", files = { "notes.txt" = "one\ntwo\n", "sub/a.txt" = "a" } }] }

[[case]]
name = "reads a file it was given"
tool = "workspace.read_file"
arguments = { path = "/work/sub/a.txt" }
contains = "a"

[[case]]
name = "what it writes is there for the next case"
tool = "workspace.write_file"
arguments = { path = "/work/new.txt", content = "hi" }
files = { "/work/new.txt" = "hi", "/work/notes.txt" = "one\ntwo\n" }

[[case]]
name = "reads what the case before wrote"
tool = "fs/workspace.read_file"
arguments = { path = "/work/new.txt" }
contains = "hi"

[[case]]
name = "a file that differs"
tool = "workspace.write_file"
arguments = { path = "/work/notes.txt", content = "three" }
files = { "/work/notes.txt" = "four" }
"#;

#[test]
fn cases_run_through_the_host_and_each_failure_shows_the_call_expected_and_got() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("shell.toml"), SHELL).unwrap();
    std::fs::write(dir.path().join("fs.toml"), FS).unwrap();
    let out = run_in(dir.path(), &["test", "shell.toml", "fs.toml"], None);
    let shown = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{shown}{}", stderr(&out));
    for line in [
        "ok   the tools it registers",
        "ok   wc answers as scripted",
        // Denied by the grants, as in production; the hint is in the
        // file's own words.
        "FAIL a program not granted\n  call:      shell/exec.run {\"args\":[\"-rf\",\"/\"],\"program\":\"rm\"}\n  result:\n    expected:  a result\n    came back: denied error: denied: program \"rm\" is not granted: grant it with exec = [\"rm\"] in [plugin.grants]",
        // Expected as an error, with a part of its message; `ran = []`
        // fails: the program was asked for (and had no answer).
        "FAIL a program not scripted\n  call:      shell/exec.run {\"args\":[\"status\"],\"program\":\"git\"}\n  ran:\n    expected:  []\n    came back: [[\"git\",\"status\"]]",
        "2 passed, 2 failed (shell.toml)",
        "ok   reads a file it was given",
        "ok   what it writes is there for the next case",
        "ok   reads what the case before wrote",
        "FAIL a file that differs",
        "  file /work/notes.txt:\n    expected:  \"four\"\n    came back: \"three\"",
        "3 passed, 1 failed (fs.toml)",
    ] {
        assert!(shown.contains(line), "{line:?} not in:\n{shown}");
    }
    // The unscripted program's hint names the table to add.
    std::fs::write(
        dir.path().join("hint.toml"),
        SHELL
            .replace("error = \"failed\"", "text = \"\"")
            .replace("message = \"no answer\"\n", ""),
    )
    .unwrap();
    let out = run_in(dir.path(), &["test", "hint.toml"], None);
    assert!(
        stdout(&out).contains(
            "the test scripts no answer for git [\"status\"]: add a [[program]] with program = \"git\" and args = [\"status\"]"
        ),
        "{}",
        stdout(&out)
    );

    // All of them holding: exit 0, a line each.
    let passing: String = FS
        .split("[[case]]\nname = \"a file that differs\"")
        .next()
        .unwrap()
        .to_owned();
    std::fs::write(dir.path().join("pass.toml"), passing).unwrap();
    let out = run_in(dir.path(), &["test", "pass.toml"], None);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(
        stdout(&out).ends_with("3 passed, 0 failed (pass.toml)\n"),
        "{}",
        stdout(&out)
    );
}

/// One file of cases for a plugin in three languages: the textstats
/// table against the Rust component, given on the command line.
#[test]
fn one_cases_file_runs_against_a_component_given_on_the_command_line() {
    let root = workspace_root();
    let wasm = root.join("target/wasm-plugins/wasm32-wasip2/release/textstats_rust.wasm");
    let cases = root.join("plugins/examples/textstats.cases.toml");
    let out = run_in(
        &root,
        &[
            "test",
            &cases.display().to_string(),
            "--plugin",
            &wasm.display().to_string(),
        ],
        None,
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(
        stdout(&out).contains("19 passed, 0 failed"),
        "{}",
        stdout(&out)
    );
    // Another component against the same file: its tools are not the
    // file's.
    let hello = root.join("target/wasm-plugins/wasm32-wasip2/release/hello.wasm");
    let out = run_in(
        &root,
        &[
            "test",
            &cases.display().to_string(),
            "--plugin",
            &hello.display().to_string(),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("FAIL the tools it registers"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_cases_file_that_cannot_be_run_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
    write("key.toml", "[plugin]\npath = \"x.wasm\"\nbogus = 1\n");
    write("both.toml", "[plugin]\npath = \"x.wasm\"\ncrate = \".\"\n");
    write("none.toml", "[[case]]\ntool = \"a.b\"\n");
    write(
        "outside.toml",
        "[plugin]\npath = \"builtin:fs\"\n[[case]]\ntool = \"workspace.stat\"\nfiles = { \"/etc/passwd\" = \"\" }\n",
    );
    write(
        "both-ways.toml",
        "[plugin]\npath = \"builtin:fs\"\n[[case]]\ntool = \"a.b\"\nerror = \"denied\"\njson = {}\n",
    );
    write(
        "bad.json",
        "{\"plugin\": {\"path\": \"x.wasm\"}, \"case\": [{\"tool\": 7}]}",
    );
    write(
        "build.toml",
        "[plugin]\npath = \"x.wasm\"\nbuild = [\"sh\", \"-c\", \"exit 3\"]\n",
    );
    write("missing.toml", "[plugin]\npath = \"gone.wasm\"\n");
    write(
        "escape.toml",
        "[plugin]\npath = \"builtin:fs\"\ngrants = { dirs = [{ guest = \"/w\", files = { \"../x\" = \"\" } }] }\n",
    );
    mkfifo(&dir.path().join("fifo.toml"));
    for (file, says) in [
        (
            "key.toml",
            "key.toml:3:1: unknown field `bogus`, expected one of `path`, `crate`",
        ),
        (
            "both.toml",
            "give path (a component) or crate (a Rust crate to build), not both",
        ),
        (
            "none.toml",
            "name the component with path = \"PLUGIN.wasm\"",
        ),
        ("outside.toml", "\"/etc/passwd\" is in no granted directory"),
        ("both-ways.toml", "error expects no result"),
        ("bad.json", "bad.json:1:"),
        ("build.toml", "the build sh -c exit 3 failed"),
        ("missing.toml", "cannot read"),
        (
            "escape.toml",
            "file \"../x\": give a path inside the directory",
        ),
        ("fifo.toml", "not a regular file"),
    ] {
        let out = run_in(dir.path(), &["test", file], None);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{file}: {err}");
        assert_eq!(err.lines().count(), 1, "{file}: {err}");
        assert!(err.contains(says), "{file}: {says:?} not in {err}");
    }
    // A file that cannot run does not stop the next one.
    write(
        "ok.toml",
        "[plugin]\npath = \"builtin:fs\"\nname = \"fs\"\ntools = [\"workspace.list_dir\", \"workspace.read_file\", \"workspace.search\", \"workspace.stat\", \"workspace.write_file\"]\n",
    );
    let out = run_in(dir.path(), &["test", "missing.toml", "ok.toml"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stdout(&out).contains("1 passed, 0 failed (ok.toml)"),
        "{}",
        stdout(&out)
    );
    // A bundled plugin given on the command line.
    let out = run_in(
        dir.path(),
        &["test", "ok.toml", "--plugin", "builtin:fs"],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Options that do nothing here are refused.
    let out = run_in(dir.path(), &["--locked", "test", "ok.toml"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--locked does nothing with `test`"),
        "{}",
        stderr(&out)
    );
}
