//! One plugin in three languages: `textstats` written in Rust on the guest
//! SDK, in Python (componentize-py) and in JavaScript (componentize-js)
//! loads in the host unchanged, registers exactly the definitions of
//! `plugins/examples/textstats.json`, and passes every case of
//! `plugins/examples/textstats.cases.toml` (run as `tiny-harness test`
//! runs it) alike. The Python and JavaScript
//! components are built by `plugins/examples/build.sh` (which `.ci/run`
//! runs; run here when they are missing, with their toolchains installed
//! pinned).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use tiny_harness_host::{HostBuilder, HostError, LoadError, PluginSpec, ToolDefinition};

use tiny_harness_testing::Cases;

use crate::common::{host, plugin_wasm};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/examples")
}

/// Where `build.sh` leaves the interpreted components.
fn built() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/examples")
}

/// The three components, by language; the interpreted ones built (or
/// rebuilt, when their sources are newer) by `build.sh`.
fn components() -> Vec<(&'static str, PathBuf)> {
    let out = built();
    run_build(&examples().join("build.sh"));
    vec![
        ("rust", plugin_wasm("textstats_rust")),
        ("python", out.join("textstats-python.wasm")),
        ("js", out.join("textstats-js.wasm")),
    ]
}

/// Runs a build script into [`built`], one at a time across threads and
/// processes (it installs its toolchains on first use and rewrites the
/// components when they are stale).
fn run_build(script: &Path) {
    tiny_harness_prereq::with_lock(&built(), "examples", || {
        let status = Command::new("bash")
            .arg(script)
            .arg(built())
            .status()
            .unwrap_or_else(|e| panic!("running {}: {e}", script.display()));
        assert!(status.success(), "{} failed: {status}", script.display());
    });
}

fn read_json(name: &str) -> Value {
    let text = std::fs::read_to_string(examples().join(name)).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// A definition as the table writes it.
fn as_table(definition: &ToolDefinition) -> Value {
    serde_json::json!({
        "description": definition.description,
        "input_schema": definition.input_schema,
        "output_schema": definition.output_schema,
        "annotations": {
            "read_only": definition.annotations.read_only,
            "idempotent": definition.annotations.idempotent,
            "destructive": definition.annotations.destructive,
            "open_world": definition.annotations.open_world,
        },
    })
}

#[tokio::test]
async fn three_languages_register_the_same_tools_and_pass_one_table() {
    let definitions = read_json("textstats.json");
    let cases = Cases::load(&examples().join("textstats.cases.toml"))
        .unwrap()
        .len();
    assert!(cases >= 15);
    for (language, wasm) in components() {
        let host = host(vec![PluginSpec::new(language, &wasm)]).await;
        let registry = host.registry();
        for tool in definitions["servers"][0]["tools"].as_array().unwrap() {
            let name = format!("{language}/textstats.{}", tool["name"].as_str().unwrap());
            let registered = registry
                .tools()
                .find(|t| t.name.to_string() == name)
                .unwrap_or_else(|| panic!("{language}: {name} is not registered"));
            let mut want = tool.clone();
            want.as_object_mut().unwrap().remove("name");
            assert_eq!(as_table(&registered.definition), want, "{language}: {name}");
        }
        assert_eq!(registry.tools().count(), 2, "{language}");
        let report = Cases::load(&examples().join("textstats.cases.toml"))
            .unwrap()
            .with_plugin(&wasm)
            .with_name(language)
            .run()
            .await
            .unwrap_or_else(|e| panic!("{language}: {e}"));
        assert!(report.passed(), "{language}:\n{report}");
        // The registered tools, then every case.
        assert_eq!(report.cases.len(), cases + 1, "{language}");
    }
}

/// A Python or JavaScript component that traps in `register` (an uncaught
/// exception; an `Error` thrown where the world wants a string) is refused
/// like a Rust one: a register error on one line naming the plugin, which
/// quotes the end of its stderr (where the traceback is) however much came
/// before it, bounded, and nothing of it registered.
#[tokio::test]
async fn an_interpreted_plugin_that_traps_in_register_is_refused_on_one_bounded_line() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    run_build(&root.join("fixtures/faulty/build.sh"));
    let cases = [
        ("python", "RuntimeError: faulty: register failed on purpose"),
        ("js", "expected a string, received [object]"),
    ];
    for (language, says) in cases {
        let wasm = built().join(format!("faulty-{language}.wasm"));
        let host = HostBuilder::new().build().await.unwrap();
        let err = host
            .load_plugin(PluginSpec::new("faulty", &wasm))
            .await
            .unwrap_err();
        let message = err.to_string();
        assert!(
            matches!(err, HostError::Load(LoadError::Register { .. })),
            "{language}: {err:?}"
        );
        assert!(!message.contains('\n'), "{language}: {message}");
        assert!(message.contains("plugin faulty"), "{language}: {message}");
        assert!(message.contains("trap"), "{language}: {message}");
        assert!(message.contains(says), "{language}: {message}");
        // 20 KiB of noise came first: only the end is quoted.
        assert!(message.len() < 2600, "{language}: {} bytes", message.len());
        assert_eq!(host.registry().len(), 0, "{language}");
    }
}
