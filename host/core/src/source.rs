//! What a source of tools is: something that registers tool definitions
//! and then runs one of them, by server and tool name, when the invoker
//! asks. Plugins, the MCP servers they declare and the intrinsics are
//! sources.
//!
//! Invariant: this is the only thing the registry and the invoker know
//! about where a tool runs. A new kind of source implements [`ToolSource`]
//! and touches neither of them; the registry never imports a source's own
//! module.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use crate::tool::{CallError, ToolDefinition, ToolResult};

/// A tool a source offers for registration.
#[derive(Debug)]
pub struct PendingTool {
    /// The server part of its name.
    pub server: String,
    /// The definition, as the source gave it.
    pub definition: ToolDefinition,
}

/// What the invoker needs to know of a source before it calls it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallLimits {
    /// The longest a call may take, validation included.
    pub timeout: Duration,
    /// The largest arguments (compact JSON) a call may pass.
    pub arguments_bytes: usize,
}

impl CallLimits {
    /// Limits of `timeout` and `arguments_bytes`.
    pub fn new(timeout: Duration, arguments_bytes: usize) -> Self {
        CallLimits {
            timeout,
            arguments_bytes,
        }
    }
}

/// The future a [`ToolSource`] call returns.
pub type CallFuture<'a> = Pin<Box<dyn Future<Output = Result<ToolResult, CallError>> + Send + 'a>>;

/// Why a tool a source has no registered entry for is not simply unknown
/// (see [`ToolSource::missing`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Missing {
    /// Its server offers it now, but it is new since the server's tools
    /// were pinned.
    NotPinned,
    /// Its server could not be started, so its tools are not known: why.
    Unavailable(String),
    /// Its server asks for a login the host does not have: what to run.
    LoginRequired(String),
}

/// A source of tools: it lists the definitions a registry registers, and
/// runs one of them, by server and tool name, when the invoker asks.
///
/// Implementations must contain every failure of their own in the
/// [`CallError`] they return (a crash, a timeout, a broken transport) and
/// must stop by `deadline`; the invoker has already validated the
/// arguments against the tool's input schema and checks the result
/// against its output schema afterwards.
pub trait ToolSource: Send + Sync + fmt::Debug {
    /// What kind of source this is (`plugin`, `mcp`, ...), for people.
    fn kind(&self) -> &'static str;

    /// The limits calls to this source run under.
    fn call_limits(&self) -> CallLimits;

    /// Runs the tool `tool` of server `server` with `arguments` (already
    /// valid for its input schema), stopping at `deadline`.
    fn call<'a>(
        &'a self,
        server: &'a str,
        tool: &'a str,
        arguments: &'a serde_json::Value,
        deadline: Instant,
    ) -> CallFuture<'a>;

    /// Why a call to `tool` of server `server`, which the registry has no
    /// entry for, answers otherwise than `unknown_tool`, if it does: the
    /// server offers it now but it is new since its tools were pinned
    /// (`not_pinned`), or the server could not be started, so its tools
    /// are unknown (`unavailable`, with why). `None` by default.
    fn missing(&self, server: &str, tool: &str) -> Option<Missing> {
        let _ = (server, tool);
        None
    }
}
