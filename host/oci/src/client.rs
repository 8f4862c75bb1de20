//! [`Client`]: publishing a component to a registry ([`Client::push`]),
//! finding it ([`Client::resolve`]) and downloading it
//! ([`Client::fetch`]).
//!
//! Invariants:
//! - every operation runs whole under [`Limits::timeout`] (connecting
//!   under [`Limits::connect_timeout`] too) and fails with
//!   [`OciError::Timeout`] past it; on a timeout the work is dropped, a
//!   push's task included (it is aborted, not left running);
//! - plain HTTP is used only with [`Transport::PlainHttp`], and that only
//!   for a loopback registry ([`Reference::is_loopback`]): any other
//!   registry is refused before a connection is made;
//! - the reads (manifest and blob) are those of the `pull` module, bounded
//!   in size and in where they go; a blob is fetched by digest only, never
//!   by tag, and is returned only if its bytes hash to that digest;
//! - a push (the `push` module) goes over the same client by the same
//!   rules: only to the registry's origin, to its token service (HTTPS,
//!   or plain HTTP on loopback for a loopback registry), and to an upload
//!   location on the registry's origin or over HTTPS; every answer read
//!   to a bound; the manifest last, so a refused or failed push pushes no
//!   manifest. Only a tag is pushed to, and only a component that parses
//!   as one and is within [`Limits::blob_bytes`]; every refusal is an
//!   [`OciError`] on one line naming the reference.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use url::Url;

use crate::credentials::Credentials;
use crate::error::{OciError, one_line};
use crate::manifest;
use crate::pull::{Puller, Tokens, error_chain};
use crate::push::Pusher;
use crate::reference::{Digest, Reference};
use crate::world::World;

/// The bounds on every operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest manifest read, in bytes (default 64 KiB: a component's
    /// manifest is well under 2 KiB).
    pub manifest_bytes: u64,
    /// The largest component read or pushed, in bytes (default
    /// [`tiny_harness_core::file::MAX_COMPONENT_BYTES`], the largest
    /// component file the host loads).
    pub blob_bytes: u64,
    /// The longest a whole operation may take (default 60 s).
    pub timeout: Duration,
    /// The longest connecting may take (default 10 s).
    pub connect_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            manifest_bytes: 64 << 10,
            blob_bytes: tiny_harness_core::file::MAX_COMPONENT_BYTES,
            timeout: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(10),
        }
    }
}

/// How registries are reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Transport {
    /// HTTPS (TLS with the system's roots), for every registry.
    #[default]
    Https,
    /// Plain HTTP, for a loopback registry only; any other is refused
    /// ([`OciError::PlainHttpNotLoopback`]).
    PlainHttp,
}

impl Transport {
    /// What the host uses for `reference`: plain HTTP for a loopback
    /// registry (one run for tests or on this machine), HTTPS for every
    /// other.
    pub fn for_reference(reference: &Reference) -> Transport {
        if reference.is_loopback() {
            Transport::PlainHttp
        } else {
            Transport::Https
        }
    }
}

/// What [`Client::push`] published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pushed {
    /// The manifest's digest: `oci://HOST/REPO@DIGEST` names this
    /// publication for good.
    pub manifest_digest: Digest,
    /// The layer's digest (the component's bytes).
    pub layer_digest: Digest,
    /// The component's size, in bytes.
    pub size: u64,
}

/// What [`Client::resolve`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The manifest's digest (the sha256 of the bytes the registry sent).
    pub manifest_digest: Digest,
    /// The component's digest, to [`Client::fetch`] by.
    pub layer_digest: Digest,
    /// The component's size as the manifest gives it (within
    /// [`Limits::blob_bytes`]).
    pub layer_size: u64,
    /// The manifest's annotations.
    pub annotations: BTreeMap<String, String>,
}

