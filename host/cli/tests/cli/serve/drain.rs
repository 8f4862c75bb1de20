//! `serve` stopped by SIGTERM for a rolling update: it drains. `/readyz`
//! answers 503 at once, the streams that only wait end, connections are
//! refused after the grace, the calls in flight are answered, and the
//! process exits 0; a call past `drain_secs` is cancelled (its program
//! killed), and a second signal stops it at once. Over stdio, the calls
//! in flight are answered before it exits.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::super::procs::{marker, pids_with};
use super::super::shared_cache;
use super::{Gateway, post, shell_config};

/// How often a wait looks again.
const POLL: Duration = Duration::from_millis(20);
/// The longest a wait for the gateway to start its first call may take
/// (the plugin may be compiled first).
const START: Duration = Duration::from_secs(60);

/// The shell plugin's config, its programs marked with `marker`, with
/// `limits` under `[serve.limits]`.
fn config(dir: &Path, marker: &str, limits: &str) -> PathBuf {
    let config = shell_config(dir, marker);
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{text}[serve.limits]\n{limits}\n")).unwrap();
    config
}

/// A 2026-07-28 `tools/call` of the shell plugin running `script` with
/// `sh -c`, as the JSON-RPC message with the id `id`.
fn run_2026(id: u32, script: &str) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {
            "name": "shell__exec.run",
            "arguments": {"program": "sh", "args": ["-c", script]},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    })
}

/// The headers a 2026-07-28 `tools/call` of the shell plugin needs.
const RUN_HEADERS: &str =
    "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: shell__exec.run\r\n";

/// Sends `signal` to the process `pid`.
fn kill(pid: u32, signal: rustix::process::Signal) {
    let pid = rustix::process::Pid::from_raw(i32::try_from(pid).unwrap()).unwrap();
    rustix::process::kill_process(pid, signal).unwrap();
}

/// Waits up to `limit` for `ready`, looking every [`POLL`]; panics naming
/// `what` if it never is.
fn until(limit: Duration, what: &str, mut ready: impl FnMut() -> bool) {
    let started = Instant::now();
    while !ready() {
        assert!(started.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(POLL);
    }
}

/// How `child` exited, if it did within `limit`.
fn exited_within(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if started.elapsed() >= limit {
            return None;
        }
        std::thread::sleep(POLL);
    }
}

/// Whether a connection to `addr` is refused.
fn refused(addr: SocketAddr) -> bool {
    TcpStream::connect_timeout(&addr, Duration::from_secs(1))
        .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionRefused)
}

/// `GET path` on a connection of its own: the status and the body, or
/// `None` if the connection is refused.
fn get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(addr).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n",
        addr.port()
    )
    .ok()?;
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    let status = response.split(' ').nth(1)?.parse().ok()?;
    let body = response.split_once("\r\n\r\n")?.1.to_owned();
    Some((status, body))
}

/// The first line of `log` that holds `needle`.
fn line_with<'a>(log: &'a str, needle: &str) -> &'a str {
    log.lines()
        .find(|line| line.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?}: {log}"))
}

/// What a stream's reader saw.
enum Seen {
    /// The response's headers (the stream is open).
    Opened,
    /// Its end: everything received.
    Ended(String),
}

/// Sends `request` to `addr` from a thread that reports when the
/// response's headers have come and when the connection ended.
fn stream(addr: SocketAddr, request: String) -> mpsc::Receiver<Seen> {
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut seen = Vec::new();
        let mut opened = false;
        let mut buffer = [0u8; 4096];
        loop {
            match stream.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(n) => seen.extend_from_slice(&buffer[..n]),
            }
            if !opened && seen.windows(4).any(|w| w == b"\r\n\r\n") {
                opened = true;
                let _ = send.send(Seen::Opened);
            }
        }
        let _ = send.send(Seen::Ended(String::from_utf8_lossy(&seen).into_owned()));
    });
    receive
}

/// Waits for `stream` to have opened.
fn opened(stream: &mpsc::Receiver<Seen>, what: &str) {
    match stream.recv_timeout(Duration::from_secs(30)) {
        Ok(Seen::Opened) => {}
        Ok(Seen::Ended(text)) => panic!("{what} ended before it opened: {text}"),
        Err(_) => panic!("{what} did not open"),
    }
}

