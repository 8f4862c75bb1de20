//! Untrusted input at the command line: FIFOs and devices where files are
//! expected, calls blocked in host calls, oversized standard input, and
//! plugin text with control characters on the way to a terminal.

use super::*;

#[test]
fn a_fifo_or_a_device_as_config_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    mkfifo(&dir.path().join("fifo.toml"));
    let fifo = run_in(dir.path(), &["--config", "fifo.toml", "tools"], None);
    one_error_line(
        &fifo,
        &[
            "fifo.toml: cannot read the config: it is a FIFO, not a regular file: give the path of the config file itself",
        ],
    );

    let zero = run_in(dir.path(), &["--config", "/dev/zero", "tools"], None);
    one_error_line(
        &zero,
        &["/dev/zero: cannot read the config: it is a character device, not a regular file"],
    );
}

#[test]
fn a_fifo_or_a_device_as_a_plugin_component_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    mkfifo(&dir.path().join("fifo.wasm"));
    std::fs::write(
        dir.path().join("fifo.toml"),
        "[plugins.fs]\npath = \"fifo.wasm\"\n",
    )
    .unwrap();
    let fifo = run_in(dir.path(), &["--config", "fifo.toml", "tools"], None);
    one_error_line(
        &fifo,
        &[
            "plugin fs: cannot read ",
            "fifo.wasm: it is a FIFO, not a regular file: give the path of the plugin component itself",
        ],
    );

    std::fs::write(
        dir.path().join("zero.toml"),
        "[plugins.fs]\npath = \"/dev/zero\"\n",
    )
    .unwrap();
    let zero = run_in(dir.path(), &["--config", "zero.toml", "tools"], None);
    one_error_line(
        &zero,
        &["plugin fs: cannot read /dev/zero: it is a character device, not a regular file"],
    );
}

/// The guest blocks in a host call (WASI opens the FIFO on a blocking
/// thread that never returns): the call times out, and the process must
/// still end instead of waiting for that thread.
#[test]
fn a_call_blocked_on_a_fifo_times_out_and_the_process_exits() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("state")).unwrap();
    mkfifo(&dir.path().join("state/fifo"));
    hostile_config(
        dir.path(),
        "fifo",
        "limits = { timeout_ms = 300 }\n[plugins.hostile.grants]\ndirs = [{ host = \"state\", guest = \"/state\" }]\n",
    );
    let output = run_in(
        dir.path(),
        &[
            "--config",
            "fifo.toml",
            "call",
            "hostile/chaos.read_path",
            r#"{"path":"/state/fifo"}"#,
        ],
        None,
    );
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}{}", stderr(&output));
    assert!(text.starts_with("<tool-result-"), "{text}");
    assert!(text.contains("status=\"error\""), "{text}");
    assert!(text.contains("code=\"timeout\""), "{text}");
}

