//! Every cost a hostile plugin can impose on the host is bounded: results
//! (parts, framing, aliased strings), registrations (counts, sizes, schema
//! bombs), host handles, arguments, blocked host calls, and what reaches a
//! terminal. Each test shows the bound or the typed refusal, and that the
//! next call still works.

use std::time::Duration;

use serde_json::json;
use tiny_harness_core::registry::RegistrationLimit;
use tiny_harness_host::{
    CallError, DirGrant, DirMode, Host, HostBuilder, HostError, LoadError, PluginSpec, RefusedTool,
    RegistryError,
};

use crate::common::{call, error_code, host, hostile, json_of, result_of, text_of};

/// The hostile plugin with room to build big answers.
fn roomy(mode: &str) -> PluginSpec {
    let mut spec = hostile(mode);
    spec.limits.memory_bytes = 512 << 20;
    spec
}

/// Asserts that `text` is one line with no raw control character.
pub fn assert_one_clean_line(text: &str) {
    assert!(
        !text.chars().any(|c| c.is_control() || c == '\u{202e}'),
        "raw control characters in {text:?}"
    );
}

/// Loads `spec` alone and returns its load error.
async fn load_error(spec: PluginSpec) -> HostError {
    let host = HostBuilder::new().build().await.unwrap();
    let err = host.load_plugin(spec).await.unwrap_err();
    assert!(host.registry().is_empty(), "a refused plugin left tools");
    assert_one_clean_line(&err.to_string());
    err
}

/// Loads `spec` alone: it loads, with exactly one of its tools left out
/// (not registered, told in one clean line). Returns the host and why.
async fn left_out(spec: PluginSpec) -> (Host, RefusedTool) {
    let host = HostBuilder::new().build().await.unwrap();
    host.load_plugin(spec)
        .await
        .unwrap_or_else(|e| panic!("the plugin is refused whole: {e}"));
    let refused = host.refused_tools();
    let [one] = refused.as_slice() else {
        panic!("one tool left out: {refused:?}")
    };
    assert!(host.registry().get(&one.name).is_none(), "{}", one.name);
    assert_one_clean_line(&one.error.to_string());
    let one = one.clone();
    (host, one)
}

/// The registration limit a load error names, with its message.
fn over_limit(err: &HostError) -> (RegistrationLimit, String) {
    let source = match err {
        HostError::Load(LoadError::OverLimit { source, .. }) => source,
        HostError::Registry { source, .. } => source,
        other => panic!("not a registration limit: {other}"),
    };
    match source {
        RegistryError::OverLimit { limit, .. } => (*limit, err.to_string()),
        other => panic!("not a registration limit: {other}"),
    }
}

async fn echo_works(host: &tiny_harness_host::Host) {
    let outcome = call(host, "hostile/chaos.echo", json!({"message": "still here"})).await;
    assert_eq!(text_of(&outcome), "still here");
}

#[tokio::test]
async fn many_empty_parts_are_refused_before_rendering() {
    let host = host(vec![roomy("normal")]).await;
    // A million empty parts: over what the host agrees to copy at all.
    let outcome = call(&host, "hostile/chaos.parts", json!({"count": 1_000_000})).await;
    assert!(
        matches!(outcome.result, Err(CallError::TooLarge { .. })),
        "{:?}",
        outcome.result.as_ref().map(|r| r.content.len())
    );
    assert!(outcome.render().len() < 2_000, "nothing of it is rendered");
    // Over the part limit (1024 by default) but cheap to copy: refused by count.
    let outcome = call(&host, "hostile/chaos.parts", json!({"count": 1025})).await;
    assert!(
        matches!(
            outcome.result,
            Err(CallError::TooManyParts {
                parts: 1025,
                limit: 1024
            })
        ),
        "{:?}",
        outcome.result
    );
    // Empty parts still cost their framing: 1024 of them pass the part
    // limit but not a 64 KiB result limit.
    let mut spec = roomy("normal");
    spec.limits.result_bytes = 64 << 10;
    let small = crate::common::host(vec![spec]).await;
    let outcome = call(&small, "hostile/chaos.parts", json!({"count": 1024})).await;
    assert!(matches!(outcome.result, Err(CallError::TooLarge { .. })));
    let outcome = call(&small, "hostile/chaos.parts", json!({"count": 10})).await;
    assert_eq!(result_of(&outcome).content.len(), 10);
    echo_works(&host).await;
}

