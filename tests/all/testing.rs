//! The plugin test harness (`tiny-harness-testing`) with the bundled
//! plugins: scripted programs and pages answer in place of the world, the
//! host's own checks still refuse what the grants do not allow, and the
//! test sees what the plugin asked for.

use serde_json::json;
use tiny_harness_host::{DirMode, Limits};
use tiny_harness_testing::{Page, PluginTest, Program};

use crate::common::plugin_wasm;

/// The shell plugin, granted `git` only, with a scripted `git status`.
fn shell() -> PluginTest {
    PluginTest::new(plugin_wasm("shell"))
        .name("shell")
        .temp_dir("/workspace", DirMode::ReadWrite)
        .grant_program("git")
        .program(
            Program::new("git")
                .args(["status", "--short"])
                .stdout(" M README.md\n"),
        )
        .program(
            Program::new("git")
                .args(["push"])
                .exit(128)
                .stderr("fatal: no remote\n"),
        )
}

#[tokio::test]
async fn a_scripted_program_answers_and_the_test_sees_what_was_asked() {
    let plugin = shell().start().await.unwrap();
    assert_eq!(plugin.tools(), ["exec.run"]);
    let outcome = plugin
        .call(
            "exec.run",
            json!({"program": "git", "args": ["status", "--short"], "cwd": "/workspace"}),
        )
        .await;
    assert!(!outcome.is_error(), "{}", outcome.rendered());
    assert_eq!(outcome.json()["stdout"], " M README.md\n");
    assert_eq!(outcome.json()["exit_code"], 0);
    let ran = plugin.ran();
    assert_eq!(ran.len(), 1);
    assert_eq!(ran[0].program, "git");
    assert_eq!(ran[0].args, ["status", "--short"]);
    assert_eq!(ran[0].cwd.as_deref(), Some("/workspace"));
    assert!(ran[0].granted);
    assert!(plugin.dir("/workspace").unwrap().is_dir());

    // A non-zero exit is the plugin's error result, rendered for the model.
    let outcome = plugin
        .call("exec.run", json!({"program": "git", "args": ["push"]}))
        .await;
    assert!(outcome.is_error());
    assert_eq!(outcome.json()["stderr"], "fatal: no remote\n");
    assert!(
        outcome.rendered().contains("status=\"tool_error\""),
        "{}",
        outcome.rendered()
    );
}

#[tokio::test]
async fn what_the_test_does_not_grant_or_script_is_refused_in_one_line() {
    let plugin = shell().start().await.unwrap();
    let outcome = plugin
        .call("exec.run", json!({"program": "rm", "args": ["-rf", "/"]}))
        .await;
    assert_eq!(outcome.error_code(), Some("denied"));
    let message = outcome.error_message().unwrap();
    assert!(message.contains("exec = [\"rm\"]"), "{message}");
    assert!(!plugin.ran()[0].granted);

    let outcome = plugin
        .call("exec.run", json!({"program": "git", "args": ["log"]}))
        .await;
    assert_eq!(outcome.error_code(), Some("failed"));
    let message = outcome.error_message().unwrap();
    assert!(
        message.contains("Program::new(\"git\").args([\"log\"])"),
        "{message}"
    );

    // The host's own check of the cwd comes first: nothing is asked.
    let outcome = plugin
        .call(
            "exec.run",
            json!({"program": "git", "args": ["push"], "cwd": "/etc"}),
        )
        .await;
    assert_eq!(outcome.error_code(), Some("denied"));
    assert!(
        outcome
            .error_message()
            .unwrap()
            .contains("outside every granted directory")
    );
    assert_eq!(plugin.ran().len(), 2);

    // Validation against the tool's schema is the production one too.
    let outcome = plugin.call("exec.run", json!({"program": ""})).await;
    assert_eq!(outcome.error_code(), Some("invalid_arguments"));
    assert_eq!(plugin.ran().len(), 2);
}

#[tokio::test]
async fn a_scripted_page_answers_within_the_grants_and_the_limits() {
    let mut limits = Limits::default();
    limits.http.response_bytes = 64;
    let plugin = PluginTest::new(plugin_wasm("net"))
        .name("net")
        .limits(limits)
        .grant_net("https://api.example.com")
        .page(
            Page::new("https://api.example.com/items?page=2")
                .method("GET")
                .json(&json!({"items": [1, 2, 3]})),
        )
        .page(Page::new("https://api.example.com/big").body("x".repeat(100)))
        .page(Page::new("https://api.example.com/down").fails("connection refused"))
        .start()
        .await
        .unwrap();
    let outcome = plugin
        .call(
            "http.get",
            json!({"url": "https://api.example.com/items?page=2"}),
        )
        .await;
    let data = outcome.json();
    assert_eq!(data["status"], 200, "{}", outcome.rendered());
    assert_eq!(data["body"], "{\"items\":[1,2,3]}");
    assert_eq!(data["headers"]["content-type"], "application/json");
    let fetched = plugin.fetched();
    assert_eq!(fetched.len(), 1);
    assert_eq!(fetched[0].method, "GET");
    assert_eq!(fetched[0].url, "https://api.example.com/items?page=2");

    // The host's response cap applies to a scripted body as to a real one.
    let data = plugin
        .call("http.get", json!({"url": "https://api.example.com/big"}))
        .await
        .json();
    assert_eq!(data["body"], "x".repeat(64));
    assert_eq!(data["truncated"], true);

    let outcome = plugin
        .call("http.get", json!({"url": "https://api.example.com/down"}))
        .await;
    assert_eq!(outcome.error_code(), Some("failed"));
    assert!(
        outcome
            .error_message()
            .unwrap()
            .contains("connection refused")
    );

    // A URL outside the grants is refused by the host's check, unasked.
    let outcome = plugin
        .call("http.get", json!({"url": "https://evil.example.com/"}))
        .await;
    assert_eq!(
        outcome.error_code(),
        Some("denied"),
        "{}",
        outcome.rendered()
    );
    assert_eq!(plugin.fetched().len(), 3);
}

#[tokio::test]
async fn a_plugin_crate_is_built_and_tested_by_its_directory() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    // A target directory of its own: built alone, the crate's dependencies
    // have other features than in the plugins' workspace build, and
    // rebuilding the components other tests load would race with them.
    let target = root.join("target/harness-test-wasm");
    let wasm = tiny_harness_testing::build(&root.join("plugins/hello"), Some(&target)).unwrap();
    assert_eq!(wasm, target.join("wasm32-wasip2/release/hello.wasm"));
    let plugin = PluginTest::new(wasm).name("hello").start().await.unwrap();
    let outcome = plugin.call("hello.greet", json!({"name": "Ada"})).await;
    assert_eq!(outcome.text(), "Hello, Ada!");

    let scratch = tempfile::tempdir().unwrap();
    let err = tiny_harness_testing::build(&root.join("plugins/not-a-plugin"), Some(scratch.path()))
        .unwrap_err();
    assert!(
        err.to_string().contains("crate-type = [\"cdylib\"]"),
        "{err}"
    );
}