/// A 2025-11-25 session opened over raw HTTP: its id.
fn open_session(addr: SocketAddr) -> String {
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "drain-test", "version": "1"},
        },
    });
    let (status, response) = post(addr, "", &initialize.to_string());
    assert_eq!(status, 200, "{response}");
    let session = response
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("no session id: {response}"));
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, response) = post(
        addr,
        &format!("Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n"),
        &initialized.to_string(),
    );
    assert_eq!(status, 202, "{response}");
    session
}

#[test]
fn sigterm_fails_readiness_ends_idle_streams_and_answers_the_call_in_flight_before_exiting_0() {
    let dir = tempfile::tempdir().unwrap();
    let marker = marker("serve-drain");
    let config = config(dir.path(), &marker, "drain_grace_secs = 1\ndrain_secs = 10");
    let mut gateway = Gateway::start(dir.path(), &["--config", config.to_str().unwrap()]);
    let addr = gateway.addr;

    // An idle keep-alive connection, which must not hold the drain open.
    let mut idle = TcpStream::connect(addr).unwrap();
    idle.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        idle,
        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\r\n",
        addr.port()
    )
    .unwrap();
    let mut answer = [0u8; 1024];
    let n = idle.read(&mut answer).unwrap();
    assert!(
        String::from_utf8_lossy(&answer[..n]).ends_with("ok\n"),
        "{}",
        String::from_utf8_lossy(&answer[..n])
    );

    // A 2025-11-25 session's GET stream and a 2026-07-28 subscription:
    // both only wait, and would wait for ever.
    let session = open_session(addr);
    let session_stream = stream(
        addr,
        format!(
            "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAccept: text/event-stream\r\n\
             Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\nConnection: close\r\n\r\n",
            addr.port()
        ),
    );
    opened(&session_stream, "the session's GET stream");
    let listen = json!({
        "jsonrpc": "2.0", "id": 2, "method": "subscriptions/listen",
        "params": {
            "notifications": {"toolsListChanged": true},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    })
    .to_string();
    let subscription = stream(
        addr,
        format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
             Mcp-Method: subscriptions/listen\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{listen}",
            addr.port(),
            listen.len()
        ),
    );
    opened(&subscription, "the subscription");

    // A call that takes 3 s, started before the signal.
    let (send, answered) = mpsc::channel();
    let body = run_2026(7, "sleep 3; echo slept through the drain").to_string();
    std::thread::spawn(move || {
        let _ = send.send(post(addr, RUN_HEADERS, &body));
    });
    until(START, "the call's program starts", || {
        !pids_with(&marker).is_empty()
    });
    kill(gateway.child.id(), rustix::process::Signal::TERM);
    let signalled = Instant::now();

    // Out of rotation at once, while still serving through the grace.
    let mut readiness = None;
    until(Duration::from_secs(1), "/readyz answers 503", || {
        readiness = get(addr, "/readyz");
        readiness.as_ref().is_some_and(|(status, _)| *status == 503)
    });
    assert_eq!(
        readiness,
        Some((503, "draining\n".to_owned())),
        "{}",
        gateway.log()
    );
    let (status, body) = get(addr, "/healthz").expect("connections are taken in the grace");
    assert_eq!((status, body.as_str()), (200, "ok\n"));
    // The streams that only wait ended with the drain's start.
    for (stream, what) in [
        (&session_stream, "the session's GET stream"),
        (&subscription, "the subscription"),
    ] {
        match stream.recv_timeout(Duration::from_secs(2)) {
            Ok(Seen::Ended(_)) => {}
            Ok(Seen::Opened) => unreachable!(),
            Err(_) => panic!("{what} still open after the drain began: {}", gateway.log()),
        }
    }
    // After the grace, connections are refused; the call runs on.
    until(Duration::from_secs(3), "connections are refused", || {
        refused(addr)
    });
    assert!(
        signalled.elapsed() >= Duration::from_millis(900),
        "refused before the grace was over: {:?}",
        signalled.elapsed()
    );
    // The idle connection is closed then, not left to the deadline.
    idle.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    assert_eq!(
        idle.read(&mut answer).map_err(|e| e.kind()),
        Ok(0),
        "the idle connection is still open"
    );
    assert!(
        answered.try_recv().is_err(),
        "the call was answered before the grace was over, too soon to tell a drain: {}",
        gateway.log()
    );

    // The call is answered as it would have been without the signal.
    let (status, response) = answered
        .recv_timeout(Duration::from_secs(30))
        .expect("the call in flight is answered");
    assert_eq!(status, 200, "{response}");
    assert!(response.contains("\"isError\":false"), "{response}");
    assert!(response.contains("slept through the drain"), "{response}");
    // And the process exits 0 right after: the session and the streams
    // held nothing open.
    let status = exited_within(&mut gateway.child, Duration::from_secs(3))
        .unwrap_or_else(|| panic!("still running after its last call: {}", gateway.log()));
    assert!(status.success(), "{status}: {}", gateway.log());
    until(Duration::from_secs(5), "the log is read whole", || {
        gateway.log().contains("drain ended")
    });
    let log = gateway.log();
    let begun = line_with(&log, "draining");
    assert!(begun.contains("calls_in_flight=1"), "{begun}");
    assert!(begun.contains("tiny_harness::serve"), "{begun}");
    let ended = line_with(&log, "drain ended");
    assert!(
        ended.contains("finished=1") && ended.contains("cancelled=0"),
        "{ended}"
    );
}

