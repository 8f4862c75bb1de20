//! How `run` bounds a program: its timeout kills its whole process group,
//! nothing it started outlives it, and its output is capped by the host and
//! fitted into the result by the plugin.

use std::time::{Duration, Instant};

use serde_json::json;
use tiny_harness_host::Host;

use super::{failed, ok, run, sh, shell, still_works};
use crate::common::mcp::{assert_gone, marker};
use crate::common::{error_code, host, text_of};

/// The shell plugin granted `sh` and `/usr/bin/env`, whose programs carry
/// `marker`; checks that they do, so that [`gone`] looks for something.
async fn marked(marker: &str, limits_timeout: Option<Duration>) -> Host {
    let mut spec = shell(
        &["sh", "/usr/bin/env"],
        json!({"env": {"TINY_HARNESS_TEST_MARKER": marker}}),
    );
    if let Some(timeout) = limits_timeout {
        spec.limits.timeout = timeout;
    }
    let host = host(vec![spec]).await;
    let env = run(&host, json!({"program": "/usr/bin/env"})).await;
    let needle = format!("TINY_HARNESS_TEST_MARKER={marker}\n");
    assert!(ok(&env)["stdout"].as_str().unwrap().contains(&needle));
    host
}

#[tokio::test]
async fn at_its_timeout_the_whole_process_group_is_killed() {
    let marker = marker("shell-timeout");
    let host = marked(&marker, None).await;
    let mut arguments = sh("sleep 30 & sleep 30");
    arguments["timeout_ms"] = 500.into();
    let started = Instant::now();
    let outcome = run(&host, arguments).await;
    let elapsed = started.elapsed();
    assert_eq!(
        failed(&outcome),
        json!({
            "exit_code": null,
            "signal": 9,
            "stdout": "",
            "stderr": "",
            "truncated": false,
            "timed_out": true,
        })
    );
    assert_eq!(text_of(&outcome), "killed by signal 9 at the timeout");
    assert!(elapsed < Duration::from_secs(10), "took {elapsed:?}");
    assert_gone(&marker).await;
    still_works(&host).await;
}

#[tokio::test]
async fn a_program_leaves_nothing_running_after_it_exits() {
    let marker = marker("shell-exit");
    let host = marked(&marker, None).await;
    let outcome = run(&host, sh("sleep 30 & echo started")).await;
    assert_eq!(ok(&outcome)["stdout"], "started\n");
    assert_gone(&marker).await;
}

#[tokio::test]
async fn a_call_that_times_out_leaves_no_process() {
    let marker = marker("shell-call-timeout");
    let host = marked(&marker, Some(Duration::from_secs(1))).await;
    let started = Instant::now();
    let outcome = run(&host, sh("sleep 30 & sleep 30")).await;
    let elapsed = started.elapsed();
    // The program may be killed at the call's deadline and reported, or
    // the call itself may be stopped there; nothing may outlive it either way.
    match &outcome.result {
        Ok(_) => assert_eq!(failed(&outcome)["timed_out"], true),
        Err(e) => assert_eq!(e.code(), "timeout", "{e}"),
    }
    assert!(elapsed < Duration::from_secs(10), "took {elapsed:?}");
    assert_gone(&marker).await;
}

#[tokio::test]
async fn a_call_abandoned_by_its_caller_leaves_no_process() {
    let marker = marker("shell-abandoned");
    let host = marked(&marker, None).await;
    let started = run(&host, sh("sleep 30 & sleep 30"));
    // The caller gives up (a turn cancelled, say): the call's future is
    // dropped while the program runs.
    let abandoned = tokio::time::timeout(Duration::from_millis(500), started).await;
    assert!(
        abandoned.is_err(),
        "the program ended by itself: {abandoned:?}"
    );
    assert_gone(&marker).await;
    still_works(&host).await;
}

#[tokio::test]
async fn output_is_capped_and_fitted_into_the_result() {
    // 80 MB on each stream: more than the plugin's 64 MiB of memory can
    // take, so without the host's cap the call would fail `memory_limit`.
    let script = "head -c 80000000 /dev/zero | tr '\\0' x; \
                  head -c 80000000 /dev/zero | tr '\\0' y >&2";
    let with_budget = |kib: u32| {
        let mut spec = shell(&["sh"], json!({"output_kib": kib}));
        spec.limits.result_bytes = 64 << 10;
        spec
    };
    let host_16 = host(vec![with_budget(16)]).await;
    let outcome = run(&host_16, sh(script)).await;
    assert_eq!(
        ok(&outcome),
        json!({
            "exit_code": 0,
            "signal": null,
            "stdout": "x".repeat(8 << 10),
            "stderr": "y".repeat(8 << 10),
            "truncated": true,
            "timed_out": false,
        })
    );
    assert_eq!(text_of(&outcome), "exit 0; output truncated");
    still_works(&host_16).await;

    // A budget as large as the result limit cannot fit with the rest of
    // the result: the model gets `too_large`, and the plugin still works.
    let host_64 = host(vec![with_budget(64)]).await;
    assert_eq!(error_code(&run(&host_64, sh(script)).await), "too_large");
    still_works(&host_64).await;
}
