//! Bounds on outbound HTTP: the plugin's `body_kib`, the host's response
//! cap (`limits.http_response_kib`), the request timeout, the number of
//! requests per call, and the config keys that set them.

use std::time::{Duration, Instant};

use serde_json::json;
use tiny_harness_host::Config;

use super::server::Server;
use super::{denied, get, host, net};
use crate::common::{error_code, json_of, result_of};

#[tokio::test]
async fn the_body_is_cut_at_body_kib_and_marked() {
    let server = Server::start().await;
    let host = host(vec![net(&[server.url("")], json!({"body_kib": 1}))]).await;
    let outcome = get(&host, &server.url("/bytes/5000")).await;
    let data = json_of(&outcome);
    assert_eq!(data["truncated"], true);
    assert_eq!(data["body"].as_str().unwrap().len(), 1024);
    let line = match &result_of(&outcome).content[0] {
        tiny_harness_host::ContentPart::Text { text } => text.clone(),
        other => panic!("{other:?}"),
    };
    assert!(line.contains("truncated"), "{line}");

    // Exactly the limit is not truncated.
    let data = json_of(&get(&host, &server.url("/bytes/1024")).await);
    assert_eq!(data["truncated"], false);
}

#[tokio::test]
async fn the_host_caps_an_endless_response() {
    let server = Server::start().await;
    let mut spec = net(&[server.url("")], json!({"body_kib": 65536}));
    spec.limits.http.response_bytes = 64 << 10;
    let host = host(vec![spec]).await;
    let started = Instant::now();
    let outcome = get(&host, &server.url("/endless")).await;
    let data = json_of(&outcome);
    assert_eq!(data["truncated"], true);
    let body = data["body"].as_str().unwrap();
    assert!(body.len() <= 64 << 10, "{}", body.len());
    assert!(body.len() >= 32 << 10, "{}", body.len());
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn a_slow_response_times_out_and_the_host_stays_up() {
    let server = Server::start().await;
    let mut spec = net(&[server.url("")], json!({}));
    spec.limits.http.timeout = Duration::from_millis(300);
    let host = host(vec![spec]).await;
    let started = Instant::now();
    let outcome = get(&host, &server.url("/slow")).await;
    assert_eq!(error_code(&outcome), "failed", "{outcome:?}");
    let message = outcome.result.as_ref().unwrap_err().to_string();
    assert!(message.contains("in time"), "{message}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(
        json_of(&get(&host, &server.url("/hello")).await)["status"],
        200
    );
}

#[tokio::test]
async fn requests_per_call_are_bounded_redirects_included() {
    let server = Server::start().await;
    let mut spec = net(&[server.url("")], json!({"max_redirects": 20}));
    spec.limits.http.requests = 3;
    let host = host(vec![spec]).await;
    let hop = |to: &str| format!("/redirect?to={to}");
    // Four requests: three allowed, the fourth refused.
    let url = server.url(&hop(&hop(&hop("/hello"))));
    let message = denied(&get(&host, &url).await);
    assert!(message.contains("3 HTTP requests"), "{message}");
    assert_eq!(server.seen().len(), 3);
    // A new call has a new budget.
    assert_eq!(
        json_of(&get(&host, &server.url("/hello")).await)["status"],
        200
    );
}

#[test]
fn http_limits_are_read_and_checked() {
    let text = |limits: &str| {
        format!(
            "[plugins.net]\npath = \"net.wasm\"\n[plugins.net.limits]\n{limits}\n[plugins.net.grants]\nnet = [\"http://127.0.0.1:8080\"]\n"
        )
    };
    let config = Config::parse(
        "tiny-harness.toml".as_ref(),
        &text("http_response_kib = 8\nhttp_request_kib = 2\nhttp_timeout_ms = 1500\nhttp_requests = 4"),
    )
    .expect("a valid config");
    let limits = config.plugins[0].limits.http;
    assert_eq!(limits.response_bytes, 8 << 10);
    assert_eq!(limits.request_bytes, 2 << 10);
    assert_eq!(limits.timeout, Duration::from_millis(1500));
    assert_eq!(limits.requests, 4);

    let err = Config::parse("tiny-harness.toml".as_ref(), &text("http_requests = 0"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("tiny-harness.toml:4") && err.contains("http_requests"),
        "{err}"
    );
    assert!(!err.contains('\n'), "{err}");
}

#[test]
fn a_net_grant_that_does_not_parse_names_the_file_line_and_key() {
    for bad in [
        "http://127.0.0.1:80/path",
        "ftp://example.com",
        "http://2130706433",
        "http://*:80",
    ] {
        let text = format!(
            "[plugins.net]\npath = \"net.wasm\"\n[plugins.net.grants]\nnet = [\"{bad}\"]\n"
        );
        let err = Config::parse("tiny-harness.toml".as_ref(), &text)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("tiny-harness.toml:4") && err.contains("plugins.net.grants.net"),
            "{bad}: {err}"
        );
        assert!(!err.contains('\n'), "{err}");
    }
}

#[tokio::test]
async fn a_request_body_over_the_cap_is_not_sent_whole() {
    let server = Server::start().await;
    let mut spec = net(&[server.url("")], json!({}));
    spec.limits.http.request_bytes = 1024;
    let host = host(vec![spec]).await;
    let outcome = tiny_harness_host::Host::invoke(
        &host,
        &tiny_harness_host::ToolCall {
            id: "big".into(),
            name: super::REQUEST.into(),
            arguments: json!({"method": "POST", "url": server.url("/echo"), "body": "b".repeat(5000)}),
        },
    )
    .await;
    assert!(outcome.result.is_err(), "{outcome:?}");
    let message = outcome.result.as_ref().unwrap_err().to_string();
    assert!(message.contains("body"), "{message}");
    assert_eq!(
        json_of(&get(&host, &server.url("/hello")).await)["status"],
        200
    );
}

#[tokio::test]
async fn https_to_a_plain_http_server_fails_cleanly() {
    // The TLS path (provider, platform verifier, handshake) runs and fails
    // on a server that does not speak TLS; the host stays up.
    let server = Server::start().await;
    let port = server.port();
    let mut spec = net(
        &[format!("https://127.0.0.1:{port}"), server.url("")],
        json!({}),
    );
    // The server waits for a request head that never comes.
    spec.limits.http.timeout = Duration::from_millis(500);
    let host = host(vec![spec]).await;
    let outcome = get(&host, &format!("https://127.0.0.1:{port}/hello")).await;
    assert_eq!(error_code(&outcome), "failed", "{outcome:?}");
    let message = outcome.result.as_ref().unwrap_err().to_string();
    assert!(message.contains("timed out"), "{message}");
    assert_eq!(
        json_of(&get(&host, &server.url("/hello")).await)["status"],
        200
    );
}
