//! # tiny-harness-host
//!
//! The tool layer of an LLM agent harness. The host keeps the **registry**
//! of tools, **validates** every call against the tool's input schema, and
//! renders every result as **untrusted data**. It has no tools of its own:
//! every tool comes from a **plugin**, a WebAssembly component that runs
//! sandboxed with exactly the grants its config gives it, or from an **MCP
//! server** a plugin declares, which the host reaches under the same
//! grants ([`mcp`]). Every definition is **pinned** ([`pin`]): a tool that
//! changes under the host refuses calls until it is reviewed.
//!
//! The path from a model's call to an effect is short and single:
//!
//! ```text
//! ToolCall -> registry lookup      (unknown  -> unknown_tool, nothing runs)
//!          -> schema validation    (invalid  -> invalid_arguments, nothing runs)
//!          -> source: a plugin (fresh instance with grants, memory cap and
//!             deadline) or an MCP session (pinned, retried only if idempotent)
//!          -> ToolResult | CallError -> untrusted block (render)
//! ```
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use tiny_harness_host::{Config, Host, ToolCall};
//! let config = Config::load("tiny-harness.toml".as_ref())?;
//! let host = Host::from_config(&config).await?;
//! let outcome = host
//!     .invoke(&ToolCall {
//!         id: "call_1".into(),
//!         name: "fs/workspace.read_file".into(),
//!         arguments: serde_json::json!({"path": "README.md"}),
//!     })
//!     .await;
//! println!("{}", outcome.render());
//! # Ok(()) }
//! ```
//!
//! Modules, lowest layer first: [`tool`] (plain data), [`display`] and
//! [`file`](mod@file) (text for terminals, files from outside), [`schema`],
//! [`source`], [`registry`], [`grant`] (programs and network
//! destinations), [`http`] (outbound HTTP under those grants), [`pin`]
//! (definition hashes, the lock file), [`plugin`] (everything wasmtime),
//! [`mcp`] (everything rmcp), [`render`],
//! [`intrinsic`] (the twelve intrinsic tools, the workflow and skills),
//! [`invoke`], [`journal`], [`wire`] (names providers accept), [`provider`]
//! (each provider's tools, calls and results), [`config`], [`host`] (the
//! facade). The lowest of them (`tool` to `registry`, `pin`,
//! `render`, `invoke`, `journal`) are the crate `tiny-harness-core`,
//! re-exported here at the same paths; `grant` and `confine` are the
//! crate `tiny-harness-sandbox`, `intrinsic` the crate
//! `tiny-harness-intrinsic`, `provider` with `wire` the crate
//! `tiny-harness-provider`, `plugin` with `http` the crate
//! `tiny-harness-wasm`, and the MCP runtime under `mcp` the crate
//! `tiny-harness-mcp`, likewise. The `tiny-harness` binary and the
//! operator's tooling (`mcp add`, `install`, `import`, `doctor`, `login`)
//! are the crate `tiny-harness-cli`, over this one.
//!
//! Cargo features, all on by default: `mcp` (MCP servers as sources of
//! tools, the [`mcp`] module), `http` (outbound HTTP for plugins through
//! `wasi:http`) and `intrinsics` (the [`intrinsic`] tools, the workflow
//! and skills). Without one, a plugin that needs it is refused at load
//! ([`HostError::Unsupported`], or a [`LoadError`] naming the feature).
//!
//! Everything from outside is untrusted and bounded: every size, count and
//! cost a plugin, a schema, a model's arguments, a config or a path can
//! impose has a limit ([`Limits`], [`RegistrationLimits`]), and each
//! refusal is a typed error on one line. `docs/security.md` lists them.

pub mod config;
pub use tiny_harness_core::display;
pub use tiny_harness_core::file;
pub use tiny_harness_sandbox::confine;
pub use tiny_harness_sandbox::grant;
pub mod host;
pub use tiny_harness_core::invoke;
pub use tiny_harness_core::journal;
pub use tiny_harness_core::pin;
pub use tiny_harness_core::registry;
pub use tiny_harness_core::render;
pub use tiny_harness_core::schema;
pub use tiny_harness_core::source;
pub use tiny_harness_core::tool;
pub(crate) use tiny_harness_core::watch;
#[cfg(feature = "intrinsics")]
pub use tiny_harness_intrinsic as intrinsic;
#[cfg(feature = "mcp")]
pub use tiny_harness_mcp as mcp;
pub use tiny_harness_provider as provider;
pub use tiny_harness_provider::wire;
pub use tiny_harness_wasm as plugin;
pub use tiny_harness_wasm::http;

#[cfg(all(
    test,
    not(all(feature = "mcp", feature = "http", feature = "intrinsics"))
))]
mod features_tests;
#[cfg(all(test, feature = "mcp"))]
mod launchers_tests;

pub use config::{Config, ConfigError};
pub use file::FileError;
#[cfg(feature = "intrinsics")]
pub use host::IntrinsicOutcome;
pub use host::{Host, HostBuilder, HostError, Turn, TurnError};
#[cfg(feature = "intrinsics")]
pub use intrinsic::{
    IntrinsicError, IntrinsicSource, SkillLimits, Skills, Workflow, WorkflowCommand,
};
pub use invoke::{CallOutcome, CallRecorder, Invoker, ToolCall};
pub use journal::Journal;
pub use plugin::{
    CompileCache, CompileOrigin, DirGrant, DirMode, Grants, Limits, LoadError, Plugin,
    PluginEngine, PluginSpec,
};
pub use provider::{DecodedCall, EncodedRequest, Provider, ToolReply};
pub use registry::{LiveRegistry, RegistrationLimits, Registry, RegistryError, ToolName};
pub use source::{CallLimits, PendingTool, ToolSource};
pub use tool::{Annotations, CallError, ContentPart, ToolDefinition, ToolResult};
pub use wire::{UnknownWireName, WireCodec, WireRule};
