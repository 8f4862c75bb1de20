//! Publishing to registries that misbehave: real loopback HTTP servers
//! that name a token service in clear elsewhere, move the upload to
//! another host, or answer with an endless error. Each publish is refused
//! with its own error, on one line naming the reference, sends nothing
//! where it should not (not the credentials, not the component) and
//! pushes no manifest; and a registry that behaves gets the blobs, then
//! the manifest.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::{Behaviour, Seen, Server, client, component, one_line_naming};
use tiny_harness_oci::{Credentials, Digest, Limits, OciError};

fn limits() -> Limits {
    Limits {
        manifest_bytes: 64 << 10,
        blob_bytes: 1 << 20,
        timeout: Duration::from_secs(20),
        connect_timeout: Duration::from_secs(2),
    }
}

fn basic() -> Credentials {
    Credentials::Basic {
        username: "author".into(),
        password: "s3cret".into(),
    }
}

/// The requests a server has had, in order.
type Log = Arc<Mutex<Vec<Seen>>>;

/// A server that answers by `route` and keeps every request it had.
async fn logged(route: impl Fn(&Seen) -> Behaviour + Send + Sync + 'static) -> (Server, Log) {
    let log: Log = Arc::default();
    let kept = log.clone();
    let server = Server::start(move |seen| {
        kept.lock().unwrap().push(seen.clone());
        route(seen)
    })
    .await;
    (server, log)
}

/// `METHOD path` of each request in `log`.
fn requests(log: &Log) -> Vec<String> {
    log.lock()
        .unwrap()
        .iter()
        .map(|seen| format!("{} {}", seen.method, seen.path))
        .collect()
}

/// Asserts no request in `log` wrote anything: no upload, no manifest.
fn nothing_written(log: &Log) {
    let written: Vec<_> = requests(log)
        .into_iter()
        .filter(|r| r.starts_with("PUT") || r.starts_with("PATCH"))
        .collect();
    assert_eq!(written, Vec::<String>::new(), "nothing was written");
}

/// The `Location` a server answers an upload's start with.
type Location = dyn Fn(&Seen) -> String + Send + Sync;

/// The process's peak resident memory, in bytes.
fn peak_memory() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|line| line.starts_with("VmHWM:"))
        .unwrap();
    let kib: u64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap();
    kib << 10
}

#[tokio::test]
async fn a_plain_http_token_realm_elsewhere_gets_no_credentials() {
    // A loopback registry (plain HTTP is fine for it) whose challenge
    // names a token service in clear on another host: the password would
    // cross the network readable. 192.0.2.1 (TEST-NET-1) is never
    // connected to: the realm is refused by its URL alone.
    const REALM: &str = "http://192.0.2.1/token";
    let (server, log) = logged(|_| {
        Behaviour::status(
            401,
            &[(
                "WWW-Authenticate",
                &format!("Bearer realm=\"{REALM}\",service=\"evil\""),
            )],
        )
    })
    .await;
    let reference = server.reference("x:1");
    let error = client(limits(), basic())
        .push(&reference, &component("a:b/c", "d"), BTreeMap::new())
        .await
        .unwrap_err();
    assert!(matches!(error, OciError::Registry { .. }), "{error}");
    one_line_naming(&error, &reference.to_string());
    assert!(error.to_string().contains(REALM), "{error}");
    assert!(error.to_string().contains("not HTTPS"), "{error}");
    // The registry had no credentials either, and nothing was written.
    let log_seen = log.lock().unwrap().clone();
    assert!(!log_seen.is_empty());
    for seen in &log_seen {
        assert_eq!(seen.headers.get("authorization"), None, "{seen:?}");
    }
    nothing_written(&log);
}

#[tokio::test]
async fn an_upload_location_on_another_host_gets_nothing() {
    // The other "host": another loopback server, that would accept
    // anything.
    let (elsewhere, elsewhere_log) = logged(|_| Behaviour::status(201, &[])).await;
    let other_port = elsewhere.port;
    let locations: Vec<Box<Location>> = vec![
        // Another port.
        Box::new(move |_| format!("http://127.0.0.1:{other_port}/v2/x/blobs/uploads/1")),
        // Another host name, the other port.
        Box::new(move |_| format!("http://localhost:{other_port}/v2/x/blobs/uploads/1")),
        // Another host name for this very server (localhost is
        // 127.0.0.1): the name is what counts, not where it leads.
        Box::new(|seen| {
            let host = seen.headers["host"].replace("127.0.0.1", "localhost");
            format!("http://{host}/v2/x/blobs/uploads/1")
        }),
        // Another scheme.
        Box::new(|seen| format!("ftp://{}/v2/x/blobs/uploads/1", seen.headers["host"])),
    ];
    for location in locations {
        let (server, log) = logged(move |seen| match seen.method.as_str() {
            "HEAD" => Behaviour::status(404, &[]),
            "POST" => Behaviour::status(202, &[("Location", &location(seen))]),
            _ => Behaviour::status(201, &[]),
        })
        .await;
        let reference = server.reference("x:1");
        let error = client(limits(), basic())
            .push(&reference, &component("a:b/c", "d"), BTreeMap::new())
            .await
            .unwrap_err();
        let OciError::UploadLocation { location, .. } = &error else {
            panic!("{error}")
        };
        one_line_naming(&error, &reference.to_string());
        assert!(error.to_string().contains(location.as_str()), "{error}");
        assert!(location.contains("/v2/x/blobs/uploads/1"), "{location}");
        nothing_written(&log);
    }
    assert_eq!(requests(&elsewhere_log), Vec::<String>::new());
}

