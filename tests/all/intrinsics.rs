//! The intrinsics through the host: registered only when asked for,
//! under bare names that every provider sees as they are, called through
//! the validating invoker with the workflow and actor the host binds.

mod calls;
mod published;
mod skills;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tiny_harness_host::{
    ContentPart, Host, HostBuilder, IntrinsicOutcome, Provider, ToolCall, Workflow,
};

/// The twelve, in order.
const NAMES: [&str; 12] = [
    "create_plan",
    "complete_step",
    "spawn_subtask",
    "ask_participant",
    "create_task_for_participant",
    "set_participant_role",
    "list_skills",
    "load_skill",
    "unload_skill",
    "list_skill_resources",
    "load_skill_resource",
    "emit_ui",
];

fn fixture_skills() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/skills")
}

/// A host with the intrinsics and skills from `root`, and no plugin.
async fn host(root: Option<&Path>) -> Host {
    let mut builder = HostBuilder::new().intrinsics(true);
    if let Some(root) = root {
        builder = builder.skills_root(root);
    }
    let host = builder.build().await.unwrap();
    assert_eq!(host.registry().len(), 12);
    host
}

async fn call(
    host: &Host,
    workflow: &mut Workflow,
    actor: Option<&str>,
    name: &str,
    args: Value,
) -> IntrinsicOutcome {
    let call = ToolCall {
        id: "c1".into(),
        name: name.into(),
        arguments: args,
    };
    host.call_intrinsic(&call, workflow, actor).await
}

/// The result's JSON part (the first part).
fn data(outcome: &IntrinsicOutcome) -> Value {
    match &outcome.outcome.result {
        Ok(result) => match result.content.first() {
            Some(ContentPart::Json { data, .. }) => data.clone(),
            other => panic!("no JSON part: {other:?}"),
        },
        Err(e) => panic!("call error: {e}"),
    }
}

/// The error code of a refused intrinsic (an error result) or of a
/// refused call (a call error).
fn code(outcome: &IntrinsicOutcome) -> String {
    assert!(
        outcome.outcome.is_error(),
        "not refused: {:?}",
        outcome.outcome
    );
    assert!(outcome.command.is_none());
    match &outcome.outcome.result {
        Ok(_) => data(outcome)["error"].as_str().unwrap().to_owned(),
        Err(e) => e.code().to_owned(),
    }
}

#[tokio::test]
async fn a_new_host_has_no_intrinsics_until_asked() {
    let bare = HostBuilder::new().build().await.unwrap();
    assert!(bare.registry().is_empty());
    let host = host(None).await;
    let registry = host.registry();
    let mut names: Vec<&str> = registry.tools().map(|t| t.name.as_str()).collect();
    names.sort();
    let mut want = NAMES.to_vec();
    want.sort();
    assert_eq!(names, want);
    assert!(
        registry
            .tools()
            .all(|t| t.name.is_bare() && t.source.kind() == "intrinsic")
    );
}

#[tokio::test]
async fn intrinsics_encode_as_their_bare_names_for_every_provider() {
    let host = host(None).await;
    for provider in Provider::ALL {
        let request = host.offer(provider);
        for name in NAMES {
            assert_eq!(request.codec.encode(name), Some(name), "{provider:?}");
            assert_eq!(request.codec.decode(name), Ok(name), "{provider:?}");
        }
    }
}

#[tokio::test]
async fn without_a_bound_workflow_nothing_runs() {
    let host = host(None).await;
    let outcome = host
        .invoke(&ToolCall {
            id: "c".into(),
            name: "create_plan".into(),
            arguments: json!({"steps": [{"name": "a", "description": "d"}]}),
        })
        .await;
    assert!(outcome.is_error());
    assert!(
        outcome.render().contains("no_workflow"),
        "{}",
        outcome.render()
    );
}