#[test]
fn call_arguments_on_standard_input_are_bounded() {
    let dir = sandbox();
    let huge = format!(r#"{{"path":"{}"}}"#, "a".repeat(64 << 20));
    let output = run_in(dir.path(), &["call", "fs/workspace.stat", "-"], Some(&huge));
    one_error_line(
        &output,
        &["ARGS_JSON on standard input is more than 64 MiB"],
    );
}

/// Runs `tools` with `config` in `dir`: the whole table, which must hold no
/// raw control character, and the `echo` tool's row.
fn echo_row(dir: &Path, config: &str) -> (String, String) {
    let output = run_in(dir, &["--config", config, "tools"], None);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(!has_raw_controls(&text), "{text:?}");
    let echo = text
        .lines()
        .find(|l| l.starts_with("hostile/chaos.echo "))
        .unwrap_or_else(|| panic!("{text}"))
        .to_owned();
    (text, echo)
}

#[test]
fn tool_descriptions_reach_the_terminal_escaped() {
    let dir = tempfile::tempdir().unwrap();
    // The default control-chars description: an escape sequence, then a
    // newline, a carriage return and a right-to-left override.
    hostile_config(
        dir.path(),
        "control",
        "[plugins.hostile.config]\nmode = \"control-chars\"\n",
    );
    let (text, echo) = echo_row(dir.path(), "control.toml");
    assert!(
        // The first line, escaped, and a mark that there is more.
        echo.ends_with(r"Echoes \x1b[31mred\x1b[0m text. …"),
        "{echo:?}"
    );
    assert!(!text.contains("SECOND LINE"), "only the first line: {text}");
    let json = run_in(
        dir.path(),
        &["--config", "control.toml", "tools", "--json"],
        None,
    );
    let tools: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let count = tools.as_array().unwrap().len();
    assert_eq!(
        text.lines().count(),
        1 + count,
        "a header and one row per tool:\n{text}"
    );
    // --json keeps the description exactly.
    let description = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "hostile/chaos.echo")
        .unwrap()["description"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        description,
        "Echoes \u{1b}[31mred\u{1b}[0m text.\nSECOND LINE\r\u{202e}desrever"
    );
    // ... and its bytes carry no raw override (nor any C1 control): both
    // are \uXXXX escapes in the JSON text.
    let raw = String::from_utf8(json.stdout.clone()).unwrap();
    assert!(raw.contains(r"\u202edesrever"), "{raw}");
    assert!(
        !raw.chars()
            .any(|c| c == '\u{202e}' || ('\u{80}'..='\u{9f}').contains(&c)),
        "raw text in --json"
    );

    // A carriage return and an override within the first line. (In a
    // directory of its own: the lock beside the first config pinned the
    // first description, and a pinned tool is shown as pinned.)
    let other = dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    hostile_config(
        &other,
        "overwrite",
        "[plugins.hostile.config]\nmode = \"control-chars\"\nmessage = \"Echoes.\\rREAD-ONLY \\u202Eefas\"\n",
    );
    let (_, echo) = echo_row(&other, "overwrite.toml");
    assert!(
        echo.ends_with(r"Echoes.\rREAD-ONLY \u{202e}efas"),
        "{echo:?}"
    );
}

#[test]
fn a_register_error_is_one_escaped_line() {
    let dir = tempfile::tempdir().unwrap();
    hostile_config(
        dir.path(),
        "refuse",
        "[plugins.hostile.config]\nmode = \"register-error\"\nmessage = \"bad\\u001b[2J\\nforged line\"\n",
    );
    let output = run_in(dir.path(), &["--config", "refuse.toml", "tools"], None);
    let line = one_error_line(
        &output,
        &[
            "plugin hostile: register failed: ",
            r"bad\x1b[2J\nforged line",
        ],
    );
    assert!(!has_raw_controls(&line), "{line:?}");
}

