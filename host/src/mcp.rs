//! MCP servers as sources of tools, reached with the official Rust SDK
//! (`rmcp`) over stdio or streamable HTTP, for the plugins that declare them.
//!
//! A plugin declares a server ([`Declaration`]); the host checks it against
//! the plugin's grants ([`Launch`]), starts or reaches it, lists its tools
//! and registers them as `<plugin>/<server>.<tool>` with an [`McpSource`]
//! behind them. From there an MCP tool is called like any other: validated
//! by the invoker before the server is contacted, rendered untrusted after.
//!
//! Invariants:
//! - `mcp` never imports `registry` internals beyond its public checks, nor
//!   `plugin` beyond the grants; the registry does not know this module.
//! - Nothing a server sends can hang the host or grow it without bound:
//!   every wait has a deadline and every message, listing and result a
//!   size limit (see `docs/security.md`).
//! - Secrets (environment values, header values, URL credentials) never
//!   appear in `Debug`, errors or the `plugins` view.

pub mod add;
mod bounded;
mod call;
mod child;
mod client;
mod connect;
pub mod convert;
/// What a plugin declares about an MCP server (plain data, kept below the
/// MCP runtime so that plugins produce it without depending on it).
pub mod declaration {
    pub use crate::declaration::*;
}
pub mod doctor;
mod fetch;
pub mod import;
pub mod install;
pub mod launch;
pub mod launcher;
pub mod oauth;
mod session;
pub mod store;
pub mod watch;

pub use child::{SHUTDOWN_GRACE, STDERR_TAIL_BYTES};
pub use client::{MAX_LOG_MESSAGES, MAX_PROGRESS};
pub use convert::Skipped;
pub use declaration::{Declaration, Http, Stdio, Transport};
pub use launch::{BASELINE_ENV, Launch, LaunchError};
pub use session::{
    MAX_ATTEMPTS, MAX_PAGES, McpSource, SourceLimits, State, Status, Unauthenticated,
};
pub use watch::{Change, Drift, Pin};
