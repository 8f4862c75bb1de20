//! A task's workflow state and the one function that changes it.
//!
//! Invariants:
//! - **Pure and deterministic.** [`Workflow::apply`] depends on the state
//!   and the command alone (no clock, no randomness, no I/O; ids are
//!   counters), so the same commands from the same state give the same
//!   state, and a recorded command list replays exactly.
//! - **All or nothing.** A command is checked whole before anything
//!   changes; a refused one leaves the state exactly as it was.
//! - **Bounded.** Every list and text a command adds is bounded (see
//!   [`super::limits`]); a state file is checked against the same rules
//!   when it loads, so a hand-edited file cannot hold what no command
//!   could have made (a cyclic plan, a role for a stranger).
//! - **Cost follows the change.** Applying a command costs what it
//!   touches (a step and its neighbours, one participant), not the size
//!   of the state or of the history.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::args::{Role, StepSpec};
use super::command::WorkflowCommand;
use super::error::IntrinsicError;
use super::limits::{
    MAX_CRITERIA, MAX_LOADED_SKILLS, MAX_OPTIONS, MAX_PARTICIPANTS, MAX_SKILL_FILE_CEILING,
    MAX_SUBTASKS,
};
use super::plan::{Plan, check_name, check_text};

/// A sub-task, or a task given to a participant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Subtask {
    /// Its id: `subtask-N`, or `participant-task-N`.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its goal.
    pub goal: String,
    /// How to tell it is achieved.
    #[serde(default)]
    pub acceptance_criteria: Vec<String>,
    /// The agent (sub-tasks) or participant (participant tasks) doing it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee: Option<String>,
    /// The plan step it serves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
}

/// A question the task waits on, or one that was answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Question {
    /// Its id: `question-N`.
    pub id: String,
    /// Who is asked.
    pub participant_id: String,
    /// The question.
    pub question: String,
    /// The answers to choose from.
    #[serde(default)]
    pub options: Vec<String>,
    /// The answer, once given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<String>,
}

/// A loaded skill: what the model was shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadedSkill {
    /// Its description.
    pub description: String,
    /// Its `SKILL.md` body.
    pub body: String,
}

/// An open A2UI surface.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Surface {
    /// Its catalog.
    pub catalog_id: String,
    /// How many messages it has received, its `createSurface` included.
    pub messages: u64,
}

/// A task's workflow state. Serialises as JSON; see the module header for
/// what applying a command guarantees.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workflow {
    /// The plan, once attached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    plan: Option<Plan>,
    /// The participants and their roles.
    #[serde(default)]
    participants: BTreeMap<String, Role>,
    /// Sub-tasks, in the order spawned.
    #[serde(default)]
    subtasks: Vec<Subtask>,
    /// Tasks given to participants, in the order created.
    #[serde(default)]
    participant_tasks: Vec<Subtask>,
    /// Questions asked, in order; the last is open while the task waits.
    #[serde(default)]
    questions: Vec<Question>,
    /// Loaded skills, by name.
    #[serde(default)]
    skills: BTreeMap<String, LoadedSkill>,
    /// Open A2UI surfaces, by id.
    #[serde(default)]
    surfaces: BTreeMap<String, Surface>,
    /// How many A2UI messages were emitted.
    #[serde(default)]
    ui_messages: u64,
}

/// What a checked command will change.
enum Change {
    Nothing,
    Plan(Plan),
    Step(usize, String),
    Subtask(Subtask),
    ParticipantTask(Subtask),
    Ask(Question),
    Reply(String),
    Role(String, Role),
    Join(String, Role),
    SkillIn(String, LoadedSkill),
    SkillOut(String),
    Ui(Vec<(String, Option<Surface>)>, u64),
}

impl Workflow {
    /// A new task: no plan, no participants, nothing loaded.
    pub fn new() -> Self {
        Self::default()
    }