/// A client for the registries of components.
pub struct Client {
    limits: Limits,
    credentials: Credentials,
    transport: Transport,
    http: reqwest::Client,
    tokens: Tokens,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("limits", &self.limits)
            .field("credentials", &self.credentials)
            .field("transport", &self.transport)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client that works within `limits`, presents `credentials` to the
    /// registries it reaches (the credentials of one registry: make one
    /// client per registry) and reaches them by `transport`.
    pub fn new(
        limits: Limits,
        credentials: Credentials,
        transport: Transport,
    ) -> Result<Client, OciError> {
        let setup = |error: &(dyn std::error::Error + 'static)| OciError::Setup {
            reason: error_chain(error),
        };
        let mut http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            // The whole operation's timeout is `within`'s, so that it is
            // always reported as one.
            .connect_timeout(limits.connect_timeout);
        if transport == Transport::PlainHttp {
            // Loopback only: a proxy has no business there.
            http = http.no_proxy();
        }
        let http = http.build().map_err(|error| setup(&error))?;
        Ok(Client {
            limits,
            credentials,
            transport,
            http,
            tokens: Mutex::new(HashMap::new()),
        })
    }

    /// The limits this client works within.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Publishes the component `bytes` at `reference` (which names a tag
    /// and no digest) as a Wasm OCI artifact whose manifest carries
    /// `annotations`; the config lists the component's imports and exports.
    ///
    /// The blobs go first (each skipped if the repository has it), the
    /// manifest last: a push that fails pushes no manifest. The registry
    /// is reached as [`Client::resolve`] reaches it; an upload location
    /// it names off its own origin is followed only over HTTPS, and gets
    /// no credentials ([`OciError::UploadLocation`] otherwise).
    pub async fn push(
        &self,
        reference: &Reference,
        bytes: &[u8],
        annotations: BTreeMap<String, String>,
    ) -> Result<Pushed, OciError> {
        let name = reference.to_string();
        let (Some(tag), None) = (reference.tag(), reference.digest()) else {
            return Err(OciError::WrongReference {
                reference: name,
                reason: "a component is pushed to a tag: write oci://HOST/REPOSITORY:TAG, without @sha256:",
            });
        };
        let pusher = Pusher {
            puller: self.reader(reference, "pull,push")?,
        };
        let size = bytes.len() as u64;
        if size > self.limits.blob_bytes {
            return Err(OciError::BlobTooLarge {
                reference: name,
                limit: self.limits.blob_bytes,
            });
        }
        let world = World::of(bytes).map_err(|reason| OciError::NotAComponent {
            reference: name.clone(),
            reason: reason.0,
        })?;
        let artifact =
            manifest::build(bytes, &world, &annotations).map_err(|error| OciError::Registry {
                reference: name.clone(),
                reason: one_line(&error.to_string()),
            })?;
        let layer = bytes::Bytes::copy_from_slice(bytes);
        self.within(reference, pusher.push(tag, &artifact, layer))
            .await?;
        Ok(Pushed {
            manifest_digest: artifact.manifest_digest,
            layer_digest: artifact.layer_digest,
            size,
        })
    }

    /// Finds the component `reference` names: fetches its manifest (by
    /// digest if the reference has one, else by tag) within
    /// [`Limits::manifest_bytes`] and checks it is a Wasm component
    /// artifact. With a digest in the reference, the manifest's bytes must
    /// hash to it.
    pub async fn resolve(&self, reference: &Reference) -> Result<Resolved, OciError> {
        let puller = self.puller(reference)?;
        let name = reference.to_string();
        self.within(reference, async {
            let body = puller.manifest().await?;
            let manifest_digest = Digest::of(&body.bytes);
            let claimed = reference.digest().map(Digest::to_string).or_else(|| {
                body.digest_header
                    .filter(|header| header.starts_with("sha256:"))
            });
            if let Some(expected) = claimed
                && expected != manifest_digest.to_string()
            {
                return Err(OciError::DigestMismatch {
                    reference: name.clone(),
                    expected: one_line(&expected),
                    actual: manifest_digest.to_string(),
                });
            }
            let checked = manifest::check(&name, body.content_type.as_deref(), &body.bytes)?;
            if checked.layer_size > self.limits.blob_bytes {
                return Err(OciError::BlobTooLarge {
                    reference: name.clone(),
                    limit: self.limits.blob_bytes,
                });
            }
            Ok(Resolved {
                manifest_digest,
                layer_digest: checked.layer_digest,
                layer_size: checked.layer_size,
                annotations: checked.annotations,
            })
        })
        .await
    }