#[tokio::test]
async fn an_endless_error_answer_to_an_upload_is_read_to_a_bound() {
    // 400 MB of error body, made as it is sent; read whole, it would
    // take the process's memory with it.
    const LENGTH: u64 = 400 << 20;
    let cases: [(&str, u16); 2] = [("POST", 400), ("PUT", 500)];
    for (flooded, status) in cases {
        let sent = Arc::new(AtomicU64::new(0));
        let counter = sent.clone();
        let (server, log) = logged(move |seen| {
            if seen.method == flooded {
                return Behaviour::Flood {
                    status,
                    length: LENGTH,
                    sent: counter.clone(),
                };
            }
            match seen.method.as_str() {
                "HEAD" => Behaviour::status(404, &[]),
                "POST" => Behaviour::status(202, &[("Location", "/v2/x/blobs/uploads/1?_state=s")]),
                _ => Behaviour::status(201, &[]),
            }
        })
        .await;
        let reference = server.reference("x:1");
        let before = peak_memory();
        let error = client(limits(), Credentials::Anonymous)
            .push(&reference, &component("a:b/c", "d"), BTreeMap::new())
            .await
            .unwrap_err();
        let grown = peak_memory().saturating_sub(before);
        assert!(
            matches!(&error, OciError::Status { code, .. } if *code == status),
            "{error}"
        );
        one_line_naming(&error, &reference.to_string());
        assert!(grown < 64 << 20, "the peak memory grew by {grown} bytes");
        tokio::time::sleep(Duration::from_millis(300)).await;
        let total = sent.load(Ordering::SeqCst);
        assert!(
            total < 64 << 20,
            "{total} bytes of the error body were sent"
        );
        let manifests: Vec<_> = requests(&log)
            .into_iter()
            .filter(|r| r.contains("/manifests/"))
            .collect();
        assert_eq!(manifests, Vec::<String>::new(), "no manifest was pushed");
    }
}

#[tokio::test]
async fn a_registry_that_behaves_gets_the_blobs_then_the_manifest() {
    // The control for the tests above: a registry that wants a token
    // (from a token service on its own origin) and answers as the
    // distribution spec says. The layer is there already (HEAD 200): only
    // the config is uploaded.
    let bytes = component("a:b/c", "d");
    let layer = Digest::of(&bytes).to_string();
    let present = format!("/v2/x/blobs/{layer}");
    let (server, log) = logged(move |seen| {
        if seen.path.starts_with("/token") {
            let scoped = seen.path.contains("scope=repository%3Ax%3Apull%2Cpush");
            let credentials = seen.headers.get("authorization").map(String::as_str)
                == Some("Basic YXV0aG9yOnMzY3JldA==");
            return match scoped && credentials {
                true => Behaviour::ok("application/json", br#"{"token":"t"}"#.to_vec()),
                false => Behaviour::status(401, &[]),
            };
        }
        if seen.headers.get("authorization").map(String::as_str) != Some("Bearer t") {
            let realm = format!("Bearer realm=\"http://{}/token\"", seen.headers["host"]);
            return Behaviour::status(401, &[("WWW-Authenticate", &realm)]);
        }
        match seen.method.as_str() {
            "HEAD" if seen.path == present => Behaviour::status(200, &[]),
            "HEAD" => Behaviour::status(404, &[]),
            "POST" => Behaviour::status(202, &[("Location", "/v2/x/blobs/uploads/u?_state=s")]),
            _ => Behaviour::status(201, &[]),
        }
    })
    .await;
    let reference = server.reference("x:1");
    let pushed = client(limits(), basic())
        .push(&reference, &bytes, BTreeMap::new())
        .await
        .unwrap();
    let seen = log.lock().unwrap().clone();
    let authorized: Vec<_> = seen
        .iter()
        .filter(|s| s.headers.get("authorization").map(String::as_str) == Some("Bearer t"))
        .map(|s| format!("{} {}", s.method, s.path))
        .collect();
    let config_digest = authorized
        .iter()
        .find_map(|r| r.strip_prefix("PUT /v2/x/blobs/uploads/u?_state=s&digest="))
        .unwrap()
        .replace("%3A", ":");
    assert_ne!(config_digest, layer);
    assert_eq!(
        authorized,
        vec![
            format!("HEAD /v2/x/blobs/{layer}"),
            format!("HEAD /v2/x/blobs/{config_digest}"),
            "POST /v2/x/blobs/uploads/".to_owned(),
            format!("PUT /v2/x/blobs/uploads/u?_state=s&digest={config_digest}")
                .replace(':', "%3A"),
            "PUT /v2/x/manifests/1".to_owned(),
        ]
    );
    let manifest = seen.iter().find(|s| s.path == "/v2/x/manifests/1").unwrap();
    assert_eq!(
        manifest.headers["content-type"],
        tiny_harness_oci::manifest::MANIFEST_MEDIA_TYPE
    );
    assert_eq!(pushed.layer_digest.to_string(), layer);
    // The password went to the token service only.
    for s in seen.iter().filter(|s| !s.path.starts_with("/token")) {
        assert!(
            !s.headers
                .get("authorization")
                .is_some_and(|a| a.starts_with("Basic")),
            "{s:?}"
        );
    }
}
