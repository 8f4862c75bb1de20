//! # tiny-harness-core
//!
//! The lowest layer of the tiny-harness tool host: what every other part
//! of it builds on, and nothing that runs a tool. No WebAssembly engine,
//! no MCP client, no process or network: those live in the crates above,
//! which depend on this one and never the other way round.
//!
//! Modules, lowest first: [`tool`] (plain data: definitions, results,
//! `CallError`), [`display`] and [`file`](mod@file) (text for terminals; files from
//! outside, read bounded and written atomically), [`schema`] (compiled
//! schemas, their hashes and evaluation-cost bound), [`source`] (what a
//! source of tools is), [`registry`] (names and the tools registered under
//! them), [`declaration`] (what a plugin declares about an MCP server, as
//! plain data), [`pin`] (definition hashes, the lock file), [`render`]
//! (untrusted blocks), [`invoke`] (the validating invoker and its
//! `CallRecorder`), [`journal`] (one JSON line per call), [`watch`] (what
//! a source's tools are pinned as, and how what it lists now differs),
//! [`search`] (an index over the tools a model was not shown, and its
//! rankers), [`net`] (which hosts are loopback: no I/O, only the rule).
//!
//! Embedders use these through the `tiny-harness-host` facade, which
//! re-exports the types an embedder names (the invoker's `ToolCall`,
//! `CallOutcome` and `CallRecorder`, the registry's types, `ToolSource`,
//! the tool data, `SchemaHash`, `Journal`, `Change` and `Drift`) at its
//! root; these modules themselves are not re-exported.

pub mod declaration;
pub mod display;
pub mod file;
pub mod invoke;
pub mod journal;
pub mod net;
pub mod pin;
pub mod progress;
pub mod registry;
pub mod render;
pub mod schema;
pub mod search;
pub mod source;
pub mod tool;
pub mod watch;
