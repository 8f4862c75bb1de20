//! # tiny-harness-host
//!
//! The tool layer of an LLM agent harness. The host keeps the **registry**
//! of tools, **validates** every call against the tool's input schema, and
//! renders every result as **untrusted data**. It has no tools of its own:
//! every tool comes from a **plugin**, a WebAssembly component that runs
//! sandboxed with exactly the grants its config gives it, or from an **MCP
//! server** a plugin declares, which the host reaches under the same
//! grants ([`mcp`]), or from a **source of the embedder's own**
//! ([`HostBuilder::source`]), which runs in its process. Every definition
//! is **pinned** (in memory, and in a lock file beside the config): a tool
//! that changes under the host refuses calls until it is reviewed.
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
//! ## Where to start
//!
//! A handful of types carry everything: [`HostBuilder`] (what a host is
//! to be; [`Host::from_config`] builds everything a [`Config`] says, as
//! the `tiny-harness` command line does), [`Host`] (offer tools, run
//! calls, pins), [`PluginSpec`] with its [`Grants`] and [`Limits`] (one
//! plugin, when not from a config), [`ToolCall`] and [`CallOutcome`] (one
//! call and how it ended), [`Provider`] and [`Turn`] (one model turn in a
//! provider's format), and [`CallRecorder`] (what sees every call). The
//! rest are the types their fields and methods name.
//!
//! ## The tool loop with a provider
//!
//! `examples/loop.rs` runs it whole against a recorded response (`cargo
//! run -p tiny-harness-host --example loop`):
//!
//! ```no_run
//! # async fn run(response: serde_json::Value) -> Result<(), Box<dyn std::error::Error>> {
//! use tiny_harness_host::{Config, Host, Provider, Workflow};
//! let host = Host::from_config(&Config::load("tiny-harness.toml".as_ref())?).await?;
//! let mut workflow = Workflow::new();
//! host.begin_iteration();
//! let request = host.offer(Provider::Anthropic); // send request.tools to the model
//! // ... and with the model's response:
//! let turn = host.run_calls_in(&request, &response, &mut workflow, None).await?;
//! // turn.results: the tool-result message(s) to append before asking again
//! # Ok(()) }
//! ```
//!
//! ## A test that runs a plugin
//!
//! The same path a model's call takes (validation, limits, rendering),
//! with a bundled plugin granted a temporary directory:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use tiny_harness_host::{DirGrant, DirMode, HostBuilder, PluginSpec, ToolCall};
//! let dir = tempfile::tempdir()?;
//! std::fs::write(dir.path().join("note.txt"), "hello")?;
//! let mut fs = PluginSpec::new("fs", "builtin:fs");
//! // Checked as it is made: a relative or `..` guest path, a host path
//! // that is not a directory, a second grant at `/workspace` are refused.
//! fs.grants
//!     .add_dir(DirGrant::new(dir.path(), "/workspace", DirMode::ReadOnly)?)?;
//! let host = HostBuilder::new().plugin(fs).build().await?;
//! let call = |name: &str, arguments| ToolCall {
//!     id: "1".into(),
//!     name: name.into(),
//!     arguments,
//! };
//! let read = host
//!     .invoke(&call("fs/workspace.read_file", serde_json::json!({"path": "note.txt"})))
//!     .await;
//! assert!(read.render().contains("hello"));
//! // Refused before the plugin runs: the path argument is missing.
//! let bad = host.invoke(&call("fs/workspace.read_file", serde_json::json!({}))).await;
//! assert_eq!(bad.result.unwrap_err().code(), "invalid_arguments");
//! # Ok(()) }
//! ```
//!
//! ## Tools of your own
//!
//! A harness's own tools run in its process as a [`ToolSource`]: it lists
//! its tools and runs one when asked, each as an `async` block wrapped in
//! [`boxed`]. Added under a name with [`HostBuilder::source`] (or
//! [`Host::add_source`] on a running host), they are validated, rendered,
//! recorded, offered and pinned like a plugin's tools, and held to the
//! lock the same way (see [`Host::add_source`] for an example;
//! `examples/own_tools.rs` runs one).
//!
//! ## Two hosts sharing one engine, with different grants
//!
//! Compiled code, the instance pool and the epoch ticker are shared; each
//! host keeps its own plugins, grants and registry:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use tiny_harness_host::{DirGrant, DirMode, HostBuilder, PluginSpec, ToolCall};
//! let fs_over = |dir: &std::path::Path, mode| {
//!     let mut spec = PluginSpec::new("fs", "builtin:fs");
//!     let grant = DirGrant::new(dir, "/workspace", mode)?;
//!     spec.grants.add_dir(grant)?;
//!     Ok::<_, tiny_harness_host::GrantError>(spec)
//! };
//! let (a, b) = (tempfile::tempdir()?, tempfile::tempdir()?);
//! let reader = HostBuilder::new()
//!     .plugin(fs_over(a.path(), DirMode::ReadOnly)?)
//!     .build()
//!     .await?;
//! let writer = HostBuilder::new()
//!     .engine(reader.engine().clone())
//!     .plugin(fs_over(b.path(), DirMode::ReadWrite)?)
//!     .build()
//!     .await?;
//! let write = ToolCall {
//!     id: "1".into(),
//!     name: "fs/workspace.write_file".into(),
//!     arguments: serde_json::json!({"path": "out.txt", "content": "x"}),
//! };
//! assert_eq!(reader.invoke(&write).await.result.unwrap_err().code(), "denied");
//! assert!(!writer.invoke(&write).await.is_error());
//! assert!(b.path().join("out.txt").exists() && !a.path().join("out.txt").exists());
//! # Ok(()) }
//! ```
//!
//! ## A custom call recorder
//!
//! Every call the host makes, as it ends (a [`Journal`] is one):
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::{Arc, Mutex};
//! use tiny_harness_host::{CallOutcome, CallRecorder, HostBuilder, SchemaHash, ToolCall};
//!
//! #[derive(Debug, Default)]
//! struct Outcomes(Mutex<Vec<String>>);
//!
//! impl CallRecorder for Outcomes {
//!     fn record(&self, _: &ToolCall, outcome: &CallOutcome, _: Option<&SchemaHash>, _: Option<&str>) {
//!         let code = match &outcome.result {
//!             Ok(_) => "ok",
//!             Err(error) => error.code(),
//!         };
//!         self.0.lock().unwrap().push(format!("{} {code}", outcome.tool));
//!     }
//! }
//!
//! let outcomes = Arc::new(Outcomes::default());
//! let host = HostBuilder::new().recorder(outcomes.clone()).build().await?;
//! let call = ToolCall {
//!     id: "1".into(),
//!     name: "nobody/x.y".into(),
//!     arguments: serde_json::json!({}),
//! };
//! host.invoke(&call).await;
//! assert_eq!(*outcomes.0.lock().unwrap(), ["nobody/x.y unknown_tool"]);
//! # Ok(()) }
//! ```
//!
//! ## Every type a signature names
//!
//! Each type that a public signature of this crate names can be named
//! from this crate, at one path, so an embedder needs no other crate of
//! the project (this example is compiled as an outside crate would be):
//!
//! ```
//! #[allow(unused_imports)]
//! use tiny_harness_host::{
//!     BadDigest, BoxFuture, CallFuture, CompiledSchema, CostError, Declaration, Derived,
//!     EditLockError, FileError, FileErrorReason, FileKind, GeminiSchema, GroupLimits,
//!     HttpResolve, HttpResolveError, HttpTransport, IdOrigin, IdentityProvider, Inadmissible,
//!     ListFuture, LockError, LockProblem, McpOAuth, Missing, OAuthGrant, OciDigest, OciError,
//!     OciReference, PinnedDefinition, Refusal, RegistrationLimit, ResolveError, SchemaError,
//!     SchemaLimits, SchemaRewrite, StaticResolver, StdioTransport, SystemResolver, ToolRewrites,
//!     ToolsPayload, Transport, UnknownProvider, UnusableProgram, Violation, WireRule,
//! };
//! #[allow(unused_imports)]
//! use tiny_harness_host::stand_in::{
//!     Command, ExecError, HttpRequest, HttpResponse, Output, StandIn, StandInError,
//! };
//! ```
//!
//! ## The crates below
//!
//! This facade is what an embedder depends on. Below it, each a crate of
//! its own: `tiny-harness-core` (tool data, schemas, the registry, pins
//! and the lock, rendering, the invoker, the journal), `tiny-harness-sandbox`
//! (grants, the kernel's confinement of programs), `tiny-harness-wasm`
//! (the plugin host under wasmtime, its outbound HTTP),
//! `tiny-harness-mcp` (the MCP runtime), `tiny-harness-intrinsic` (the
//! twelve intrinsic tools, the workflow, skills),
//! `tiny-harness-provider` (the providers' formats, the wire-name codec)
//! and `tiny-harness-oci` (OCI references, the component store, pulls and
//! pushes). The facade re-exports, at its root, the types of theirs an
//! embedder names, not their modules (the MCP runtime's are in [`mcp`]).
//! The `tiny-harness` binary and the operator's tooling (`mcp add`,
//! `install`, `import`, `doctor`, `login`) are `tiny-harness-cli`.
//!
//! Cargo features, all on by default:
//!
//! - `mcp`: MCP servers as sources of tools (the [`mcp`] module).
//! - `oauth`: OAuth logins for MCP servers over HTTP (the token file
//!   `mcp login` writes, tokens attached and refreshed, grants that need
//!   no person); implies `mcp`.
//! - `http`: outbound HTTP for plugins through `wasi:http`.
//! - `intrinsics`: the twelve intrinsic tools, the [`Workflow`] they
//!   change, and skills.
//! - `oci`: fetching an `oci://` plugin's component by its digest when the
//!   store beside the config lacks it; without it such a plugin runs from
//!   the store only.
//! - `bundled`: the `fs`, `shell`, `net` and `mcp` plugins, built for
//!   wasm32-wasip2 with the crate (the target is added with rustup when
//!   missing) and carried inside it, for `path = "builtin:NAME"`; without
//!   it nothing is built for WebAssembly and a `builtin:` path is refused
//!   saying so.
//!
//! One more, never on by default: `token-count`, only for
//! `examples/tokens.rs` (the tokens of a request's tools with and without
//! deferral, with OpenAI's tokenizers).
//!
//! Without one of the default features, a plugin that needs it is refused at load
//! ([`HostError::Unsupported`], or a [`LoadError`] naming the feature);
//! without `oauth`, a server that declares an `oauth` block is marked
//! failed at load and one that asks for a login is refused, each saying
//! which feature is missing. In documentation built as docs.rs builds it
//! (`--cfg docsrs`, on nightly), each item that needs a feature says which.
//!
//! ## A fast debug build
//!
//! A debug build compiles each plugin with wasmtime's Cranelift at its
//! first load, and a dependency's profile does not reach the crate that
//! depends on it. These lines in the application's own `Cargo.toml` make
//! that about 5 times faster (3.7 s against 0.7 s for the bundled `fs` and
//! `shell`); compiled components are cached besides
//! ([`HostBuilder::compile_cache`], on by default: 35 to 45 ms for a
//! cached load either way):
//!
//! ```toml
//! [profile.dev.package.cranelift-codegen]
//! opt-level = 2
//! [profile.dev.package.regalloc2]
//! opt-level = 2
//! [profile.dev.package.cranelift-assembler-x64]
//! opt-level = 2
//! ```
//!
//! Everything from outside is untrusted and bounded: every size, count and
//! cost a plugin, a schema, a model's arguments, a config or a path can
//! impose has a limit ([`Limits`], [`RegistrationLimits`]), and each
//! refusal is a typed error on one line. `docs/security.md` lists them.

