//! Each workflow intrinsic called through the host: the command it gives,
//! the result the model reads, its refusals, and replay.

use serde_json::json;
use tiny_harness_host::{Workflow, WorkflowCommand};
use tiny_harness_intrinsic::Role;

use super::{call, code, data, host};

fn team() -> Workflow {
    let mut workflow = Workflow::new();
    for (id, role) in [("ann", Role::Admin), ("bob", Role::Assignee)] {
        workflow
            .apply(&WorkflowCommand::AddParticipant {
                participant_id: id.into(),
                role,
            })
            .unwrap();
    }
    workflow
}

#[tokio::test]
async fn the_workflow_intrinsics_give_commands_and_results() {
    let host = host(None).await;
    let mut w = team();
    let mut recorded = vec![
        WorkflowCommand::AddParticipant {
            participant_id: "ann".into(),
            role: Role::Admin,
        },
        WorkflowCommand::AddParticipant {
            participant_id: "bob".into(),
            role: Role::Assignee,
        },
    ];
    let steps = json!({"steps": [
        {"name": "draft", "description": "write it", "depends_on": []},
        {"name": "review", "description": "check it", "depends_on": ["draft"]}]});
    let cases = [
        (
            "create_plan",
            steps,
            json!({"status": "attached", "steps": 2, "ready": ["draft"]}),
            "attach_plan",
        ),
        (
            "complete_step",
            json!({"step": "draft", "output": "v1"}),
            json!({"step": "draft", "status": "done", "ready": ["review"], "remaining": 1}),
            "complete_step",
        ),
        (
            "spawn_subtask",
            json!({"name": "lint", "goal": "lint it", "acceptance_criteria": ["clean"],
                                  "agent": "linter", "step": "review"}),
            json!({"subtask_id": "subtask-1", "name": "lint", "status": "spawned"}),
            "spawn_subtask",
        ),
        (
            "ask_participant",
            json!({"participant_id": "bob", "question": "ship?", "options": ["yes", "no"]}),
            json!({"question_id": "question-1", "participant_id": "bob", "status": "waiting"}),
            "await_reply",
        ),
        (
            "create_task_for_participant",
            json!({"participant_id": "bob", "name": "sign", "goal": "sign off",
                                                "acceptance_criteria": []}),
            json!({"task_id": "participant-task-1", "participant_id": "bob", "name": "sign", "status": "created"}),
            "create_participant_task",
        ),
        (
            "emit_ui",
            json!({"messages": [
            {"version": "v0.9", "createSurface": {"surfaceId": "s1", "catalogId": "std"}},
            {"version": "v0.9", "updateComponents": {"surfaceId": "s1",
             "components": [{"id": "root", "component": "Text", "text": "Reviewing"}]}}]}),
            json!({"messages": 2, "surfaces": ["s1"], "status": "emitted"}),
            "ui_emitted",
        ),
    ];
    for (name, args, want, command) in cases {
        let done = call(&host, &mut w, None, name, args).await;
        assert!(
            !done.outcome.is_error(),
            "{name}: {}",
            done.outcome.render()
        );
        assert_eq!(data(&done), want, "{name}");
        let applied = done.command.expect("a command");
        assert_eq!(applied.name(), command);
        // The rendered block is what the model reads next turn.
        assert!(done.outcome.render().contains(&want.to_string()), "{name}");
        recorded.push(applied);
    }
    assert!(w.waiting().is_some());
    assert_eq!(w.plan().unwrap().done(), 1);
    assert_eq!(w.surfaces()["s1"].messages, 2);

    // The actor is bound by the host: bob may not, ann may.
    let set = json!({"participant_id": "bob", "role": "admin"});
    assert_eq!(
        code(
            &call(
                &host,
                &mut w,
                Some("bob"),
                "set_participant_role",
                set.clone()
            )
            .await
        ),
        "not_admin"
    );
    assert_eq!(
        code(&call(&host, &mut w, None, "set_participant_role", set.clone()).await),
        "no_actor"
    );
    let forged = json!({"participant_id": "bob", "role": "admin", "actor": "ann"});
    assert_eq!(
        code(&call(&host, &mut w, Some("bob"), "set_participant_role", forged).await),
        "invalid_arguments"
    );
    let done = call(&host, &mut w, Some("ann"), "set_participant_role", set).await;
    assert_eq!(
        data(&done),
        json!({"participant_id": "bob", "role": "admin", "previous_role": "assignee"})
    );
    recorded.push(done.command.unwrap());

    // Replaying what was recorded gives the same state.
    assert_eq!(Workflow::replay(&recorded).unwrap(), w);
}

