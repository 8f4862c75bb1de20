//! The Wasm OCI artifact: building one to publish (`build`) and checking
//! one fetched (`check`).
//!
//! The layout is the CNCF Wasm OCI artifact format as `wkg`
//! (wasm-pkg-client, through the oci-wasm crate) writes it: an OCI image
//! manifest (schemaVersion 2, [`MANIFEST_MEDIA_TYPE`]) whose config is
//! [`CONFIG_MEDIA_TYPE`] JSON (`created`, `author`, `architecture: "wasm"`,
//! `os: "wasip2"`, `layerDigests`, `component: {exports, imports,
//! target}`) and whose one layer is [`LAYER_MEDIA_TYPE`], the component's
//! bytes.
//!
//! Invariants of `check`: it parses at most what it is given (the caller
//! bounds that), with serde_json's recursion limit, so deep nesting is an
//! error and never a stack overflow; it accepts only an OCI image manifest
//! of schemaVersion 2 with the Wasm config media type and exactly one
//! layer of the Wasm layer media type whose digest is a sha256 digest and
//! whose size is not negative. Anything else is the [`OciError`] that says
//! which.

use std::collections::BTreeMap;

use oci_client::manifest::{OciDescriptor, OciImageManifest};
use serde::{Deserialize, Serialize};

use crate::error::{OciError, one_line};
use crate::reference::Digest;
use crate::world::World;

/// The media type of the manifest: an OCI image manifest.
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";

/// The media type of the config: the Wasm artifact's config.
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";

/// The media type of the one layer: the component's bytes.
pub const LAYER_MEDIA_TYPE: &str = "application/wasm";

/// The annotation `wkg` puts on the layer (the file name for tools that
/// save it); given among the manifest's annotations, it is copied there.
pub const TITLE_ANNOTATION: &str = "org.opencontainers.image.title";

/// What the manifest request accepts: the image manifest, and the other
/// kinds only to say clearly that they are not one.
pub(crate) const ACCEPT: &str = "application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.v2+json, application/vnd.docker.distribution.manifest.list.v2+json";

/// The config, field for field as oci-wasm's `WasmConfig` serialises
/// (`null` where it has nothing).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WasmConfig<'a> {
    created: String,
    author: Option<String>,
    architecture: &'static str,
    os: &'static str,
    layer_digests: Vec<String>,
    component: Option<Component<'a>>,
}

/// oci-wasm's `Component`.
#[derive(Serialize)]
struct Component<'a> {
    exports: &'a [String],
    imports: &'a [String],
    target: Option<String>,
}

/// An artifact ready to push: the blobs and the manifest, with their
/// digests.
pub(crate) struct Artifact {
    /// The config JSON.
    pub config: Vec<u8>,
    /// Its digest.
    pub config_digest: Digest,
    /// The layer's digest (the component's).
    pub layer_digest: Digest,
    /// The manifest JSON, exactly as pushed.
    pub manifest: Vec<u8>,
    /// Its digest.
    pub manifest_digest: Digest,
}

/// The artifact for the component `bytes` with its `world`, the manifest
/// carrying `annotations`.
pub(crate) fn build(
    bytes: &[u8],
    world: &World,
    annotations: &BTreeMap<String, String>,
) -> Result<Artifact, serde_json::Error> {
    let layer_digest = Digest::of(bytes);
    let config = serde_json::to_vec(&WasmConfig {
        created: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true),
        author: None,
        architecture: "wasm",
        os: "wasip2",
        layer_digests: vec![layer_digest.to_string()],
        component: Some(Component {
            exports: &world.exports,
            imports: &world.imports,
            target: None,
        }),
    })?;
    let config_digest = Digest::of(&config);
    let title = annotations.get(TITLE_ANNOTATION);
    let manifest = OciImageManifest {
        schema_version: 2,
        media_type: Some(MANIFEST_MEDIA_TYPE.to_owned()),
        config: descriptor(CONFIG_MEDIA_TYPE, config_digest, config.len(), None),
        layers: vec![descriptor(
            LAYER_MEDIA_TYPE,
            layer_digest,
            bytes.len(),
            title.map(|title| BTreeMap::from([(TITLE_ANNOTATION.to_owned(), title.clone())])),
        )],
        subject: None,
        artifact_type: None,
        annotations: (!annotations.is_empty()).then(|| annotations.clone()),
    };
    let manifest = serde_json::to_vec(&manifest)?;
    Ok(Artifact {
        config,
        config_digest,
        layer_digest,
        manifest_digest: Digest::of(&manifest),
        manifest,
    })
}

fn descriptor(
    media_type: &str,
    digest: Digest,
    size: usize,
    annotations: Option<BTreeMap<String, String>>,
) -> OciDescriptor {
    OciDescriptor {
        media_type: media_type.to_owned(),
        digest: digest.to_string(),
        size: i64::try_from(size).unwrap_or(i64::MAX),
        urls: None,
        annotations,
        artifact_type: None,
    }
}

/// What a checked manifest says.
#[derive(Debug)]
pub(crate) struct Checked {
    /// The layer's digest.
    pub layer_digest: Digest,
    /// The layer's size, as the manifest gives it.
    pub layer_size: u64,
    /// The manifest's annotations.
    pub annotations: BTreeMap<String, String>,
}

/// The fields that say what kind of manifest a document is.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Head {
    schema_version: Option<i64>,
    media_type: Option<String>,
}

