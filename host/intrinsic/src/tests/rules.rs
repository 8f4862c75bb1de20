//! Each command's rules, applied to a [`Workflow`] directly.

use serde_json::json;

use crate::{IntrinsicError, Role, StepSpec, Workflow, WorkflowCommand as C};

pub(super) fn step(name: &str, deps: &[&str]) -> StepSpec {
    StepSpec {
        name: name.into(),
        description: format!("do {name}"),
        depends_on: deps.iter().map(|d| d.to_string()).collect(),
    }
}

fn plan(steps: Vec<StepSpec>) -> C {
    C::AttachPlan { steps }
}

fn complete(step: &str, output: &str) -> C {
    C::CompleteStep {
        step: step.into(),
        output: output.into(),
    }
}

fn join(id: &str, role: Role) -> C {
    C::AddParticipant {
        participant_id: id.into(),
        role,
    }
}

/// Applies `command`, expecting a refusal with `code`, and checks that the
/// state did not change.
fn refused(workflow: &mut Workflow, command: C, code: &str) -> IntrinsicError {
    let before = workflow.clone();
    let error = workflow.apply(&command).unwrap_err();
    assert_eq!(error.code(), code, "{error}");
    assert_eq!(*workflow, before, "a refused command changed the state");
    assert!(!error.to_string().contains('\n'), "one line: {error}");
    error
}

#[test]
fn plans_are_dags() {
    let mut w = Workflow::new();
    let e = refused(
        &mut w,
        plan(vec![step("a", &["b"]), step("b", &["a"])]),
        "plan_cycle",
    );
    assert!(
        e.to_string().contains("a -> b -> a") || e.to_string().contains("b -> a -> b"),
        "{e}"
    );
    refused(&mut w, plan(vec![step("a", &["a"])]), "plan_cycle");
    refused(&mut w, plan(vec![step("a", &["zz"])]), "unknown_dependency");
    refused(
        &mut w,
        plan(vec![step("a", &[]), step("a", &[])]),
        "duplicate_step",
    );
    refused(&mut w, plan(vec![]), "invalid");
    refused(
        &mut w,
        plan(vec![step("a", &[]), step("b", &["a", "a"])]),
        "invalid",
    );
    let r = w
        .apply(&plan(vec![
            step("a", &[]),
            step("b", &["a"]),
            step("c", &["a", "b"]),
        ]))
        .unwrap();
    assert_eq!(r, json!({"status": "attached", "steps": 3, "ready": ["a"]}));
    // The same plan again changes nothing; another is refused.
    let again = w
        .apply(&plan(vec![
            step("a", &[]),
            step("b", &["a"]),
            step("c", &["a", "b"]),
        ]))
        .unwrap();
    assert_eq!(again["status"], "unchanged");
    refused(&mut w, plan(vec![step("x", &[])]), "plan_exists");
}

#[test]
fn steps_complete_in_dependency_order() {
    let mut w = Workflow::new();
    refused(&mut w, complete("a", "x"), "no_plan");
    w.apply(&plan(vec![
        step("a", &[]),
        step("b", &["a"]),
        step("c", &["a", "b"]),
    ]))
    .unwrap();
    refused(&mut w, complete("zz", "x"), "unknown_step");
    let e = refused(&mut w, complete("c", "x"), "dependencies_unfinished");
    assert!(e.to_string().contains("a, b"), "{e}");
    let r = w.apply(&complete("a", "A")).unwrap();
    assert_eq!(
        r,
        json!({"step": "a", "status": "done", "ready": ["b"], "remaining": 2})
    );
    assert_eq!(w.apply(&complete("a", "A")).unwrap()["status"], "unchanged");
    refused(&mut w, complete("a", "other"), "step_done");
    let r = w.apply(&complete("b", "B")).unwrap();
    assert_eq!(r["ready"], json!(["c"]));
    w.apply(&complete("c", "C")).unwrap();
    assert!(w.plan().unwrap().is_complete());
}

#[test]
fn only_admins_set_roles_and_one_admin_stays() {
    let mut w = Workflow::new();
    w.apply(&join("ann", Role::Admin)).unwrap();
    w.apply(&join("bob", Role::Assignee)).unwrap();
    refused(&mut w, join("bob", Role::Watcher), "duplicate_participant");
    let set = |actor: &str, who: &str, role| C::SetRole {
        actor: actor.into(),
        participant_id: who.into(),
        role,
    };
    refused(&mut w, set("bob", "bob", Role::Admin), "not_admin");
    refused(&mut w, set("eve", "bob", Role::Admin), "not_admin");
    refused(
        &mut w,
        set("ann", "zed", Role::Admin),
        "unknown_participant",
    );
    refused(&mut w, set("ann", "ann", Role::Watcher), "last_admin");
    let r = w.apply(&set("ann", "bob", Role::Admin)).unwrap();
    assert_eq!(
        r,
        json!({"participant_id": "bob", "role": "admin", "previous_role": "assignee"})
    );
    w.apply(&set("bob", "ann", Role::Reporter)).unwrap();
    assert_eq!(w.participants()["ann"], Role::Reporter);
}