#[tokio::test]
async fn aliased_strings_cannot_make_the_host_copy_more_than_its_limit() {
    let host = host(vec![roomy("normal")]).await;
    // 100,000 parts that all point at one MiB of plugin memory: 100 GB if
    // the host copied each. It stops at its fuel and refuses the result.
    let outcome = call(
        &host,
        "hostile/chaos.aliased_parts",
        json!({"count": 100_000, "kib": 1024}),
    )
    .await;
    assert!(
        matches!(outcome.result, Err(CallError::TooLarge { .. })),
        "{:?}",
        outcome.result.as_ref().map(|r| r.content.len())
    );
    echo_works(&host).await;

    // The same trick in a registration: 1000 tools sharing one MiB of
    // description.
    let mut spec = roomy("aliased");
    spec.config = json!({"mode": "aliased", "count": 1000, "kib": 1024});
    let err = load_error(spec).await;
    let (limit, message) = over_limit(&err);
    assert!(
        matches!(
            limit,
            RegistrationLimit::Description | RegistrationLimit::Total
        ),
        "{message}"
    );
}

#[tokio::test]
async fn registrations_over_their_limits_are_refused_in_one_line() {
    let cases: [(&str, serde_json::Value, RegistrationLimit, &str); 4] = [
        (
            "many-tools",
            json!({"mode": "many-tools", "count": 2000}),
            RegistrationLimit::Tools,
            "plugins.hostile.limits.tools",
        ),
        (
            "many-servers",
            json!({"mode": "many-servers", "count": 100}),
            RegistrationLimit::Servers,
            "plugins.hostile.limits.servers",
        ),
        (
            "big-description",
            json!({"mode": "big-description", "kib": 64}),
            RegistrationLimit::Description,
            "plugins.hostile.limits.description_kib",
        ),
        (
            "big-schema",
            json!({"mode": "big-schema", "kib": 300}),
            RegistrationLimit::Schema,
            "plugins.hostile.limits.schema_kib",
        ),
    ];
    for (mode, config, expected, key) in cases {
        let mut spec = roomy(mode);
        spec.config = config.clone();
        let err = load_error(spec).await;
        let (limit, message) = over_limit(&err);
        assert_eq!(limit, expected, "{mode}: {message}");
        assert!(message.contains(key), "{mode}: {message}");
        assert!(message.starts_with("plugin hostile: "), "{message}");

        // Raised, the same registration loads.
        let mut spec = roomy(mode);
        spec.config = config;
        let r = &mut spec.limits.registration;
        match expected {
            RegistrationLimit::Tools => r.tools = 4096,
            RegistrationLimit::Servers => r.servers = 128,
            RegistrationLimit::Description => r.description_bytes = 128 << 10,
            _ => r.schema_bytes = 512 << 10,
        }
        let host = host(vec![spec]).await;
        echo_works(&host).await;
    }

    // The whole registration has a limit of its own.
    let mut spec = roomy("many-tools");
    spec.config = json!({"mode": "big-description", "kib": 30});
    spec.limits.registration.total_bytes = 16 << 10;
    let (limit, message) = over_limit(&load_error(spec).await);
    assert_eq!(limit, RegistrationLimit::Total, "{message}");
    assert!(message.contains("registration_kib"), "{message}");
}

#[tokio::test]
async fn backtracking_patterns_validate_in_linear_time() {
    let host = host(vec![hostile("pattern-bomb")]).await;
    // `^(a+)+$` against many a's and a `!` takes a backtracking engine
    // longer than the universe has left; this test would hang.
    let bomb = format!("{}!", "a".repeat(64));
    let outcome = call(&host, "hostile/chaos.pattern_bomb", json!({"text": bomb})).await;
    assert_eq!(error_code(&outcome), "invalid_arguments");
    // The same in `patternProperties`: a key the pattern nearly matches.
    let key = format!("{}!", "b".repeat(64));
    let outcome = call(&host, "hostile/chaos.pattern_bomb", json!({ key: 1 })).await;
    // Validation passed (the key does not match), and the plugin itself
    // does not implement this tool.
    assert_eq!(error_code(&outcome), "failed", "{:?}", outcome.result);
    echo_works(&host).await;
}

