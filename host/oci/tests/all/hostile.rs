//! Registries that misbehave: real loopback HTTP servers that hang,
//! fail, redirect elsewhere, or send manifests and blobs that are too
//! large, too deep, of the wrong kind or not what they claim. Each is
//! refused with its own error, on one line naming the reference, within
//! its bounds, and leaves nothing in the store.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::support::{
    Behaviour, Seen, Server, client, component, files_under, one_line_naming, pull,
};
use serde_json::json;
use tiny_harness_oci::manifest::{CONFIG_MEDIA_TYPE, LAYER_MEDIA_TYPE, MANIFEST_MEDIA_TYPE};
use tiny_harness_oci::{Credentials, Digest, Limits, OciError, Reference, Store};

/// The component the well-behaved parts serve.
const BLOB: &[u8] = b"\0asm\x0d\0\x01\0";

fn limits() -> Limits {
    Limits {
        manifest_bytes: 64 << 10,
        blob_bytes: 1 << 20,
        timeout: Duration::from_secs(10),
        connect_timeout: Duration::from_secs(2),
    }
}

/// A manifest with these layers (media type, digest, size) and this
/// config media type.
fn manifest(config_type: &str, layers: &[(&str, Digest, usize)]) -> Vec<u8> {
    let layers: Vec<_> = layers
        .iter()
        .map(|(media_type, digest, size)| json!({"mediaType": media_type, "digest": digest.to_string(), "size": size}))
        .collect();
    serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": MANIFEST_MEDIA_TYPE,
        "config": {"mediaType": config_type, "digest": Digest::of(b"{}").to_string(), "size": 2},
        "layers": layers,
    }))
    .unwrap()
}

/// The manifest of [`BLOB`] as one Wasm layer.
fn good_manifest() -> Vec<u8> {
    manifest(
        CONFIG_MEDIA_TYPE,
        &[(LAYER_MEDIA_TYPE, Digest::of(BLOB), BLOB.len())],
    )
}

/// A registry whose manifest requests get `manifest` and blob requests
/// get `blob`; `/v2/` answers 200.
async fn registry(
    manifest: impl Fn(&Seen) -> Behaviour + Send + Sync + 'static,
    blob: impl Fn(&Seen) -> Behaviour + Send + Sync + 'static,
) -> Server {
    Server::start(move |seen| {
        if seen.path.contains("/manifests/") {
            manifest(seen)
        } else if seen.path.contains("/blobs/") {
            blob(seen)
        } else {
            Behaviour::status(200, &[])
        }
    })
    .await
}

/// Pulls `reference` into a fresh store and returns the error, after
/// checking it is one line naming the reference and the store is empty.
async fn refused(limits: Limits, reference: &Reference) -> OciError {
    let client = client(limits, Credentials::Anonymous);
    let root = tempfile::tempdir().unwrap();
    let store = Store::new(root.path().join("store"));
    let error = pull(&client, reference, &store).await.unwrap_err();
    one_line_naming(&error, &reference.to_string());
    assert_eq!(
        files_under(root.path()),
        Vec::<std::path::PathBuf>::new(),
        "the store has nothing new"
    );
    error
}

