//! Property: over random command sequences, applying is deterministic,
//! never panics, refuses all or nothing, and replaying the accepted
//! commands (or reloading the state file) reproduces the state.

use proptest::prelude::*;
use serde_json::json;

use super::rules::step;
use crate::{Role, Workflow, WorkflowCommand as C};

fn name() -> impl Strategy<Value = String> {
    prop_oneof![Just("a"), Just("b"), Just("c"), Just("d"), Just("")].prop_map(String::from)
}

fn person() -> impl Strategy<Value = String> {
    prop_oneof![Just("p"), Just("q"), Just("r")].prop_map(String::from)
}

fn role() -> impl Strategy<Value = Role> {
    prop_oneof![
        Just(Role::Assignee),
        Just(Role::Reporter),
        Just(Role::Watcher),
        Just(Role::Admin)
    ]
}

fn ui() -> impl Strategy<Value = serde_json::Value> {
    (0..5usize, prop_oneof![Just("s"), Just("t")]).prop_map(|(kind, id)| match kind {
        0 => json!({"version": "v0.9", "createSurface": {"surfaceId": id, "catalogId": "c"}}),
        1 => json!({"version": "v0.9", "updateComponents": {"surfaceId": id,
                     "components": [{"id": "root", "component": "Text"}]}}),
        2 => json!({"version": "v0.9", "updateDataModel": {"surfaceId": id, "value": 1}}),
        3 => json!({"version": "v0.9", "deleteSurface": {"surfaceId": id}}),
        _ => json!({"version": "v0.8", "deleteSurface": {"surfaceId": id}}),
    })
}

fn command() -> impl Strategy<Value = C> {
    prop_oneof![
        prop::collection::vec((name(), prop::collection::vec(name(), 0..3)), 0..5).prop_map(
            |steps| C::AttachPlan {
                steps: steps
                    .iter()
                    .map(|(n, d)| step(n, &d.iter().map(String::as_str).collect::<Vec<_>>()))
                    .collect()
            }
        ),
        (name(), prop_oneof![Just("x"), Just("y")]).prop_map(|(step, output)| C::CompleteStep {
            step,
            output: output.into()
        }),
        (name(), prop::option::of(name())).prop_map(|(name, step)| C::SpawnSubtask {
            name,
            goal: "g".into(),
            acceptance_criteria: vec![],
            agent: None,
            step
        }),
        (person(), prop::collection::vec(name(), 0..3)).prop_map(|(p, options)| C::AwaitReply {
            participant_id: p,
            question: "q?".into(),
            options
        }),
        (person(), name()).prop_map(|(p, reply)| C::ReceiveReply {
            participant_id: p,
            reply
        }),
        (person(), name(), prop::option::of(name())).prop_map(|(p, name, step)| {
            C::CreateParticipantTask {
                participant_id: p,
                name,
                goal: "g".into(),
                acceptance_criteria: vec![],
                step,
            }
        }),
        (person(), person(), role()).prop_map(|(actor, p, role)| C::SetRole {
            actor,
            participant_id: p,
            role
        }),
        (person(), role()).prop_map(|(p, role)| C::AddParticipant {
            participant_id: p,
            role
        }),
        (name(), name()).prop_map(|(name, body)| C::SkillLoaded {
            name,
            description: "d".into(),
            body
        }),
        name().prop_map(|name| C::SkillUnloaded { name }),
        prop::collection::vec(ui(), 0..4).prop_map(|messages| C::UiEmitted { messages }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn apply_is_deterministic_and_all_or_nothing(commands in prop::collection::vec(command(), 0..40)) {
        let mut one = Workflow::new();
        let mut two = Workflow::new();
        let mut accepted = Vec::new();
        for command in &commands {
            let before = one.clone();
            let first = one.apply(command);
            let second = two.apply(command);
            prop_assert_eq!(&first, &second);
            prop_assert_eq!(&one, &two);
            match first {
                Ok(_) => accepted.push(command.clone()),
                Err(_) => prop_assert_eq!(&one, &before),
            }
        }
        // The accepted commands, recorded as JSON Lines and replayed, give
        // the same state; so does the state file.
        let recorded: Vec<C> = accepted
            .iter()
            .map(|c| serde_json::from_str(&serde_json::to_string(c).unwrap()).unwrap())
            .collect();
        prop_assert_eq!(&Workflow::replay(&recorded).unwrap(), &one);
        let state = serde_json::to_string(&one).unwrap();
        prop_assert_eq!(&Workflow::from_json(&state).unwrap(), &one);
    }
}
