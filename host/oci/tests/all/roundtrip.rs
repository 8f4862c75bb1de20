//! Publishing and fetching through a real registry (docker-registry on
//! loopback, one for this file): the round trip, the artifact's layout as
//! `wkg` writes it, tags that move, what push refuses, and the store.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use crate::support::{
    Registry, client, component, files_under, one_line_naming, pull, quick_limits, reference,
};
use serde_json::Value;
use tiny_harness_oci::manifest::{
    CONFIG_MEDIA_TYPE, LAYER_MEDIA_TYPE, MANIFEST_MEDIA_TYPE, TITLE_ANNOTATION,
};
use tiny_harness_oci::{Credentials, Digest, Limits, OciError, Store};

static REGISTRY: LazyLock<Registry> = LazyLock::new(Registry::start);

/// GET `path` on the registry, as JSON (checks what was really stored,
/// without this crate's reading of it).
async fn raw_json(path: &str, accept: &str) -> (Value, Vec<u8>) {
    let url = format!("http://127.0.0.1:{}{path}", REGISTRY.port);
    let response = reqwest::Client::new()
        .get(url)
        .header("Accept", accept)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "GET {path}");
    let bytes = response.bytes().await.unwrap().to_vec();
    (serde_json::from_slice(&bytes).unwrap(), bytes)
}