#[tokio::test]
async fn a_registry_that_never_answers_times_out() {
    let server = registry(|_| Behaviour::Hang, |_| Behaviour::Hang).await;
    let reference = server.reference("x:1");
    let limits = Limits {
        timeout: Duration::from_millis(700),
        ..limits()
    };
    let started = Instant::now();
    // Bounded here too, so that a client without the timeout fails the
    // test instead of hanging it.
    let error = tokio::time::timeout(Duration::from_secs(30), refused(limits, &reference))
        .await
        .expect("the client gave up by itself");
    assert!(matches!(error, OciError::Timeout { .. }), "{error}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(error.to_string().contains("0.7 s"), "{error}");

    // Fetching a blob is bounded the same way.
    let client = client(limits, Credentials::Anonymous);
    let digest = Digest::of(BLOB);
    let fetch = client.fetch(&reference, &digest);
    let error = tokio::time::timeout(Duration::from_secs(30), fetch)
        .await
        .expect("the client gave up by itself")
        .unwrap_err();
    assert!(matches!(error, OciError::Timeout { .. }), "{error}");

    // And so is a push.
    let bytes = component("a:b/c", "d");
    let push = client.push(&reference, &bytes, BTreeMap::new());
    let error = tokio::time::timeout(Duration::from_secs(30), push)
        .await
        .expect("the client gave up by itself")
        .unwrap_err();
    assert!(matches!(error, OciError::Timeout { .. }), "{error}");
    one_line_naming(&error, &reference.to_string());
}

#[tokio::test]
async fn a_server_error_is_its_status() {
    let server = registry(
        |_| Behaviour::status(500, &[]),
        |_| Behaviour::status(503, &[]),
    )
    .await;
    let reference = server.reference("x:1");
    let error = refused(limits(), &reference).await;
    assert!(
        matches!(error, OciError::Status { code: 500, .. }),
        "{error}"
    );
    let error = client(limits(), Credentials::Anonymous)
        .fetch(&reference, &Digest::of(BLOB))
        .await
        .unwrap_err();
    assert!(
        matches!(error, OciError::Status { code: 503, .. }),
        "{error}"
    );
}

#[tokio::test]
async fn a_redirect_to_another_host_is_refused_and_one_within_is_followed() {
    // The other "host" is another loopback port, serving everything well.
    let elsewhere = registry(
        |_| Behaviour::ok(MANIFEST_MEDIA_TYPE, good_manifest()),
        |_| Behaviour::ok("application/octet-stream", BLOB),
    )
    .await;
    let target = format!("http://127.0.0.1:{}/v2/x/manifests/1", elsewhere.port);
    let location = target.clone();
    let server = registry(
        move |_| Behaviour::status(307, &[("Location", &location)]),
        |_| Behaviour::status(500, &[]),
    )
    .await;
    let reference = server.reference("x:1");
    let error = refused(limits(), &reference).await;
    let OciError::Redirect { from, to, .. } = &error else {
        panic!("{error}")
    };
    assert_eq!(from, &format!("http://127.0.0.1:{}", server.port));
    assert_eq!(to, &target);
    assert!(error.to_string().contains(&target), "{error}");
    assert_eq!(
        elsewhere.requests.load(Ordering::SeqCst),
        0,
        "nothing went to the other host"
    );

    // A blob redirected elsewhere is refused too.
    let blob_target = format!(
        "http://127.0.0.1:{}/v2/x/blobs/{}",
        elsewhere.port,
        Digest::of(BLOB)
    );
    let server = registry(
        |_| Behaviour::ok(MANIFEST_MEDIA_TYPE, good_manifest()),
        move |_| Behaviour::status(302, &[("Location", &blob_target)]),
    )
    .await;
    let error = refused(limits(), &server.reference("x:1")).await;
    assert!(matches!(error, OciError::Redirect { .. }), "{error}");

    // Within the registry, a redirect is followed.
    let server = registry(
        |seen| match seen.path.as_str() {
            "/v2/x/manifests/1" => Behaviour::status(301, &[("Location", "/v2/x/manifests/moved")]),
            _ => Behaviour::ok(MANIFEST_MEDIA_TYPE, good_manifest()),
        },
        |seen| match seen.path.starts_with("/v2/x/blobs/sha256:") {
            true => Behaviour::status(302, &[("Location", "/v2/x/blobs/stored-elsewhere")]),
            false => Behaviour::ok("application/octet-stream", BLOB),
        },
    )
    .await;
    let root = tempfile::tempdir().unwrap();
    let store = Store::new(root.path());
    let path = pull(
        &client(limits(), Credentials::Anonymous),
        &server.reference("x:1"),
        &store,
    )
    .await
    .unwrap();
    assert_eq!(std::fs::read(path).unwrap(), BLOB);

    // A redirect loop ends.
    let server = registry(
        |_| Behaviour::status(302, &[("Location", "/v2/x/manifests/1")]),
        |_| Behaviour::status(500, &[]),
    )
    .await;
    let error = refused(limits(), &server.reference("x:1")).await;
    assert!(matches!(error, OciError::BadRedirect { .. }), "{error}");
}

#[tokio::test]
async fn a_manifest_over_the_limit_is_refused_announced_or_not() {
    let large = {
        let mut value: serde_json::Value = serde_json::from_slice(&good_manifest()).unwrap();
        value["annotations"] = json!({"padding": "p".repeat(100 << 10)});
        serde_json::to_vec(&value).unwrap()
    };
    for length in [true, false] {
        let body = large.clone();
        let server = registry(
            move |_| Behaviour::Reply {
                status: 200,
                headers: vec![("Content-Type".into(), MANIFEST_MEDIA_TYPE.into())],
                body: body.clone(),
                length,
            },
            |_| Behaviour::ok("application/octet-stream", BLOB),
        )
        .await;
        let error = refused(limits(), &server.reference("x:1")).await;
        assert!(
            matches!(error, OciError::ManifestTooLarge { limit: 65536, .. }),
            "{error}"
        );
    }
    // The same manifest is fine under a larger limit: the limit is what
    // refused it.
    let body = large.clone();
    let server = registry(
        move |_| Behaviour::ok(MANIFEST_MEDIA_TYPE, body.clone()),
        |_| Behaviour::ok("application/octet-stream", BLOB),
    )
    .await;
    let limits = Limits {
        manifest_bytes: 1 << 20,
        ..limits()
    };
    let resolved = client(limits, Credentials::Anonymous)
        .resolve(&server.reference("x:1"))
        .await
        .unwrap();
    assert_eq!(resolved.annotations["padding"].len(), 100 << 10);
}

#[tokio::test]
async fn a_deeply_nested_manifest_is_an_error_not_a_crash() {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let in_annotations = {
        let text = String::from_utf8(good_manifest()).unwrap();
        let open = "[".repeat(30_000);
        let close = "]".repeat(30_000);
        text.replacen(
            '{',
            &format!("{{\"annotations\":{{\"a\":{open}{close}}},"),
            1,
        )
    };
    let limits = Limits {
        manifest_bytes: 1 << 20,
        ..limits()
    };
    for body in [deep, in_annotations] {
        let server = registry(
            move |_| Behaviour::ok(MANIFEST_MEDIA_TYPE, body.clone()),
            |_| Behaviour::ok("application/octet-stream", BLOB),
        )
        .await;
        let error = refused(limits, &server.reference("x:1")).await;
        assert!(matches!(error, OciError::BadManifest { .. }), "{error}");
    }
}

/// Whether an error is the one expected.
type Expect = fn(&OciError) -> bool;

#[tokio::test]
async fn manifests_of_other_kinds_are_refused_by_cause() {
    let digest = Digest::of(BLOB);
    let index = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [],
    }))
    .unwrap();
    let cases: Vec<(Vec<u8>, Expect)> = vec![
        (
            manifest(
                CONFIG_MEDIA_TYPE,
                &[("application/vnd.oci.image.layer.v1.tar+gzip", digest, 8)],
            ),
            |e| matches!(e, OciError::NotWasm { part: "layer", media_type, .. } if media_type.contains("tar+gzip")),
        ),
        (
            manifest(
                "application/vnd.oci.image.config.v1+json",
                &[(LAYER_MEDIA_TYPE, digest, 8)],
            ),
            |e| matches!(e, OciError::NotWasm { part: "config", .. }),
        ),
        (
            manifest(
                CONFIG_MEDIA_TYPE,
                &[(LAYER_MEDIA_TYPE, digest, 8), (LAYER_MEDIA_TYPE, digest, 8)],
            ),
            |e| matches!(e, OciError::LayerCount { count: 2, .. }),
        ),
        (manifest(CONFIG_MEDIA_TYPE, &[]), |e| {
            matches!(e, OciError::LayerCount { count: 0, .. })
        }),
        (
            index,
            |e| matches!(e, OciError::NotAnImageManifest { media_type, .. } if media_type.contains("index")),
        ),
    ];
    for (body, expected) in cases {
        let server = registry(
            move |_| Behaviour::ok(MANIFEST_MEDIA_TYPE, body.clone()),
            |_| Behaviour::ok("application/octet-stream", BLOB),
        )
        .await;
        let error = refused(limits(), &server.reference("x:1")).await;
        assert!(expected(&error), "{error}");
    }
}

