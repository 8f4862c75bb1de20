//! MCP servers as sources of tools: the runtime is the crate
//! `tiny-harness-mcp` (sessions, launch, the store's lookup and check,
//! OAuth tokens attached and refreshed), re-exported here whole. Beside it
//! sits the operator's tooling, which edits configs and stores and talks
//! to a person: [`add`], [`import`], [`install`], [`doctor`] and
//! [`oauth::login`].

pub use tiny_harness_mcp::*;

pub mod add;
pub mod doctor;
pub mod import;
pub mod install;

/// OAuth for MCP servers: the runtime's tokens and settings, and the
/// operator's login.
pub mod oauth {
    pub use tiny_harness_mcp::oauth::*;

    pub mod browser;
    pub mod login;

    pub use login::{LoggedIn, Login, login};
}
