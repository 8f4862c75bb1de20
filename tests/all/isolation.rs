//! A plugin that traps, spins or bombs memory fails that one call; the host,
//! the other plugins and the same plugin's next call go on.

use std::time::Duration;

use tiny_harness_host::{CallError, Host};

use crate::common::{call, error_code, host, hostile, text_of, tight_limits};

async fn tight_host() -> Host {
    let mut chaos = hostile("normal");
    chaos.limits = tight_limits();
    let mut other = hostile("normal");
    other.name = "other".into();
    host(vec![chaos, other]).await
}

async fn both_still_work(host: &Host) {
    for name in ["hostile/chaos.echo", "other/chaos.echo"] {
        let outcome = call(host, name, serde_json::json!({"message": "still here"})).await;
        assert_eq!(text_of(&outcome), "still here", "{name}");
    }
}

#[tokio::test]
async fn a_trap_fails_only_its_call() {
    let host = tight_host().await;
    let outcome = call(&host, "hostile/chaos.trap", serde_json::json!({})).await;
    let Err(CallError::Trapped(message)) = &outcome.result else {
        panic!("{:?}", outcome.result);
    };
    assert!(
        message.contains("deliberate trap"),
        "the guest's panic message: {message}"
    );
    assert!(outcome.render().contains("code=\"trapped\""));
    both_still_work(&host).await;
}

#[tokio::test]
async fn an_infinite_loop_is_stopped_at_the_deadline() {
    let host = tight_host().await;
    let outcome = call(&host, "hostile/chaos.spin", serde_json::json!({})).await;
    assert_eq!(error_code(&outcome), "timeout");
    assert!(
        matches!(outcome.result, Err(CallError::Timeout { limit }) if limit == Duration::from_millis(300))
    );
    both_still_work(&host).await;
}

#[tokio::test]
async fn unbounded_recursion_traps_only_its_call() {
    let host = tight_host().await;
    let outcome = call(&host, "hostile/chaos.recurse", serde_json::json!({})).await;
    // The guest's own stack (in its linear memory) runs out first: the
    // trap is an out-of-bounds access, and only this call fails.
    assert_eq!(error_code(&outcome), "trapped", "{:?}", outcome.result);
    both_still_work(&host).await;
}

#[tokio::test]
async fn a_hundred_megabyte_result_is_refused_without_reaching_the_model() {
    // Memory enough to build it, so the host's result limit is what holds.
    let mut spec = crate::common::hostile("normal");
    spec.limits.memory_bytes = 512 << 20;
    let host = crate::common::host(vec![spec]).await;
    let outcome = call(
        &host,
        "hostile/chaos.big",
        serde_json::json!({"kib": 100 * 1024, "fail": false}),
    )
    .await;
    assert!(
        matches!(outcome.result, Err(CallError::TooLarge { limit }) if limit == tiny_harness_host::Limits::DEFAULT_RESULT_BYTES),
        "{:?}",
        outcome.result.as_ref().map(|r| r.content.len())
    );
    assert!(outcome.render().len() < 1_000);
    let echo = call(
        &host,
        "hostile/chaos.echo",
        serde_json::json!({"message": "up"}),
    )
    .await;
    assert_eq!(text_of(&echo), "up");
}

#[tokio::test]
async fn a_memory_bomb_hits_the_limit() {
    let host = tight_host().await;
    let outcome = call(
        &host,
        "hostile/chaos.alloc",
        serde_json::json!({"mib": 512}),
    )
    .await;
    assert!(
        matches!(outcome.result, Err(CallError::MemoryLimit { limit_bytes }) if limit_bytes == 32 << 20),
        "{:?}",
        outcome.result
    );
    // Under the limit, the same tool works.
    let small = call(&host, "hostile/chaos.alloc", serde_json::json!({"mib": 4})).await;
    assert_eq!(text_of(&small), "allocated 4 MiB");
    // The other plugin has its own, default, limit.
    let other = call(&host, "other/chaos.alloc", serde_json::json!({"mib": 40})).await;
    assert_eq!(text_of(&other), "allocated 40 MiB");
    both_still_work(&host).await;
}