    /// Downloads the component `layer_digest` from the repository of
    /// `reference` (by digest; the reference's tag plays no part), within
    /// [`Limits::blob_bytes`] while streaming, and returns its bytes once
    /// they hash to the digest.
    pub async fn fetch(
        &self,
        reference: &Reference,
        layer_digest: &Digest,
    ) -> Result<Vec<u8>, OciError> {
        let puller = self.puller(reference)?;
        self.within(reference, puller.blob(layer_digest)).await
    }

    /// The reads for `reference`, if it may be reached.
    fn puller<'a>(&'a self, reference: &'a Reference) -> Result<Puller<'a>, OciError> {
        self.reader(reference, "pull")
    }

    /// The requests to the registry of `reference`, if it may be reached,
    /// earning tokens for `actions`.
    fn reader<'a>(
        &'a self,
        reference: &'a Reference,
        actions: &'static str,
    ) -> Result<Puller<'a>, OciError> {
        Ok(Puller {
            actions,
            http: &self.http,
            reference,
            origin: self.origin(reference)?,
            credentials: &self.credentials,
            tokens: &self.tokens,
            limits: &self.limits,
        })
    }

    /// `scheme://HOST[:PORT]` of the registry, or why it may not be
    /// reached.
    fn origin(&self, reference: &Reference) -> Result<Url, OciError> {
        let scheme = match self.transport {
            Transport::Https => "https",
            Transport::PlainHttp if reference.is_loopback() => "http",
            Transport::PlainHttp => {
                return Err(OciError::PlainHttpNotLoopback {
                    reference: reference.to_string(),
                });
            }
        };
        Url::parse(&format!("{scheme}://{}", reference.registry())).map_err(|error| {
            OciError::BadReference {
                input: reference.to_string(),
                reason: one_line(&error.to_string()),
            }
        })
    }

    /// `work`, or [`OciError::Timeout`] once [`Limits::timeout`] has passed.
    async fn within<T>(
        &self,
        reference: &Reference,
        work: impl Future<Output = Result<T, OciError>>,
    ) -> Result<T, OciError> {
        match tokio::time::timeout(self.limits.timeout, work).await {
            Ok(result) => result,
            Err(_) => Err(OciError::Timeout {
                reference: reference.to_string(),
                after: self.limits.timeout,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send<T: Send>(_: T) {}

    #[test]
    fn operations_can_run_on_any_thread() {
        let client =
            Client::new(Limits::default(), Credentials::Anonymous, Transport::Https).unwrap();
        let reference: Reference = "oci://registry.example/a:1".parse().unwrap();
        send(client.resolve(&reference));
        send(client.fetch(&reference, &Digest::of(b"")));
        send(client.push(&reference, b"", BTreeMap::new()));
        send(Credentials::for_registry("registry.example"));
        send(client);
    }

    #[test]
    fn limits_default_to_the_documented_values() {
        let limits = Limits::default();
        assert_eq!(limits.manifest_bytes, 65536);
        assert_eq!(
            limits.blob_bytes,
            tiny_harness_core::file::MAX_COMPONENT_BYTES
        );
        assert_eq!(limits.timeout, Duration::from_secs(60));
        assert_eq!(limits.connect_timeout, Duration::from_secs(10));
    }
}
