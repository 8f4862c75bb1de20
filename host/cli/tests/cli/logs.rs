//! Plugin logs: what a plugin writes to stdout and stderr reaches the log
//! on standard error with `--verbose` (or `RUST_LOG`), with the plugin's
//! name, the stream and the call's id, escaped, capped per call, and never
//! the model's context; without either nothing is logged.

use std::path::Path;
use std::process::{Command, Output};

use super::{hostile_config, shared_cache, stderr, stdout};

/// Runs the binary in `dir` with `args`, `RUST_LOG` set to `rust_log` (or
/// unset).
fn run(dir: &Path, args: &[&str], rust_log: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tiny-harness"));
    command
        .args(args)
        .current_dir(dir)
        .env("TINY_HARNESS_CACHE_DIR", shared_cache())
        .env_remove("RUST_LOG");
    if let Some(filter) = rust_log {
        command.env("RUST_LOG", filter);
    }
    command.output().unwrap()
}

const LOG: &str = "hostile/chaos.log";

#[test]
fn verbose_shows_what_a_plugin_wrote_with_its_name_and_call_id() {
    let dir = tempfile::tempdir().unwrap();
    hostile_config(
        dir.path(),
        "tiny-harness",
        "config = { mode = \"normal\" }\n",
    );
    let args = r#"{"stdout":"progress: 50%\n","stderr":"warning: \u001b[31mred\n","repeat":1}"#;
    let out = run(
        dir.path(),
        &["--verbose", "call", LOG, args, "--id", "c-7"],
        None,
    );
    let (shown, log) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{log}");
    let line = log
        .lines()
        .find(|l| l.contains("warning:"))
        .unwrap_or_else(|| panic!("{log}"));
    assert!(line.contains("id=c-7"), "{line}");
    assert!(line.contains("plugin=\"hostile\""), "{line}");
    assert!(line.contains("stream=\"stderr\""), "{line}");
    // Escaped: the terminal gets no escape sequence from a plugin.
    assert!(line.contains(r"\x1b[31mred"), "{line}");
    let line = log
        .lines()
        .find(|l| l.contains("progress: 50%"))
        .unwrap_or_else(|| panic!("{log}"));
    assert!(line.contains("stream=\"stdout\""), "{line}");
    // The model sees the result only.
    assert!(shown.contains("logged"), "{shown}");
    assert!(
        !shown.contains("progress") && !shown.contains("warning"),
        "{shown}"
    );

    // Without --verbose or RUST_LOG, nothing is logged.
    let out = run(dir.path(), &["call", LOG, args], None);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stderr(&out), "");
    // RUST_LOG chooses instead.
    let out = run(
        dir.path(),
        &["call", LOG, args],
        Some("tiny_harness::plugin=info"),
    );
    assert!(stderr(&out).contains("progress: 50%"), "{}", stderr(&out));
}

#[test]
fn a_plugin_that_writes_much_is_capped_and_never_trapped_for_it() {
    let dir = tempfile::tempdir().unwrap();
    hostile_config(
        dir.path(),
        "tiny-harness",
        "config = { mode = \"normal\" }\n",
    );
    // 1.1 MB on stderr, far past what one call keeps.
    let args = r#"{"stdout":"","stderr":"0123456789\n","repeat":100000}"#;
    let out = run(dir.path(), &["-v", "call", LOG, args], None);
    let log = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).contains("logged"));
    // 200 lines from the start, then the note, then the last 20.
    let lines: Vec<&str> = log.lines().collect();
    let kept = lines.iter().filter(|l| l.contains("0123456789")).count();
    assert_eq!(kept, 200 + 20, "{kept} lines logged");
    let note = lines
        .iter()
        .position(|l| l.contains("more lines and") && l.contains("more bytes not logged"))
        .unwrap_or_else(|| panic!("no note of what was not logged: {log}"));
    let after = lines[note..].iter().filter(|l| l.contains("0123456789"));
    assert_eq!(after.count(), 20, "{log}");
}