// On docs.rs (`--cfg docsrs`, nightly), each item that needs a feature says
// which; `doc_cfg` marks every `#[cfg]`-gated item by itself.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod config;
mod host;
#[cfg(test)]
mod tests;

// The layers below, by the names the facade's own code uses.
use tiny_harness_core::{file, invoke, pin, registry, source, tool, watch};
#[cfg(feature = "intrinsics")]
use tiny_harness_intrinsic as intrinsic;
#[cfg(feature = "mcp")]
use tiny_harness_mcp as mcp_runtime;
use tiny_harness_provider as provider;
use tiny_harness_sandbox::{confine, grant};
use tiny_harness_wasm as plugin;

// Building a host.
pub use config::{Config, ConfigError, OciOrigin, oci_store};
pub use host::{Host, HostBuilder, HostError, LockMigration};
pub use tiny_harness_sandbox::confine::{Mode as Confinement, Rlimits as ProgramLimits};
pub use tiny_harness_sandbox::grant::{ArgPatterns, EnvNames, ExecGrant, GrantError, NetGrant};
pub use tiny_harness_wasm::http::HttpLimits;
pub use tiny_harness_wasm::{
    CompileCache, DirGrant, DirMode, Grants, Limits, LoadError, PluginEngine, PluginSpec,
};
pub use tiny_harness_wasm::{CompileOrigin, Plugin};