#[tokio::test]
async fn refusals_are_typed_and_leave_the_workflow_as_it_was() {
    let host = host(None).await;
    let mut w = team();
    let before = w.clone();
    let cases = [
        (
            "complete_step",
            json!({"step": "a", "output": ""}),
            "no_plan",
        ),
        ("create_plan", json!({"steps": []}), "invalid_arguments"),
        (
            "create_plan",
            json!({"steps": [{"name": "a", "description": "", "extra": 1}]}),
            "invalid_arguments",
        ),
        (
            "create_plan",
            json!({"steps": [{"name": "a", "description": "", "depends_on": ["a"]}]}),
            "plan_cycle",
        ),
        (
            "create_plan",
            json!({"steps": [{"name": "a", "description": "", "depends_on": ["b"]}]}),
            "unknown_dependency",
        ),
        (
            "create_plan",
            json!({"steps": [{"name": "a", "description": ""}, {"name": "a", "description": ""}]}),
            "duplicate_step",
        ),
        (
            "ask_participant",
            json!({"participant_id": "zed", "question": "?"}),
            "unknown_participant",
        ),
        (
            "create_task_for_participant",
            json!({"participant_id": "zed", "name": "n", "goal": "g"}),
            "unknown_participant",
        ),
        (
            "spawn_subtask",
            json!({"name": "n", "goal": "g", "step": "nope"}),
            "no_plan",
        ),
        ("emit_ui", json!({"messages": []}), "invalid_arguments"),
        (
            "emit_ui",
            json!({"messages": [{"version": "v0.9", "deleteSurface": {"surfaceId": "s"}}]}),
            "invalid_ui",
        ),
        (
            "emit_ui",
            json!({"messages": [{"version": "v0.8", "deleteSurface": {"surfaceId": "s"}}]}),
            "invalid_arguments",
        ),
        (
            "emit_ui",
            json!({"messages": [{"version": "v0.9", "createSurface": {"surfaceId": "s"}}]}),
            "invalid_arguments",
        ),
        (
            "load_skill",
            json!({"name": "pdf-forms"}),
            "skills_unavailable",
        ),
        ("list_skills", json!({"verbose": true}), "invalid_arguments"),
        ("no_such_intrinsic", json!({}), "unknown_tool"),
    ];
    for (name, args, want) in cases {
        let done = call(&host, &mut w, Some("ann"), name, args).await;
        assert_eq!(code(&done), want, "{name}: {}", done.outcome.render());
        assert_eq!(w, before, "{name} changed the workflow");
        assert!(!done.outcome.render().is_empty());
    }
    // Three steps done out of order: the dependency rule.
    call(
        &host,
        &mut w,
        None,
        "create_plan",
        json!({"steps": [
        {"name": "a", "description": ""}, {"name": "b", "description": "", "depends_on": ["a"]}]}),
    )
    .await;
    let done = call(
        &host,
        &mut w,
        None,
        "complete_step",
        json!({"step": "b", "output": "x"}),
    )
    .await;
    assert_eq!(code(&done), "dependencies_unfinished");
    let done = call(
        &host,
        &mut w,
        None,
        "complete_step",
        json!({"step": "c", "output": "x"}),
    )
    .await;
    assert_eq!(code(&done), "unknown_step");
}

/// One model response calling intrinsics and a plugin tool together:
/// `run_calls_in` applies the intrinsics to the workflow in the
/// response's order and runs the rest as usual; `run_calls` without a
/// workflow runs no intrinsic.
#[tokio::test]
async fn a_turn_applies_its_intrinsics_in_order_beside_plugin_calls() {
    let host = tiny_harness_host::HostBuilder::new()
        .intrinsics(true)
        .plugin(crate::common::spec("hello", "hello"))
        .build()
        .await
        .unwrap();
    host.begin_iteration();
    let request = host.offer(tiny_harness_host::Provider::Anthropic);
    let greet = request
        .codec
        .encode("hello/hello.greet")
        .unwrap()
        .to_owned();
    let use_of = |id: &str, name: &str, input: serde_json::Value| json!({"type": "tool_use", "id": id, "name": name, "input": input});
    let response = json!({
        "type": "message",
        "role": "assistant",
        "content": [
            use_of("t1", "create_plan", json!({"steps": [
                {"name": "draft", "description": "write it", "depends_on": []},
                {"name": "review", "description": "check it", "depends_on": ["draft"]}]})),
            use_of("t2", &greet, json!({"name": "ann"})),
            // Valid only after t1 has been applied.
            use_of("t3", "complete_step", json!({"step": "draft", "output": "v1"})),
            // Refused (no such step): nothing of it applies.
            use_of("t4", "complete_step", json!({"step": "missing", "output": "x"})),
        ],
        "stop_reason": "tool_use",
    });

    let mut workflow = team();
    let turn = host
        .run_calls_in(&request, &response, &mut workflow, Some("ann"))
        .await
        .unwrap();
    let errors: Vec<bool> = turn.outcomes.iter().map(|o| o.is_error()).collect();
    assert_eq!(errors, [false, false, false, true]);
    assert!(turn.outcomes[1].render().contains("ann"));
    let names: Vec<&str> = turn.commands.iter().map(|c| c.name()).collect();
    assert_eq!(names, ["attach_plan", "complete_step"]);
    // The workflow is what applying those commands to it gives.
    let mut replayed = team();
    for command in &turn.commands {
        replayed.apply(command).unwrap();
    }
    assert_eq!(workflow, replayed);
    assert_ne!(workflow, team());
    // One result message, in the response's order.
    let ids: Vec<String> = turn.results[0]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|block| block["tool_use_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids, ["t1", "t2", "t3", "t4"]);

    // Without a workflow the intrinsics run nothing; the plugin call runs.
    let turn = host.run_calls(&request, &response).await.unwrap();
    let codes: Vec<Option<&str>> = turn
        .outcomes
        .iter()
        .map(|o| o.result.as_ref().err().map(|e| e.code()))
        .collect();
    assert_eq!(codes[1], None);
    assert!(turn.commands.is_empty());
    for index in [0, 2, 3] {
        assert!(turn.outcomes[index].is_error(), "{index}");
        assert!(
            turn.outcomes[index].render().contains("no_workflow"),
            "{}",
            turn.outcomes[index].render()
        );
    }
}
