//! Why an intrinsic call or a workflow command was refused.
//!
//! Invariant: every refusal is one variant with a stable [`code`]
//! (`IntrinsicError::code`) and a one-line message that says what was
//! wrong and what to call instead. A refused command changes nothing.
//!
//! [`code`]: IntrinsicError::code

/// A refused intrinsic call or workflow command.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IntrinsicError {
    /// The task has no plan.
    #[error("the task has no plan; call create_plan first")]
    NoPlan,
    /// The task already has a different plan.
    #[error(
        "the task already has a plan of {steps} steps ({done} done); complete its steps with \
         complete_step, or call create_plan again with exactly the same steps"
    )]
    PlanExists {
        /// Its steps.
        steps: usize,
        /// How many are done.
        done: usize,
    },
    /// Two steps share a name.
    #[error("step {0:?} appears twice in the plan; give every step a unique name")]
    DuplicateStep(String),
    /// A step depends on a step the plan does not have.
    #[error(
        "step {step:?} depends on {dependency:?}, which is not a step of the plan; name only steps of the plan in depends_on"
    )]
    UnknownDependency {
        /// The step.
        step: String,
        /// The missing dependency.
        dependency: String,
    },
    /// The dependencies form a cycle.
    #[error("the plan's dependencies form a cycle through {}; a plan must be a DAG: remove one of these dependencies", .0.join(" -> "))]
    PlanCycle(Vec<String>),
    /// No step of that name.
    #[error("the plan has no step {0:?}; call complete_step with one of the plan's step names")]
    UnknownStep(String),
    /// The step's dependencies are not all done.
    #[error("step {step:?} cannot be completed before {}; complete those first", .pending.join(", "))]
    DependenciesUnfinished {
        /// The step.
        step: String,
        /// Its unfinished dependencies.
        pending: Vec<String>,
    },
    /// The step is done already, with another output.
    #[error("step {0:?} is already done with another output; a done step is not completed again")]
    StepDone(String),
    /// The participant is not one of the task's.
    #[error("{0:?} is not a participant of this task; use one of the task's participant ids")]
    UnknownParticipant(String),
    /// The participant is already in the task.
    #[error("{0:?} is already a participant of this task")]
    DuplicateParticipant(String),
    /// No acting participant is bound to the call.
    #[error(
        "set_participant_role needs an acting participant, and the host bound none to this call"
    )]
    NoActor,
    /// The acting participant is not an admin.
    #[error(
        "only an admin may change roles, and {actor:?} is a {role}; ask an admin (with ask_participant)"
    )]
    NotAdmin {
        /// The acting participant.
        actor: String,
        /// Their role (or `non-participant`).
        role: String,
    },
    /// The change would leave the task without an admin.
    #[error("{0:?} is the task's only admin; make another participant admin first")]
    LastAdmin(String),
    /// The task is already waiting for a reply.
    #[error(
        "the task is already waiting for {participant:?} to answer {question_id}; wait for that reply before asking again"
    )]
    AlreadyWaiting {
        /// Who is asked.
        participant: String,
        /// The open question.
        question_id: String,
    },
    /// A reply arrived while nothing was asked.
    #[error("the task is not waiting for a reply")]
    NotWaiting,
    /// The reply does not answer the open question.
    #[error("the reply does not answer the open question: {0}")]
    InvalidReply(String),
    /// A value is over one of the bounds on what intrinsics accept and
    /// keep (the sizes and counts their argument schemas state).
    #[error("{what} is {amount}, more than the limit of {max}; {hint}")]
    OverLimit {
        /// What is over.
        what: String,
        /// How much there is.
        amount: usize,
        /// The limit.
        max: usize,
        /// What to do instead.
        hint: &'static str,
    },
    /// A value is empty or malformed where the schema would have refused it.
    #[error("{what}: {reason}")]
    Invalid {
        /// Which value.
        what: String,
        /// What is wrong.
        reason: String,
    },
    /// No skills root is configured, or it cannot be opened.
    #[error("skills are unavailable: {0}")]
    SkillsUnavailable(String),
    /// No skill of that name.
    #[error("no skill {0:?} is available; call list_skills for the names")]
    UnknownSkill(String),
    /// The skill exists but cannot be used.
    #[error("skill {name:?} cannot be loaded: {reason}; call list_skills to see the usable skills")]
    SkillUnusable {
        /// The skill.
        name: String,
        /// Why.
        reason: String,
    },
    /// Too many skills are loaded.
    #[error("{loaded} skills are loaded already, the most a task may hold; unload_skill one first")]
    TooManySkills {
        /// How many.
        loaded: usize,
    },
    /// The resource does not exist.
    #[error("skill {name:?} has no resource {resource:?}; call list_skill_resources for the paths")]
    ResourceNotFound {
        /// The skill.
        name: String,
        /// The path asked for.
        resource: String,
    },
    /// The resource path leads out of the skill.
    #[error(
        "resource {resource:?} is outside skill {name:?}'s directory; name a path that list_skill_resources shows"
    )]
    ResourceDenied {
        /// The skill.
        name: String,
        /// The path asked for.
        resource: String,
    },
    /// The resource names no file that can be read: a directory, a
    /// hidden file, `SKILL.md`, or text over the limit.
    #[error("resource {resource:?} of skill {name:?} cannot be shown: {reason}")]
    ResourceUnreadable {
        /// The skill.
        name: String,
        /// The path asked for.
        resource: String,
        /// Why.
        reason: String,
    },
    /// An A2UI message is malformed.
    #[error("messages[{index}] is not a valid A2UI v0.9 server-to-client message: {reason}")]
    InvalidUi {
        /// Its index in `messages`.
        index: usize,
        /// What is wrong.
        reason: String,
    },
    /// The call reached an intrinsic without a workflow bound to it.
    #[error(
        "intrinsics run against a task's workflow, and none is bound to this call; the harness \
         runs them with Host::call_intrinsic (tiny-harness call NAME ARGS --workflow STATE.json)"
    )]
    NoWorkflow,
    /// The arguments did not decode (only when a call bypassed the schema).
    #[error("the arguments do not fit {tool}: {reason}")]
    Arguments {
        /// The intrinsic.
        tool: &'static str,
        /// Why.
        reason: String,
    },
    /// No intrinsic of this name.
    #[error("no intrinsic named {0:?}")]
    UnknownIntrinsic(String),
}

