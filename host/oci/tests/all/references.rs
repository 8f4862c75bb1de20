//! References that are refused before anything is sent: bad syntax, no
//! tag or digest, plain HTTP to a registry that is not on loopback.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::support::{Behaviour, Server, component, one_line_naming};
use tiny_harness_oci::{Client, Credentials, Limits, OciError, Reference, Transport};

const HEX: &str = "4f3c2b1a4f3c2b1a4f3c2b1a4f3c2b1a4f3c2b1a4f3c2b1a4f3c2b1a4f3c2b1a";

#[test]
fn bad_references_are_refused_saying_what_to_write() {
    for (text, why) in [
        (
            "http://registry.example/plugins/fs:1",
            "the scheme is http, not oci",
        ),
        (
            "https://registry.example/plugins/fs:1",
            "the scheme is https, not oci",
        ),
        (
            "registry.example/plugins/fs:1",
            "does not start with oci://",
        ),
        ("oci://", "no repository"),
        (
            "oci://registry.example/plugins/fs",
            "name a tag or a digest",
        ),
        (
            "oci://registry.example/plugins/fs@sha256:1234",
            "is not a digest",
        ),
        (
            &format!(
                "oci://registry.example/plugins/fs@sha256:{}",
                HEX.to_uppercase()
            ),
            "is not a digest",
        ),
        (
            &format!("oci://registry.example/plugins/fs@sha512:{HEX}"),
            "is not a digest",
        ),
        (
            "oci://registry.example/Plugins/fs:1",
            "the repository Plugins/fs",
        ),
        ("oci://registry.example/plugins/fs:-1", "the tag -1"),
        (
            "oci://registry.example:99999/plugins/fs:1",
            "the port 99999",
        ),
    ] {
        let error = text.parse::<Reference>().unwrap_err();
        assert!(
            matches!(error, OciError::BadReference { .. }),
            "{text}: {error}"
        );
        let message = error.to_string();
        assert!(message.contains(why), "{text}: {message}");
        assert!(
            message.contains("write oci://HOST[:PORT]/REPOSITORY:TAG"),
            "{message}"
        );
        one_line_naming(&error, text);
    }
    let hostile = "oci://h/a\n:1\r\u{1b}[31m";
    let error = hostile.parse::<Reference>().unwrap_err();
    assert!(
        !error.to_string().contains(['\n', '\r', '\u{1b}']),
        "{error}"
    );
}

#[test]
fn good_references_display_as_written() {
    for text in [
        "oci://registry.example/plugins/fs:1.2.3".to_owned(),
        "oci://localhost:5000/a/b/c:latest".to_owned(),
        format!("oci://[::1]:5000/fs@sha256:{HEX}"),
        format!("oci://127.0.0.1/fs:v1@sha256:{HEX}"),
    ] {
        let reference: Reference = text.parse().unwrap();
        assert_eq!(reference.to_string(), text);
        assert!(reference.tag().is_some() || reference.digest().is_some());
    }
}

#[tokio::test]
async fn plain_http_is_refused_for_a_registry_off_loopback() {
    let client = Client::new(
        Limits::default(),
        Credentials::Anonymous,
        Transport::PlainHttp,
    )
    .unwrap();
    // A name that would not resolve, and an address that would not
    // answer: the refusal comes before either is tried, so it is
    // immediate.
    for text in [
        "oci://registry.invalid/plugins/fs:1",
        "oci://192.0.2.1:5000/plugins/fs:1",
        "oci://[::2]/fs:1",
    ] {
        let reference: Reference = text.parse().unwrap();
        assert!(!reference.is_loopback());
        let started = std::time::Instant::now();
        let error = client.resolve(&reference).await.unwrap_err();
        assert!(
            matches!(error, OciError::PlainHttpNotLoopback { .. }),
            "{error}"
        );
        one_line_naming(&error, text);
        let error = client
            .fetch(&reference, &tiny_harness_oci::Digest::of(b"x"))
            .await
            .unwrap_err();
        assert!(
            matches!(error, OciError::PlainHttpNotLoopback { .. }),
            "{error}"
        );
        let error = client
            .push(&reference, &component("a:b/c", "d"), BTreeMap::new())
            .await
            .unwrap_err();
        assert!(
            matches!(error, OciError::PlainHttpNotLoopback { .. }),
            "{error}"
        );
        assert!(started.elapsed() < Duration::from_secs(1));
    }
}

#[tokio::test]
async fn https_is_not_downgraded_for_a_loopback_registry() {
    // With HTTPS asked for, a plain-HTTP registry on loopback is not
    // spoken to in plain HTTP: the TLS handshake gets no answer (the
    // server waits for an HTTP request that never comes), nothing is
    // served.
    let server = Server::start(|_| Behaviour::status(200, &[])).await;
    let limits = Limits {
        timeout: Duration::from_secs(1),
        ..Limits::default()
    };
    let client = Client::new(limits, Credentials::Anonymous, Transport::Https).unwrap();
    let reference = server.reference("x:1");
    let error = client.resolve(&reference).await.unwrap_err();
    assert!(
        matches!(error, OciError::Timeout { .. } | OciError::Network { .. }),
        "{error}"
    );
    one_line_naming(&error, &reference.to_string());
    assert_eq!(
        server.requests.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "no HTTP request was read"
    );
}
