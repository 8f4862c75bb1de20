//! What a granted program cannot do to the host however it forks: leave
//! its process group with `setsid` (alone or after a double fork) and
//! outlive its call, start more processes than `program_processes`, or
//! use more CPU or memory than `program_cpu_seconds` and
//! `program_memory_mib` allow. Each case ends with nothing of it running
//! and the plugin still serving.

use serde_json::json;
use tiny_harness_host::Host;
use tiny_harness_sandbox::confine::Containment;

use super::{failed, grant, ok, run, sh, shell, still_works};
use crate::common::host;
use crate::common::mcp::{assert_gone, marker};

/// The shell plugin granted `sh`, `setsid` and `python3`, whose programs
/// carry `marker`, with `limits` applied to the programs' limits.
async fn marked(
    marker: &str,
    limits: impl FnOnce(&mut tiny_harness_sandbox::confine::Rlimits),
) -> Host {
    let mut spec = shell(
        &["sh", "setsid"],
        json!({"env": {"TINY_HARNESS_TEST_MARKER": marker}}),
    );
    spec.grants.add_exec(grant("/usr/bin/python3")).unwrap();
    limits(&mut spec.grants.program_limits);
    host(vec![spec]).await
}

/// A process that starts a new session (so it is no longer in the
/// program's process group) and sleeps there, with a child of its own;
/// it writes `$TMPDIR/escaped` once it has left.
const ESCAPE: &str = "setsid sh -c 'sleep 30 & echo escaped > \"$TMPDIR/escaped\"; exec sleep 30' \
                      < /dev/null > /dev/null 2>&1";

/// Waits for [`ESCAPE`] to have left.
const WAIT_ESCAPED: &str = "until [ -s \"$TMPDIR/escaped\" ]; do sleep 0.01; done";

/// Programs are kept together on this machine, by control groups (as
/// root) or by a PID namespace in a user namespace (as an ordinary user,
/// as `.ci/run` runs these tests a second time): without either these
/// tests would test nothing (and a fork bomb would be real).
fn contained() {
    let containment = Containment::get();
    let by_namespace = tiny_harness_sandbox::confine::containment()
        .starts_with("pid namespace in a user namespace");
    assert!(
        (containment.available() && containment.bounds_processes()) || by_namespace,
        "nothing keeps programs together here: {}",
        tiny_harness_sandbox::confine::containment()
    );
}

#[tokio::test]
async fn a_process_that_calls_setsid_does_not_outlive_its_call() {
    contained();
    let marker = marker("shell-setsid");
    let host = marked(&marker, |_| {}).await;
    // It leaves the process group, so killing the group misses it; the
    // shell exits only once it has (the escapee writes a file then).
    let outcome = run(
        &host,
        sh(&format!("{ESCAPE} & {WAIT_ESCAPED}; echo started")),
    )
    .await;
    assert_eq!(ok(&outcome)["stdout"], "started\n");
    assert_gone(&marker).await;
    still_works(&host).await;
}

#[tokio::test]
async fn a_double_fork_into_a_new_session_is_killed_at_the_timeout() {
    contained();
    let marker = marker("shell-double-fork");
    let host = marked(&marker, |_| {}).await;
    // The intermediate process exits at once, so the sleeper is an orphan
    // in a session of its own, holding the output pipes.
    let mut arguments = sh(&format!(
        "({ESCAPE} &); {WAIT_ESCAPED}; cat \"$TMPDIR/escaped\"; sleep 30"
    ));
    arguments["timeout_ms"] = 3000.into();
    let outcome = run(&host, arguments).await;
    let output = failed(&outcome);
    assert_eq!(output["timed_out"], true, "{output}");
    // It had left before the timeout.
    assert_eq!(output["stdout"], "escaped\n", "{output}");
    assert_gone(&marker).await;
    still_works(&host).await;
}

