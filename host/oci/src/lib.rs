//! WebAssembly components published to and fetched from OCI registries.
//!
//! A component is pushed as a Wasm OCI artifact, in the layout of the
//! CNCF Wasm OCI artifact format as `wkg` writes it (see [`manifest`]):
//! an OCI image manifest whose config is `application/vnd.wasm.config.v0+json`
//! and whose one layer, `application/wasm`, is the component's bytes. It is
//! named by a [`Reference`], `oci://HOST[:PORT]/REPOSITORY:TAG` or
//! `…@sha256:HEX`; [`Client::resolve`] finds its manifest and
//! [`Client::fetch`] downloads its bytes by digest, which a [`Store`] then
//! keeps under their digest.
//!
//! Invariants of the crate: nothing a registry sends can make it panic,
//! wait without end or hold unbounded memory on a read (every body is read
//! against a limit, every operation is under a timeout: [`Limits`]); bytes
//! are returned or stored only when they hash to the digest they were
//! asked for by; plain HTTP is only for loopback registries; credentials
//! and components go only to the registry's own origin, or elsewhere over
//! HTTPS (a token service, an upload location: see [`client`]); a push
//! that fails pushes no manifest; every error is an [`OciError`] that
//! displays as one line naming the reference and what to do.
//!
//! Feature `client` (default): the [`Client`] and [`Credentials`], with
//! reqwest (oci-client for its manifest types only). Without it, only
//! [`Reference`], [`Digest`], [`Store`] and [`OciError`]: what a host
//! needs to run components that are in its store, with no network code
//! at all.

#[cfg(feature = "client")]
pub mod client;
#[cfg(feature = "client")]
pub mod credentials;
pub mod error;
#[cfg(feature = "client")]
pub mod manifest;
#[cfg(feature = "client")]
pub(crate) mod pull;
#[cfg(feature = "client")]
pub(crate) mod push;
pub mod reference;
pub mod store;
#[cfg(feature = "test-registry")]
pub mod test_registry;
#[cfg(feature = "client")]
pub(crate) mod world;

#[cfg(feature = "client")]
pub use client::{Client, Limits, Pushed, Resolved, Transport};
#[cfg(feature = "client")]
pub use credentials::{Credentials, DockerConfig};
pub use error::OciError;
pub use reference::{Digest, Reference};
pub use store::Store;
