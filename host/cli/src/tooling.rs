//! The operator's tooling for MCP servers and plugins: each edits a
//! config, fills a store or talks to a person, and none of it runs inside
//! a host that an embedder builds.
//!
//! - [`add`]: a server's block written into a config, comments kept.
//! - [`import`]: a config pasted from another MCP client, as blocks.
//! - [`install`]: a fetching launcher's package installed into a store.
//! - [`doctor`]: a server run once under `strace`, and the grants that
//!   would let it start.
//! - [`login`]: an OAuth login in the person's browser ([`browser`]).
//! - [`oci_entry`]: a plugin from an OCI registry written into a config.

pub mod add;
pub mod browser;
pub mod doctor;
pub mod import;
pub mod install;
pub mod login;
pub mod oci_entry;
