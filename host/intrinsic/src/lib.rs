//! The intrinsics: the twelve tools the host itself provides, which
//! change a task's workflow state rather than the world.
//!
//! `create_plan`, `complete_step`, `spawn_subtask`, `ask_participant`,
//! `create_task_for_participant`, `set_participant_role`, `list_skills`,
//! `load_skill`, `unload_skill`, `list_skill_resources`,
//! `load_skill_resource` and `emit_ui`.
//!
//! Invariants:
//! - **Registered only when asked for**, under their bare names, as one
//!   source ([`IntrinsicSource`]) through the same [`tiny_harness_core::source`]
//!   abstraction as plugins and MCP servers: a new registry has none, and
//!   no plugin tool (whose name always holds a `/`) can pose as one.
//! - **Called like any tool**: through the validating invoker, arguments
//!   checked against schemas generated from [`args`], results checked
//!   against their output schemas and rendered as untrusted blocks.
//! - **Commands, not mutations**: an intrinsic returns a
//!   [`WorkflowCommand`] beside its result; [`Workflow::apply`] is the one
//!   pure, deterministic function that changes state, all or nothing.
//! - **Bounded**: every count and size is capped ([`limits`]); every
//!   refusal is an [`IntrinsicError`] with a code and a one-line message.
//!
//! A harness binds a task's workflow and acting participant to each call
//! with `Host::call_intrinsic` of `tiny-harness-host` (or [`bind`] around its own
//! invocation), gets the command back, and keeps the new state.

// The crate exposes its argument types and limits as modules, and the rest
// at its root; every other module is its own.
mod a2ui;
pub mod args;
mod command;
mod error;
mod front_matter;
pub mod limits;
mod plan;
mod schemas;
mod skills;
mod source;
mod workflow;

#[cfg(test)]
mod tests;

pub use args::{ResourceKind, Role, StepSpec};
pub use command::WorkflowCommand;
pub use error::IntrinsicError;
pub use schemas::{SPECS, Spec};
pub use skills::{LoadReport, ResourceContent, SkillLimits, Skills};
pub use source::{Effect, IntrinsicSource, apply_error, bind};
pub use workflow::Workflow;

/// The label the intrinsics' source is registered under (see
/// [`Registry::register_bare`](tiny_harness_core::registry::Registry::register_bare));
/// no tool name holds it.
pub const SOURCE_LABEL: &str = "intrinsic";

/// True when `name` is one of the twelve.
pub fn is_intrinsic(name: &str) -> bool {
    schemas::spec(name).is_some()
}