// Calls and what they return.
#[cfg(feature = "mcp")]
pub use host::CodeDrift;
pub use tiny_harness_core::invoke::{
    CallOutcome, CallRecorder, Caller, Disclosed, Disclosure, Invoker, ToolCall,
};
pub use tiny_harness_core::journal::Journal;
pub use tiny_harness_core::registry::{
    LiveRegistry, RefusedTool, RegisteredTool, RegistrationLimits, Registry, RegistryError,
    ToolName,
};
pub use tiny_harness_core::schema::SchemaHash;
pub use tiny_harness_core::source::{
    BoxFuture, CallLimits, ListFuture, PendingTool, ToolSource, boxed,
};
pub use tiny_harness_core::tool::{
    Annotations, CallError, ContentPart, ToolDefinition, ToolResult,
};
pub use tiny_harness_core::watch::{Change, Drift};

// Deferred tools, and the search over them.
pub use tiny_harness_core::registry::{
    Deferral, Pattern as ToolPattern, PatternError as ToolPatternError, SearchForm,
};
pub use tiny_harness_core::search::{FieldScores as SearchScores, Hit as SearchHit, SearchError};
pub use tiny_harness_provider::{OfferedSearch, SEARCH_DESCRIPTION, SEARCH_TOOL, search_schema};