#[tokio::test]
async fn a_program_cannot_start_more_processes_than_its_limit() {
    contained();
    let marker = marker("shell-processes");
    let host = marked(&marker, |limits| limits.processes = 16).await;
    // 40 background sleepers: past 16 processes, fork fails, and the shell
    // gives up there.
    let outcome = run(
        &host,
        sh("i=0; while [ $i -lt 40 ]; do sleep 30 & i=$((i+1)); done; echo all started"),
    )
    .await;
    let output = failed(&outcome);
    assert_eq!(output["exit_code"], 2, "{output}");
    assert_eq!(output["stdout"], "", "{output}");
    assert!(
        output["stderr"].as_str().unwrap().contains("Cannot fork"),
        "{output}"
    );
    assert_gone(&marker).await;
    // With room for them, the same script runs to its end.
    let host = marked(&marker, |limits| limits.processes = 64).await;
    let outcome = run(
        &host,
        sh("i=0; while [ $i -lt 40 ]; do sleep 0.1 & i=$((i+1)); done; wait; echo all started"),
    )
    .await;
    assert_eq!(ok(&outcome)["stdout"], "all started\n");
    still_works(&host).await;
}

#[tokio::test]
async fn a_fork_bomb_is_contained_and_killed() {
    contained();
    let marker = marker("shell-fork-bomb");
    let host = marked(&marker, |limits| limits.processes = 64).await;
    // `exec`: the script's own wait needs no fork, which the bomb may
    // already have made impossible (then the script would end at once,
    // not at the timeout).
    let mut arguments = sh("bomb() { bomb | bomb & }; bomb; exec sleep 30");
    arguments["timeout_ms"] = 1000.into();
    let outcome = run(&host, arguments).await;
    assert_eq!(failed(&outcome)["timed_out"], true, "{}", failed(&outcome));
    assert_gone(&marker).await;
    still_works(&host).await;
}

#[tokio::test]
async fn cpu_time_is_limited_per_process() {
    let marker = marker("shell-cpu");
    let host = marked(&marker, |limits| limits.cpu_seconds = 1).await;
    let mut arguments = sh("while :; do :; done");
    arguments["timeout_ms"] = 30_000.into();
    let outcome = run(&host, arguments).await;
    let output = failed(&outcome);
    // SIGXCPU at the limit, well before the timeout.
    assert_eq!(output["signal"], 24, "SIGXCPU: {output}");
    assert_eq!(output["timed_out"], false, "{output}");
    still_works(&host).await;
}

#[tokio::test]
async fn memory_is_limited_per_process() {
    let marker = marker("shell-memory");
    let host = marked(&marker, |limits| limits.address_space = 256 << 20).await;
    let allocate = |mib: u32| {
        json!({
            "program": "/usr/bin/python3",
            "args": ["-c", format!("b = bytearray({mib} << 20); print(len(b) >> 20)")],
        })
    };
    // Within the limit it works; past it the allocation fails in the
    // program, which reports it.
    assert_eq!(ok(&run(&host, allocate(16)).await)["stdout"], "16\n");
    let output = failed(&run(&host, allocate(1024)).await);
    assert_eq!(output["exit_code"], 1, "{output}");
    assert!(
        output["stderr"].as_str().unwrap().contains("MemoryError"),
        "{output}"
    );
    still_works(&host).await;
}

#[tokio::test]
async fn the_memory_of_a_programs_processes_together_is_limited() {
    contained();
    assert!(
        Containment::get().bounds_memory(),
        "{}",
        Containment::get().describe()
    );
    // Four processes of 150 MiB each at once: each within its own 256 MiB
    // address space, 600 MiB together.
    let script = "for i in 1 2 3 4; do \
                  (/usr/bin/python3 -c 'import time; b = b\"x\" * (150 << 20); time.sleep(1)'; \
                   echo \"exit $?\") & done; wait";
    let exits = |outcome: &tiny_harness_host::CallOutcome| -> Vec<String> {
        let output = crate::common::json_of(outcome);
        (output["stdout"].as_str().unwrap().lines())
            .map(str::to_owned)
            .collect()
    };
    let marker = marker("shell-memory-group");
    let host = marked(&marker, |limits| limits.address_space = 256 << 20).await;
    let outcome = run(&host, sh(script)).await;
    let within = exits(&outcome);
    assert!(
        within.iter().filter(|line| *line == "exit 0").count() < 4,
        "all four fit: {within:?}"
    );
    assert_gone(&marker).await;
    still_works(&host).await;
    // With room for all of them, all four finish.
    let host = marked(&marker, |limits| limits.address_space = 1 << 30).await;
    let roomy = exits(&run(&host, sh(script)).await);
    assert_eq!(roomy, ["exit 0"; 4], "{roomy:?}");
}
