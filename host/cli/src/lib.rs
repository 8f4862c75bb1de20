//! # tiny-harness-cli
//!
//! The `tiny-harness` command line ([`main`]) over the `tiny-harness-host`
//! facade, and the operator's tooling it runs ([`tooling`]): the commands
//! that edit a config or a store, or talk to a person (`mcp add`,
//! `mcp import`, `mcp install`, `mcp doctor`, `mcp login`). Harness hosts
//! depend on the facade, never on this crate; it is the only crate of the
//! host that builds `clap`, `anyhow` and `toml_edit`.

mod cli;
pub mod tooling;

pub use cli::main;
