//! `tiny-harness serve`, driven by real MCP clients: the official Python
//! SDK's client (`serve/client.py`) over stdio and streamable HTTP at both
//! protocol generations, and raw HTTP for what no polite client sends.

mod conformance;
mod drain;
mod inspector;
mod oauth;
mod refusals;
mod replicas;
mod rug_pull;
mod search;
mod stdio;
mod upstream_changes;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use super::{sandbox, shared_cache, venv, wait_live_for};

/// The two tokens of [`TOKENS`].
const CI_TOKEN: &str = "ci-0123456789abcdef0123456789abcdef";
const IDE_TOKEN: &str = "ide-0123456789abcdef0123456789abcdef";

/// A tokens file for the clients `ci` and `ide`.
fn tokens_file(dir: &Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let path = dir.join("tokens");
    std::fs::write(
        &path,
        format!("# the gateway's clients\nci {CI_TOKEN}\nide {IDE_TOKEN}\n"),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path
}

/// `[serve]` for `ci` (two tools, one renamed) and `ide` (every tool).
const CLIENTS: &str = "\n[serve.clients.ci]\ntools = [\"fs/*.read_file\", \"fs/*.stat\"]\n\
                       rename = { read = \"fs/workspace.read_file\" }\n[serve.clients.ide]\n";

/// A `serve --http` child on a port of its own, killed when dropped.
struct Gateway {
    child: Child,
    addr: SocketAddr,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Gateway {
    /// Starts `serve --http 127.0.0.1:0` in `dir` with `extra` arguments
    /// and waits for the address it prints.
    fn start(dir: &Path, extra: &[&str]) -> Gateway {
        Gateway::start_at(dir, "127.0.0.1:0".parse().unwrap(), extra)
    }

    /// Starts `serve --http ADDR` in `dir` with `extra` arguments and
    /// waits for the address it prints (ADDR's, unless its port is 0).
    pub(super) fn start_at(dir: &Path, addr: SocketAddr, extra: &[&str]) -> Gateway {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tiny-harness"))
            .args(["serve", "--http", &addr.to_string()])
            .args(extra)
            .current_dir(dir)
            .env("TINY_HARNESS_CACHE_DIR", shared_cache())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap());
        let (send, receive) = std::sync::mpsc::channel();
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let kept = stderr.clone();
        std::thread::spawn(move || {
            let mut line = String::new();
            while lines.read_line(&mut line).is_ok_and(|n| n > 0) {
                if let Some(url) = line.trim().strip_prefix("tiny-harness: serving http://") {
                    let _ = send.send(url.trim_end_matches("/mcp").to_owned());
                }
                kept.lock().unwrap().push_str(&line);
                line.clear();
            }
        });
        let mut gateway = Gateway {
            child,
            addr,
            stderr,
        };
        // Dropped (and so killed) on a panic from here on.
        match receive.recv_timeout(Duration::from_secs(60)) {
            Ok(bound) => gateway.addr = bound.parse().unwrap(),
            Err(_) => panic!("serve did not start at {addr}: {}", gateway.log()),
        }
        if addr.port() != 0 {
            assert_eq!(gateway.addr, addr, "{}", gateway.log());
        }
        gateway
    }

    fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// What the gateway logged so far.
    fn log(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `serve/client.py` with `request`, returning its answer.
fn client(request: Value) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/serve/client.py");
    let mut child = Command::new(venv::python())
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(request.to_string().as_bytes())
        .unwrap();
    let output = wait_live_for(child, Duration::from_secs(90), "the Python client");
    assert!(
        output.status.success(),
        "{request}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The steps every client below takes: list, a call with arguments, a
/// call that fails validation, and one of a tool that does not exist.
fn steps(read: &str) -> Value {
    json!([
        ["list"],
        ["call", read, {"path": "hello.txt"}],
        ["call", read, {}],
        ["call", "fs__workspace.nonexistent", {}],
    ])
}

/// Checks the answers to [`steps`].
fn check_answers(answer: &Value, version: &str, listed: &[&str]) {
    assert_eq!(answer["version"], version, "{answer}");
    let steps = answer["steps"].as_array().unwrap();
    assert_eq!(steps[0], json!(listed), "{answer}");
    let read = &steps[1];
    assert_eq!(read["is_error"], false, "{read}");
    let text = read["text"].as_str().unwrap();
    // The untrusted block, whole, with the file's text inside it.
    assert!(text.starts_with("<tool-result-"), "{text}");
    assert!(text.contains("tool=\"fs/workspace.read_file\""), "{text}");
    assert!(text.contains("hello from the workspace"), "{text}");
    assert!(text.contains("not instructions"), "{text}");
    // The tool's checked JSON, as structured content.
    assert_eq!(read["structured"]["total_lines"], 1, "{read}");
    let invalid = &steps[2];
    assert_eq!(invalid["is_error"], true, "{invalid}");
    assert_eq!(invalid["meta"]["io.tiny-harness/code"], "invalid_arguments");
    assert!(
        invalid["text"]
            .as_str()
            .unwrap()
            .contains("code=\"invalid_arguments\"")
    );
    let unknown = &steps[3];
    assert_eq!(unknown["is_error"], true, "{unknown}");
    assert_eq!(unknown["meta"]["io.tiny-harness/code"], "unknown_tool");
}

const EVERY_FS_TOOL: [&str; 5] = [
    "fs__workspace.list_dir",
    "fs__workspace.read_file",
    "fs__workspace.search",
    "fs__workspace.stat",
    "fs__workspace.write_file",
];

#[test]
fn a_stdio_client_started_as_a_desktop_assistant_starts_it_lists_and_calls() {
    let dir = sandbox();
    let config = dir.path().join("tiny-harness.toml");
    // As an `mcpServers` entry says it: the program, and `serve` with an
    // absolute config path (the client's working directory is its own).
    let command = json!([
        env!("CARGO_BIN_EXE_tiny-harness"),
        "serve",
        "--config",
        config.display().to_string()
    ]);
    for (mode, version) in [("legacy", "2025-11-25"), ("auto", "2026-07-28")] {
        let answer = client(json!({
            "mode": mode,
            "command": command,
            "env": {"TINY_HARNESS_CACHE_DIR": shared_cache().display().to_string()},
            "steps": steps("fs__workspace.read_file"),
        }));
        check_answers(&answer, version, &EVERY_FS_TOOL);
    }
}

#[test]
fn http_clients_at_both_revisions_see_their_own_tool_sets() {
    let dir = sandbox();
    let config = dir.path().join("tiny-harness.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{text}{CLIENTS}")).unwrap();
    let tokens = tokens_file(dir.path());
    let gateway = Gateway::start(dir.path(), &["--tokens", tokens.to_str().unwrap()]);
    for (mode, version) in [("legacy", "2025-11-25"), ("2026-07-28", "2026-07-28")] {
        let ide = client(json!({
            "mode": mode, "url": gateway.url(), "token": IDE_TOKEN,
            "steps": steps("fs__workspace.read_file"),
        }));
        check_answers(&ide, version, &EVERY_FS_TOOL);
        // `ci` sees two tools, one under its own name; a tool outside its
        // set is unknown, exactly as one that does not exist.
        let ci = client(json!({
            "mode": mode, "url": gateway.url(), "token": CI_TOKEN,
            "steps": steps("read"),
        }));
        check_answers(&ci, version, &["read", "fs__workspace.stat"]);
        let outside = client(json!({
            "mode": mode, "url": gateway.url(), "token": CI_TOKEN,
            "steps": [
                ["call", "fs__workspace.list_dir", {"path": "."}],
                ["call", "fs__workspace.read_file", {"path": "hello.txt"}],
                ["call", "fs/workspace.list_dir", {"path": "."}],
                ["call", "fs__workspace.no_such_tool", {"path": "."}],
            ],
        }));
        let answers = outside["steps"].as_array().unwrap();
        let texts: Vec<String> = answers
            .iter()
            .map(|a| {
                assert_eq!(a["meta"]["io.tiny-harness/code"], "unknown_tool", "{a}");
                // The block names the tool as called and a call id: the
                // rest is the same for a hidden tool and a missing one.
                let text = a["text"].as_str().unwrap();
                let after = text.split_once("is registered").unwrap().1;
                after.split_once("</part-").unwrap().0.to_owned()
            })
            .collect();
        assert!(texts.windows(2).all(|w| w[0] == w[1]), "{texts:?}");
    }
    let log = gateway.log();
    // One line per request, with the client and the outcome; never the
    // arguments.
    assert!(
        log.contains("client=\"ci\" method=\"tools/call\" tool=\"read\""),
        "{log}"
    );
    assert!(log.contains("outcome=\"unknown_tool\""), "{log}");
    assert!(!log.contains("hello.txt"), "{log}");
}

/// Sends `request` (raw HTTP/1.1) to `addr` and returns the status and the
/// whole response.
pub(super) fn raw_http(addr: SocketAddr, request: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let response = String::from_utf8_lossy(&response).into_owned();
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, response)
}

/// A POST of `body` to `/mcp` with `headers` (each ending in CRLF).
pub(super) fn post(addr: SocketAddr, headers: &str, body: &str) -> (u16, String) {
    raw_http(
        addr,
        &format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nConnection: close\r\n{headers}\
             Content-Length: {}\r\n\r\n{body}",
            addr.port(),
            body.len()
        ),
    )
}

/// The shell plugin, granted `sh`, its programs marked with `marker`.
fn shell_config(dir: &Path, marker: &str) -> std::path::PathBuf {
    let config = dir.join("shell.toml");
    std::fs::write(
        &config,
        format!(
            "[plugins.shell]\npath = {:?}\n[plugins.shell.grants]\n\
             exec = [{{ program = \"sh\", env = [\"TINY_HARNESS_TEST_MARKER\"] }}]\n\
             [plugins.shell.config]\nenv = {{ TINY_HARNESS_TEST_MARKER = {marker:?} }}\n",
            super::fs_wasm()
                .with_file_name("shell.wasm")
                .display()
                .to_string()
        ),
    )
    .unwrap();
    config
}

#[test]
fn a_cancelled_call_kills_its_program_at_once_over_every_transport() {
    use super::procs::{marker, pids_with};
    let dir = tempfile::tempdir().unwrap();
    let marker = marker("serve-cancel");
    let config = shell_config(dir.path(), &marker);
    let gateway = Gateway::start(dir.path(), &["--config", config.to_str().unwrap()]);
    let stdio = json!([
        env!("CARGO_BIN_EXE_tiny-harness"),
        "serve",
        "--config",
        config.display().to_string()
    ]);
    let sleeper = json!({"program": "sh", "args": ["-c", "sleep 60"]});
    for (mode, transport) in [
        ("legacy", json!({"command": stdio})),
        ("2026-07-28", json!({"command": stdio})),
        ("legacy", json!({"url": gateway.url()})),
        ("2026-07-28", json!({"url": gateway.url()})),
    ] {
        // Watch the program while the client calls and then abandons it.
        let seen = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let watcher = {
            let (seen, done, marker) = (seen.clone(), done.clone(), marker.clone());
            std::thread::spawn(move || {
                while !done.load(std::sync::atomic::Ordering::SeqCst) {
                    if !pids_with(&marker).is_empty() {
                        seen.store(true, std::sync::atomic::Ordering::SeqCst);
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        };
        let mut request = transport.clone();
        request["mode"] = json!(mode);
        request["env"] = json!({"TINY_HARNESS_CACHE_DIR": shared_cache().display().to_string()});
        request["steps"] = json!([
            ["cancel", "shell__exec.run", sleeper, 3],
            ["call", "shell__exec.run", {"program": "sh", "args": ["-c", "echo still serving"]}],
        ]);
        let answer = client(request);
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        watcher.join().unwrap();
        assert!(
            seen.load(std::sync::atomic::Ordering::SeqCst),
            "{mode} {transport}: the program never ran"
        );
        assert_eq!(answer["steps"][0]["cancelled"], true, "{answer}");
        // Gone by the time the next call was answered, which it was.
        assert!(
            pids_with(&marker).is_empty(),
            "{mode} {transport}: {:?}",
            pids_with(&marker)
        );
        assert!(
            answer["steps"][1]["text"]
                .as_str()
                .unwrap()
                .contains("still serving"),
            "{answer}"
        );
    }
    assert!(
        gateway.log().contains("outcome=\"cancelled\""),
        "{}",
        gateway.log()
    );
}

#[test]
fn watch_reloads_a_rebuilt_plugin_tells_clients_and_survives_a_broken_one() {
    let built = super::fs_wasm().with_file_name("hello.wasm");
    // Another plugin of the same workspace, built with every test run.
    let rebuilt = super::fs_wasm().with_file_name("textstats_rust.wasm");
    // Each client has a config of its own, so that no gateway sees
    // another's changes.
    let project = || {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("tiny-harness.toml"),
            "[plugins.p]\npath = \"p.wasm\"\n",
        )
        .unwrap();
        std::fs::copy(&built, dir.path().join("p.wasm")).unwrap();
        dir
    };
    let (a, b, c) = (project(), project(), project());
    let (http_b, http_c) = (
        Gateway::start(b.path(), &["--watch"]),
        Gateway::start(c.path(), &["--watch"]),
    );
    let stdio = json!([
        env!("CARGO_BIN_EXE_tiny-harness"),
        "serve",
        "--watch",
        "--config",
        a.path().join("tiny-harness.toml").display().to_string()
    ]);
    for (mode, transport, dir) in [
        ("legacy", json!({"command": stdio}), a.path()),
        ("legacy", json!({"url": http_b.url()}), b.path()),
        ("2026-07-28", json!({"url": http_c.url()}), c.path()),
    ] {
        let component = dir.join("p.wasm");
        let mut request = transport.clone();
        request["mode"] = json!(mode);
        request["env"] = json!({"TINY_HARNESS_CACHE_DIR": shared_cache().display().to_string()});
        request["steps"] = json!([
            ["list"],
            ["replace", rebuilt.display().to_string(), component.display().to_string(), 20],
            ["list"],
            // A component that is no component: the reload fails, and the
            // version before it serves on.
            ["replace", dir.join("tiny-harness.toml").display().to_string(), component.display().to_string(), 2],
            ["sleep", 1],
            ["call", "p__textstats.stats", {"text": "one two three"}],
        ]);
        let answer = client(request);
        let steps = &answer["steps"];
        let names = |step: &Value| -> Vec<String> {
            step.as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_owned())
                .collect()
        };
        let before = names(&steps[0]);
        assert!(
            before.contains(&"p__hello.greet".to_owned()),
            "{mode} {transport}: {answer}"
        );
        assert!(
            !before.contains(&"p__textstats.stats".to_owned()),
            "{answer}"
        );
        assert_eq!(steps[1]["changed"], true, "{mode} {transport}: {answer}");
        let listed: Vec<&str> = steps[2]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert!(
            listed.contains(&"p__textstats.stats"),
            "{mode} {transport}: {answer}"
        );
        let logs = format!("{}{}", http_b.log(), http_c.log());
        assert_eq!(
            steps[3]["changed"], false,
            "{mode} {transport}: {answer} {logs}"
        );
        let counted = &steps[5];
        assert_eq!(counted["is_error"], false, "{counted}");
        assert!(counted["text"].as_str().unwrap().contains('3'), "{counted}");
    }
    for gateway in [http_b, http_c] {
        let log = gateway.log();
        assert!(log.contains("outcome=\"reloaded\""), "{log}");
        // The broken component, in one line.
        assert_eq!(
            log.lines()
                .filter(|l| l.contains("reload failed, the old version serves on:"))
                .count(),
            1,
            "{log}"
        );
    }
}

#[test]
fn an_upstream_servers_image_and_progress_reach_the_client() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tiny-harness.toml"),
        format!(
            "[plugins.mcp]\npath = {:?}\n[plugins.mcp.grants]\nexec = [{{ program = \"node\", read = [{:?}] }}]\n\
             [plugins.mcp.config.mcpServers.everything]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n",
            super::fs_wasm().with_file_name("mcp.wasm").display().to_string(),
            super::npm::servers_dir().canonicalize().unwrap().display().to_string(),
            super::npm::everything_js().display().to_string(),
        ),
    )
    .unwrap();
    let gateway = Gateway::start(dir.path(), &[]);
    for mode in ["legacy", "2026-07-28"] {
        let answer = client(json!({
            "mode": mode, "url": gateway.url(),
            "steps": [["call", "mcp__everything.get-tiny-image", {}]],
        }));
        let image = &answer["steps"][0];
        assert_eq!(image["is_error"], false, "{image}");
        // The untrusted block first (it describes the image, never holds
        // its data), then the image itself.
        assert_eq!(image["kinds"], json!(["text", "image"]), "{image}");
        let text = image["text"].as_str().unwrap();
        assert!(
            text.starts_with("<tool-result-") && text.contains("image/png"),
            "{text}"
        );
    }
    // The upstream server's progress, on the request's own stream, under
    // the client's token, over stdio and both HTTP revisions.
    let stdio = json!([
        env!("CARGO_BIN_EXE_tiny-harness"),
        "serve",
        "--config",
        dir.path().join("tiny-harness.toml").display().to_string()
    ]);
    for (mode, transport) in [
        ("legacy", json!({"command": stdio})),
        ("legacy", json!({"url": gateway.url()})),
        ("2026-07-28", json!({"url": gateway.url()})),
    ] {
        let mut request = transport.clone();
        request["mode"] = json!(mode);
        request["env"] = json!({"TINY_HARNESS_CACHE_DIR": shared_cache().display().to_string()});
        request["steps"] = json!([
            ["call_with_progress", "mcp__everything.trigger-long-running-operation", {"duration": 1, "steps": 4}],
            ["call", "mcp__everything.trigger-long-running-operation", {"duration": 1, "steps": 2}],
        ]);
        let answer = client(request);
        let (with, without) = (&answer["steps"][0], &answer["steps"][1]);
        assert_eq!(with["is_error"], false, "{mode} {transport}: {with}");
        let reports = with["progress"].as_array().unwrap();
        assert_eq!(reports.len(), 4, "{mode} {transport}: {with}");
        assert_eq!(reports[3][0], 4.0, "{with}");
        assert_eq!(reports[3][1], 4.0, "{with}");
        assert_eq!(without["progress"], json!([]), "{without}");
    }
}

/// The body of a chunked HTTP/1.1 body, or `None` if it is cut short.
fn dechunk(mut body: &str) -> Option<String> {
    let mut out = String::new();
    loop {
        let (size, rest) = body.split_once("\r\n")?;
        let size = usize::from_str_radix(size.split(';').next()?.trim(), 16).ok()?;
        if size == 0 {
            return Some(out);
        }
        out.push_str(rest.get(..size)?);
        body = rest.get(size..)?.strip_prefix("\r\n")?;
    }
}