    /// The plan, if one is attached.
    pub fn plan(&self) -> Option<&Plan> {
        self.plan.as_ref()
    }
    /// The participants and their roles.
    pub fn participants(&self) -> &BTreeMap<String, Role> {
        &self.participants
    }
    /// The sub-tasks.
    pub fn subtasks(&self) -> &[Subtask] {
        &self.subtasks
    }
    /// The tasks given to participants.
    pub fn participant_tasks(&self) -> &[Subtask] {
        &self.participant_tasks
    }
    /// Every question asked, in order.
    pub fn questions(&self) -> &[Question] {
        &self.questions
    }
    /// The question the task waits on, if any.
    pub fn waiting(&self) -> Option<&Question> {
        self.questions.last().filter(|q| q.reply.is_none())
    }
    /// The loaded skills.
    pub fn skills(&self) -> &BTreeMap<String, LoadedSkill> {
        &self.skills
    }
    /// The open A2UI surfaces.
    pub fn surfaces(&self) -> &BTreeMap<String, Surface> {
        &self.surfaces
    }

    /// Applies `command`, all or nothing; returns the JSON result the
    /// model reads next turn (what [`Workflow::check`] returns).
    pub fn apply(&mut self, command: &WorkflowCommand) -> Result<Value, IntrinsicError> {
        let (change, result) = self.evaluate(command)?;
        self.commit(change);
        Ok(result)
    }

    /// What applying `command` would return, without applying it.
    pub fn check(&self, command: &WorkflowCommand) -> Result<Value, IntrinsicError> {
        self.evaluate(command).map(|(_, result)| result)
    }