/// Checks the manifest `body` (answered with `content_type`, if any) is a
/// Wasm component artifact, for `reference` (its display).
pub(crate) fn check(
    reference: &str,
    content_type: Option<&str>,
    body: &[u8],
) -> Result<Checked, OciError> {
    let bad = |reason: String| OciError::BadManifest {
        reference: reference.to_owned(),
        reason: one_line(&reason),
    };
    let head: Head = serde_json::from_slice(body).map_err(|error| bad(error.to_string()))?;
    let media_type = head
        .media_type
        .or_else(|| content_type.map(|c| c.split(';').next().unwrap_or(c).trim().to_owned()))
        .unwrap_or_else(|| "of no media type".to_owned());
    if media_type != MANIFEST_MEDIA_TYPE {
        return Err(OciError::NotAnImageManifest {
            reference: reference.to_owned(),
            media_type: one_line(&media_type),
        });
    }
    if head.schema_version != Some(2) {
        return Err(bad(format!(
            "schemaVersion is {}, not 2",
            head.schema_version
                .map_or("missing".to_owned(), |v| v.to_string())
        )));
    }
    let manifest: OciImageManifest =
        serde_json::from_slice(body).map_err(|error| bad(error.to_string()))?;
    if manifest.config.media_type != CONFIG_MEDIA_TYPE {
        return Err(OciError::NotWasm {
            reference: reference.to_owned(),
            part: "config",
            media_type: one_line(&manifest.config.media_type),
            expected: CONFIG_MEDIA_TYPE,
        });
    }
    let [layer] = manifest.layers.as_slice() else {
        return Err(OciError::LayerCount {
            reference: reference.to_owned(),
            count: manifest.layers.len(),
        });
    };
    if layer.media_type != LAYER_MEDIA_TYPE {
        return Err(OciError::NotWasm {
            reference: reference.to_owned(),
            part: "layer",
            media_type: one_line(&layer.media_type),
            expected: LAYER_MEDIA_TYPE,
        });
    }
    let layer_digest: Digest = layer
        .digest
        .parse()
        .map_err(|error: crate::reference::BadDigest| bad(format!("the layer's {error}")))?;
    let layer_size = u64::try_from(layer.size)
        .map_err(|_| bad(format!("the layer's size is {}", layer.size)))?;
    Ok(Checked {
        layer_digest,
        layer_size,
        annotations: manifest.annotations.unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn world() -> World {
        World {
            imports: vec!["wasi:cli/environment@0.2.0".into()],
            exports: vec!["run".into()],
        }
    }

    #[test]
    fn a_built_artifact_checks() {
        let annotations = BTreeMap::from([
            (TITLE_ANNOTATION.to_owned(), "fs.wasm".to_owned()),
            ("dev.tiny-harness.plugin".to_owned(), "fs".to_owned()),
        ]);
        let artifact = build(b"\0asm\x0d\0\x01\0", &world(), &annotations).unwrap();
        let checked = check("r", None, &artifact.manifest).unwrap();
        assert_eq!(checked.layer_digest, Digest::of(b"\0asm\x0d\0\x01\0"));
        assert_eq!(checked.layer_size, 8);
        assert_eq!(checked.annotations, annotations);
        let config: serde_json::Value = serde_json::from_slice(&artifact.config).unwrap();
        assert_eq!(config["architecture"], "wasm");
        assert_eq!(config["os"], "wasip2");
        assert_eq!(config["author"], serde_json::Value::Null);
        assert_eq!(config["layerDigests"][0], checked.layer_digest.to_string());
        assert_eq!(
            config["component"]["imports"][0],
            "wasi:cli/environment@0.2.0"
        );
        assert_eq!(config["component"]["exports"][0], "run");
        assert!(config["created"].as_str().unwrap().ends_with('Z'));
        assert_eq!(artifact.config_digest, Digest::of(&artifact.config));
        assert_eq!(artifact.manifest_digest, Digest::of(&artifact.manifest));
    }

    #[test]
    fn other_documents_are_refused_by_cause() {
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(matches!(
            check("r", None, deep.as_bytes()),
            Err(OciError::BadManifest { .. })
        ));
        // Unknown fields are skipped without recursion; a deep value where
        // a string belongs is refused at its first bracket.
        let inner = format!("{{\"mediaType\":\"{MANIFEST_MEDIA_TYPE}\",\"x\":{deep}}}");
        assert!(matches!(
            check("r", None, inner.as_bytes()),
            Err(OciError::BadManifest { .. })
        ));
        let artifact = build(b"\0asm\x0d\0\x01\0", &world(), &BTreeMap::new()).unwrap();
        let mut value: serde_json::Value = serde_json::from_slice(&artifact.manifest).unwrap();
        value["annotations"] = serde_json::json!({ "a": "x" });
        let text = value.to_string().replace("\"x\"}", &format!("{deep}}}"));
        let error = check("r", None, text.as_bytes()).unwrap_err();
        assert!(error.to_string().contains("invalid type"), "{error}");
        let index = br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}"#;
        assert!(matches!(
            check("r", None, index),
            Err(OciError::NotAnImageManifest { .. })
        ));
        let untyped = br#"{"schemaVersion":2}"#;
        assert!(matches!(
            check("r", None, untyped),
            Err(OciError::NotAnImageManifest { .. })
        ));
        let by_header = check(
            "r",
            Some("application/vnd.oci.image.manifest.v1+json; x=y"),
            untyped,
        )
        .unwrap_err();
        assert!(
            matches!(by_header, OciError::BadManifest { .. }),
            "{by_header}"
        );
    }
}
