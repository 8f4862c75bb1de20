//! `serve` over stdio as a client ends it: its end of input ends
//! everything waiting on the connection.

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::super::{sandbox, shared_cache, wait_live_for};

#[test]
fn a_stdio_client_that_closes_its_input_ends_serve_at_once_even_while_listening() {
    let dir = sandbox();
    let mut child = Command::new(env!("CARGO_BIN_EXE_tiny-harness"))
        .arg("serve")
        .current_dir(dir.path())
        .env("TINY_HARNESS_CACHE_DIR", shared_cache())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input
        .write_all(
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"subscriptions/listen\",\"params\":{\"notifications\":\
              {\"toolsListChanged\":true},\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\
              \"io.modelcontextprotocol/clientCapabilities\":{}}}}\n",
        )
        .unwrap();
    // The subscription is open once it is acknowledged.
    let mut output = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    output.read_line(&mut line).unwrap();
    assert!(
        line.contains("notifications/subscriptions/acknowledged"),
        "{line}"
    );
    drop(input);
    // Without its end seen, rmcp would wait 5 s for the stream to drain.
    let started = std::time::Instant::now();
    let done = wait_live_for(
        child,
        Duration::from_secs(3),
        "serve after its input closed",
    );
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert!(started.elapsed() < Duration::from_secs(3));
}
