//! The hostile HTTP suite: through WebAssembly, a plugin asks for hosts it
//! was not granted, loopback and metadata addresses in every spelling, a
//! name that resolves to loopback, a redirect from a granted host to
//! loopback, and a raw TCP socket. Each is refused before anything
//! reaches the server, and a normal call works right after.
//!
//! The plugin is granted `http://localhost:PORT` (a name: allowed to reach
//! loopback because it is named literally) and `http://*.test.example:*`
//! (a wildcard: never allowed a special address).

use serde_json::json;
use tiny_harness_host::Host;

use super::server::Server;
use super::{denied, get, host, name, net};
use crate::common::{call, hostile, json_of, result_of, text_of};

/// The plugin under attack and the server it must not reach.
async fn setup() -> (Server, Host) {
    let server = Server::start().await;
    let port = server.port();
    let grants = [
        format!("http://localhost:{port}"),
        "http://*.test.example:*".to_owned(),
    ];
    let host = host(vec![net(&grants, json!({}))]).await;
    (server, host)
}

/// A normal call still works, and it is the only request the server saw
/// since `before` requests.
async fn still_works(server: &Server, host: &Host, before: usize) {
    let outcome = get(host, &format!("http://localhost:{}/hello", server.port())).await;
    assert_eq!(
        json_of(&outcome)["body"],
        "hello from loopback",
        "{outcome:?}"
    );
    assert_eq!(server.seen()[before..], ["GET /hello"]);
}

/// `url(port)` is refused with a message containing every one of
/// `says(port)`, and the server saw nothing of it.
async fn refused(url: impl Fn(u16) -> String, says: impl Fn(u16) -> Vec<String>) {
    let (server, host) = setup().await;
    let port = server.port();
    let url = url(port);
    let message = denied(&get(&host, &url).await);
    for part in says(port) {
        assert!(message.contains(&part), "{url}: {message:?} lacks {part:?}");
    }
    assert!(!message.contains('\n'), "one line: {message:?}");
    assert!(server.seen().is_empty(), "{:?}", server.seen());
    still_works(&server, &host, 0).await;
}

#[tokio::test]
async fn a_host_not_granted() {
    refused(
        |_| "http://example.com/".into(),
        |_| {
            vec![
                "is not granted".into(),
                "net = [\"http://example.com\"]".into(),
            ]
        },
    )
    .await;
}

#[tokio::test]
async fn loopback_by_address() {
    // The server listens there: only the grant check stands in the way.
    refused(
        |port| format!("http://127.0.0.1:{port}/hello"),
        |port| {
            vec![
                "is not granted".into(),
                format!("net = [\"http://127.0.0.1:{port}\"]"),
            ]
        },
    )
    .await;
}

#[tokio::test]
async fn the_metadata_address() {
    refused(
        |_| "http://169.254.169.254/latest/meta-data/".into(),
        |_| vec!["is not granted".into(), "169.254.169.254".into()],
    )
    .await;
}

#[tokio::test]
async fn loopback_as_an_ipv4_mapped_ipv6_address() {
    refused(
        |port| format!("http://[::ffff:127.0.0.1]:{port}/hello"),
        |_| vec!["is not granted".into()],
    )
    .await;
}

#[tokio::test]
async fn loopback_as_a_decimal_number() {
    // The plugin's URL parser already reads these as 127.0.0.1, and the
    // host refuses that address; a plugin that passes the authority as it
    // is written gets `non-standard form` from the host instead (see the
    // unit tests of `tiny_harness_wasm::http`). Either way, not one
    // reaches the server listening there.
    for host in ["2130706433", "0x7f000001", "127.1", "0177.0.0.1"] {
        refused(
            |port| format!("http://{host}:{port}/hello"),
            |port| {
                vec![
                    format!("http://127.0.0.1:{port}/ is not granted"),
                    format!("net = [\"http://127.0.0.1:{port}\"]"),
                ]
            },
        )
        .await;
    }
}

#[tokio::test]
async fn a_name_under_a_wildcard_grant_that_resolves_to_loopback() {
    let (server, host) = setup().await;
    let port = server.port();
    for (label, kind) in [
        ("loop", "a loopback address"),
        ("mapped", "a loopback address"),
        ("meta", "a link-local address"),
        ("private", "a private address"),
        ("mixed", "a loopback address"),
    ] {
        let url = format!("http://{}:{port}/hello", name(label));
        let message = denied(&get(&host, &url).await);
        assert!(message.contains(kind), "{label}: {message}");
        assert!(
            message.contains(&format!("net = [\"http://{}:{port}\"]", name(label))),
            "{label}: {message}"
        );
    }
    assert!(server.seen().is_empty(), "{:?}", server.seen());
    still_works(&server, &host, 0).await;
}

#[tokio::test]
async fn a_redirect_from_a_granted_host_to_loopback() {
    let (server, host) = setup().await;
    let port = server.port();
    for target in [
        format!("http://127.0.0.1:{port}/hello"),
        format!("http://{}:{port}/hello", name("loop")),
    ] {
        let before = server.seen().len();
        let url = format!("http://localhost:{port}/redirect?to={target}");
        let message = denied(&get(&host, &url).await);
        assert!(
            message.contains("is not granted") || message.contains("a loopback address"),
            "{message}"
        );
        // The first hop reached the server; the second never did.
        assert_eq!(server.seen()[before..], ["GET /redirect"]);
    }
    let before = server.seen().len();
    still_works(&server, &host, before).await;
}

#[tokio::test]
async fn a_raw_tcp_socket_even_with_a_net_grant() {
    let server = Server::start().await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let mut chaos = hostile("normal");
    let grant = tiny_harness_sandbox::grant::NetGrant::parse(&format!("http://{addr}")).unwrap();
    chaos.grants.add_net(grant).unwrap();
    let host = host(vec![chaos, net(&[server.url("")], json!({}))]).await;
    let outcome = call(
        &host,
        "hostile/chaos.connect",
        json!({ "addr": addr.to_string() }),
    )
    .await;
    assert!(result_of(&outcome).is_error, "{outcome:?}");
    assert!(!text_of(&outcome).contains("connected"));
    assert!(listener.accept().is_err(), "no connection may arrive");
    let outcome = get(&host, &server.url("/hello")).await;
    assert_eq!(json_of(&outcome)["status"], 200);
}

#[tokio::test]
async fn a_grant_naming_the_host_literally_reaches_loopback() {
    // The same name that a wildcard grant may not take to loopback
    // (above) reaches it when a grant names it.
    let server = Server::start().await;
    let port = server.port();
    let host = host(vec![net(
        &[format!("http://{}:{port}", name("loop"))],
        json!({}),
    )])
    .await;
    let outcome = get(&host, &format!("http://{}:{port}/hello", name("loop"))).await;
    assert_eq!(json_of(&outcome)["body"], "hello from loopback");
    assert_eq!(server.seen(), ["GET /hello"]);
}