#[test]
fn a_call_past_drain_secs_is_cancelled_its_program_killed_and_serve_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let marker = marker("serve-drain-deadline");
    let config = config(dir.path(), &marker, "drain_secs = 1");
    let mut gateway = Gateway::start(dir.path(), &["--config", config.to_str().unwrap()]);
    let addr = gateway.addr;
    let (send, answered) = mpsc::channel();
    let body = run_2026(8, "sleep 60").to_string();
    std::thread::spawn(move || {
        let _ = send.send(post(addr, RUN_HEADERS, &body));
    });
    until(START, "the call's program starts", || {
        !pids_with(&marker).is_empty()
    });
    kill(gateway.child.id(), rustix::process::Signal::TERM);
    let signalled = Instant::now();
    // Without a grace, connections are refused at once.
    until(Duration::from_secs(1), "connections are refused", || {
        refused(addr)
    });
    let status = exited_within(&mut gateway.child, Duration::from_secs(3))
        .unwrap_or_else(|| panic!("still running 3 s after SIGTERM: {}", gateway.log()));
    assert!(status.success(), "{status}: {}", gateway.log());
    assert!(
        signalled.elapsed() >= Duration::from_millis(900),
        "exited before the deadline: {:?}",
        signalled.elapsed()
    );
    assert!(pids_with(&marker).is_empty(), "{:?}", pids_with(&marker));
    // The client was told, rather than left waiting.
    let (status, response) = answered
        .recv_timeout(Duration::from_secs(5))
        .expect("the cancelled call's client is answered");
    assert_eq!(status, 500, "{response}");
    until(Duration::from_secs(5), "the log is read whole", || {
        gateway.log().contains("drain ended")
    });
    let log = gateway.log();
    let ended = line_with(&log, "drain ended");
    assert!(
        ended.contains("finished=0") && ended.contains("cancelled=1"),
        "{ended}"
    );
}

#[test]
fn a_second_sigterm_during_the_drain_stops_serve_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let marker = marker("serve-drain-twice");
    let config = config(dir.path(), &marker, "drain_secs = 30");
    let mut gateway = Gateway::start(dir.path(), &["--config", config.to_str().unwrap()]);
    let addr = gateway.addr;
    let body = run_2026(9, "sleep 60").to_string();
    std::thread::spawn(move || {
        let _ = post(addr, RUN_HEADERS, &body);
    });
    until(START, "the call's program starts", || {
        !pids_with(&marker).is_empty()
    });
    kill(gateway.child.id(), rustix::process::Signal::TERM);
    until(Duration::from_secs(5), "the drain begins", || {
        gateway.log().contains("draining")
    });
    // Still draining: the call has 30 s.
    assert!(exited_within(&mut gateway.child, Duration::from_millis(300)).is_none());
    kill(gateway.child.id(), rustix::process::Signal::TERM);
    let status = exited_within(&mut gateway.child, Duration::from_secs(2)).unwrap_or_else(|| {
        panic!(
            "still running 2 s after a second SIGTERM: {}",
            gateway.log()
        )
    });
    assert_eq!(status.code(), Some(143), "{}", gateway.log());
    assert!(pids_with(&marker).is_empty(), "{:?}", pids_with(&marker));
    until(Duration::from_secs(5), "the log is read whole", || {
        gateway.log().contains("stopped by SIGTERM")
    });
}

