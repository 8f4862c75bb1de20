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
#[derive(Debug, Clone, PartialEq)]
pub struct PendingTool {
    /// The server part of its name.
    pub server: String,
    /// The definition, as the source gave it.
    pub definition: ToolDefinition,
}

impl PendingTool {
    /// `definition`, offered as a tool of server `server`.
    pub fn new(server: impl Into<String>, definition: ToolDefinition) -> Self {
        PendingTool {
            server: server.into(),
            definition,
        }
    }
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
    /// The limits of a source that does not choose its own: 30 s and 1 MiB
    /// of arguments.
    pub const IN_PROCESS: CallLimits = CallLimits {
        timeout: Duration::from_secs(30),
        arguments_bytes: 1 << 20,
    };

    /// Limits of `timeout` and `arguments_bytes`.
    pub fn new(timeout: Duration, arguments_bytes: usize) -> Self {
        CallLimits {
            timeout,
            arguments_bytes,
        }
    }
}

/// A boxed future that can be sent between threads: what the methods of
/// [`ToolSource`] return. Make one from an `async` block with [`boxed`].
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The future a [`ToolSource`] call returns.
pub type CallFuture<'a> = BoxFuture<'a, Result<ToolResult, CallError>>;

/// The future [`ToolSource::list_tools`] returns: every tool the source
/// offers now, or why it cannot say.
pub type ListFuture<'a> = BoxFuture<'a, Result<Vec<PendingTool>, CallError>>;

/// `future` (an `async` block, say) as the boxed future a [`ToolSource`]
/// method returns, so that an implementation reads as an `async fn`:
///
/// ```
/// # use tiny_harness_core::source::{boxed, CallFuture};
/// # use tiny_harness_core::tool::ToolResult;
/// fn call<'a>(greeting: &'a str) -> CallFuture<'a> {
///     boxed(async move { Ok(ToolResult::text(format!("{greeting}, world"))) })
/// }
/// ```
pub fn boxed<'a, T>(future: impl Future<Output = T> + Send + 'a) -> BoxFuture<'a, T> {
    Box::pin(future)
}

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

/// A source of tools: it lists the definitions a registry registers
/// ([`ToolSource::list_tools`]), and runs one of them, by server and tool
/// name, when the invoker asks ([`ToolSource::call`]).
///
/// Implementations must contain every failure of their own in the
/// [`CallError`] they return (a crash, a timeout, a broken transport) and
/// must stop by `deadline`; the invoker has already validated the
/// arguments against the tool's input schema and checks the result
/// against its output schema afterwards.
///
/// Plugins, the MCP servers they declare and the intrinsics are sources;
/// so is a tool set of an embedder's own, registered under a name with
/// `HostBuilder::source` and pinned like any other. Write the methods
/// that return futures with [`boxed`] around an `async` block.
pub trait ToolSource: Send + Sync + fmt::Debug {
    /// What kind of source this is (`plugin`, `mcp`, ...), for people:
    /// `in-process` unless it says otherwise.
    fn kind(&self) -> &'static str {
        "in-process"
    }

    /// The limits calls to this source run under:
    /// [`CallLimits::IN_PROCESS`] unless it says otherwise.
    fn call_limits(&self) -> CallLimits {
        CallLimits::IN_PROCESS
    }

    /// Every tool the source offers now, each with the server it belongs
    /// to. A host registers and pins what this lists when it adds the
    /// source, and lists again to show drift (`Host::drift`) and to pin
    /// again (`Host::reregister`); a tool whose definition then differs
    /// from its pin is refused (`schema_changed`) until it is pinned
    /// again.
    fn list_tools(&self) -> ListFuture<'_>;

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