/// A tool the registry refuses is left out with one warning line that
/// names it and says why; the plugin's other tools load and are listed.
#[test]
fn a_tool_the_registry_refuses_is_one_warning_line_and_the_others_load() {
    let dir = tempfile::tempdir().unwrap();
    hostile_config(
        dir.path(),
        "broken",
        "[plugins.hostile.config]\nmode = \"bad-schema\"\n",
    );
    let warning = "tiny-harness: warning: plugin hostile: tool hostile/chaos.broken is not \
                   registered: tool hostile/chaos.broken has an invalid input schema: ";
    // The first run pins the others; the next, held to that lock, says
    // the same.
    for run in ["first", "second"] {
        let output = run_in(dir.path(), &["--config", "broken.toml", "tools"], None);
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(0), "{run}: {err}");
        let text = stdout(&output);
        assert!(
            text.lines().any(|l| l.starts_with("hostile/chaos.echo ")),
            "{run}: {text}"
        );
        assert!(
            text.lines().any(|l| l.starts_with("hostile/chaos.record ")),
            "{run}: {text}"
        );
        assert!(!text.contains("broken"), "{run}: {text}");
        let lines: Vec<&str> = err.lines().collect();
        let [line] = lines.as_slice() else {
            panic!("{run}: one line on stderr: {err:?}")
        };
        assert!(line.starts_with(warning), "{run}: {line}");
    }
    let lock = std::fs::read_to_string(dir.path().join("broken.lock")).unwrap();
    assert!(
        lock.contains("\"echo\"") && !lock.contains("broken"),
        "{lock}"
    );

    // A refused name a terminal would act on is escaped.
    let other = dir.path().join("named");
    std::fs::create_dir(&other).unwrap();
    hostile_config(
        &other,
        "named",
        "[plugins.hostile.config]\nmode = \"custom\"\n\n\
         [[plugins.hostile.config.servers]]\nname = \"chaos\"\n\n\
         [[plugins.hostile.config.servers.tools]]\nname = \"echo\"\n\
         description = \"Echoes.\"\ninput_schema = \"{}\"\n\n\
         [[plugins.hostile.config.servers.tools]]\nname = \"bad\\u001b[2J\\nforged\"\n\
         description = \"d\"\ninput_schema = \"{}\"\n",
    );
    let output = run_in(&other, &["--config", "named.toml", "tools"], None);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert!(!has_raw_controls(&err), "{err:?}");
    assert_eq!(err.lines().count(), 1, "{err:?}");
    assert!(
        err.starts_with(
            r"tiny-harness: warning: plugin hostile: tool hostile/chaos.bad\x1b[2J\nforged is not registered: invalid tool name "
        ),
        "{err}"
    );
    assert!(stdout(&output).contains("hostile/chaos.echo "));
}

/// The error a plugin's `call` returns reaches the terminal escaped.
#[test]
fn a_call_error_reaches_the_terminal_escaped() {
    let dir = tempfile::tempdir().unwrap();
    hostile_config(dir.path(), "hostile", "");
    let args = [
        "--config",
        "hostile.toml",
        "call",
        "hostile/chaos.fail_with",
        r#"{"message":"x\u001b[31my\nz"}"#,
    ];
    let output = run_in(dir.path(), &args, None);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(!has_raw_controls(&text), "{text:?}");
    assert!(text.contains("code=\"failed\""), "{text}");
    assert!(text.contains(r"x\x1b[31my"), "{text}");

    let mut json_args = args.to_vec();
    json_args.push("--json");
    let output = run_in(dir.path(), &json_args, None);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let json = stdout(&output);
    assert!(
        !json.contains(['\u{1b}', '\r']),
        "JSON escapes it: {json:?}"
    );
    let outcome: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(outcome["error"]["code"], "failed");
}

/// A result's content is shown escaped, its lines kept, while `--json`
/// carries it (and the model's rendered block) byte for byte.
#[test]
fn call_output_is_escaped_and_json_is_exact() {
    let dir = tempfile::tempdir().unwrap();
    hostile_config(dir.path(), "hostile", "");
    let message = "x\u{1b}[31my\nz\r\u{202e}w\tv";
    let arguments = serde_json::json!({ "message": message }).to_string();
    let args = [
        "--config",
        "hostile.toml",
        "call",
        "hostile/chaos.echo",
        arguments.as_str(),
    ];
    let output = run_in(dir.path(), &args, None);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(!has_raw_controls(&text), "{text:?}");
    // The escapes show; the newline and the tab stay as they are.
    assert!(
        text.contains("\nx\\x1b[31my\nz\\r\\u{202e}w\tv\n"),
        "{text}"
    );

    let mut json_args = args.to_vec();
    json_args.push("--json");
    let output = run_in(dir.path(), &json_args, None);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // JSON escapes the controls itself (and leaves U+202E as it is).
    let json = stdout(&output);
    assert!(!json.contains(['\u{1b}', '\r']), "{json:?}");
    let outcome: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(outcome["result"]["content"][0]["text"], message);
    let rendered = outcome["rendered"].as_str().unwrap();
    assert!(
        rendered.contains(&format!("\n{message}\n")),
        "the rendered block in JSON is the model's, unescaped: {rendered:?}"
    );
}
