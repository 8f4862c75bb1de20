//! # tiny-harness-sandbox
//!
//! What reaches outside a plugin's sandbox, and the hold on it: [`grant`]
//! (the programs a plugin may start, the network destinations it may
//! reach, the variables it may read: resolved and checked once, at load)
//! and [`confine`] (the kernel's hold on every program the host starts
//! for a plugin: Landlock, namespaces, seccomp, control groups, rlimits;
//! fail closed; one way to make such a program and one way to kill it).
//!
//! It depends on `tiny-harness-core` only, never on the WebAssembly or MCP
//! crates above it. Embedders use it through the `tiny-harness-host`
//! facade, which re-exports the types an embedder names (the grants and
//! `GrantError`, and [`confine::Mode`] and [`confine::Rlimits`] as
//! `Confinement` and `ProgramLimits`) at its root; the two modules
//! themselves are not re-exported.

pub mod confine;
pub mod grant;
