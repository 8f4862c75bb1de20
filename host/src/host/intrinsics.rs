//! The intrinsics in a host (the `intrinsics` feature): registered under
//! their bare names at build, and called against a task's workflow.
//!
//! Invariant: a call's command is applied to the workflow only when the
//! whole call succeeded; a refused call leaves the workflow as it was.

use std::sync::Arc;

use crate::intrinsic::{IntrinsicSource, Skills, Workflow, WorkflowCommand};
use crate::invoke::{CallOutcome, ToolCall};
use crate::registry::RegistrationLimits;

use super::{Host, HostError};

impl Host {
    /// Registers the twelve intrinsics under their bare names.
    pub(super) fn register_intrinsics(&self, skills: Skills) -> Result<usize, HostError> {
        let mut count = 0;
        self.live_registry()
            .update(|current| {
                let mut next = current.clone();
                count = next.register_bare(
                    crate::intrinsic::SOURCE_LABEL,
                    IntrinsicSource::pending(),
                    Arc::new(IntrinsicSource::new(skills)),
                    &RegistrationLimits::default(),
                )?;
                Ok(next)
            })
            .map_err(|source| HostError::Registry {
                plugin: crate::intrinsic::SOURCE_LABEL.to_owned(),
                source,
            })?;
        Ok(count)
    }

    /// Runs one call of an intrinsic against a task's `workflow`, for the
    /// acting participant `actor` (bound here, never read from the
    /// arguments). The call goes through the invoker like any other; when
    /// it succeeds, its command is applied to `workflow` and returned, and
    /// when it is refused anywhere, `workflow` is left exactly as it was.
    /// The outcome holds the result the model reads next turn.
    pub async fn call_intrinsic(
        &self,
        call: &ToolCall,
        workflow: &mut Workflow,
        actor: Option<&str>,
    ) -> IntrinsicOutcome {
        self.call_intrinsic_as(call, None, workflow, actor).await
    }

    /// [`Host::call_intrinsic`] of a call a provider made under
    /// `wire_name` (which the journal records).
    pub(crate) async fn call_intrinsic_as(
        &self,
        call: &ToolCall,
        wire_name: Option<&str>,
        workflow: &mut Workflow,
        actor: Option<&str>,
    ) -> IntrinsicOutcome {
        let (outcome, command) =
            crate::intrinsic::bind(workflow, actor, self.invoke_as(call, wire_name)).await;
        let Some(command) = command.filter(|_| !outcome.is_error()) else {
            return IntrinsicOutcome {
                outcome,
                command: None,
            };
        };
        match workflow.apply(&command) {
            Ok(_) => IntrinsicOutcome {
                outcome,
                command: Some(command),
            },
            Err(error) => IntrinsicOutcome {
                outcome: CallOutcome::new(
                    outcome.call_id,
                    outcome.tool,
                    Err(crate::intrinsic::apply_error(&error)),
                ),
                command: None,
            },
        }
    }
}

/// What [`Host::call_intrinsic`] did: the call's outcome (the result the
/// model reads next turn) and the command it applied, if any.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct IntrinsicOutcome {
    /// The outcome, as for any call.
    pub outcome: CallOutcome,
    /// The command applied to the workflow: `None` for a read-only
    /// intrinsic, a refused call, or a call of a tool that is not one.
    pub command: Option<WorkflowCommand>,
}