#[tokio::test]
async fn a_blob_over_the_limit_stops_the_download_early() {
    // A blob that never ends: refused once past the limit, long before
    // the timeout, having read little more than the limit.
    let sent = Arc::new(AtomicU64::new(0));
    let counter = sent.clone();
    let server = registry(
        |_| Behaviour::ok(MANIFEST_MEDIA_TYPE, good_manifest()),
        move |_| Behaviour::Endless(counter.clone()),
    )
    .await;
    let started = Instant::now();
    let reference = server.reference("x:1");
    let pulled = tokio::time::timeout(Duration::from_secs(30), refused(limits(), &reference));
    let error = pulled.await.expect("the client stopped by itself");
    assert!(
        matches!(error, OciError::BlobTooLarge { limit: 1048576, .. }),
        "{error}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let total = sent.load(Ordering::SeqCst);
    assert!(
        total < 32 << 20,
        "the server sent {total} bytes after the refusal"
    );

    // An announced length over the limit is refused before any is read:
    // this server announces one and sends nothing.
    let server = registry(
        |_| Behaviour::ok(MANIFEST_MEDIA_TYPE, good_manifest()),
        |_| Behaviour::Announce((1 << 20) + 1),
    )
    .await;
    let error = refused(limits(), &server.reference("x:1")).await;
    assert!(matches!(error, OciError::BlobTooLarge { .. }), "{error}");

    // A manifest that says the layer is over the limit is refused at
    // resolve.
    let body = manifest(
        CONFIG_MEDIA_TYPE,
        &[(LAYER_MEDIA_TYPE, Digest::of(BLOB), (1 << 20) + 1)],
    );
    let server = registry(
        move |_| Behaviour::ok(MANIFEST_MEDIA_TYPE, body.clone()),
        |_| Behaviour::ok("application/octet-stream", BLOB),
    )
    .await;
    let error = client(limits(), Credentials::Anonymous)
        .resolve(&server.reference("x:1"))
        .await
        .unwrap_err();
    assert!(matches!(error, OciError::BlobTooLarge { .. }), "{error}");
}

#[tokio::test]
async fn bytes_that_do_not_match_their_digest_are_refused() {
    // The blob is not the bytes the manifest's digest names.
    let server = registry(
        |_| Behaviour::ok(MANIFEST_MEDIA_TYPE, good_manifest()),
        |_| Behaviour::ok("application/octet-stream", b"\0asm\x0d\0\x01\x01".to_vec()),
    )
    .await;
    let error = refused(limits(), &server.reference("x:1")).await;
    let OciError::DigestMismatch {
        expected, actual, ..
    } = &error
    else {
        panic!("{error}")
    };
    assert_eq!(expected, &Digest::of(BLOB).to_string());
    assert_eq!(actual, &Digest::of(b"\0asm\x0d\0\x01\x01").to_string());

    // The manifest is not the one the reference's digest names.
    let server = registry(
        |_| Behaviour::ok(MANIFEST_MEDIA_TYPE, good_manifest()),
        |_| Behaviour::ok("application/octet-stream", BLOB),
    )
    .await;
    let pinned = server
        .reference("x:1")
        .with_digest(Digest::of(b"another manifest"));
    let error = refused(limits(), &pinned).await;
    assert!(matches!(error, OciError::DigestMismatch { .. }), "{error}");

    // The registry's digest header disagrees with the manifest it sent.
    let server = registry(
        |_| {
            let mut reply = Behaviour::ok(MANIFEST_MEDIA_TYPE, good_manifest());
            if let Behaviour::Reply { headers, .. } = &mut reply {
                headers.push((
                    "Docker-Content-Digest".into(),
                    Digest::of(b"other").to_string(),
                ));
            }
            reply
        },
        |_| Behaviour::ok("application/octet-stream", BLOB),
    )
    .await;
    let error = refused(limits(), &server.reference("x:1")).await;
    assert!(matches!(error, OciError::DigestMismatch { .. }), "{error}");
}

#[tokio::test]
async fn a_well_behaved_server_passes_the_same_checks() {
    // The control for the tests above: with nothing wrong, the same
    // helpers pull the component into the store.
    let server = registry(
        |_| Behaviour::ok(MANIFEST_MEDIA_TYPE, good_manifest()),
        |_| Behaviour::ok("application/octet-stream", BLOB),
    )
    .await;
    let root = tempfile::tempdir().unwrap();
    let store = Store::new(root.path());
    let path = pull(
        &client(limits(), Credentials::Anonymous),
        &server.reference("x:1"),
        &store,
    )
    .await
    .unwrap();
    assert_eq!(std::fs::read(path).unwrap(), BLOB);
}

#[tokio::test]
async fn a_token_that_is_not_a_header_value_is_an_error_of_the_push() {
    // A token with a newline cannot go in a header (oci-client, which
    // pushed before, unwrapped it there and panicked): the push says so,
    // and the process goes on.
    let server = Server::start(|seen| {
        if seen.path.starts_with("/token") {
            return Behaviour::ok("application/json", br#"{"token":"a\nb"}"#.to_vec());
        }
        let realm = format!("Bearer realm=\"http://{}/token\"", seen.headers["host"]);
        Behaviour::status(401, &[("WWW-Authenticate", &realm)])
    })
    .await;
    let reference = server.reference("x:1");
    let client = client(limits(), Credentials::Anonymous);
    let error = client
        .push(&reference, &component("a:b/c", "d"), BTreeMap::new())
        .await
        .unwrap_err();
    assert!(matches!(error, OciError::Registry { .. }), "{error}");
    one_line_naming(&error, &reference.to_string());
}
