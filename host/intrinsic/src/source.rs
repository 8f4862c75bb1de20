//! The intrinsics as a [`ToolSource`], and how the host binds a task's
//! workflow and acting participant to one call.
//!
//! Invariants:
//! - An intrinsic never changes anything itself. It reads the workflow
//!   bound to the call, checks its command against it, and hands the
//!   command back beside its result; the binder applies it after the
//!   invoker's checks have passed, so a call that fails anywhere leaves
//!   the workflow as it was.
//! - The acting participant comes from the binding, never from the
//!   arguments.
//! - A call with no workflow bound runs nothing and says how to bind one.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::args::{
    AskParticipantArgs, CompleteStepArgs, CreatePlanArgs, CreateTaskForParticipantArgs, EmitUiArgs,
    ListSkillsArgs, LoadSkillResourceArgs, SetParticipantRoleArgs, SkillArgs, SpawnSubtaskArgs,
};
use super::command::WorkflowCommand;
use super::error::IntrinsicError;
use super::schemas::SPECS;
use super::skills::Skills;
use super::workflow::Workflow;
use tiny_harness_core::source::{CallFuture, CallLimits, ListFuture, PendingTool, ToolSource};
use tiny_harness_core::tool::{CallError, ContentPart, ToolResult};

/// The longest an intrinsic call may take. They touch memory and a few
/// small files, so this only bounds a skills root on a hung file system.
pub const INTRINSIC_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest arguments an intrinsic takes: room for a plan of
/// [`super::limits::MAX_PLAN_STEPS`] short steps, or a batch of UI messages.
pub const INTRINSIC_ARGUMENTS_BYTES: usize = 4 << 20;

/// What one intrinsic produced: the command for the workflow (none for the
/// read-only three) and the result the model reads next turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Effect {
    /// The command to apply.
    pub command: Option<WorkflowCommand>,
    /// The result.
    pub result: ToolResult,
}

/// The twelve intrinsics, as one source of bare-named tools.
#[derive(Debug)]
pub struct IntrinsicSource {
    skills: Skills,
}

impl IntrinsicSource {
    /// The intrinsics, with skills from `skills`.
    pub fn new(skills: Skills) -> Self {
        IntrinsicSource { skills }
    }

    /// The twelve definitions, to register with
    /// [`Registry::register_bare`](tiny_harness_core::registry::Registry::register_bare).
    pub fn pending() -> Vec<PendingTool> {
        SPECS
            .iter()
            .map(|spec| PendingTool {
                server: String::new(),
                definition: spec.definition(),
            })
            .collect()
    }

    /// The skills it reads.
    pub fn skills(&self) -> &Skills {
        &self.skills
    }

    /// Runs intrinsic `name` with `arguments` against `workflow`, for
    /// `actor`: its command (checked against `workflow`, not applied) and
    /// its result. A refusal is an error the model can act on.
    pub fn run(
        &self,
        name: &str,
        arguments: &Value,
        workflow: &Workflow,
        actor: Option<&str>,
    ) -> Result<Effect, IntrinsicError> {
        use WorkflowCommand as C;
        let name = super::schemas::spec(name)
            .ok_or_else(|| IntrinsicError::UnknownIntrinsic(name.to_owned()))?
            .name;
        let command = match name {
            "create_plan" => {
                let a: CreatePlanArgs = decode(name, arguments)?;
                C::AttachPlan { steps: a.steps }
            }
            "complete_step" => {
                let a: CompleteStepArgs = decode(name, arguments)?;
                C::CompleteStep {
                    step: a.step,
                    output: a.output,
                }
            }
            "spawn_subtask" => {
                let a: SpawnSubtaskArgs = decode(name, arguments)?;
                C::SpawnSubtask {
                    name: a.name,
                    goal: a.goal,
                    acceptance_criteria: a.acceptance_criteria,
                    agent: a.agent,
                    step: a.step,
                }
            }
            "ask_participant" => {
                let a: AskParticipantArgs = decode(name, arguments)?;
                C::AwaitReply {
                    participant_id: a.participant_id,
                    question: a.question,
                    options: a.options,
                }
            }
            "create_task_for_participant" => {
                let a: CreateTaskForParticipantArgs = decode(name, arguments)?;
                C::CreateParticipantTask {
                    participant_id: a.participant_id,
                    name: a.name,
                    goal: a.goal,
                    acceptance_criteria: a.acceptance_criteria,
                    step: a.step,
                }
            }
            "set_participant_role" => {
                let a: SetParticipantRoleArgs = decode(name, arguments)?;
                C::SetRole {
                    actor: actor.ok_or(IntrinsicError::NoActor)?.to_owned(),
                    participant_id: a.participant_id,
                    role: a.role,
                }
            }
            "list_skills" => {
                let _: ListSkillsArgs = decode(name, arguments)?;
                let report = self.skills.list()?;
                let skills: Vec<Value> = report
                    .skills
                    .iter()
                    .map(|s| {
                        json!({"name": s.name, "description": s.description,
                               "loaded": workflow.skills().contains_key(&s.name)})
                    })
                    .collect();
                return Ok(read_only(
                    json!({"skills": skills, "skipped": report.skipped}),
                    None,
                ));
            }
            "load_skill" => {
                let a: SkillArgs = decode(name, arguments)?;
                let file = self.skills.load(&a.name)?;
                let missing = self.skills.missing_links(&a.name, &file.body);
                // The body is the point of the result: it follows the JSON
                // as text, so the model reads it as written.
                let body = file.body.clone();
                let command = C::SkillLoaded {
                    name: file.name,
                    description: file.description,
                    body: file.body,
                };
                let mut data = workflow.check(&command)?;
                // Beside the body, not in the state: the links a model
                // would follow in vain, and the skill's author should fix.
                if let Some(object) = data.as_object_mut() {
                    object.insert("missing_links".into(), json!(missing));
                }
                let mut effect = read_only(data, Some(body));
                effect.command = Some(command);
                return Ok(effect);
            }
            "unload_skill" => {
                let a: SkillArgs = decode(name, arguments)?;
                C::SkillUnloaded { name: a.name }
            }
            "list_skill_resources" => {
                let a: SkillArgs = decode(name, arguments)?;
                let (resources, truncated) = self.skills.resources(&a.name)?;
                let data = json!({"name": a.name, "resources": resources, "truncated": truncated});
                return Ok(read_only(data, None));
            }
            "load_skill_resource" => {
                let a: LoadSkillResourceArgs = decode(name, arguments)?;
                let read = self.skills.resource(&a.name, a.kind, &a.resource)?;
                let data = json!({"name": a.name, "resource": read.resource,
                                  "kind": super::skills::kind_of(&read.resource),
                                  "bytes": read.bytes, "text": read.text.is_some(),
                                  "media_type": read.media_type});
                return Ok(read_only(data, read.text));
            }
            "emit_ui" => {
                let a: EmitUiArgs = decode(name, arguments)?;
                C::UiEmitted {
                    messages: a.messages,
                }
            }
            other => return Err(IntrinsicError::UnknownIntrinsic(other.to_owned())),
        };
        let data = workflow.check(&command)?;
        let mut effect = read_only(data, None);
        effect.command = Some(command);
        Ok(effect)
    }
}

