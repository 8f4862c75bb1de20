//! `tools --intrinsics`, `call NAME ARGS --workflow STATE.json [--actor ID]`
//! and `workflow apply COMMANDS.jsonl`, as a user runs them.

use super::*;

/// A directory with a config that loads no plugin and sets the skills
/// root to the fixture skills.
fn task_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let skills = workspace_root().join("tests/fixtures/skills");
    std::fs::write(
        dir.path().join("tiny-harness.toml"),
        format!("[skills]\nroot = {:?}\n", skills.display().to_string()),
    )
    .unwrap();
    dir
}

#[test]
fn tools_lists_the_intrinsics_only_when_asked() {
    let dir = task_dir();
    let output = run_in(dir.path(), &["tools"], None);
    assert!(stdout(&output).contains("no tools"), "{}", stdout(&output));
    let output = run_in(dir.path(), &["tools", "--intrinsics", "--json"], None);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let tools: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 12);
    assert!(names.contains(&"create_plan") && names.contains(&"emit_ui"));
    let table = stdout(&run_in(dir.path(), &["tools", "--intrinsics"], None));
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("create_plan ") && l.contains("intrinsic")),
        "{table}"
    );
}

#[test]
fn call_runs_an_intrinsic_against_the_state_file() {
    let dir = task_dir();
    let state = dir.path().join("task.json");
    let plan = r#"{"steps": [{"name": "a", "description": "first"}, {"name": "b", "description": "then", "depends_on": ["a"]}]}"#;
    let output = run_in(
        dir.path(),
        &["call", "create_plan", plan, "--workflow", "task.json"],
        None,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output).contains(r#""status":"attached""#),
        "{}",
        stdout(&output)
    );
    let saved = std::fs::read_to_string(&state).unwrap();
    assert!(saved.contains(r#""name": "b""#), "{saved}");

    // A refused call: exit 1, the error in the block, the file untouched.
    let output = run_in(
        dir.path(),
        &[
            "call",
            "complete_step",
            r#"{"step": "b", "output": "x"}"#,
            "--workflow",
            "task.json",
        ],
        None,
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stdout(&output).contains("dependencies_unfinished"),
        "{}",
        stdout(&output)
    );
    assert_eq!(std::fs::read_to_string(&state).unwrap(), saved);
    let output = run_in(
        dir.path(),
        &[
            "call",
            "create_plan",
            r#"{"steps": [], "x": 1}"#,
            "--workflow",
            "task.json",
        ],
        None,
    );
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(std::fs::read_to_string(&state).unwrap(), saved);

    // --json shows the command; the skill's body is in the result.
    let output = run_in(
        dir.path(),
        &[
            "call",
            "load_skill",
            r#"{"name": "pdf-forms"}"#,
            "--workflow",
            "task.json",
            "--json",
        ],
        None,
    );
    let view: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(view["command"]["command"], "skill_loaded");
    assert!(
        view["rendered"]
            .as_str()
            .unwrap()
            .contains("Filling PDF forms")
    );
    assert!(
        std::fs::read_to_string(&state)
            .unwrap()
            .contains("pdf-forms")
    );
    // No leftover temporary files beside the state.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
}

#[test]
fn the_actor_is_bound_on_the_command_line() {
    let dir = task_dir();
    let commands = dir.path().join("setup.jsonl");
    std::fs::write(
        &commands,
        concat!(
            r#"{"command": "add_participant", "participant_id": "ann", "role": "admin"}"#,
            "\n",
            r#"{"command": "add_participant", "participant_id": "bob", "role": "watcher"}"#,
            "\n",
        ),
    )
    .unwrap();
    let output = run_in(dir.path(), &["workflow", "apply", "setup.jsonl"], None);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    std::fs::write(dir.path().join("task.json"), stdout(&output)).unwrap();
    let args = r#"{"participant_id": "bob", "role": "admin"}"#;
    let output = run_in(
        dir.path(),
        &[
            "call",
            "set_participant_role",
            args,
            "--workflow",
            "task.json",
            "--actor",
            "bob",
        ],
        None,
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout(&output).contains("not_admin"));
    let output = run_in(
        dir.path(),
        &[
            "call",
            "set_participant_role",
            args,
            "--workflow",
            "task.json",
            "--actor",
            "ann",
        ],
        None,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    let state = std::fs::read_to_string(dir.path().join("task.json")).unwrap();
    assert!(state.contains(r#""bob": "admin""#), "{state}");
}

#[test]
fn workflow_apply_replays_and_names_the_refused_line() {
    let dir = task_dir();
    std::fs::write(
        dir.path().join("run.jsonl"),
        concat!(
            r#"{"command": "attach_plan", "steps": [{"name": "a", "description": ""}]}"#,
            "\n",
            "\n",
            r#"{"command": "complete_step", "step": "a", "output": "done"}"#,
            "\n",
        ),
    )
    .unwrap();
    let output = run_in(dir.path(), &["workflow", "apply", "run.jsonl"], None);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let state: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(state["plan"][0]["output"], "done");
    std::fs::write(
        dir.path().join("bad.jsonl"),
        concat!(
            r#"{"command": "complete_step", "step": "a", "output": "done"}"#,
            "\n",
        ),
    )
    .unwrap();
    let output = run_in(dir.path(), &["workflow", "apply", "bad.jsonl"], None);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("line 1: complete_step refused: no_plan"),
        "{}",
        stderr(&output)
    );
    std::fs::write(
        dir.path().join("junk.jsonl"),
        "{\"command\": \"explode\"}\n",
    )
    .unwrap();
    let output = run_in(dir.path(), &["workflow", "apply", "junk.jsonl"], None);
    one_error_line(&output, &["line 1", "not a workflow command"]);
}

#[test]
fn replay_with_a_workflow_applies_each_turns_intrinsics_to_the_state_file() {
    let dir = task_dir();
    let use_of = |id: &str, name: &str, input: serde_json::Value| {
        serde_json::json!({"type": "message", "role": "assistant", "stop_reason": "tool_use",
            "content": [{"type": "tool_use", "id": id, "name": name, "input": input}]})
    };
    let turns = [
        use_of(
            "t1",
            "create_plan",
            serde_json::json!({"steps": [{"name": "a", "description": "first"},
                {"name": "b", "description": "then", "depends_on": ["a"]}]}),
        ),
        // Sees the plan the first turn attached.
        use_of(
            "t2",
            "complete_step",
            serde_json::json!({"step": "a", "output": "done"}),
        ),
    ];
    let lines: Vec<String> = turns.iter().map(|t| t.to_string()).collect();
    std::fs::write(dir.path().join("turns.jsonl"), lines.join("\n")).unwrap();
    let replay = |extra: &[&str]| {
        let mut args = vec!["replay", "turns.jsonl", "--provider", "anthropic", "--json"];
        args.extend_from_slice(extra);
        run_in(dir.path(), &args, None)
    };

    // Without a workflow the intrinsics are not offered.
    let output = replay(&[]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("unknown_tool"),
        "{}",
        stdout(&output)
    );
    assert!(!dir.path().join("task.json").exists());

    let output = replay(&["--workflow", "task.json", "--actor", "ann"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let commands: Vec<&str> = report
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|turn| turn["commands"].as_array().unwrap())
        .map(|c| c["command"].as_str().unwrap())
        .collect();
    assert_eq!(commands, ["attach_plan", "complete_step"]);
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("task.json")).unwrap())
            .unwrap();
    assert!(saved.to_string().contains("\"done\""), "{saved}");
}

#[test]
fn an_intrinsic_that_only_reads_runs_without_a_state_file() {
    let dir = task_dir();
    let output = run_in(
        dir.path(),
        &[
            "call",
            "load_skill_resource",
            r#"{"name": "pdf-forms", "resource": "./references/forms/w9.txt#top"}"#,
        ],
        None,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("taxpayer_name"),
        "{}",
        stdout(&output)
    );
    // One that changes a task says how to keep the change, and writes
    // nothing.
    let output = run_in(
        dir.path(),
        &["call", "load_skill", r#"{"name": "pdf-forms"}"#],
        None,
    );
    assert_eq!(output.status.code(), Some(2), "{}", stdout(&output));
    let said = stderr(&output);
    assert!(
        said.contains("load_skill changes a task's state: pass --workflow FILE")
            && said.lines().count() == 1,
        "{said}"
    );
    let json_files = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension() == Some("json".as_ref()))
        .count();
    assert_eq!(json_files, 0, "no state file");
}
