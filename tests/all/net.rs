//! The `net` plugin (`net/http.get`, `net/http.request`) over `wasi:http`,
//! against a real HTTP server on loopback: requests reach only what the
//! plugin's `net` grants allow, checked by the host after resolving the
//! name, and every response is bounded. After every refusal the server
//! has seen nothing of the refused request, and a normal call still works.
//!
//! Submodules: `server` (the loopback server), `hostile` (every way a
//! plugin might reach what it was not granted) and `limits` (body caps,
//! timeouts, request counts, the config keys).

mod hostile;
mod limits;
mod server;

use std::net::IpAddr;
use std::sync::Arc;

use serde_json::{Value, json};
use tiny_harness_host::{CallOutcome, Host, PluginSpec};
use tiny_harness_sandbox::grant::NetGrant;
use tiny_harness_wasm::http::{StaticResolver, SystemResolver};

use crate::common::{call, error_code, host, json_of, result_of, spec};
use server::Server;

const GET: &str = "net/http.get";
const REQUEST: &str = "net/http.request";

/// A name under the wildcard grant that the test resolver answers for.
fn name(label: &str) -> String {
    format!("{label}.test.example")
}

/// The net plugin granted `grants`, with `config`, resolving
/// `*.test.example` names from a table (`loop` to 127.0.0.1, `meta` to
/// 169.254.169.254, `mapped` to ::ffff:127.0.0.1, `private` to 10.0.0.1,
/// `mixed` to a public address and 127.0.0.1) and every other name with
/// the system's resolver.
fn net(grants: &[String], config: Value) -> PluginSpec {
    let mut spec = spec("net", "net");
    for g in grants {
        let grant = NetGrant::parse(g).unwrap_or_else(|e| panic!("grant {g}: {e}"));
        spec.grants.add_net(grant).unwrap();
    }
    spec.config = config;
    let ip = |s: &str| s.parse::<IpAddr>().unwrap();
    spec.resolver = Arc::new(
        StaticResolver::new()
            .with(&name("loop"), [ip("127.0.0.1")])
            .with(&name("meta"), [ip("169.254.169.254")])
            .with(&name("mapped"), [ip("::ffff:127.0.0.1")])
            .with(&name("private"), [ip("10.0.0.1")])
            .with(&name("mixed"), [ip("93.184.215.14"), ip("127.0.0.1")])
            .or_else(SystemResolver),
    );
    spec
}

/// A host with the net plugin granted exactly `server`'s address.
async fn granted(server: &Server, config: Value) -> Host {
    host(vec![net(&[server.url("")], config)]).await
}

/// Calls `get` on `url`.
async fn get(host: &Host, url: &str) -> CallOutcome {
    call(host, GET, json!({ "url": url })).await
}

/// The message of a call that must have been refused as `denied`.
fn denied(outcome: &CallOutcome) -> String {
    assert_eq!(error_code(outcome), "denied", "{outcome:?}");
    outcome.result.as_ref().unwrap_err().to_string()
}

#[tokio::test]
async fn get_returns_status_headers_and_text_body() {
    let server = Server::start().await;
    let host = granted(&server, json!({})).await;
    let outcome = get(&host, &server.url("/hello")).await;
    assert!(!result_of(&outcome).is_error, "{outcome:?}");
    let data = json_of(&outcome);
    assert_eq!(data["status"], 200);
    assert_eq!(data["body"], "hello from loopback");
    assert_eq!(data["body_encoding"], "text");
    assert_eq!(data["truncated"], false);
    assert_eq!(data["headers"]["content-type"], "text/plain");
    assert_eq!(data["redirects"], json!([]));
    assert_eq!(server.seen(), ["GET /hello"]);
}

#[tokio::test]
async fn request_sends_method_headers_and_body() {
    let server = Server::start().await;
    let host = granted(&server, json!({})).await;
    let outcome = call(
        &host,
        REQUEST,
        json!({
            "method": "PUT",
            "url": server.url("/echo"),
            "headers": {"X-Test": "yes", "content-type": "text/plain"},
            "body": "payload ✓",
        }),
    )
    .await;
    let data = json_of(&outcome);
    let echoed: Value = serde_json::from_str(data["body"].as_str().unwrap()).unwrap();
    assert_eq!(
        echoed,
        json!({"method": "PUT", "x_test": "yes", "body": "payload ✓"})
    );
}

#[tokio::test]
async fn binary_bodies_are_base64_and_error_statuses_are_error_results() {
    let server = Server::start().await;
    let host = granted(&server, json!({})).await;
    let data = json_of(&get(&host, &server.url("/binary")).await);
    assert_eq!(data["body_encoding"], "base64");
    let expected: Vec<u8> = (0..=255u8).collect();
    assert_eq!(data["body"], base64(&expected));

    let outcome = get(&host, &server.url("/missing")).await;
    assert!(result_of(&outcome).is_error);
    assert_eq!(json_of(&outcome)["status"], 404);
}

#[tokio::test]
async fn get_follows_a_redirect_within_the_grants_and_request_does_not() {
    let server = Server::start().await;
    let host = granted(&server, json!({})).await;
    let outcome = get(&host, &server.url("/redirect?to=/hello")).await;
    let data = json_of(&outcome);
    assert_eq!(data["status"], 200);
    assert_eq!(data["redirects"], json!([server.url("/hello")]));
    assert_eq!(server.seen(), ["GET /redirect", "GET /hello"]);

    let outcome = call(
        &host,
        REQUEST,
        json!({"method": "GET", "url": server.url("/redirect?to=/hello")}),
    )
    .await;
    assert_eq!(json_of(&outcome)["status"], 302);
}

#[tokio::test]
async fn a_plugin_without_net_grants_sends_nothing() {
    let server = Server::start().await;
    let host = host(vec![net(&[], json!({}))]).await;
    let message = denied(&get(&host, &server.url("/hello")).await);
    assert!(message.contains("no net grants"), "{message}");
    assert!(server.seen().is_empty());
}

/// Standard base64 of `bytes`, for comparing with the plugin's.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}