#[tokio::test]
async fn schemas_that_fan_out_or_cannot_be_linear_are_refused() {
    // Look-around needs backtracking: the tool is refused at
    // registration, and the plugin's other tools load.
    let (host, refused) = left_out(hostile("lookaround")).await;
    assert_eq!(refused.name, "hostile/chaos.broken");
    assert!(
        matches!(refused.error, RegistryError::InvalidSchema { .. }),
        "{:?}",
        refused.error
    );
    echo_works(&host).await;
    // 2^40 evaluations per value through `$ref`s: over the cost budget.
    let (host, refused) = left_out(hostile("fanout-bomb")).await;
    let message = refused.error.to_string();
    assert!(
        matches!(
            refused.error,
            RegistryError::OverLimit {
                limit: RegistrationLimit::SchemaCost,
                ..
            }
        ),
        "{message}"
    );
    assert!(message.contains("schema_cost"), "{message}");
    echo_works(&host).await;
    // A `$ref` cycle that never reaches a child value never ends.
    let (host, refused) = left_out(hostile("ref-cycle")).await;
    assert_eq!(refused.name, "hostile/chaos.broken");
    assert!(
        matches!(refused.error, RegistryError::InvalidSchema { .. }),
        "{:?}",
        refused.error
    );
    echo_works(&host).await;
}

/// The hostile plugin registering one tool, `deep`, with this input schema.
fn custom(schema: &serde_json::Value) -> PluginSpec {
    let mut spec = hostile("custom");
    spec.config = json!({"mode": "custom", "servers": [{"name": "chaos", "tools": [
        {"name": "deep", "description": "d", "input_schema": schema.to_string()}]}]});
    spec
}

#[tokio::test]
async fn schemas_and_arguments_that_would_overflow_the_validator_stack_are_refused() {
    // A chain of 5,000 one-branch `anyOf`s through `$ref`s is cheap per
    // value, but validating anything against it recursed deep enough to
    // overflow a thread's stack and abort the host.
    let defs: serde_json::Map<String, serde_json::Value> = (0..5000)
        .map(|i| {
            let next = format!("#/$defs/d{}", i + 1);
            let def = if i == 4999 {
                json!({"type": "integer"})
            } else {
                json!({"anyOf": [{"$ref": next}]})
            };
            (format!("d{i}"), def)
        })
        .collect();
    let chain = json!({"$defs": defs, "$ref": "#/$defs/d0"});
    let mut spec = custom(&chain);
    spec.limits.registration.schema_bytes = 1 << 20;
    let (loaded, refused) = left_out(spec).await;
    assert_eq!(refused.name, "hostile/chaos.deep");
    let err = refused.error.to_string();
    assert!(err.contains("nest") && err.contains("deep"), "{err}");
    assert!(loaded.registry().is_empty(), "its only tool is left out");

    // A recursive schema twenty subschemas deep per level of the value:
    // fine for shallow arguments, refused (not validated) for deep ones.
    let mut link = json!({"type": "array", "items": {"$ref": "#/$defs/n"}});
    for _ in 0..10 {
        link = json!({"anyOf": [link]});
    }
    let recursive = json!({"$defs": {"n": link}, "$ref": "#/$defs/n"});
    let host = host(vec![custom(&recursive)]).await;
    let nested = |levels: usize| (0..levels).fold(json!([]), |inner, _| json!([inner]));
    let outcome = call(&host, "hostile/chaos.deep", nested(3)).await;
    assert_eq!(
        error_code(&outcome),
        "failed",
        "validated, then the plugin: {:?}",
        outcome.result
    );
    let outcome = call(&host, "hostile/chaos.deep", nested(100)).await;
    let message = outcome.result.unwrap_err().to_string();
    assert!(message.contains("nest 100 levels deep"), "{message}");
}

