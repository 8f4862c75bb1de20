//! Every bound on what intrinsics accept and keep.
//!
//! A model's arguments, a recorded command list and a state file are all
//! untrusted, and each of them can grow a task's state; these bounds keep
//! one task's state, and the work of one command, small. The argument
//! schemas carry the same numbers, so a model is told them up front; the
//! workflow checks them again for commands that never passed a schema (a
//! replay, a state file). Each refusal names the bound.

/// The longest name (a step, a sub-task, a participant, an option), in
/// bytes.
pub const MAX_NAME: u32 = 128;
/// The longest free text (a description, a goal, an output, a question),
/// in bytes.
pub const MAX_TEXT: u32 = 16 * 1024;
/// The most steps in a plan.
pub const MAX_PLAN_STEPS: u32 = 10_000;
/// The most dependencies of one step.
pub const MAX_DEPENDENCIES: u32 = 64;
/// The most acceptance criteria of a sub-task or participant task.
pub const MAX_CRITERIA: u32 = 32;
/// The most options of a question.
pub const MAX_OPTIONS: u32 = 32;
/// The most sub-tasks, and separately the most participant tasks, of one
/// task.
pub const MAX_SUBTASKS: usize = 1_000;
/// The most participants of one task.
pub const MAX_PARTICIPANTS: usize = 256;
/// The most A2UI messages one `emit_ui` call sends.
pub const MAX_UI_MESSAGES: u32 = 64;
/// The largest A2UI message, in bytes of compact JSON.
pub const MAX_UI_MESSAGE_BYTES: usize = 64 * 1024;
/// The most A2UI surfaces open at once in one task.
pub const MAX_SURFACES: usize = 64;
/// The most skills loaded at once in one task.
pub const MAX_LOADED_SKILLS: usize = 16;
/// The most skills listed from the skills root (more are reported as
/// skipped).
pub const MAX_SKILLS: usize = 256;
/// The largest `SKILL.md`, in bytes, unless `[skills] skill_kib` says
/// otherwise.
pub const MAX_SKILL_FILE: u64 = 256 * 1024;
/// The highest `[skills] skill_kib` may set, in bytes: also the bound of a
/// loaded skill in a task's state.
pub const MAX_SKILL_FILE_CEILING: u64 = 1024 * 1024;
/// The largest front matter of a `SKILL.md`, in bytes.
pub const MAX_FRONT_MATTER: usize = 8 * 1024;
/// The longest skill description, in bytes. The Agent Skills format asks
/// for at most 1024 characters; published skills go past it (a 1,077
/// character one in a widely copied collection), so the host takes four
/// times that.
pub const MAX_SKILL_DESCRIPTION: usize = 4096;
/// The largest skill resource `load_skill_resource` returns as text, in
/// bytes, unless `[skills] resource_kib` says otherwise.
pub const MAX_RESOURCE: u64 = 256 * 1024;
/// The highest `[skills] resource_kib` may set, in bytes.
pub const MAX_RESOURCE_CEILING: u64 = 16 * 1024 * 1024;
/// The most resources `list_skill_resources` lists per skill, unless
/// `[skills] resources` says otherwise.
pub const MAX_RESOURCES: usize = 256;
/// The highest `[skills] resources` may set.
pub const MAX_RESOURCES_CEILING: usize = 65_536;
/// How many directories below the skill's own a resource may be listed.
pub const MAX_RESOURCE_DEPTH: usize = 6;