#[test]
fn questions_wait_for_the_participant_asked() {
    let mut w = Workflow::new();
    let ask = |who: &str| C::AwaitReply {
        participant_id: who.into(),
        question: "which?".into(),
        options: vec!["x".into(), "y".into()],
    };
    refused(&mut w, ask("bob"), "unknown_participant");
    w.apply(&join("bob", Role::Reporter)).unwrap();
    let r = w.apply(&ask("bob")).unwrap();
    assert_eq!(
        r,
        json!({"question_id": "question-1", "participant_id": "bob", "status": "waiting"})
    );
    assert!(w.waiting().is_some());
    refused(&mut w, ask("bob"), "already_waiting");
    let reply = |who: &str, text: &str| C::ReceiveReply {
        participant_id: who.into(),
        reply: text.into(),
    };
    refused(&mut w, reply("bob", "z"), "invalid_reply");
    w.apply(&join("cy", Role::Watcher)).unwrap();
    refused(&mut w, reply("cy", "x"), "invalid_reply");
    w.apply(&reply("bob", "y")).unwrap();
    assert!(w.waiting().is_none());
    refused(&mut w, reply("bob", "y"), "not_waiting");
    assert_eq!(w.apply(&ask("bob")).unwrap()["question_id"], "question-2");
}

#[test]
fn subtasks_and_participant_tasks() {
    let mut w = Workflow::new();
    let spawn = |step: Option<&str>| C::SpawnSubtask {
        name: "research".into(),
        goal: "find out".into(),
        acceptance_criteria: vec!["cited".into()],
        agent: Some("researcher".into()),
        step: step.map(str::to_owned),
    };
    refused(&mut w, spawn(Some("a")), "no_plan");
    assert_eq!(w.apply(&spawn(None)).unwrap()["subtask_id"], "subtask-1");
    w.apply(&plan(vec![step("a", &[])])).unwrap();
    refused(&mut w, spawn(Some("b")), "unknown_step");
    assert_eq!(
        w.apply(&spawn(Some("a"))).unwrap()["subtask_id"],
        "subtask-2"
    );
    let task = |who: &str| C::CreateParticipantTask {
        participant_id: who.into(),
        name: "review".into(),
        goal: "review it".into(),
        acceptance_criteria: vec![],
        step: Some("a".into()),
    };
    refused(&mut w, task("bob"), "unknown_participant");
    w.apply(&join("bob", Role::Assignee)).unwrap();
    let r = w.apply(&task("bob")).unwrap();
    assert_eq!(r["task_id"], "participant-task-1");
    assert_eq!(w.participant_tasks()[0].assignee.as_deref(), Some("bob"));
    refused(
        &mut w,
        C::SpawnSubtask {
            name: "x".into(),
            goal: "".into(),
            acceptance_criteria: vec![],
            agent: None,
            step: None,
        },
        "invalid",
    );
}

#[test]
fn skills_load_and_unload() {
    let mut w = Workflow::new();
    let load = |name: &str| C::SkillLoaded {
        name: name.into(),
        description: "d".into(),
        body: "body".into(),
    };
    w.apply(&load("pdf")).unwrap();
    assert_eq!(w.skills()["pdf"].body, "body");
    let unload = C::SkillUnloaded { name: "pdf".into() };
    assert_eq!(w.apply(&unload).unwrap()["status"], "unloaded");
    assert!(w.skills().is_empty());
    assert_eq!(w.apply(&unload).unwrap()["status"], "not_loaded");
    for i in 0..crate::limits::MAX_LOADED_SKILLS {
        w.apply(&load(&format!("s{i}"))).unwrap();
    }
    refused(&mut w, load("one-more"), "too_many_skills");
}

#[test]
fn ui_messages_follow_the_surface_lifecycle() {
    let mut w = Workflow::new();
    let create = json!({"version": "v0.9", "createSurface": {"surfaceId": "s", "catalogId": "c"}});
    let update = json!({"version": "v0.9", "updateComponents": {"surfaceId": "s",
        "components": [{"id": "root", "component": "Text", "text": "hi"}]}});
    let data =
        json!({"version": "v0.9", "updateDataModel": {"surfaceId": "s", "path": "/a", "value": 1}});
    let delete = json!({"version": "v0.9", "deleteSurface": {"surfaceId": "s"}});
    let emit = |messages: Vec<serde_json::Value>| C::UiEmitted { messages };
    refused(&mut w, emit(vec![update.clone()]), "invalid_ui");
    let r = w
        .apply(&emit(vec![create.clone(), update.clone(), data.clone()]))
        .unwrap();
    assert_eq!(
        r,
        json!({"messages": 3, "surfaces": ["s"], "status": "emitted"})
    );
    assert_eq!(w.surfaces()["s"].messages, 3);
    refused(&mut w, emit(vec![create.clone()]), "invalid_ui");
    w.apply(&emit(vec![delete.clone(), create.clone()]))
        .unwrap();
    w.apply(&emit(vec![delete])).unwrap();
    assert!(w.surfaces().is_empty());
    refused(&mut w, emit(vec![]), "invalid");
}

