//! What an intrinsic asks the workflow to do: a [`WorkflowCommand`].
//!
//! Invariants: a command is plain data (serde, JSON with a `command` tag),
//! so a run is recorded as the list of its commands and replayed with
//! [`super::Workflow::replay`]; a command says everything its effect
//! depends on (the acting participant of a role change, the body of a
//! loaded skill), so replaying needs nothing but the commands: no skills
//! root, no clock, no randomness.

use serde::{Deserialize, Serialize};

use super::args::{Role, StepSpec};

/// One change to a task's workflow.
///
/// Nine come from intrinsics; two ([`WorkflowCommand::AddParticipant`] and
/// [`WorkflowCommand::ReceiveReply`]) come from the harness, which is the
/// only party that knows who takes part in a task and what they answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum WorkflowCommand {
    /// `create_plan`: attach a plan.
    AttachPlan {
        /// Its steps.
        steps: Vec<StepSpec>,
    },
    /// `complete_step`: mark a step done.
    CompleteStep {
        /// The step.
        step: String,
        /// What it produced.
        output: String,
    },
    /// `spawn_subtask`: start a sub-task.
    SpawnSubtask {
        /// Its name.
        name: String,
        /// Its goal.
        goal: String,
        /// How to tell it is achieved.
        #[serde(default)]
        acceptance_criteria: Vec<String>,
        /// The agent to run it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent: Option<String>,
        /// The plan step it serves.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        step: Option<String>,
    },
    /// `ask_participant`: wait for a participant's reply.
    AwaitReply {
        /// Who is asked.
        participant_id: String,
        /// The question.
        question: String,
        /// The answers to choose from (empty: any answer).
        #[serde(default)]
        options: Vec<String>,
    },
    /// `create_task_for_participant`: give a participant a task.
    CreateParticipantTask {
        /// The participant.
        participant_id: String,
        /// The task's name.
        name: String,
        /// Its goal.
        goal: String,
        /// How to tell it is achieved.
        #[serde(default)]
        acceptance_criteria: Vec<String>,
        /// The plan step it serves.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        step: Option<String>,
    },
    /// `set_participant_role`: change a role.
    SetRole {
        /// The acting participant, as the host bound it to the call.
        actor: String,
        /// Whose role changes.
        participant_id: String,
        /// The new role.
        role: Role,
    },
    /// `load_skill`: a skill is loaded, with the body the model was shown.
    SkillLoaded {
        /// The skill.
        name: String,
        /// Its description.
        description: String,
        /// Its `SKILL.md` body.
        body: String,
    },
    /// `unload_skill`: a skill is unloaded.
    SkillUnloaded {
        /// The skill.
        name: String,
    },
    /// `emit_ui`: A2UI messages were sent to the client.
    UiEmitted {
        /// The messages, in order.
        messages: Vec<serde_json::Value>,
    },
    /// From the harness: a participant joins the task.
    AddParticipant {
        /// Their id.
        participant_id: String,
        /// Their role.
        role: Role,
    },
    /// From the harness: the participant asked answered; the task stops
    /// waiting.
    ReceiveReply {
        /// Who answered.
        participant_id: String,
        /// The answer.
        reply: String,
    },
}

impl WorkflowCommand {
    /// The command's name (its `command` tag).
    pub fn name(&self) -> &'static str {
        match self {
            WorkflowCommand::AttachPlan { .. } => "attach_plan",
            WorkflowCommand::CompleteStep { .. } => "complete_step",
            WorkflowCommand::SpawnSubtask { .. } => "spawn_subtask",
            WorkflowCommand::AwaitReply { .. } => "await_reply",
            WorkflowCommand::CreateParticipantTask { .. } => "create_participant_task",
            WorkflowCommand::SetRole { .. } => "set_role",
            WorkflowCommand::SkillLoaded { .. } => "skill_loaded",
            WorkflowCommand::SkillUnloaded { .. } => "skill_unloaded",
            WorkflowCommand::UiEmitted { .. } => "ui_emitted",
            WorkflowCommand::AddParticipant { .. } => "add_participant",
            WorkflowCommand::ReceiveReply { .. } => "receive_reply",
        }
    }
}
