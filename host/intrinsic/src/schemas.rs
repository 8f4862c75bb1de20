//! The twelve intrinsics' definitions: names, descriptions, schemas and
//! idempotency, and the documents committed under
//! `docs/a2a/ext/intrinsics/<name>.json`.
//!
//! Invariants: input schemas are generated from the argument types in
//! [`super::args`] (schemars, JSON Schema 2020-12, inlined, every object
//! closed); output schemas are written here and every intrinsic's result
//! is checked against its own by the invoker. The committed documents are
//! [`document`] of each name, byte for byte: a contract test regenerates
//! them and fails on any difference.

use schemars::{JsonSchema, generate::SchemaSettings};
use serde_json::{Value, json};

use super::args::{
    AskParticipantArgs, CompleteStepArgs, CreatePlanArgs, CreateTaskForParticipantArgs, EmitUiArgs,
    ListSkillsArgs, LoadSkillResourceArgs, SetParticipantRoleArgs, SkillArgs, SpawnSubtaskArgs,
};
use tiny_harness_core::tool::{Annotations, ToolDefinition};

/// One intrinsic's definition.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// Its bare name.
    pub name: &'static str,
    /// What it does, for the model.
    pub description: &'static str,
    /// Whether repeating a call has no further effect.
    pub idempotent: bool,
    /// Whether it changes nothing (it returns no workflow command).
    pub read_only: bool,
    input: fn() -> Value,
    output: fn() -> Value,
}

impl Spec {
    /// The input schema, generated from the argument type.
    pub fn input_schema(&self) -> Value {
        (self.input)()
    }
    /// The output schema of its result's JSON part.
    pub fn output_schema(&self) -> Value {
        (self.output)()
    }
    /// The definition the registry takes.
    pub fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: self.name.to_owned(),
            title: None,
            description: self.description.to_owned(),
            input_schema: self.input_schema(),
            output_schema: Some(self.output_schema()),
            annotations: Annotations {
                read_only: self.read_only,
                idempotent: self.idempotent,
                destructive: false,
                open_world: false,
            },
        }
    }
}

fn input<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Some(object) = schema.as_object_mut() {
        // The tool's description says it; the schema need not again.
        object.remove("title");
        object.remove("description");
    }
    schema
}

/// A closed object schema of `properties`, all required.
fn closed(properties: Value) -> Value {
    let required: Vec<String> = properties
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    json!({"type": "object", "properties": properties, "required": required,
           "additionalProperties": false})
}

fn strings() -> Value {
    json!({"type": "array", "items": {"type": "string"}})
}

fn roles() -> Value {
    json!({"type": "string", "enum": ["assignee", "reporter", "watcher", "admin"]})
}

