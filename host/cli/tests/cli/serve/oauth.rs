//! Access tokens from an authorization server in front of the gateway:
//! JWTs minted by PyJWT (`authorization_server.py`) and checked by
//! `serve` against the server's JWKS, from a file and from a URL.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use super::super::{sandbox, venv, wait_live_for};
use super::{Gateway, post, raw_http};

const ISSUER: &str = "https://auth.example";
const AUDIENCE: &str = "https://tools.example/mcp";

/// Makes a key in `dir`, its JWKS (`dir/jwks.json`), and the tokens of
/// `authorization_server.py`, by kind.
fn mint(dir: &Path) -> BTreeMap<String, String> {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/serve/authorization_server.py");
    let child = Command::new(venv::python())
        .arg(script)
        .args([dir.to_str().unwrap(), ISSUER, AUDIENCE])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let output = wait_live_for(child, Duration::from_secs(60), "authorization_server.py");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// A 2026-07-28 call of `fs__workspace.stat`, with `token` if any.
fn call_with(addr: std::net::SocketAddr, token: Option<&str>) -> (u16, String) {
    let body = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"fs__workspace.stat\",\
                \"arguments\":{\"path\":\"hello.txt\"},\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\
                \"io.modelcontextprotocol/clientCapabilities\":{}}}}";
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    post(
        addr,
        &format!(
            "{auth}MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: fs__workspace.stat\r\n"
        ),
        body,
    )
}

fn configure(dir: &Path, jwks: &str) {
    let config = dir.join("tiny-harness.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    let text = text.split("\n[serve").next().unwrap().to_owned();
    std::fs::write(
        &config,
        format!(
            "{text}\n[serve.oauth]\nissuer = {ISSUER:?}\naudience = {AUDIENCE:?}\njwks = {jwks:?}\nscopes = [\"tools\"]\n\
             [serve.clients.ci]\ntools = [\"fs/*.stat\"]\n"
        ),
    )
    .unwrap();
}

#[test]
fn access_tokens_are_checked_against_the_authorization_servers_keys() {
    let dir = sandbox();
    let tokens = mint(dir.path());
    configure(dir.path(), "jwks.json");
    let gateway = Gateway::start(dir.path(), &[]);
    let addr = gateway.addr;

    // Where a client learns how to get a token (RFC 9728).
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let (status, response) = raw_http(
            addr,
            &format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"),
        );
        assert_eq!(status, 200, "{path}: {response}");
        let metadata: serde_json::Value =
            serde_json::from_str(response.split_once("\r\n\r\n").unwrap().1.trim()).unwrap();
        assert_eq!(metadata["resource"], AUDIENCE);
        assert_eq!(metadata["authorization_servers"], json!([ISSUER]));
        assert_eq!(metadata["scopes_supported"], json!(["tools"]));
    }
    // No token: 401, with where to learn more.
    let (status, response) = call_with(addr, None);
    assert_eq!(status, 401, "{response}");
    assert!(
        response.contains(
            "resource_metadata=\"https://tools.example/.well-known/oauth-protected-resource/mcp\""
        ),
        "{response}"
    );
    // A good token: the call runs, as its client.
    let (status, response) = call_with(addr, Some(&tokens["good"]));
    assert_eq!(status, 200, "{response}");
    assert!(response.contains("\"isError\":false"), "{response}");
    // Every bad one: 401, nothing run.
    for kind in [
        "expired",
        "wrong_issuer",
        "wrong_audience",
        "no_expiry",
        "wrong_key",
        "unknown_kid",
        "hs256",
        "none",
        "no_client",
    ] {
        let (status, response) = call_with(addr, Some(&tokens[kind]));
        assert_eq!(status, 401, "{kind}: {response}");
        assert!(
            response.contains("error=\"invalid_token\""),
            "{kind}: {response}"
        );
    }
    // A token without the scope, or of a client without an entry: 403.
    let (status, response) = call_with(addr, Some(&tokens["no_scope"]));
    assert_eq!(status, 403, "{response}");
    assert!(
        response.contains("error=\"insufficient_scope\", scope=\"tools\""),
        "{response}"
    );
    let (status, response) = call_with(addr, Some(&tokens["unknown_client"]));
    assert_eq!(status, 403, "{response}");
    assert!(response.contains("stranger"), "{response}");
    let log = gateway.log();
    assert_eq!(log.matches("outcome=\"ok\"").count(), 1, "{log}");
    assert!(!log.contains(&tokens["good"]), "{log}");

    // The official client with the token sees its client's set.
    let answer = super::client(json!({
        "mode": "2026-07-28", "url": gateway.url(), "token": tokens["good"], "steps": [["list"]],
    }));
    assert_eq!(answer["steps"][0], json!(["fs__workspace.stat"]));
}

#[test]
fn the_keys_may_come_from_the_authorization_servers_url() {
    let dir = sandbox();
    let keys = tempfile::tempdir().unwrap();
    let tokens = mint(keys.path());
    // The authorization server's JWKS endpoint: a real HTTP server on
    // loopback.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = Command::new(venv::python())
        .args([
            "-m",
            "http.server",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
        ])
        .current_dir(keys.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the JWKS server did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    configure(dir.path(), &format!("http://127.0.0.1:{port}/jwks.json"));
    let gateway = Gateway::start(dir.path(), &[]);
    let (status, response) = call_with(gateway.addr, Some(&tokens["good"]));
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(status, 200, "{response}");
    let (status, _) = call_with(gateway.addr, Some(&tokens["wrong_key"]));
    assert_eq!(status, 401);
    // Keys from anywhere but https or loopback are refused at start.
    configure(dir.path(), "http://keys.example/jwks.json");
    let output = super::super::run_in(dir.path(), &["serve", "--http", "127.0.0.1:0"], None);
    super::super::one_error_line(&output, &["oauth.jwks", "https"]);
}