#[tokio::test]
async fn arguments_over_the_limit_never_reach_the_plugin() {
    let mut spec = hostile("normal");
    spec.limits.arguments_bytes = 64 << 10;
    let host = host(vec![spec]).await;
    let outcome = call(
        &host,
        "hostile/chaos.echo",
        json!({"message": "x".repeat(65 << 10)}),
    )
    .await;
    assert!(
        matches!(
            outcome.result,
            Err(CallError::ArgumentsTooLarge { limit, .. }) if limit == 64 << 10
        ),
        "{:?}",
        outcome.result
    );
    assert_eq!(error_code(&outcome), "too_large");
    let outcome = call(
        &host,
        "hostile/chaos.echo",
        json!({"message": "x".repeat(60 << 10)}),
    )
    .await;
    assert_eq!(text_of(&outcome).len(), 60 << 10);
}

#[tokio::test]
async fn the_time_limit_covers_validation() {
    // Measuring 1.5 MB of arguments and matching them against a pattern take
    // the host milliseconds. With a 1 ms limit that starts before them, the
    // call times out before the plugin runs; a limit that started with the
    // plugin would let it run, and it answers `failed` (it does not
    // implement `pattern_bomb`).
    let mut spec = hostile("pattern-bomb");
    spec.limits.arguments_bytes = 8 << 20;
    spec.limits.timeout = Duration::from_millis(1);
    // The limit bounds `register` too, which a busy machine may not finish
    // in 1 ms: the setup is tried again (the call under test is not).
    let mut loaded = None;
    for _ in 0..50 {
        let builder = tiny_harness_host::HostBuilder::new().plugin(spec.clone());
        match builder.build().await {
            Ok(host) => {
                loaded = Some(host);
                break;
            }
            Err(e) => assert!(e.to_string().contains("1 ms limit"), "{e}"),
        }
    }
    let host = loaded.expect("register finished within 1 ms once in 50 tries");
    let outcome = call(
        &host,
        "hostile/chaos.pattern_bomb",
        json!({"text": "a".repeat(1_500_000)}),
    )
    .await;
    assert_eq!(error_code(&outcome), "timeout", "{:?}", outcome.result);
}

#[tokio::test]
async fn a_call_cannot_hold_more_host_handles_than_its_limit() {
    let state = tempfile::tempdir().unwrap();
    std::fs::write(state.path().join("f"), "x").unwrap();
    let mut spec = hostile("normal");
    spec.grants
        .add_dir(DirGrant::new(state.path(), "/state", DirMode::ReadOnly).unwrap())
        .unwrap();
    spec.limits.open_files = 50;
    let host = host(vec![spec]).await;
    let outcome = call(
        &host,
        "hostile/chaos.open_many",
        json!({"path": "/state/f", "count": 5000}),
    )
    .await;
    let report = json_of(&outcome);
    let opened = report["opened"].as_u64().unwrap();
    // The preopen and stdio take a few of the 50; the rest are files.
    assert!((40..50).contains(&opened), "{report}");
    let error = report["error"].as_str().expect("an I/O error, not a trap");
    assert!(
        error.to_ascii_lowercase().contains("memory"),
        "ENOMEM: {error}"
    );
    // The handles went with the call: the next one opens as many again.
    let outcome = call(
        &host,
        "hostile/chaos.open_many",
        json!({"path": "/state/f", "count": 30}),
    )
    .await;
    assert_eq!(json_of(&outcome), json!({"opened": 30, "error": null}));
}

#[tokio::test]
async fn plugin_messages_are_one_escaped_line() {
    let host = host(vec![hostile("normal")]).await;
    let outcome = call(
        &host,
        "hostile/chaos.fail_with",
        json!({"message": "x\u{1b}[31my\nforged line\r\u{202e}z"}),
    )
    .await;
    let message = outcome.result.unwrap_err().to_string();
    assert_one_clean_line(&message);
    assert!(message.contains("forged line"), "{message}");

    let mut spec = hostile("register-error");
    spec.config = json!({"mode": "register-error", "message": "bad\u{1b}[2J\nforged"});
    let err = load_error(spec).await.to_string();
    assert!(err.contains("forged"), "{err}");

    // A trap quotes the plugin's stderr, escaped too (the panic message
    // is the plugin's).
    let outcome = call(&host, "hostile/chaos.trap", json!({})).await;
    assert_one_clean_line(&outcome.result.unwrap_err().to_string());
}

