//! The arguments each intrinsic takes and the JSON it returns, as Rust
//! types: the input and output schemas are generated from them
//! (`schemas`), so the schema the model is shown and the value
//! the host reads can never disagree.
//!
//! Invariants: every object is closed (`deny_unknown_fields`, so its
//! schema has `additionalProperties: false`); every string and list has a
//! bound in its schema, the same bound [`super::limits`] applies again to
//! commands that come from a recording rather than a model. The field
//! names are those of the tiny-harness A2A extension: keep them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::limits::{
    MAX_CRITERIA, MAX_DEPENDENCIES, MAX_NAME, MAX_OPTIONS, MAX_PLAN_STEPS, MAX_TEXT,
};

/// One step of a plan, as `create_plan` takes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StepSpec {
    /// The step's name, unique in the plan; `complete_step` and
    /// `depends_on` refer to it.
    #[schemars(length(min = 1, max = MAX_NAME))]
    pub name: String,
    /// What the step does and when it is done.
    #[schemars(length(max = MAX_TEXT))]
    pub description: String,
    /// The names of the steps that must be completed before this one.
    #[serde(default)]
    #[schemars(length(max = MAX_DEPENDENCIES), inner(length(min = 1, max = MAX_NAME)))]
    pub depends_on: Vec<String>,
}

/// `create_plan`: attach a plan (a DAG of steps) to the task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreatePlanArgs {
    /// The steps, in the order they are shown; at least one.
    #[schemars(length(min = 1, max = MAX_PLAN_STEPS))]
    pub steps: Vec<StepSpec>,
}

/// `complete_step`: mark a step of the plan done.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompleteStepArgs {
    /// The step's name.
    #[schemars(length(min = 1, max = MAX_NAME))]
    pub step: String,
    /// What the step produced, for the record and for the steps after it.
    #[schemars(length(max = MAX_TEXT))]
    pub output: String,
}

/// `spawn_subtask`: start a sub-task with its own goal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpawnSubtaskArgs {
    /// A short name for the sub-task.
    #[schemars(length(min = 1, max = MAX_NAME))]
    pub name: String,
    /// What the sub-task must achieve.
    #[schemars(length(min = 1, max = MAX_TEXT))]
    pub goal: String,
    /// How to tell that it is achieved.
    #[serde(default)]
    #[schemars(length(max = MAX_CRITERIA), inner(length(min = 1, max = MAX_TEXT)))]
    pub acceptance_criteria: Vec<String>,
    /// The agent to run it, if a particular one should.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = MAX_NAME))]
    pub agent: Option<String>,
    /// The plan step it works towards, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = MAX_NAME))]
    pub step: Option<String>,
}

/// `ask_participant`: ask a participant a question; the task then waits
/// for the reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskParticipantArgs {
    /// The participant asked (one of the task's participants).
    #[schemars(length(min = 1, max = MAX_NAME))]
    pub participant_id: String,
    /// The question.
    #[schemars(length(min = 1, max = MAX_TEXT))]
    pub question: String,
    /// The answers to choose from; empty for a free answer.
    #[serde(default)]
    #[schemars(length(max = MAX_OPTIONS), inner(length(min = 1, max = MAX_NAME)))]
    pub options: Vec<String>,
}

/// `create_task_for_participant`: give a participant a task of their own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateTaskForParticipantArgs {
    /// The participant (one of the task's participants).
    #[schemars(length(min = 1, max = MAX_NAME))]
    pub participant_id: String,
    /// A short name for the task.
    #[schemars(length(min = 1, max = MAX_NAME))]
    pub name: String,
    /// What the participant is asked to achieve.
    #[schemars(length(min = 1, max = MAX_TEXT))]
    pub goal: String,
    /// How to tell that it is achieved.
    #[serde(default)]
    #[schemars(length(max = MAX_CRITERIA), inner(length(min = 1, max = MAX_TEXT)))]
    pub acceptance_criteria: Vec<String>,
    /// The plan step it works towards, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = MAX_NAME))]
    pub step: Option<String>,
}

/// A participant's role in a task.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Does the work.
    Assignee,
    /// Asked for the task and receives its result.
    Reporter,
    /// Follows the task.
    Watcher,
    /// May change roles.
    Admin,
}

impl Role {
    /// The role's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Assignee => "assignee",
            Role::Reporter => "reporter",
            Role::Watcher => "watcher",
            Role::Admin => "admin",
        }
    }
}

/// `set_participant_role`: change a participant's role (admins only; the
/// acting participant is the one the host bound to the call).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetParticipantRoleArgs {
    /// The participant whose role changes.
    #[schemars(length(min = 1, max = MAX_NAME))]
    pub participant_id: String,
    /// The new role.
    pub role: Role,
}

/// `list_skills`: no arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListSkillsArgs {}

/// `load_skill`, `unload_skill` and `list_skill_resources`: a skill's name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillArgs {
    /// The skill's name, as `list_skills` shows it.
    #[schemars(length(min = 1, max = 64))]
    pub name: String,
}

/// The three kinds of resource a skill may ship.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ResourceKind {
    /// `scripts/`.
    Scripts,
    /// `references/`.
    References,
    /// `assets/`.
    Assets,
}

impl ResourceKind {
    /// Every kind, in order.
    pub const ALL: [ResourceKind; 3] = [
        ResourceKind::Scripts,
        ResourceKind::References,
        ResourceKind::Assets,
    ];

    /// The kind's directory in a skill, and its name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ResourceKind::Scripts => "scripts",
            ResourceKind::References => "references",
            ResourceKind::Assets => "assets",
        }
    }
}

/// `load_skill_resource`: read one resource of a skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LoadSkillResourceArgs {
    /// The skill's name.
    #[schemars(length(min = 1, max = 64))]
    pub name: String,
    /// The resource's path from the skill's directory, as
    /// `list_skill_resources` shows it and SKILL.md links it (for example
    /// `REFERENCE.md` or `scripts/extract.py`).
    #[schemars(length(min = 1, max = 1024))]
    pub resource: String,
    /// Optional, for calls recorded before paths were whole: the
    /// directory (`scripts`, `references` or `assets`) that `resource` is
    /// inside.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "kind_schema")]
    pub kind: Option<ResourceKind>,
}

/// `kind`: a plain string enum, not a union of constants.
fn kind_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "enum": ["scripts", "references", "assets"]
    })
}

/// `emit_ui`: send A2UI v0.9 server-to-client messages to the client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EmitUiArgs {
    /// The messages, in order; at least one. Each is one of
    /// `createSurface`, `updateComponents`, `updateDataModel` or
    /// `deleteSurface`, with `"version": "v0.9"`.
    #[schemars(schema_with = "super::a2ui::messages_schema")]
    pub messages: Vec<serde_json::Value>,
}