impl IntrinsicError {
    /// The stable error code the model and the harness see.
    pub fn code(&self) -> &'static str {
        match self {
            IntrinsicError::NoPlan => "no_plan",
            IntrinsicError::PlanExists { .. } => "plan_exists",
            IntrinsicError::DuplicateStep(_) => "duplicate_step",
            IntrinsicError::UnknownDependency { .. } => "unknown_dependency",
            IntrinsicError::PlanCycle(_) => "plan_cycle",
            IntrinsicError::UnknownStep(_) => "unknown_step",
            IntrinsicError::DependenciesUnfinished { .. } => "dependencies_unfinished",
            IntrinsicError::StepDone(_) => "step_done",
            IntrinsicError::UnknownParticipant(_) => "unknown_participant",
            IntrinsicError::DuplicateParticipant(_) => "duplicate_participant",
            IntrinsicError::NoActor => "no_actor",
            IntrinsicError::NotAdmin { .. } => "not_admin",
            IntrinsicError::LastAdmin(_) => "last_admin",
            IntrinsicError::AlreadyWaiting { .. } => "already_waiting",
            IntrinsicError::NotWaiting => "not_waiting",
            IntrinsicError::InvalidReply(_) => "invalid_reply",
            IntrinsicError::OverLimit { .. } => "over_limit",
            IntrinsicError::Invalid { .. } => "invalid",
            IntrinsicError::SkillsUnavailable(_) => "skills_unavailable",
            IntrinsicError::UnknownSkill(_) => "unknown_skill",
            IntrinsicError::SkillUnusable { .. } => "skill_unusable",
            IntrinsicError::TooManySkills { .. } => "too_many_skills",
            IntrinsicError::ResourceNotFound { .. } => "resource_not_found",
            IntrinsicError::ResourceDenied { .. } => "resource_denied",
            IntrinsicError::ResourceUnreadable { .. } => "resource_unreadable",
            IntrinsicError::InvalidUi { .. } => "invalid_ui",
            IntrinsicError::NoWorkflow => "no_workflow",
            IntrinsicError::Arguments { .. } => "invalid_arguments",
            IntrinsicError::UnknownIntrinsic(_) => "unknown_tool",
        }
    }

    /// An [`IntrinsicError::OverLimit`].
    pub(crate) fn over(
        what: impl Into<String>,
        amount: usize,
        max: usize,
        hint: &'static str,
    ) -> Self {
        IntrinsicError::OverLimit {
            what: what.into(),
            amount,
            max,
            hint,
        }
    }
}
