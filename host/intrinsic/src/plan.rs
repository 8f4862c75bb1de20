//! A task's plan: a DAG of named steps, each pending or done.
//!
//! Invariants:
//! - A plan is a DAG: step names are unique, every dependency names a step
//!   of the plan, and no step depends on itself through any chain. A plan
//!   that breaks one of these is never built ([`Plan::build`] refuses it,
//!   and a state file holding one does not load).
//! - A step is done only after every step it depends on is done.
//! - Completing a step costs what it touches (its dependencies and the
//!   steps that depend on it), not the size of the plan: steps are found
//!   by a name index, and the dependents of each step are indexed too.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::args::StepSpec;
use super::error::IntrinsicError;
use super::limits::{MAX_DEPENDENCIES, MAX_NAME, MAX_PLAN_STEPS, MAX_TEXT};

/// One step of a plan, with its state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Its name, unique in the plan.
    pub name: String,
    /// What it does.
    pub description: String,
    /// The steps that must be done before it.
    #[serde(default)]
    pub depends_on: Vec<String>,
    /// What it produced, once done; `None` while pending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
}

impl Step {
    /// True once the step is done.
    pub fn is_done(&self) -> bool {
        self.output.is_some()
    }
}

/// A checked plan. Serialises as its list of steps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Vec<Step>", into = "Vec<Step>")]
pub struct Plan {
    steps: Vec<Step>,
    /// Step index by name.
    index: HashMap<String, usize>,
    /// For each step, the indices of the steps that depend on it.
    dependents: Vec<Vec<usize>>,
    /// How many steps are done.
    done: usize,
}

impl Plan {
    /// Checks `specs` (bounds, unique names, known dependencies, no cycle)
    /// and builds a plan of pending steps.
    pub fn build(specs: &[StepSpec]) -> Result<Plan, IntrinsicError> {
        if specs.is_empty() {
            return Err(IntrinsicError::Invalid {
                what: "steps".into(),
                reason: "a plan needs at least one step".into(),
            });
        }
        let max = MAX_PLAN_STEPS as usize;
        if specs.len() > max {
            return Err(IntrinsicError::over(
                "the number of steps",
                specs.len(),
                max,
                "plan at a coarser grain, or spawn_subtask for a part of the work",
            ));
        }
        let mut index = HashMap::with_capacity(specs.len());
        for (i, spec) in specs.iter().enumerate() {
            check_name("step name", &spec.name)?;
            check_text("step description", &spec.description, false)?;
            if index.insert(spec.name.clone(), i).is_some() {
                return Err(IntrinsicError::DuplicateStep(spec.name.clone()));
            }
        }
        let mut dependents = vec![Vec::new(); specs.len()];
        let mut unmet = vec![0usize; specs.len()];
        for (i, spec) in specs.iter().enumerate() {
            let deps = &spec.depends_on;
            if deps.len() > MAX_DEPENDENCIES as usize {
                return Err(IntrinsicError::over(
                    format!("the number of dependencies of step {:?}", spec.name),
                    deps.len(),
                    MAX_DEPENDENCIES as usize,
                    "depend on fewer steps (a step that gathers them can stand in)",
                ));
            }
            for (k, dep) in deps.iter().enumerate() {
                let Some(&d) = index.get(dep) else {
                    return Err(IntrinsicError::UnknownDependency {
                        step: spec.name.clone(),
                        dependency: dep.clone(),
                    });
                };
                if deps[..k].contains(dep) {
                    return Err(IntrinsicError::Invalid {
                        what: format!("step {:?}", spec.name),
                        reason: format!("it lists dependency {dep:?} twice; list it once"),
                    });
                }
                dependents[d].push(i);
                unmet[i] += 1;
            }
        }
        // Kahn's algorithm: whatever is never freed lies on or behind a cycle.
        let mut free: Vec<usize> = (0..specs.len()).filter(|&i| unmet[i] == 0).collect();
        let mut seen = 0;
        while let Some(i) = free.pop() {
            seen += 1;
            for &j in &dependents[i] {
                unmet[j] -= 1;
                if unmet[j] == 0 {
                    free.push(j);
                }
            }
        }
        if seen < specs.len() {
            return Err(IntrinsicError::PlanCycle(find_cycle(specs, &index, &unmet)));
        }
        let steps = specs
            .iter()
            .map(|spec| Step {
                name: spec.name.clone(),
                description: spec.description.clone(),
                depends_on: spec.depends_on.clone(),
                output: None,
            })
            .collect();
        Ok(Plan {
            steps,
            index,
            dependents,
            done: 0,
        })
    }

    /// The steps, in the plan's order.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The step named `name`.
    pub fn step(&self, name: &str) -> Option<&Step> {
        self.index.get(name).map(|&i| &self.steps[i])
    }

    /// How many steps are done.
    pub fn done(&self) -> usize {
        self.done
    }

    /// True when every step is done.
    pub fn is_complete(&self) -> bool {
        self.done == self.steps.len()
    }

    /// The same steps as `specs` describe, in the same order.
    pub(crate) fn same_as(&self, specs: &[StepSpec]) -> bool {
        self.steps.len() == specs.len()
            && self.steps.iter().zip(specs).all(|(step, spec)| {
                step.name == spec.name
                    && step.description == spec.description
                    && step.depends_on == spec.depends_on
            })
    }

    /// The names of the pending steps whose dependencies are all done.
    pub fn ready(&self) -> Vec<&str> {
        (0..self.steps.len())
            .filter(|&i| !self.steps[i].is_done() && self.deps_done(i, None))
            .map(|i| self.steps[i].name.as_str())
            .collect()
    }