// The tool loop with a provider.
pub use host::{MAX_CALLS_PER_TURN, MAX_CONCURRENT_CALLS, Turn, TurnError};
pub use tiny_harness_provider::wire::{UnknownWireName, WireCodec};
pub use tiny_harness_provider::{
    CallKind, DecodedCall, EncodedRequest, Provider, ProviderError, ToolReply,
};

// The intrinsics.
#[cfg(feature = "intrinsics")]
pub use host::IntrinsicOutcome;
#[cfg(feature = "intrinsics")]
pub use tiny_harness_intrinsic::{IntrinsicError, SkillLimits, Workflow, WorkflowCommand};

// What the signatures above name, each nameable here too (an embedder
// depends on this crate alone).
pub use tiny_harness_core::declaration::{
    Declaration, Grant as OAuthGrant, Http as HttpTransport, IdentityProvider, OAuth as McpOAuth,
    Stdio as StdioTransport, Transport,
};
pub use tiny_harness_core::file::edit::EditLockError;
pub use tiny_harness_core::file::{FileError, FileKind, Reason as FileErrorReason};
pub use tiny_harness_core::pin::{LockError, Problem as LockProblem};
pub use tiny_harness_core::registry::{Derived, RegistrationLimit};
pub use tiny_harness_core::schema::{CompiledSchema, CostError, Inadmissible, SchemaError};
pub use tiny_harness_core::source::{CallFuture, Missing};
pub use tiny_harness_core::tool::Violation;
pub use tiny_harness_core::watch::Pin as PinnedDefinition;
#[cfg(feature = "intrinsics")]
pub use tiny_harness_intrinsic::{
    Effect, IntrinsicSource, LoadReport, ResourceContent, ResourceKind, Role, Skills, StepSpec,
};
pub use tiny_harness_oci::reference::BadDigest;
pub use tiny_harness_oci::{Digest as OciDigest, OciError, Reference as OciReference};
pub use tiny_harness_provider::wire::WireRule;
pub use tiny_harness_provider::{
    GeminiSchema, IdOrigin, Refusal, SchemaLimits, SchemaRewrite, ToolRewrites, ToolsPayload,
    UnknownProvider,
};
pub use tiny_harness_sandbox::confine::GroupLimits;
pub use tiny_harness_sandbox::grant::{ResolveError, UnusableProgram};
pub use tiny_harness_wasm::http::{
    Resolve as HttpResolve, ResolveError as HttpResolveError, StaticResolver, SystemResolver,
};

/// What a test's stand-in for the world outside a plugin implements (the
/// `tiny-harness-testing` crate's scripted one is one): the programs a
/// plugin runs and the HTTP requests it makes, answered without running
/// or sending anything.
pub mod stand_in {
    pub use tiny_harness_wasm::bindings::tiny_harness::plugin::exec::{Command, ExecError, Output};
    pub use tiny_harness_wasm::{HttpRequest, HttpResponse, StandIn, StandInError};
}

/// The MCP servers a host's plugins declared, as [`Host::mcp_sources`]
/// shows them (the `mcp` feature).
#[cfg(feature = "mcp")]
pub mod mcp {
    pub use tiny_harness_mcp::{ListingError, McpSource, SourceError, State, Status, StoreError};
}
