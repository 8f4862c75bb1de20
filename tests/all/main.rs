//! Integration tests: the real plugins from `plugins/`, built for
//! wasm32-wasip2 by the host's build script, run under wasmtime.
//!
//! One test binary with a module per feature, so it links once.

// Every function here is a test or serves one: a failed unwrap is a
// failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod builder;
mod cache;
mod crates;
mod dev;
mod fs_tools;
mod grants;
mod hardening;
mod hello;
mod hostile;
mod hostile_answers;
mod intrinsics;
mod isolation;
mod journal;
mod layers;
mod limits_props;
mod live;
mod load_errors;
mod lock_edits;
mod mcp;
mod mcp_python;
mod mcp_sinks;
mod net;
mod offer_search;
mod pinned_definitions;
mod registration;
mod render;
mod rug_pull;
mod sandbox;
mod search;
mod shell;
mod sources;
mod testing;
mod textstats;
mod validation;
mod worlds;
