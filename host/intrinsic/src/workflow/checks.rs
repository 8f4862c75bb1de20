//! The checks shared by several commands, and the rules a state file
//! must keep when it loads.

use super::Workflow;
use crate::error::IntrinsicError;
use crate::limits::{MAX_LOADED_SKILLS, MAX_PARTICIPANTS, MAX_SUBTASKS, MAX_SURFACES};
use crate::plan::{check_name, check_text};

impl Workflow {
    /// The rules a loaded state must keep beyond its plan's (which
    /// [`Plan`]'s own deserialisation checks).
    pub(super) fn check_loaded(&self) -> Result<(), IntrinsicError> {
        count(
            "participants",
            self.participants.len().saturating_sub(1),
            MAX_PARTICIPANTS,
        )?;
        for id in self.participants.keys() {
            check_name("participant id", id)?;
        }
        for (what, tasks) in [
            ("subtasks", &self.subtasks),
            ("participant_tasks", &self.participant_tasks),
        ] {
            count(what, tasks.len().saturating_sub(1), MAX_SUBTASKS)?;
            for task in tasks.iter() {
                self.check_step_ref(task.step.as_ref())?;
            }
        }
        for task in &self.participant_tasks {
            self.participant(task.assignee.as_deref().unwrap_or_default())?;
        }
        count(
            "questions",
            self.questions.len().saturating_sub(1),
            MAX_SUBTASKS,
        )?;
        let (answered, open) = self
            .questions
            .split_at(self.questions.len().saturating_sub(1));
        if answered.iter().any(|q| q.reply.is_none()) {
            return Err(IntrinsicError::Invalid {
                what: "questions".into(),
                reason: "only the last question may be unanswered".into(),
            });
        }
        for question in answered.iter().chain(open) {
            self.participant(&question.participant_id)?;
        }
        if self.skills.len() > MAX_LOADED_SKILLS {
            return Err(IntrinsicError::TooManySkills {
                loaded: self.skills.len(),
            });
        }
        count(
            "surfaces",
            self.surfaces.len().saturating_sub(1),
            MAX_SURFACES,
        )?;
        Ok(())
    }
}

/// Refuses adding one to `len` things when `max` are there already.
pub(super) fn count(what: &str, len: usize, max: usize) -> Result<(), IntrinsicError> {
    if len >= max {
        return Err(IntrinsicError::over(
            format!("the number of {what}"),
            len + 1,
            max,
            "finish or reuse what the task has",
        ));
    }
    Ok(())
}

/// Checks a list of short texts: at most `max`, each bounded, and (with
/// `names`) each a name, none twice.
pub(super) fn check_list(
    what: &str,
    items: &[String],
    max: usize,
    names: bool,
) -> Result<(), IntrinsicError> {
    if items.len() > max {
        return Err(IntrinsicError::over(
            format!("the number of {what}"),
            items.len(),
            max,
            "give fewer",
        ));
    }
    for (i, item) in items.iter().enumerate() {
        if names {
            check_name(what, item)?;
            if items[..i].contains(item) {
                return Err(IntrinsicError::Invalid {
                    what: what.into(),
                    reason: format!("{item:?} appears twice"),
                });
            }
        } else {
            check_text(what, item, true)?;
        }
    }
    Ok(())
}
