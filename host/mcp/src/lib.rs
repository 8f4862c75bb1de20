//! # tiny-harness-mcp
//!
//! MCP servers as sources of tools, reached with the official Rust SDK
//! (`rmcp`) over stdio or streamable HTTP, for the plugins that declare them.
//! It depends on `tiny-harness-core` and `tiny-harness-sandbox` only, never
//! on the WebAssembly crate: a plugin's declarations reach it as the core's
//! plain types. The `tiny-harness-host` facade re-exports what a host's
//! MCP servers are shown as ([`McpSource`], [`State`], [`Status`] and the
//! errors they name) in its module `mcp`, with its `mcp` feature; the
//! operator's tooling over it (`add`, `import`, `install`, `doctor`,
//! `login`) is the command line's (`tiny-harness-cli`).
//!
//! A plugin declares a server ([`Declaration`]); the host checks it against
//! the plugin's grants ([`Launch`]), starts or reaches it, lists its tools
//! and registers them as `<plugin>/<server>.<tool>` with an [`McpSource`]
//! behind them. From there an MCP tool is called like any other: validated
//! by the invoker before the server is contacted, rendered untrusted after.
//!
//! Invariants:
//! - It uses the registry's public checks only, and of the sandbox the
//!   grants and the confinement; the registry does not know this crate.
//! - Nothing a server sends can hang the host or grow it without bound:
//!   every wait has a deadline and every message, listing and result a
//!   size limit (see `docs/security.md`).
//! - Secrets (environment values, header values, URL credentials) never
//!   appear in `Debug`, errors or the `plugins` view.

mod bounded;
mod call;
mod child;
mod client;
mod connect;
mod convert;
mod deadline;
/// What a plugin declares about an MCP server (plain data, kept below the
/// MCP runtime so that plugins produce it without depending on it).
pub mod declaration {
    pub use tiny_harness_core::declaration::*;
}
mod fetch;
pub mod launch;
pub mod launcher;
#[cfg(feature = "oauth")]
pub mod oauth;
#[cfg(not(feature = "oauth"))]
#[path = "oauth_off.rs"]
mod oauth;
mod owed;
mod session;
pub mod store;
pub use tiny_harness_core::watch;

pub use child::{SHUTDOWN_GRACE, STDERR_TAIL_BYTES};
pub use client::{MAX_LOG_MESSAGES, MAX_PROGRESS, MAX_PROGRESS_SINKS};
pub use connect::Failure;
pub use convert::{ListingError, Skipped};
pub use declaration::{Declaration, Http, Stdio, Transport};
pub use launch::{BASELINE_ENV, Launch, LaunchError, LaunchRefused};
pub use session::{
    MAX_ATTEMPTS, MAX_PAGES, McpSource, SourceError, SourceLimits, State, Status, Unauthenticated,
};
/// One session opened, its first page of tools listed, and closed: what
/// `mcp doctor` and the login probe run.
pub use session::{Once, once};
pub use store::StoreError;
pub use watch::{Change, Drift, Pin};
