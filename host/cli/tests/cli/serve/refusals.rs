//! What `serve` refuses: requests no polite client sends (each with its
//! status, nothing run, the gateway serving on), and configs that would
//! serve the wrong tools or serve them to anyone (each one line at start).

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::super::{one_error_line, run_in, sandbox};
use super::{CI_TOKEN, CLIENTS, Gateway, IDE_TOKEN, post, tokens_file};

/// A 2026-07-28 `tools/call` of `name` with `arguments`: its body and the
/// headers that must agree with it.
fn call_2026(name: &str, arguments: &str) -> (String, String) {
    let body = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{{\"name\":\"{name}\",\
         \"arguments\":{arguments},\"_meta\":{{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\
         \"io.modelcontextprotocol/clientCapabilities\":{{}}}}}}}}"
    );
    let headers = format!(
        "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: {name}\r\n"
    );
    (body, headers)
}

/// The number of calls the journal at `path` holds.
fn journaled(path: &std::path::Path) -> usize {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .count()
}

#[test]
fn bad_requests_get_their_status_and_run_nothing() {
    let dir = sandbox();
    let config = dir.path().join("tiny-harness.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!("{text}{CLIENTS}[serve.limits]\nrequest_kib = 4\n"),
    )
    .unwrap();
    let tokens = tokens_file(dir.path());
    let journal = dir.path().join("calls.jsonl");
    let gateway = Gateway::start(
        dir.path(),
        &[
            "--tokens",
            tokens.to_str().unwrap(),
            "--journal",
            journal.to_str().unwrap(),
        ],
    );
    let addr = gateway.addr;
    let (body, call_headers) = call_2026("fs__workspace.stat", r#"{"path":"hello.txt"}"#);
    let ide = format!("Authorization: Bearer {IDE_TOKEN}\r\n{call_headers}");

    // No token, and a wrong one: 401 with a challenge.
    let (status, response) = post(addr, &call_headers, &body);
    assert_eq!(status, 401, "{response}");
    assert!(
        response
            .to_ascii_lowercase()
            .contains("www-authenticate: bearer realm=\"tiny-harness\""),
        "{response}"
    );
    let wrong = format!(
        "Authorization: Bearer {}x\r\n{call_headers}",
        &CI_TOKEN[..CI_TOKEN.len() - 1]
    );
    let (status, response) = post(addr, &wrong, &body);
    assert_eq!(status, 401, "{response}");
    assert!(response.contains("invalid_token"), "{response}");
    // A token in another header is no token.
    let (status, _) = post(
        addr,
        &format!("X-Token: {IDE_TOKEN}\r\n{call_headers}"),
        &body,
    );
    assert_eq!(status, 401);

    // A foreign Host or Origin, with a good token: 403.
    let foreign_host = raw_with_host(addr, "evil.example:80", &ide, &body);
    assert_eq!(foreign_host.0, 403, "{}", foreign_host.1);
    let (status, response) = post(
        addr,
        &format!("{ide}Origin: https://evil.example\r\n"),
        &body,
    );
    assert_eq!(status, 403, "{response}");

    // Headers that contradict the body: 400.
    let lying = ide.replace("Mcp-Method: tools/call", "Mcp-Method: tools/list");
    let (status, response) = post(addr, &lying, &body);
    assert_eq!(status, 400, "{response}");
    let lying = ide.replace(
        "Mcp-Name: fs__workspace.stat",
        "Mcp-Name: fs__workspace.read_file",
    );
    let (status, _) = post(addr, &lying, &body);
    assert_eq!(status, 400);

    // A body over `request_kib`: 413, before anything reads it whole.
    let (big, _) = call_2026(
        "fs__workspace.stat",
        &format!("{{\"path\":\"{}\"}}", "a".repeat(5000)),
    );
    let (status, response) = post(addr, &ide, &big);
    assert_eq!(status, 413, "{response}");

    // Garbage: a JSON-RPC parse error, not a crash.
    let (status, response) = post(
        addr,
        &format!("Authorization: Bearer {IDE_TOKEN}\r\nMCP-Protocol-Version: 2026-07-28\r\n"),
        "{\"jsonrpc\": [garbage",
    );
    assert!((400..500).contains(&status), "{status} {response}");

    // GET and DELETE at 2026-07-28: 405.
    for method in ["GET", "DELETE"] {
        let (status, response) = super::raw_http(
            addr,
            &format!(
                "{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {IDE_TOKEN}\r\n\
                 MCP-Protocol-Version: 2026-07-28\r\nAccept: text/event-stream\r\nConnection: close\r\n\r\n",
                addr.port()
            ),
        );
        assert_eq!(status, 405, "{method}: {response}");
    }

    // Nothing of that ran; the gateway serves on, and a good call runs.
    assert_eq!(journaled(&journal), 0);
    let (status, response) = post(addr, &ide, &body);
    assert_eq!(status, 200, "{response}");
    assert!(response.contains("\"isError\":false"), "{response}");
    assert!(response.contains("\\\"size\\\":25"), "{response}");
    assert_eq!(journaled(&journal), 1);
    // The journal names the client that made the call.
    let line: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(&journal).unwrap().trim()).unwrap();
    assert_eq!(line["client"], "ide", "{line}");
    assert_eq!(line["wire_name"], "fs__workspace.stat", "{line}");
    assert_eq!(line["tool"], "fs/workspace.stat", "{line}");
    // `ci` may not see `list_dir`: unknown, and not run.
    let (body, headers) = call_2026("fs__workspace.list_dir", r#"{"path":"."}"#);
    let (status, response) = post(
        addr,
        &format!("Authorization: Bearer {CI_TOKEN}\r\n{headers}"),
        &body,
    );
    assert_eq!(status, 200, "{response}");
    assert!(response.contains("unknown_tool"), "{response}");
    assert_eq!(journaled(&journal), 1);
    let log = gateway.log();
    assert!(!log.contains(IDE_TOKEN) && !log.contains(CI_TOKEN), "{log}");
    // Every refusal above was logged, one line each, with its reason.
    for reason in ["unauthorized", "forbidden", "too_large"] {
        assert!(
            log.contains(&format!("outcome=\"{reason}\"")),
            "{reason}: {log}"
        );
    }

    // `/metrics` counts all of it, for a holder of a token only, in a
    // text promtool accepts.
    let get = |headers: &str| {
        super::raw_http(
            addr,
            &format!(
                "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}Connection: close\r\n\r\n"
            ),
        )
    };
    assert_eq!(get("").0, 401);
    let (status, response) = get(&format!("Authorization: Bearer {CI_TOKEN}\r\n"));
    assert_eq!(status, 200, "{response}");
    let (head, text) = response.split_once("\r\n\r\n").unwrap();
    let text = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        super::dechunk(text).unwrap()
    } else {
        text.to_owned()
    };
    for sample in [
        "tiny_harness_serve_calls_total{tool=\"fs/workspace.stat\",outcome=\"ok\"} 1",
        "tiny_harness_serve_calls_total{tool=\"\",outcome=\"unknown_tool\"} 1",
        "tiny_harness_serve_refused_total{reason=\"too_large\"} 1",
        "tiny_harness_serve_refused_total{reason=\"forbidden\"} 2",
        "tiny_harness_serve_calls_in_flight 0",
    ] {
        assert!(text.contains(sample), "{sample} not in {text}");
    }
    assert!(
        text.contains("tiny_harness_serve_refused_total{reason=\"unauthorized\"} 4"),
        "{text}"
    );
    let promtool = tiny_harness_prereq::system_program("/usr/bin/promtool", "prometheus");
    let mut check = std::process::Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    check
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let checked = check.wait_with_output().unwrap();
    assert!(
        checked.status.success() && checked.stdout.is_empty() && checked.stderr.is_empty(),
        "{checked:?}"
    );
}

/// A POST with `Host: host`.
fn raw_with_host(
    addr: std::net::SocketAddr,
    host: &str,
    headers: &str,
    body: &str,
) -> (u16, String) {
    super::raw_http(
        addr,
        &format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nConnection: close\r\n{headers}\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        ),
    )
}