    /// Applies `commands` in order from a new task; stops at the first
    /// refused one, returning its index and why.
    pub fn replay<'a>(
        commands: impl IntoIterator<Item = &'a WorkflowCommand>,
    ) -> Result<Workflow, (usize, IntrinsicError)> {
        let mut workflow = Workflow::new();
        for (index, command) in commands.into_iter().enumerate() {
            workflow.apply(command).map_err(|e| (index, e))?;
        }
        Ok(workflow)
    }

    /// Reads a state file's JSON, checked as the module header says.
    pub fn from_json(text: &str) -> Result<Workflow, IntrinsicError> {
        let workflow: Workflow =
            serde_json::from_str(text).map_err(|e| IntrinsicError::Invalid {
                what: "the workflow state".into(),
                reason: e.to_string(),
            })?;
        workflow.check_loaded()?;
        Ok(workflow)
    }

    fn participant(&self, id: &str) -> Result<Role, IntrinsicError> {
        self.participants
            .get(id)
            .copied()
            .ok_or_else(|| IntrinsicError::UnknownParticipant(id.to_owned()))
    }

    fn check_step_ref(&self, step: Option<&String>) -> Result<(), IntrinsicError> {
        let Some(step) = step else { return Ok(()) };
        let plan = self.plan.as_ref().ok_or(IntrinsicError::NoPlan)?;
        match plan.step(step) {
            Some(_) => Ok(()),
            None => Err(IntrinsicError::UnknownStep(step.clone())),
        }
    }

    /// Checks `command` against the state: what it changes and its result.
    fn evaluate(&self, command: &WorkflowCommand) -> Result<(Change, Value), IntrinsicError> {
        use WorkflowCommand as C;
        match command {
            C::AttachPlan { steps } => self.evaluate_plan(steps),
            C::CompleteStep { step, output } => self.evaluate_step(step, output),
            C::SpawnSubtask {
                name,
                goal,
                acceptance_criteria,
                agent,
                step,
            } => {
                let task = self.new_task(
                    "subtask",
                    &self.subtasks,
                    (name, goal, acceptance_criteria, step.as_ref()),
                    agent.clone(),
                )?;
                if let Some(agent) = agent {
                    check_name("agent", agent)?;
                }
                let result = json!({"subtask_id": task.id, "name": name, "status": "spawned"});
                Ok((Change::Subtask(task), result))
            }
            C::CreateParticipantTask {
                participant_id,
                name,
                goal,
                acceptance_criteria,
                step,
            } => {
                self.participant(participant_id)?;
                let task = self.new_task(
                    "participant-task",
                    &self.participant_tasks,
                    (name, goal, acceptance_criteria, step.as_ref()),
                    Some(participant_id.clone()),
                )?;
                let result = json!({"task_id": task.id, "participant_id": participant_id,
                                    "name": name, "status": "created"});
                Ok((Change::ParticipantTask(task), result))
            }
            C::AwaitReply {
                participant_id,
                question,
                options,
            } => self.evaluate_question(participant_id, question, options),
            C::ReceiveReply {
                participant_id,
                reply,
            } => self.evaluate_reply(participant_id, reply),
            C::SetRole {
                actor,
                participant_id,
                role,
            } => self.evaluate_role(actor, participant_id, *role),
            C::AddParticipant {
                participant_id,
                role,
            } => {
                check_name("participant id", participant_id)?;
                if self.participants.contains_key(participant_id) {
                    return Err(IntrinsicError::DuplicateParticipant(participant_id.clone()));
                }
                count("participants", self.participants.len(), MAX_PARTICIPANTS)?;
                let result = json!({"participant_id": participant_id, "role": role});
                Ok((Change::Join(participant_id.clone(), *role), result))
            }
            C::SkillLoaded {
                name,
                description,
                body,
            } => self.evaluate_skill(name, description, body),
            C::SkillUnloaded { name } => Ok(if self.skills.contains_key(name) {
                (
                    Change::SkillOut(name.clone()),
                    json!({"name": name, "status": "unloaded"}),
                )
            } else {
                (
                    Change::Nothing,
                    json!({"name": name, "status": "not_loaded"}),
                )
            }),
            C::UiEmitted { messages } => self.evaluate_ui(messages),
        }
    }

    /// A plan attached: a task has one plan, and attaching the same again
    /// changes nothing.
    fn evaluate_plan(&self, steps: &[StepSpec]) -> Result<(Change, Value), IntrinsicError> {
        match &self.plan {
            Some(plan) if plan.same_as(steps) => Ok((
                Change::Nothing,
                json!({"status": "unchanged", "steps": plan.steps().len(), "ready": plan.ready()}),
            )),
            Some(plan) => Err(IntrinsicError::PlanExists {
                steps: plan.steps().len(),
                done: plan.done(),
            }),
            None => {
                let plan = Plan::build(steps)?;
                let result =
                    json!({"status": "attached", "steps": steps.len(), "ready": plan.ready()});
                Ok((Change::Plan(plan), result))
            }
        }
    }

    /// A step of the plan completed (again, with the same output: nothing).
    fn evaluate_step(&self, step: &str, output: &str) -> Result<(Change, Value), IntrinsicError> {
        let plan = self.plan.as_ref().ok_or(IntrinsicError::NoPlan)?;
        Ok(match plan.check_complete(step, output)? {
            None => (
                Change::Nothing,
                json!({"step": step, "status": "unchanged", "ready": [],
                       "remaining": plan.steps().len() - plan.done()}),
            ),
            Some(i) => {
                let result = json!({"step": step, "status": "done",
                    "ready": plan.freed_by(i),
                    "remaining": plan.steps().len() - plan.done() - 1});
                (Change::Step(i, output.to_owned()), result)
            }
        })
    }

    /// A question to a participant: one open at a time.
    fn evaluate_question(
        &self,
        participant_id: &str,
        question: &str,
        options: &[String],
    ) -> Result<(Change, Value), IntrinsicError> {
        self.participant(participant_id)?;
        if let Some(open) = self.waiting() {
            return Err(IntrinsicError::AlreadyWaiting {
                participant: open.participant_id.clone(),
                question_id: open.id.clone(),
            });
        }
        check_text("question", question, true)?;
        check_list("options", options, MAX_OPTIONS as usize, true)?;
        count("questions", self.questions.len(), MAX_SUBTASKS)?;
        let id = format!("question-{}", self.questions.len() + 1);
        let result = json!({"question_id": id, "participant_id": participant_id,
                            "status": "waiting"});
        let asked = Question {
            id,
            participant_id: participant_id.to_owned(),
            question: question.to_owned(),
            options: options.to_vec(),
            reply: None,
        };
        Ok((Change::Ask(asked), result))
    }

    /// The reply to the open question, from the participant asked, one of
    /// its options where it has any.
    fn evaluate_reply(
        &self,
        participant_id: &str,
        reply: &str,
    ) -> Result<(Change, Value), IntrinsicError> {
        let open = self.waiting().ok_or(IntrinsicError::NotWaiting)?;
        if open.participant_id != participant_id {
            return Err(IntrinsicError::InvalidReply(format!(
                "{} was asked, not {participant_id:?}",
                open.participant_id
            )));
        }
        check_text("reply", reply, false)?;
        if !open.options.is_empty() && !open.options.iter().any(|o| o == reply) {
            return Err(IntrinsicError::InvalidReply(format!(
                "{reply:?} is not one of the options {:?}",
                open.options
            )));
        }
        let result = json!({"question_id": open.id, "reply": reply});
        Ok((Change::Reply(reply.to_owned()), result))
    }

    /// A participant's role set by an admin; the last admin stays one.
    fn evaluate_role(
        &self,
        actor: &str,
        participant_id: &str,
        role: Role,
    ) -> Result<(Change, Value), IntrinsicError> {
        match self.participants.get(actor) {
            Some(Role::Admin) => {}
            other => {
                return Err(IntrinsicError::NotAdmin {
                    actor: actor.to_owned(),
                    role: other.map_or("non-participant", |r| r.as_str()).to_owned(),
                });
            }
        }
        let previous = self.participant(participant_id)?;
        let admins = self.participants.values().filter(|r| **r == Role::Admin);
        if previous == Role::Admin && role != Role::Admin && admins.count() == 1 {
            return Err(IntrinsicError::LastAdmin(participant_id.to_owned()));
        }
        let result = json!({"participant_id": participant_id, "role": role,
                            "previous_role": previous});
        Ok((Change::Role(participant_id.to_owned(), role), result))
    }

    /// A skill loaded into the task, within the size and count limits
    /// (the same skill again changes nothing).
    fn evaluate_skill(
        &self,
        name: &str,
        description: &str,
        body: &str,
    ) -> Result<(Change, Value), IntrinsicError> {
        check_name("skill name", name)?;
        let max = MAX_SKILL_FILE_CEILING as usize;
        if body.len() + description.len() > max {
            return Err(IntrinsicError::over(
                "the skill's size",
                body.len(),
                max,
                "keep SKILL.md smaller",
            ));
        }
        if !self.skills.contains_key(name) && self.skills.len() >= MAX_LOADED_SKILLS {
            return Err(IntrinsicError::TooManySkills {
                loaded: self.skills.len(),
            });
        }
        let skill = LoadedSkill {
            description: description.to_owned(),
            body: body.to_owned(),
        };
        let result = json!({"name": name, "description": description,
                            "status": "loaded", "bytes": body.len()});
        Ok(match self.skills.get(name) {
            Some(loaded) if *loaded == skill => (Change::Nothing, result),
            _ => (Change::SkillIn(name.to_owned(), skill), result),
        })
    }

    /// A new sub-task or participant task, checked.
    fn new_task(
        &self,
        prefix: &str,
        existing: &[Subtask],
        (name, goal, criteria, step): (&String, &String, &Vec<String>, Option<&String>),
        assignee: Option<String>,
    ) -> Result<Subtask, IntrinsicError> {
        check_name("name", name)?;
        check_text("goal", goal, true)?;
        check_list(
            "acceptance_criteria",
            criteria,
            MAX_CRITERIA as usize,
            false,
        )?;
        self.check_step_ref(step)?;
        count(&format!("{prefix}s"), existing.len(), MAX_SUBTASKS)?;
        Ok(Subtask {
            id: format!("{prefix}-{}", existing.len() + 1),
            name: name.clone(),
            goal: goal.clone(),
            acceptance_criteria: criteria.clone(),
            assignee,
            step: step.cloned(),
        })
    }

    /// Makes a checked change; cannot fail.
    fn commit(&mut self, change: Change) {
        match change {
            Change::Nothing => {}
            Change::Plan(plan) => self.plan = Some(plan),
            Change::Step(i, output) => {
                if let Some(plan) = &mut self.plan {
                    plan.complete(i, output);
                }
            }
            Change::Subtask(task) => self.subtasks.push(task),
            Change::ParticipantTask(task) => self.participant_tasks.push(task),
            Change::Ask(question) => self.questions.push(question),
            Change::Reply(reply) => {
                if let Some(open) = self.questions.last_mut() {
                    open.reply = Some(reply);
                }
            }
            Change::Role(id, role) | Change::Join(id, role) => {
                self.participants.insert(id, role);
            }
            Change::SkillIn(name, skill) => {
                self.skills.insert(name, skill);
            }
            Change::SkillOut(name) => {
                self.skills.remove(&name);
            }
            Change::Ui(touched, emitted) => {
                for (id, surface) in touched {
                    match surface {
                        Some(surface) => self.surfaces.insert(id, surface),
                        None => self.surfaces.remove(&id),
                    };
                }
                self.ui_messages += emitted;
            }
        }
    }
}

mod checks;
mod ui;

use checks::{check_list, count};
