//! The skill intrinsics over a real skills root: the load report, loading
//! and unloading, resources, and paths that try to leave the root.

use std::os::unix::fs::symlink;
use std::path::Path;

use serde_json::json;
use tiny_harness_host::{ContentPart, Workflow};

use super::{call, code, data, fixture_skills, host};

/// A copy of the fixture skills, so links can be added to it.
fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[tokio::test]
async fn skills_list_load_and_unload() {
    let host = host(Some(&fixture_skills())).await;
    let mut w = Workflow::new();
    let listed = call(&host, &mut w, None, "list_skills", json!({})).await;
    assert!(listed.command.is_none(), "list_skills is read-only");
    let report = data(&listed);
    let names: Vec<&str> = report["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["pdf-forms", "release-notes"]);
    assert_eq!(
        report["skills"][1]["description"],
        "Write release notes from a list of merged changes, grouped by kind."
    );
    let skipped: Vec<(&str, &str)> = report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["dir"].as_str().unwrap(), s["reason"].as_str().unwrap()))
        .collect();
    assert_eq!(skipped.len(), 2, "{skipped:?}");
    assert!(
        skipped[0].0 == "broken" && skipped[0].1.contains("front matter"),
        "{skipped:?}"
    );
    assert!(
        skipped[1].0 == "misnamed" && skipped[1].1.contains("directory"),
        "{skipped:?}"
    );

    let loaded = call(
        &host,
        &mut w,
        None,
        "load_skill",
        json!({"name": "pdf-forms"}),
    )
    .await;
    assert_eq!(data(&loaded)["status"], "loaded");
    let Ok(result) = &loaded.outcome.result else {
        panic!()
    };
    let Some(ContentPart::Text { text }) = result.content.get(1) else {
        panic!("no body part")
    };
    assert!(text.starts_with("# Filling PDF forms"), "{text}");
    assert!(loaded.outcome.render().contains("scripts/fill.py FORM.pdf"));
    assert!(w.skills()["pdf-forms"].body.contains("Filling PDF forms"));
    let listed = call(&host, &mut w, None, "list_skills", json!({})).await;
    assert_eq!(data(&listed)["skills"][0]["loaded"], true);
    assert_eq!(
        code(&call(&host, &mut w, None, "load_skill", json!({"name": "broken"})).await),
        "skill_unusable"
    );
    assert_eq!(
        code(&call(&host, &mut w, None, "load_skill", json!({"name": "nope"})).await),
        "unknown_skill"
    );

    let unloaded = call(
        &host,
        &mut w,
        None,
        "unload_skill",
        json!({"name": "pdf-forms"}),
    )
    .await;
    assert_eq!(data(&unloaded)["status"], "unloaded");
    assert!(w.skills().is_empty());
}

#[tokio::test]
async fn resources_are_listed_and_read() {
    let host = host(Some(&fixture_skills())).await;
    let mut w = Workflow::new();
    let listed = call(
        &host,
        &mut w,
        None,
        "list_skill_resources",
        json!({"name": "pdf-forms"}),
    )
    .await;
    let resources: Vec<String> = data(&listed)["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{}:{}",
                r["kind"].as_str().unwrap(),
                r["resource"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        resources,
        [
            "assets:assets/logo.txt",
            "references:references/forms/w9.txt",
            "references:references/guide.md",
            "scripts:scripts/fill.py",
        ]
    );
    let read = call(
        &host,
        &mut w,
        None,
        "load_skill_resource",
        json!({"name": "pdf-forms", "resource": "references/forms/w9.txt"}),
    )
    .await;
    assert!(read.command.is_none());
    assert_eq!(data(&read)["bytes"], 39);
    assert_eq!(data(&read)["text"], true);
    assert!(read.outcome.render().contains("taxpayer_name"));
    // A call recorded before paths were whole still reads the same file.
    let before = call(
        &host,
        &mut w,
        None,
        "load_skill_resource",
        json!({"name": "pdf-forms", "kind": "references", "resource": "forms/w9.txt"}),
    )
    .await;
    assert_eq!(data(&before)["resource"], "references/forms/w9.txt");
    assert!(before.outcome.render().contains("taxpayer_name"));
    let missing = call(
        &host,
        &mut w,
        None,
        "load_skill_resource",
        json!({"name": "pdf-forms", "kind": "scripts", "resource": "nope.py"}),
    )
    .await;
    assert_eq!(code(&missing), "resource_not_found");
}

#[tokio::test]
async fn resource_paths_cannot_leave_the_root() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("skills");
    copy(&fixture_skills(), &root);
    let secret = dir.path().join("secret.txt");
    std::fs::write(&secret, "top secret\n").unwrap();
    let scripts = root.join("pdf-forms/scripts");
    symlink(&secret, scripts.join("out.txt")).unwrap();
    symlink("../../../secret.txt", scripts.join("relative-out.txt")).unwrap();
    symlink("fill.py", scripts.join("inside.py")).unwrap();
    // A hard link is the file itself: whoever can make one in the root
    // chose its contents (documented in docs/intrinsics.md).
    std::fs::hard_link(&secret, scripts.join("hard.txt")).unwrap();
    let host = host(Some(&root)).await;
    let mut w = Workflow::new();
    for resource in [
        "../../../secret.txt",
        "../SKILL.md",
        "out.txt",
        "relative-out.txt",
        secret.to_str().unwrap(),
        "/etc/passwd",
    ] {
        let done = call(
            &host,
            &mut w,
            None,
            "load_skill_resource",
            json!({"name": "pdf-forms", "kind": "scripts", "resource": resource}),
        )
        .await;
        let got = code(&done);
        assert!(
            got == "resource_denied" || got == "resource_not_found",
            "{resource}: {got}"
        );
        assert!(
            !done.outcome.render().contains("top secret"),
            "{resource} escaped"
        );
    }
    let inside = call(
        &host,
        &mut w,
        None,
        "load_skill_resource",
        json!({"name": "pdf-forms", "kind": "scripts", "resource": "inside.py"}),
    )
    .await;
    assert!(inside.outcome.render().contains("Fill a PDF form"));
    let hard = call(
        &host,
        &mut w,
        None,
        "load_skill_resource",
        json!({"name": "pdf-forms", "kind": "scripts", "resource": "hard.txt"}),
    )
    .await;
    assert!(hard.outcome.render().contains("top secret"));
    // The listing shows only what stays inside.
    let listed = call(
        &host,
        &mut w,
        None,
        "list_skill_resources",
        json!({"name": "pdf-forms"}),
    )
    .await;
    let names = data(&listed)["resources"].to_string();
    assert!(
        !names.contains("out.txt") && names.contains("inside.py"),
        "{names}"
    );
    // A skill directory that is a symlink out of the root is not a skill.
    symlink(dir.path(), root.join("escape")).unwrap();
    let listed = call(&host, &mut w, None, "list_skills", json!({})).await;
    assert!(!data(&listed)["skills"].to_string().contains("escape"));
    assert_eq!(
        code(&call(&host, &mut w, None, "load_skill", json!({"name": "escape"})).await),
        "unknown_skill"
    );
}
