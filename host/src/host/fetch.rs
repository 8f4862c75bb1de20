//! The components of a config's `oci://` plugins, found in the store
//! beside the config ([`crate::config::oci_store`]) or fetched into it by
//! their digest before any plugin loads.
//!
//! Invariants:
//! - A start never asks a registry about a tag: a component is fetched
//!   only when the store lacks it, and then by the digest the config
//!   pins, so a tag that moves changes nothing that runs.
//! - The store holds only whole components whose bytes hash to their
//!   name (`Store::put` checks, then renames into place); loading checks
//!   the config's sha256 again, so a file changed in the store is refused,
//!   never run.
//! - Without the `oci` feature nothing is fetched: a missing component is
//!   a one-line error saying how to fetch it.

use crate::config::{Config, oci_store};
use crate::host::HostError;

/// Makes sure the store holds the component of every `oci://` plugin of
/// `config`, fetching by digest what it lacks.
pub(super) async fn missing_components(config: &Config) -> Result<(), HostError> {
    for (plugin, origin) in &config.oci {
        let store = oci_store(&config.path);
        let file = store.join("sha256").join(format!("{}.wasm", origin.sha256));
        if file.is_file() {
            continue;
        }
        fetch(plugin, origin, &store).await?;
    }
    Ok(())
}

#[cfg(feature = "oci")]
async fn fetch(
    plugin: &str,
    origin: &crate::config::OciOrigin,
    store: &std::path::Path,
) -> Result<(), HostError> {
    use tiny_harness_oci::{Client, Credentials, Digest, Limits, OciError, Store, Transport};
    let failed = |source: OciError| HostError::Fetch {
        plugin: plugin.to_owned(),
        store: store.to_owned(),
        source: Box::new(source),
    };
    let reference = &origin.reference;
    let digest: Digest = format!("sha256:{}", origin.sha256).parse().map_err(
        |e: tiny_harness_oci::reference::BadDigest| {
            failed(OciError::BadReference {
                input: reference.to_string(),
                reason: e.to_string(),
            })
        },
    )?;
    let credentials = Credentials::for_registry(reference.registry())
        .await
        .map_err(failed)?;
    let client = Client::new(
        Limits::default(),
        credentials,
        Transport::for_reference(reference),
    )
    .map_err(failed)?;
    let bytes = client.fetch(reference, &digest).await.map_err(failed)?;
    Store::new(store).put(&digest, &bytes).map_err(failed)?;
    tracing::info!(
        target: "tiny_harness::oci",
        plugin,
        %reference,
        %digest,
        "fetched a component missing from the store by its digest"
    );
    Ok(())
}

#[cfg(not(feature = "oci"))]
async fn fetch(
    plugin: &str,
    origin: &crate::config::OciOrigin,
    store: &std::path::Path,
) -> Result<(), HostError> {
    Err(HostError::Unsupported {
        plugin: plugin.to_owned(),
        needs: format!(
            "needs its component fetched from {} (sha256 {}), which is not in {}",
            origin.reference,
            origin.sha256,
            store.display()
        ),
        feature: "oci",
    })
}