/// A result of one JSON part and, if given, a text part after it.
fn read_only(data: Value, text: Option<String>) -> Effect {
    let mut content = vec![ContentPart::Json {
        media_type: "application/json".into(),
        data,
    }];
    content.extend(text.map(ContentPart::text));
    Effect {
        command: None,
        result: ToolResult {
            content,
            is_error: false,
        },
    }
}

/// A refusal as the error result the model reads: its code and message.
pub fn error_result(error: &IntrinsicError) -> ToolResult {
    ToolResult {
        content: vec![ContentPart::Json {
            media_type: "application/json".into(),
            data: json!({"error": error.code(), "message": error.to_string()}),
        }],
        is_error: true,
    }
}

fn decode<T: serde::de::DeserializeOwned>(
    tool: &'static str,
    arguments: &Value,
) -> Result<T, IntrinsicError> {
    T::deserialize(arguments).map_err(|e| IntrinsicError::Arguments {
        tool,
        reason: e.to_string(),
    })
}

impl ToolSource for IntrinsicSource {
    fn kind(&self) -> &'static str {
        "intrinsic"
    }

    fn call_limits(&self) -> CallLimits {
        CallLimits::new(INTRINSIC_TIMEOUT, INTRINSIC_ARGUMENTS_BYTES)
    }

    fn list_tools(&self) -> ListFuture<'_> {
        Box::pin(std::future::ready(Ok(IntrinsicSource::pending())))
    }

    fn call<'a>(
        &'a self,
        _server: &'a str,
        tool: &'a str,
        arguments: &'a Value,
        _deadline: Instant,
    ) -> CallFuture<'a> {
        Box::pin(async move {
            let Ok(binding) = BOUND.try_with(Arc::clone) else {
                return Ok(error_result(&IntrinsicError::NoWorkflow));
            };
            let workflow = binding
                .workflow
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            match self.run(tool, arguments, &workflow, binding.actor.as_deref()) {
                Ok(effect) => {
                    *binding
                        .command
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner) = effect.command;
                    Ok(effect.result)
                }
                Err(error) => Ok(error_result(&error)),
            }
        })
    }
}

/// What the host binds to one call.
#[derive(Debug)]
struct Binding {
    workflow: Mutex<Workflow>,
    actor: Option<String>,
    command: Mutex<Option<WorkflowCommand>>,
}

tokio::task_local! {
    static BOUND: Arc<Binding>;
}

/// Puts the workflow back however the call ends (even when its future is
/// dropped half-way).
struct Restore<'w> {
    target: &'w mut Workflow,
    binding: Arc<Binding>,
}

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        let mut held = self
            .binding
            .workflow
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *self.target = std::mem::take(&mut *held);
    }
}

/// Runs `call` (an invocation through the invoker) with `workflow` and
/// `actor` bound to any intrinsic it reaches, and returns its output and
/// the command that intrinsic produced, checked against `workflow` but
/// not applied. `workflow` is moved in for the call, not copied, and is
/// back in place when this returns or is dropped.
pub async fn bind<F: Future>(
    workflow: &mut Workflow,
    actor: Option<&str>,
    call: F,
) -> (F::Output, Option<WorkflowCommand>) {
    let binding = Arc::new(Binding {
        workflow: Mutex::new(std::mem::take(workflow)),
        actor: actor.map(str::to_owned),
        command: Mutex::new(None),
    });
    let restore = Restore {
        target: workflow,
        binding: binding.clone(),
    };
    let output = BOUND.scope(binding.clone(), call).await;
    drop(restore);
    let command = binding
        .command
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    (output, command)
}

/// Turns an error the workflow found only at apply time into a call error
/// (it cannot happen: the command was checked against the same state).
pub fn apply_error(error: &IntrinsicError) -> CallError {
    CallError::Failed(format!("{}: {error}", error.code()))
}