/// Every intrinsic, in the order the issue lists them.
pub const SPECS: [Spec; 12] = [
    Spec {
        name: "create_plan",
        description: "Attach a plan to the task: steps with unique names, each with the steps \
            it depends on (the plan must be a DAG). Returns the steps that are ready to start. \
            Calling it again with the same steps changes nothing.",
        idempotent: true,
        read_only: false,
        input: input::<CreatePlanArgs>,
        output: || {
            closed(json!({"status": {"enum": ["attached", "unchanged"]},
                          "steps": {"type": "integer"}, "ready": strings()}))
        },
    },
    Spec {
        name: "complete_step",
        description: "Mark a step of the plan done, with what it produced. Its dependencies \
            must be done first. Returns the steps this makes ready and how many remain.",
        idempotent: true,
        read_only: false,
        input: input::<CompleteStepArgs>,
        output: || {
            closed(
                json!({"step": {"type": "string"}, "status": {"enum": ["done", "unchanged"]},
                          "ready": strings(), "remaining": {"type": "integer"}}),
            )
        },
    },
    Spec {
        name: "spawn_subtask",
        description: "Start a sub-task with its own goal and acceptance criteria, optionally \
            for a named agent and tied to a plan step. Returns its id.",
        idempotent: false,
        read_only: false,
        input: input::<SpawnSubtaskArgs>,
        output: || {
            closed(
                json!({"subtask_id": {"type": "string"}, "name": {"type": "string"},
                          "status": {"const": "spawned"}}),
            )
        },
    },
    Spec {
        name: "ask_participant",
        description: "Ask one of the task's participants a question, optionally with options \
            to choose from. The task then waits for the reply, which arrives in a later turn.",
        idempotent: false,
        read_only: false,
        input: input::<AskParticipantArgs>,
        output: || {
            closed(
                json!({"question_id": {"type": "string"}, "participant_id": {"type": "string"},
                          "status": {"const": "waiting"}}),
            )
        },
    },
    Spec {
        name: "create_task_for_participant",
        description: "Give one of the task's participants a task of their own, with a goal and \
            acceptance criteria, optionally tied to a plan step. Returns its id.",
        idempotent: false,
        read_only: false,
        input: input::<CreateTaskForParticipantArgs>,
        output: || {
            closed(
                json!({"task_id": {"type": "string"}, "participant_id": {"type": "string"},
                          "name": {"type": "string"}, "status": {"const": "created"}}),
            )
        },
    },
    Spec {
        name: "set_participant_role",
        description: "Set a participant's role (assignee, reporter, watcher or admin). Only an \
            admin may; the acting participant is the one this call is made for.",
        idempotent: true,
        read_only: false,
        input: input::<SetParticipantRoleArgs>,
        output: || {
            closed(
                json!({"participant_id": {"type": "string"}, "role": roles(),
                          "previous_role": roles()}),
            )
        },
    },
    Spec {
        name: "list_skills",
        description: "List the skills that can be loaded, with their descriptions and whether \
            each is loaded, and the skill directories skipped with why.",
        idempotent: true,
        read_only: true,
        input: input::<ListSkillsArgs>,
        output: || {
            closed(json!({
                "skills": {"type": "array", "items": closed(json!({
                    "name": {"type": "string"}, "description": {"type": "string"},
                    "loaded": {"type": "boolean"}}))},
                "skipped": {"type": "array", "items": closed(json!({
                    "dir": {"type": "string"}, "reason": {"type": "string"}}))},
            }))
        },
    },
    Spec {
        name: "load_skill",
        description: "Load a skill: its SKILL.md instructions follow in this result and stay \
            loaded in the task until unload_skill.",
        idempotent: true,
        read_only: false,
        input: input::<SkillArgs>,
        output: || {
            closed(
                json!({"name": {"type": "string"}, "description": {"type": "string"},
                          "status": {"const": "loaded"}, "bytes": {"type": "integer"},
                          "missing_links": strings()}),
            )
        },
    },
    Spec {
        name: "unload_skill",
        description: "Unload a loaded skill, removing its instructions from the task.",
        idempotent: true,
        read_only: false,
        input: input::<SkillArgs>,
        output: || {
            closed(json!({"name": {"type": "string"},
                          "status": {"enum": ["unloaded", "not_loaded"]}}))
        },
    },
    Spec {
        name: "list_skill_resources",
        description: "List a skill's resources: every file in its directory but SKILL.md, by \
            its path from there (as SKILL.md links it), with its size, media type and whether \
            it is text.",
        idempotent: true,
        read_only: true,
        input: input::<SkillArgs>,
        output: || {
            closed(json!({
                "name": {"type": "string"},
                "resources": {"type": "array", "items": closed(json!({
                    "resource": {"type": "string"}, "kind": {"type": "string"},
                    "bytes": {"type": "integer"}, "text": {"type": "boolean"},
                    "media_type": {"type": "string"}}))},
                "truncated": {"type": "boolean"},
            }))
        },
    },
    Spec {
        name: "load_skill_resource",
        description: "Read one resource of a skill, by its path as list_skill_resources \
            shows it or SKILL.md links it; a text file's text follows in this result, a binary \
            file is described (size, media type) but not shown.",
        idempotent: true,
        read_only: true,
        input: input::<LoadSkillResourceArgs>,
        output: || {
            closed(
                json!({"name": {"type": "string"}, "resource": {"type": "string"},
                          "kind": {"type": "string"}, "bytes": {"type": "integer"},
                          "text": {"type": "boolean"}, "media_type": {"type": "string"}}),
            )
        },
    },
    Spec {
        name: "emit_ui",
        description: "Send A2UI v0.9 server-to-client messages (createSurface, \
            updateComponents, updateDataModel, deleteSurface, each with \"version\": \"v0.9\" \
            and a surfaceId) to the user's client, in order.",
        idempotent: false,
        read_only: false,
        input: input::<EmitUiArgs>,
        output: || {
            closed(
                json!({"messages": {"type": "integer"}, "surfaces": strings(),
                          "status": {"const": "emitted"}}),
            )
        },
    },
];

/// The intrinsic named `name`.
pub fn spec(name: &str) -> Option<&'static Spec> {
    SPECS.iter().find(|s| s.name == name)
}

/// The committed document of an intrinsic: `name`, `description`,
/// `input_schema`, `output_schema`, `idempotency` and `execution` (the
/// contract test holds `docs/intrinsics/*.json` to it).
#[cfg(test)]
pub(crate) fn document(spec: &Spec) -> Value {
    json!({
        "name": spec.name,
        "description": spec.description,
        "input_schema": spec.input_schema(),
        "output_schema": spec.output_schema(),
        "idempotency": if spec.idempotent { "idempotent" } else { "not_idempotent" },
        "execution": "intrinsic",
    })
}

/// The committed file's text: [`document`] pretty-printed, with a final
/// newline.
#[cfg(test)]
pub(crate) fn document_text(spec: &Spec) -> String {
    let mut text = serde_json::to_string_pretty(&document(spec)).unwrap_or_default();
    text.push('\n');
    text
}