/// `serve` over stdio with `config`, its standard error kept.
struct StdioServe {
    child: Child,
    input: std::process::ChildStdin,
    lines: mpsc::Receiver<String>,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
}

impl StdioServe {
    fn start(dir: &Path, config: &Path) -> StdioServe {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tiny-harness"))
            .args(["serve", "--config", config.to_str().unwrap()])
            .current_dir(dir)
            .env("TINY_HARNESS_CACHE_DIR", shared_cache())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in output.lines() {
                let Ok(line) = line else { return };
                if send.send(line).is_err() {
                    return;
                }
            }
        });
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let errors = BufReader::new(child.stderr.take().unwrap());
        let kept = stderr.clone();
        std::thread::spawn(move || {
            for line in errors.lines() {
                let Ok(line) = line else { return };
                let mut kept = kept.lock().unwrap();
                kept.push_str(&line);
                kept.push('\n');
            }
        });
        StdioServe {
            child,
            input,
            lines,
            stderr,
        }
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.input, "{message}").unwrap();
        self.input.flush().unwrap();
    }

    fn log(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for StdioServe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn over_stdio_sigterm_answers_the_call_in_flight_then_exits_0_and_cancels_one_past_the_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let marker = marker("serve-drain-stdio");
    let config = config(dir.path(), &marker, "drain_secs = 10");
    let mut serve = StdioServe::start(dir.path(), &config);
    serve.send(&run_2026(1, "sleep 2; echo answered before the exit"));
    until(START, "the call's program starts", || {
        !pids_with(&marker).is_empty()
    });
    kill(serve.child.id(), rustix::process::Signal::TERM);
    // A request sent once the drain has begun is not taken.
    until(Duration::from_secs(5), "the drain begins", || {
        serve.log().contains("draining")
    });
    serve.send(&run_2026(3, "echo taken after the signal"));
    let answer = serve
        .lines
        .recv_timeout(Duration::from_secs(30))
        .expect("the call in flight is answered");
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert!(
        answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("answered before the exit"),
        "{answer}"
    );
    let status = exited_within(&mut serve.child, Duration::from_secs(3))
        .unwrap_or_else(|| panic!("still running after its last call: {}", serve.log()));
    assert!(status.success(), "{status}: {}", serve.log());
    // Its output ended with that answer.
    match serve.lines.recv_timeout(Duration::from_secs(5)) {
        Err(mpsc::RecvTimeoutError::Disconnected) => {}
        other => panic!("more than the answer in flight: {other:?}"),
    }

    // Past the deadline: cancelled, its program killed, exit 0.
    let marker = super::super::procs::marker("serve-drain-stdio-deadline");
    let config = self::config(dir.path(), &marker, "drain_secs = 1");
    let mut serve = StdioServe::start(dir.path(), &config);
    serve.send(&run_2026(2, "sleep 60"));
    until(START, "the call's program starts", || {
        !pids_with(&marker).is_empty()
    });
    kill(serve.child.id(), rustix::process::Signal::TERM);
    let signalled = Instant::now();
    let status = exited_within(&mut serve.child, Duration::from_secs(4))
        .unwrap_or_else(|| panic!("still running 4 s after SIGTERM: {}", serve.log()));
    assert!(status.success(), "{status}: {}", serve.log());
    assert!(
        signalled.elapsed() >= Duration::from_millis(900),
        "exited before the deadline: {:?}",
        signalled.elapsed()
    );
    assert!(pids_with(&marker).is_empty(), "{:?}", pids_with(&marker));
    until(Duration::from_secs(5), "the log is read whole", || {
        serve.log().contains("drain ended")
    });
    let log = serve.log();
    let ended = line_with(&log, "drain ended");
    assert!(
        ended.contains("finished=0") && ended.contains("cancelled=1"),
        "{ended}"
    );
}