#[test]
fn malformed_a2ui_messages_are_refused_with_why() {
    let cases = [
        (json!("text"), "not a JSON object"),
        (
            json!({"createSurface": {"surfaceId": "s", "catalogId": "c"}}),
            "no \"version\"",
        ),
        (
            json!({"version": "v0.8", "createSurface": {"surfaceId": "s", "catalogId": "c"}}),
            "not \"v0.9\"",
        ),
        (json!({"version": "v0.9"}), "holds no"),
        (
            json!({"version": "v0.9", "beginRendering": {}}),
            "not allowed",
        ),
        (
            json!({"version": "v0.9", "createSurface": {"surfaceId": "s"}}),
            "catalogId is missing",
        ),
        (
            json!({"version": "v0.9", "createSurface": {"catalogId": "c"}}),
            "surfaceId is missing",
        ),
        (
            json!({"version": "v0.9", "createSurface": {"surfaceId": 1, "catalogId": "c"}}),
            "not a string",
        ),
        (
            json!({"version": "v0.9", "createSurface": {"surfaceId": "s", "catalogId": "c", "x": 1}}),
            "not allowed",
        ),
        (
            json!({"version": "v0.9", "deleteSurface": {"surfaceId": "s"},
                "createSurface": {"surfaceId": "s", "catalogId": "c"}}),
            "more than one",
        ),
        (
            json!({"version": "v0.9", "updateComponents": {"surfaceId": "s", "components": []}}),
            "empty",
        ),
        (
            json!({"version": "v0.9", "updateComponents": {"surfaceId": "s", "components": [{"id": "a"}]}}),
            "component is missing",
        ),
        (
            json!({"version": "v0.9", "updateComponents": {"surfaceId": "s",
                "components": [{"id": "a", "component": "T"}, {"id": "a", "component": "T"}]}}),
            "twice",
        ),
        (
            json!({"version": "v0.9", "updateDataModel": {"surfaceId": "s", "path": "a"}}),
            "JSON pointer",
        ),
    ];
    for (message, why) in cases {
        let reason = crate::a2ui::check(&message).unwrap_err();
        assert!(reason.contains(why), "{message}: {reason}");
    }
}

#[test]
fn loaded_skills_of_earlier_state_files_still_load() {
    // As a state file was written before resources were named by path.
    let before = r##"{"skills":{"pdf-forms":{"description":"Fill PDF forms.","body":"# Filling PDF forms\nRun scripts/fill.py FORM.pdf\n"}}}"##;
    let w = Workflow::from_json(before).unwrap();
    assert!(w.skills()["pdf-forms"].body.contains("scripts/fill.py"));
    // A skill over the old 64 KiB bound, now within it, loads and keeps.
    let mut w = Workflow::new();
    let big = "x".repeat(100 * 1024);
    w.apply(&C::SkillLoaded {
        name: "big".into(),
        description: "d".into(),
        body: big.clone(),
    })
    .unwrap();
    let text = serde_json::to_string(&w).unwrap();
    assert_eq!(
        Workflow::from_json(&text).unwrap().skills()["big"].body,
        big
    );
}

#[test]
fn state_files_are_checked_when_they_load() {
    let mut w = Workflow::new();
    w.apply(&plan(vec![step("a", &[]), step("b", &["a"])]))
        .unwrap();
    w.apply(&complete("a", "A")).unwrap();
    w.apply(&join("ann", Role::Admin)).unwrap();
    let text = serde_json::to_string(&w).unwrap();
    assert_eq!(Workflow::from_json(&text).unwrap(), w);
    let cyclic = text.replace(r#""depends_on":[]"#, r#""depends_on":["b"]"#);
    assert_eq!(Workflow::from_json(&cyclic).unwrap_err().code(), "invalid");
    let early = r#"{"plan":[{"name":"a","description":"","depends_on":[]},
        {"name":"b","description":"","depends_on":["a"],"output":"B"}]}"#;
    assert!(
        Workflow::from_json(early)
            .unwrap_err()
            .to_string()
            .contains("done but")
    );
    let stranger = r#"{"participant_tasks":[{"id":"t","name":"n","goal":"g","assignee":"zed"}]}"#;
    assert!(Workflow::from_json(stranger).is_err());
    assert!(Workflow::from_json(r#"{"extra": 1}"#).is_err());
}