#[tokio::test]
async fn a_component_round_trips_in_the_wasm_artifact_layout() {
    let client = client(quick_limits(), Credentials::Anonymous);
    let bytes = component("wasi:cli/environment@0.2.0", "tiny:demo/greet@0.1.0");
    let reference = reference(&REGISTRY, "plugins/hello:1.0.0");
    let annotations = BTreeMap::from([
        (TITLE_ANNOTATION.to_owned(), "hello.wasm".to_owned()),
        (
            "org.opencontainers.image.version".to_owned(),
            "1.0.0".to_owned(),
        ),
        ("dev.tiny-harness.plugin".to_owned(), "hello".to_owned()),
    ]);
    let pushed = client
        .push(&reference, &bytes, annotations.clone())
        .await
        .unwrap();
    assert_eq!(pushed.layer_digest, Digest::of(&bytes));
    assert_eq!(pushed.size, bytes.len() as u64);

    // By tag and by digest: the same manifest, the same layer.
    let by_tag = client.resolve(&reference).await.unwrap();
    assert_eq!(by_tag.manifest_digest, pushed.manifest_digest);
    assert_eq!(by_tag.layer_digest, pushed.layer_digest);
    assert_eq!(by_tag.layer_size, bytes.len() as u64);
    assert_eq!(by_tag.annotations, annotations);
    let pinned = reference.with_digest(pushed.manifest_digest);
    let by_digest = client.resolve(&pinned).await.unwrap();
    assert_eq!(by_digest, by_tag);
    assert_eq!(
        client
            .fetch(&reference, &by_tag.layer_digest)
            .await
            .unwrap(),
        bytes
    );
    assert_eq!(
        client.fetch(&pinned, &by_tag.layer_digest).await.unwrap(),
        bytes
    );

    // The manifest as stored: an OCI image manifest, the Wasm config, one
    // application/wasm layer titled as wkg titles it, our annotations.
    let (manifest, raw) = raw_json("/v2/plugins/hello/manifests/1.0.0", MANIFEST_MEDIA_TYPE).await;
    assert_eq!(Digest::of(&raw), pushed.manifest_digest);
    assert_eq!(manifest["schemaVersion"], 2);
    assert_eq!(manifest["mediaType"], MANIFEST_MEDIA_TYPE);
    assert_eq!(manifest["config"]["mediaType"], CONFIG_MEDIA_TYPE);
    let layers = manifest["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 1);
    assert_eq!(layers[0]["mediaType"], LAYER_MEDIA_TYPE);
    assert_eq!(layers[0]["digest"], pushed.layer_digest.to_string());
    assert_eq!(layers[0]["size"], bytes.len());
    assert_eq!(layers[0]["annotations"][TITLE_ANNOTATION], "hello.wasm");
    let stored: BTreeMap<String, String> =
        serde_json::from_value(manifest["annotations"].clone()).unwrap();
    assert_eq!(stored, annotations);

    // The config, field for field as oci-wasm writes it.
    let config_path = format!(
        "/v2/plugins/hello/blobs/{}",
        manifest["config"]["digest"].as_str().unwrap()
    );
    let (config, _) = raw_json(&config_path, "*/*").await;
    assert_eq!(config["architecture"], "wasm");
    assert_eq!(config["os"], "wasip2");
    assert_eq!(config["author"], Value::Null);
    assert_eq!(
        config["layerDigests"],
        serde_json::json!([pushed.layer_digest.to_string()])
    );
    assert_eq!(
        config["component"]["imports"],
        serde_json::json!(["wasi:cli/environment@0.2.0"])
    );
    assert_eq!(
        config["component"]["exports"],
        serde_json::json!(["tiny:demo/greet@0.1.0"])
    );
    assert_eq!(config["component"]["target"], Value::Null);
    let created = config["created"].as_str().unwrap();
    assert!(
        chrono::DateTime::parse_from_rfc3339(created).is_ok(),
        "created: {created}"
    );

    // Into the store, and out.
    let root = tempfile::tempdir().unwrap();
    let store = Store::new(root.path());
    let path = pull(&client, &reference, &store).await.unwrap();
    assert_eq!(
        path,
        root.path()
            .join("sha256")
            .join(format!("{}.wasm", pushed.layer_digest.hex()))
    );
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    assert_eq!(store.get(&pushed.layer_digest), Some(path));
    assert_eq!(files_under(root.path()).len(), 1);
}

#[tokio::test]
async fn a_moved_tag_resolves_to_the_new_manifest_and_the_old_stays_fetchable() {
    let client = client(quick_limits(), Credentials::Anonymous);
    let reference = reference(&REGISTRY, "plugins/moving:stable");
    let first = component("wasi:cli/environment@0.2.0", "tiny:demo/one@0.1.0");
    let second = component("wasi:cli/environment@0.2.0", "tiny:demo/two@0.1.0");
    let old = client
        .push(&reference, &first, BTreeMap::new())
        .await
        .unwrap();
    assert_eq!(
        client.resolve(&reference).await.unwrap().manifest_digest,
        old.manifest_digest
    );
    let new = client
        .push(&reference, &second, BTreeMap::new())
        .await
        .unwrap();
    assert_ne!(new.manifest_digest, old.manifest_digest);

    let now = client.resolve(&reference).await.unwrap();
    assert_eq!(now.manifest_digest, new.manifest_digest);
    assert_eq!(
        client.fetch(&reference, &now.layer_digest).await.unwrap(),
        second
    );
    assert!(now.annotations.is_empty());

    let then = client
        .resolve(&reference.with_digest(old.manifest_digest))
        .await
        .unwrap();
    assert_eq!(then.layer_digest, old.layer_digest);
    assert_eq!(
        client.fetch(&reference, &old.layer_digest).await.unwrap(),
        first
    );
}

#[tokio::test]
async fn a_digest_the_registry_does_not_have_is_not_found() {
    let client = client(quick_limits(), Credentials::Anonymous);
    let reference = reference(&REGISTRY, "plugins/absent:1");
    let error = client.resolve(&reference).await.unwrap_err();
    assert!(matches!(error, OciError::NotFound { .. }), "{error}");
    one_line_naming(&error, &reference.to_string());
    let error = client
        .fetch(&reference, &Digest::of(b"nothing"))
        .await
        .unwrap_err();
    assert!(matches!(error, OciError::NotFound { .. }), "{error}");
}

#[tokio::test]
async fn push_refuses_what_is_not_a_component_and_what_is_not_a_tag() {
    let limits = Limits {
        blob_bytes: 64,
        ..quick_limits()
    };
    let client = client(limits, Credentials::Anonymous);
    let reference = reference(&REGISTRY, "plugins/refused:1");

    let error = client
        .push(&reference, b"\0asm\x01\0\0\0", BTreeMap::new())
        .await
        .unwrap_err();
    assert!(matches!(error, OciError::NotAComponent { .. }), "{error}");
    one_line_naming(&error, &reference.to_string());
    let error = client
        .push(&reference, b"#!/bin/sh\n", BTreeMap::new())
        .await
        .unwrap_err();
    assert!(matches!(error, OciError::NotAComponent { .. }), "{error}");

    let large = component(&format!("wasi:cli/{}@0.2.0", "e".repeat(64)), "x");
    let error = client
        .push(&reference, &large, BTreeMap::new())
        .await
        .unwrap_err();
    assert!(
        matches!(error, OciError::BlobTooLarge { limit: 64, .. }),
        "{error}"
    );

    let pinned = reference.with_digest(Digest::of(b"x"));
    let error = client
        .push(&pinned, &component("a:b/c", "d"), BTreeMap::new())
        .await
        .unwrap_err();
    assert!(matches!(error, OciError::WrongReference { .. }), "{error}");
    one_line_naming(&error, &pinned.to_string());

    // Nothing of these reached the registry.
    let error = client.resolve(&reference).await.unwrap_err();
    assert!(matches!(error, OciError::NotFound { .. }), "{error}");
}