#[tokio::test]
async fn repeated_failures_leave_the_plugin_serving() {
    let host = tight_host().await;
    for _ in 0..5 {
        assert_eq!(
            error_code(&call(&host, "hostile/chaos.trap", serde_json::json!({})).await),
            "trapped"
        );
        assert_eq!(
            error_code(
                &call(
                    &host,
                    "hostile/chaos.alloc",
                    serde_json::json!({"mib": 100})
                )
                .await
            ),
            "memory_limit"
        );
    }
    both_still_work(&host).await;
}

/// On a single-threaded runtime, a spinning call must yield: concurrent
/// echoes all finish while the spin is still running.
#[tokio::test(flavor = "current_thread")]
async fn a_spinning_call_does_not_block_others() {
    let mut chaos = hostile("normal");
    chaos.limits.timeout = Duration::from_secs(5);
    let host = host(vec![chaos]).await;

    let spin_done = std::cell::Cell::new(false);
    let spin = async {
        let outcome = call(&host, "hostile/chaos.spin", serde_json::json!({})).await;
        spin_done.set(true);
        outcome
    };
    let echoes = async {
        let mut done = Vec::new();
        for n in 0..3 {
            let outcome = call(
                &host,
                "hostile/chaos.echo",
                serde_json::json!({"message": n.to_string()}),
            )
            .await;
            done.push((text_of(&outcome), spin_done.get()));
        }
        done
    };
    let (spun, echoed) = tokio::join!(spin, echoes);
    assert_eq!(error_code(&spun), "timeout");
    for (n, (text, spin_was_done)) in echoed.iter().enumerate() {
        assert_eq!(text, &n.to_string());
        assert!(!spin_was_done, "echo {n} waited for the spin to end");
    }
}

#[tokio::test]
async fn concurrent_calls_all_complete() {
    // A generous deadline: this test is about memory and traps under
    // concurrency, not about time on a loaded machine.
    let mut chaos = hostile("normal");
    chaos.limits.memory_bytes = 32 << 20;
    let host = std::sync::Arc::new(host(vec![chaos]).await);
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..32 {
        let host = host.clone();
        tasks.spawn(async move {
            let tool = match n % 4 {
                0 => "trap",
                1 => "alloc",
                _ => "echo",
            };
            let args = match tool {
                "alloc" => serde_json::json!({"mib": 100}),
                "echo" => serde_json::json!({"message": n.to_string()}),
                _ => serde_json::json!({}),
            };
            (
                n,
                tool,
                call(&host, &format!("hostile/chaos.{tool}"), args).await,
            )
        });
    }
    while let Some(joined) = tasks.join_next().await {
        let (n, tool, outcome) = joined.unwrap();
        match tool {
            "trap" => assert_eq!(error_code(&outcome), "trapped"),
            "alloc" => assert_eq!(error_code(&outcome), "memory_limit"),
            _ => assert_eq!(text_of(&outcome), n.to_string()),
        }
    }
}

/// A plugin granted no directory runs each call in a kept sandbox (see
/// `Spares` in the wasm crate): nothing one call could write reaches the
/// next, neither its random state nor what it wrote to standard error.
#[tokio::test]
async fn nothing_one_call_leaves_reaches_the_next() {
    let host = host(vec![hostile("normal")]).await;
    let mut seen = Vec::new();
    for _ in 0..3 {
        let drawn = crate::common::json_of(
            &call(&host, "hostile/chaos.random", serde_json::json!({})).await,
        );
        assert!(!seen.contains(&drawn["seed"]), "a seed came again: {drawn}");
        assert!(
            !seen.contains(&drawn["first"]),
            "a number came again: {drawn}"
        );
        seen.push(drawn["seed"].clone());
        seen.push(drawn["first"].clone());
    }

    let logged = call(
        &host,
        "hostile/chaos.log",
        serde_json::json!({"stdout": "", "stderr": "left by the call before\n", "repeat": 3}),
    )
    .await;
    assert_eq!(text_of(&logged), "logged");
    let trapped = call(&host, "hostile/chaos.trap", serde_json::json!({})).await;
    let Err(CallError::Trapped(message)) = &trapped.result else {
        panic!("{:?}", trapped.result);
    };
    assert!(message.contains("deliberate trap"), "{message}");
    assert!(!message.contains("left by the call before"), "{message}");
}