#[test]
fn slow_and_eager_clients_are_bounded_and_others_served() {
    let dir = sandbox();
    let config = dir.path().join("tiny-harness.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!("{text}[serve.limits]\nread_timeout_secs = 1\nrequests_per_second = 3\n"),
    )
    .unwrap();
    let gateway = Gateway::start(dir.path(), &[]);
    let addr = gateway.addr;
    let (body, headers) = call_2026("fs__workspace.stat", r#"{"path":"hello.txt"}"#);

    // Headers that never end, and a body that never comes: cut off.
    let mut slow_headers = TcpStream::connect(addr).unwrap();
    slow_headers
        .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .unwrap();
    let mut slow_body = TcpStream::connect(addr).unwrap();
    slow_body
        .write_all(
            format!(
                "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
                 Accept: application/json, text/event-stream\r\n{headers}Content-Length: {}\r\n\r\n{{\"jsonrpc\"",
                addr.port(),
                body.len()
            )
            .as_bytes(),
        )
        .unwrap();
    // Meanwhile another client is served.
    let (status, response) = post(addr, &headers, &body);
    assert_eq!(status, 200, "{response}");
    let started = Instant::now();
    for (what, stream) in [("headers", &mut slow_headers), ("body", &mut slow_body)] {
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
        let answer = String::from_utf8_lossy(&answer);
        if what == "body" {
            assert!(answer.starts_with("HTTP/1.1 408"), "{what}: {answer}");
        }
    }
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );

    // More than `requests_per_second` at once: 429 with Retry-After, and
    // served again a second later.
    let statuses: Vec<(u16, String)> = (0..8).map(|_| post(addr, &headers, &body)).collect();
    let limited: Vec<&(u16, String)> = statuses.iter().filter(|(s, _)| *s == 429).collect();
    assert!(
        !limited.is_empty(),
        "{:?}",
        statuses.iter().map(|s| s.0).collect::<Vec<_>>()
    );
    assert!(
        limited[0].1.to_ascii_lowercase().contains("retry-after: 1"),
        "{}",
        limited[0].1
    );
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(post(addr, &headers, &body).0, 200);
}

#[test]
fn unsafe_or_wrong_serve_configs_are_refused_at_start_in_one_line() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = sandbox();
    let config = dir.path().join("tiny-harness.toml");
    let base = std::fs::read_to_string(&config).unwrap();
    let tokens = tokens_file(dir.path());
    let tokens = tokens.to_str().unwrap();
    let serve = |extra: &str, args: &[&str]| {
        std::fs::write(&config, format!("{base}{extra}")).unwrap();
        let mut all = vec!["serve"];
        all.extend_from_slice(args);
        run_in(dir.path(), &all, None)
    };
    // Anyone on the network, without tokens.
    let output = serve("", &["--http", "0.0.0.0:0"]);
    one_error_line(
        &output,
        &["0.0.0.0:0 is not a loopback address", "--tokens FILE"],
    );
    // A tokens file others may read, or none.
    std::fs::set_permissions(tokens, std::fs::Permissions::from_mode(0o644)).unwrap();
    one_error_line(
        &serve(CLIENTS, &["--http", "127.0.0.1:0", "--tokens", tokens]),
        &["chmod 600"],
    );
    std::fs::set_permissions(tokens, std::fs::Permissions::from_mode(0o600)).unwrap();
    one_error_line(
        &serve(CLIENTS, &["--http", "127.0.0.1:0", "--tokens", "missing"]),
        &["tokens file missing: cannot open it"],
    );
    // A client of the tokens file without an entry.
    one_error_line(
        &serve(
            "\n[serve.clients.ci]\ntools = [\"*\"]\n",
            &["--http", "127.0.0.1:0", "--tokens", tokens],
        ),
        &["ide of the tokens file has no [serve.clients.NAME] entry"],
    );
    // A set that matches nothing, a rename that collides, or one outside
    // the set, a key the gateway does not know.
    for (extra, says) in [
        (
            "\n[serve.clients.ci]\ntools = [\"github/*\"]\n",
            "clients.ci: tools: \"github/*\" matches no registered tool",
        ),
        (
            "\n[serve.clients.ci]\nrename = { \"fs__workspace.stat\" = \"fs/workspace.read_file\" }\n",
            "is the name of another tool",
        ),
        (
            "\n[serve.clients.ci]\ntools = [\"fs/*.stat\"]\nrename = { read = \"fs/workspace.read_file\" }\n",
            "not a tool of this client",
        ),
        ("\n[serve]\nport = 80\n", "unknown field `port`"),
    ] {
        one_error_line(&serve(extra, &[]), &[says]);
    }
}

#[test]
fn the_anonymous_loopback_client_is_narrowed_by_its_entry() {
    let dir = sandbox();
    let config = dir.path().join("tiny-harness.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!("{text}\n[serve.clients.anonymous]\ntools = [\"fs/*.stat\"]\n"),
    )
    .unwrap();
    let gateway = Gateway::start(dir.path(), &[]);
    let answer = super::client(serde_json::json!({
        "mode": "2026-07-28", "url": gateway.url(), "steps": [["list"]],
    }));
    assert_eq!(
        answer["steps"][0],
        serde_json::json!(["fs__workspace.stat"])
    );
    let (body, headers) = call_2026("fs__workspace.read_file", r#"{"path":"hello.txt"}"#);
    let (status, response) = post(gateway.addr, &headers, &body);
    assert_eq!(status, 200, "{response}");
    assert!(response.contains("unknown_tool"), "{response}");
    assert!(!response.contains("hello from the workspace"), "{response}");
    // Its own origin is no foreign one (a page it served; the official
    // conformance suite's dns-rebinding check sends it); another is.
    let (body, headers) = call_2026("fs__workspace.stat", r#"{"path":"hello.txt"}"#);
    let own = format!(
        "{headers}Origin: http://localhost:{}\r\n",
        gateway.addr.port()
    );
    assert_eq!(post(gateway.addr, &own, &body).0, 200);
    let other = format!(
        "{headers}Origin: http://localhost:{}\r\n",
        gateway.addr.port() ^ 1
    );
    assert_eq!(post(gateway.addr, &other, &body).0, 403);
}

#[test]
fn a_flood_of_requests_at_once_is_bounded_and_the_gateway_serves_on() {
    let dir = sandbox();
    let config = dir.path().join("tiny-harness.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!("{text}[serve.limits]\nconcurrent_requests = 4\nrequests_per_second = 100000\n"),
    )
    .unwrap();
    let gateway = Gateway::start(dir.path(), &[]);
    let addr = gateway.addr;
    let (body, headers) = call_2026("fs__workspace.stat", r#"{"path":"hello.txt"}"#);
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(200));
    let threads: Vec<_> = (0..200)
        .map(|_| {
            let (body, headers, barrier) = (body.clone(), headers.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                post(addr, &headers, &body).0
            })
        })
        .collect();
    let statuses: Vec<u16> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    // Each got an answer: served, or refused as busy; nothing else.
    assert!(
        statuses.iter().all(|s| *s == 200 || *s == 503),
        "{statuses:?}"
    );
    assert!(statuses.contains(&200), "{statuses:?}");
    // And the gateway serves on.
    assert_eq!(post(addr, &headers, &body).0, 200);
    let log = gateway.log();
    let refused = statuses.iter().filter(|s| **s == 503).count();
    assert_eq!(log.matches("outcome=\"busy\"").count(), refused, "{log}");
}