#[tokio::test]
async fn exit_in_register_is_one_line() {
    let err = load_error(hostile("exit")).await.to_string();
    assert!(
        // WASI's exit carries only success or failure: 3 arrives as 1.
        err.contains("register failed: the plugin called exit with status 1"),
        "{err}"
    );
    assert!(!err.contains("wasm backtrace"), "{err}");
}

#[tokio::test]
async fn a_call_blocked_in_a_host_call_is_accounted_for_and_does_not_block_shutdown() {
    let state = tempfile::tempdir().unwrap();
    let fifo = state.path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let mut spec = hostile("normal");
    spec.grants
        .add_dir(DirGrant::new(state.path(), "/state", DirMode::ReadOnly).unwrap())
        .unwrap();
    spec.limits.timeout = Duration::from_millis(300);
    let host = host(vec![spec]).await;
    let (_, plugin) = host.plugins().into_iter().next().unwrap();
    let engine = plugin.engine().clone();
    drop(plugin);
    // Opening a FIFO with no writer blocks in the host's open(2), which no
    // deadline can interrupt: the call times out, and the blocked
    // operation is counted until it returns.
    let outcome = call(
        &host,
        "hostile/chaos.read_path",
        json!({"path": "/state/fifo"}),
    )
    .await;
    assert_eq!(error_code(&outcome), "timeout");
    assert_eq!(engine.stalled_calls(), 1);
    echo_works(&host).await;

    // A writer releases it; the count falls back to zero.
    let writer = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    drop(writer);
    let mut waited = 0;
    while engine.stalled_calls() > 0 {
        assert!(waited < 500, "the released call is still counted");
        tokio::time::sleep(Duration::from_millis(10)).await;
        waited += 1;
    }

    // Blocked again and left blocked: dropping the host and this test's
    // runtime must not wait for it (the test would never end).
    let outcome = call(
        &host,
        "hostile/chaos.read_path",
        json!({"path": "/state/fifo"}),
    )
    .await;
    assert_eq!(error_code(&outcome), "timeout");
    drop(engine);
    drop(host);
}

#[tokio::test]
async fn calls_beyond_concurrent_calls_wait_for_a_turn_and_excess_waiters_are_refused() {
    use std::time::{Duration, Instant};
    // One call at once: a call made while a spinning call runs starts only
    // once the spinning one has ended.
    let mut spec = crate::common::hostile("normal");
    spec.limits.concurrent_calls = 1;
    spec.limits.timeout = Duration::from_millis(3000);
    let host = crate::common::host(vec![spec]).await;
    let spin = {
        let host = host.clone();
        tokio::spawn(async move {
            crate::common::call(&host, "hostile/chaos.spin", serde_json::json!({})).await
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let outcome = crate::common::call(
        &host,
        "hostile/chaos.echo",
        serde_json::json!({"message": "x"}),
    )
    .await;
    assert!(spin.is_finished(), "the second call ran beside the first");
    assert_eq!(crate::common::text_of(&outcome), "x");
    assert_eq!(crate::common::error_code(&spin.await.unwrap()), "timeout");

    // With the turn taken and 16 calls waiting for it, one more is refused
    // at once.
    let mut running = Vec::new();
    for _ in 0..=tiny_harness_host::Limits::MAX_WAITING {
        let host = host.clone();
        running.push(tokio::spawn(async move {
            crate::common::call(&host, "hostile/chaos.spin", serde_json::json!({})).await
        }));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    let refused = crate::common::call(
        &host,
        "hostile/chaos.echo",
        serde_json::json!({"message": "x"}),
    )
    .await;
    assert_eq!(crate::common::error_code(&refused), "unavailable");
    assert!(started.elapsed() < Duration::from_millis(500));
    assert!(
        refused
            .result
            .unwrap_err()
            .to_string()
            .contains("limits.concurrent_calls")
    );
    for call in running {
        call.abort();
    }
}