    /// Whether every dependency of step `i` is done, counting `also` as done.
    fn deps_done(&self, i: usize, also: Option<usize>) -> bool {
        self.steps[i].depends_on.iter().all(|dep| {
            let d = self.index[dep];
            Some(d) == also || self.steps[d].is_done()
        })
    }

    /// Checks that step `name` may be completed with `output`: its index,
    /// or `None` when it is done already with that very output.
    pub(crate) fn check_complete(
        &self,
        name: &str,
        output: &str,
    ) -> Result<Option<usize>, IntrinsicError> {
        check_text("output", output, false)?;
        let Some(&i) = self.index.get(name) else {
            return Err(IntrinsicError::UnknownStep(name.to_owned()));
        };
        let step = &self.steps[i];
        if let Some(done) = &step.output {
            return if done == output {
                Ok(None)
            } else {
                Err(IntrinsicError::StepDone(name.to_owned()))
            };
        }
        let pending: Vec<String> = step
            .depends_on
            .iter()
            .filter(|dep| !self.steps[self.index[*dep]].is_done())
            .cloned()
            .collect();
        if !pending.is_empty() {
            return Err(IntrinsicError::DependenciesUnfinished {
                step: name.to_owned(),
                pending,
            });
        }
        Ok(Some(i))
    }

    /// The steps that completing step `i` makes ready.
    pub(crate) fn freed_by(&self, i: usize) -> Vec<&str> {
        self.dependents[i]
            .iter()
            .filter(|&&j| !self.steps[j].is_done() && self.deps_done(j, Some(i)))
            .map(|&j| self.steps[j].name.as_str())
            .collect()
    }

    /// Marks step `i` done (checked by [`Plan::check_complete`]).
    pub(crate) fn complete(&mut self, i: usize, output: String) {
        if self.steps[i].output.is_none() {
            self.done += 1;
        }
        self.steps[i].output = Some(output);
    }
}

impl TryFrom<Vec<Step>> for Plan {
    type Error = IntrinsicError;

    /// A plan from a state file: checked as [`Plan::build`] checks a new
    /// one, and no step done before its dependencies.
    fn try_from(steps: Vec<Step>) -> Result<Self, Self::Error> {
        let specs: Vec<StepSpec> = steps
            .iter()
            .map(|s| StepSpec {
                name: s.name.clone(),
                description: s.description.clone(),
                depends_on: s.depends_on.clone(),
            })
            .collect();
        let mut plan = Plan::build(&specs)?;
        for (i, step) in steps.into_iter().enumerate() {
            if let Some(output) = step.output {
                check_text("output", &output, false)?;
                plan.steps[i].output = Some(output);
                plan.done += 1;
            }
        }
        for i in 0..plan.steps.len() {
            if plan.steps[i].is_done() && !plan.deps_done(i, None) {
                return Err(IntrinsicError::Invalid {
                    what: format!("step {:?}", plan.steps[i].name),
                    reason: "it is done but a step it depends on is not".into(),
                });
            }
        }
        Ok(plan)
    }
}

impl From<Plan> for Vec<Step> {
    fn from(plan: Plan) -> Self {
        plan.steps
    }
}

/// A cycle among the steps Kahn's algorithm left (`unmet[i] > 0`): each of
/// them has an unfinished dependency that is also left, so walking from
/// one to such a dependency must come back to a step already walked.
fn find_cycle(specs: &[StepSpec], index: &HashMap<String, usize>, unmet: &[usize]) -> Vec<String> {
    let Some(start) = (0..specs.len()).find(|&i| unmet[i] > 0) else {
        return Vec::new();
    };
    let mut position = HashMap::new();
    let mut path = Vec::new();
    let mut at = start;
    while !position.contains_key(&at) {
        position.insert(at, path.len());
        path.push(at);
        let next = specs[at]
            .depends_on
            .iter()
            .map(|dep| index[dep])
            .find(|&d| unmet[d] > 0);
        match next {
            Some(next) => at = next,
            None => break,
        }
    }
    let from = position.get(&at).copied().unwrap_or(0);
    // The walk follows dependencies; show the cycle in the order work flows.
    let mut cycle: Vec<String> = path[from..]
        .iter()
        .rev()
        .map(|&i| specs[i].name.clone())
        .collect();
    if let Some(first) = cycle.first().cloned() {
        cycle.push(first);
    }
    cycle
}

/// Checks a name: 1 to [`MAX_NAME`] bytes, not only whitespace, no control
/// characters.
pub(crate) fn check_name(what: &str, name: &str) -> Result<(), IntrinsicError> {
    let reason = if name.trim().is_empty() {
        Some("it is empty".to_owned())
    } else if name.len() > MAX_NAME as usize {
        Some(format!("it is longer than {MAX_NAME} bytes"))
    } else if name.chars().any(char::is_control) {
        Some("it holds a control character".to_owned())
    } else {
        None
    };
    match reason {
        None => Ok(()),
        Some(reason) => Err(IntrinsicError::Invalid {
            what: format!("{what} {:?}", tiny_harness_core::display::one_line(name)),
            reason,
        }),
    }
}

/// Checks free text: at most [`MAX_TEXT`] bytes, and not empty when
/// `required`.
pub(crate) fn check_text(what: &str, text: &str, required: bool) -> Result<(), IntrinsicError> {
    if required && text.trim().is_empty() {
        return Err(IntrinsicError::Invalid {
            what: what.to_owned(),
            reason: "it is empty".into(),
        });
    }
    if text.len() > MAX_TEXT as usize {
        return Err(IntrinsicError::over(
            format!("the length of {what}"),
            text.len(),
            MAX_TEXT as usize,
            "say it in fewer bytes",
        ));
    }
    Ok(())
}
