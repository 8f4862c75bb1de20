//! What running a program costs through the host, and what confining it
//! costs, measured side by side.
//!
//! Each iteration of `paired` runs `/bin/true` six ways, back to back, so
//! that all see the same machine:
//! - `direct`: `tokio::process::Command::new("/bin/true").status()`, as
//!   any Rust program would start it (the standard library uses
//!   `posix_spawn`, which does not copy the parent's page tables);
//! - `direct_fork`: the same with an empty `pre_exec`, which makes the
//!   standard library `fork` instead, as every confined start must (the
//!   child has work to do before `exec`);
//! - `run_unconfined` / `run_confined`: `confine::run`, the host's runner
//!   (private directory, control groups, pipes, process group), without
//!   and with the kernel confinement (Landlock ruleset built, rlimits,
//!   network namespace, `no_new_privs`);
//! - `shell_unconfined` / `shell_confined`: a `shell/exec.run` call through
//!   `Host::invoke` (validation, a fresh plugin instance, the WIT `exec`
//!   call, the grant checks, the runner, the result, rendering), with the
//!   plugin's `confinement` set to `"none"` and to `"landlock"`.
//!
//! The medians of each and the ratios (confined over unconfined, shell
//! over direct) are printed at the end.
//!
//! Run: `cargo bench -p tiny-harness-host --bench exec`.

// A benchmark or example that cannot set up has nothing to measure or
// show: it stops at once, saying where.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use tiny_harness_host::{Host, HostBuilder, PluginSpec, ToolCall};
use tiny_harness_sandbox::confine::{self, Policy, Stdio3};
use tiny_harness_sandbox::grant::ExecGrant;

const TRUE: &str = "/bin/true";

fn shell_wasm() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../target/wasm-plugins/wasm32-wasip2/release"
    ))
    .join("shell.wasm")
}

async fn shell_host(mode: confine::Mode) -> Host {
    let mut spec = PluginSpec::new("shell", shell_wasm());
    spec.grants
        .add_exec(ExecGrant::resolve(TRUE, Path::new("/"), None).expect("/bin/true is a program"))
        .expect("one grant");
    spec.grants.confinement = mode;
    HostBuilder::new().plugin(spec).build().await.expect("load")
}

fn what() -> Stdio3 {
    Stdio3 {
        program: TRUE.into(),
        args: Vec::new(),
        env: Vec::new(),
        cwd: None,
        stdin: Vec::new(),
    }
}

async fn direct() {
    let status = tokio::process::Command::new(TRUE)
        .status()
        .await
        .expect("spawn");
    assert!(status.success());
}

async fn direct_fork() {
    let mut command = tokio::process::Command::new(TRUE);
    // SAFETY: the closure does nothing.
    unsafe {
        command.pre_exec(|| Ok(()));
    }
    let status = command.status().await.expect("spawn");
    assert!(status.success());
}

async fn run(policy: Option<Policy>) {
    let output = confine::run(what(), policy, 1 << 16, Duration::from_secs(10))
        .await
        .expect("run");
    assert_eq!(output.exited, confine::Exited::Code(0));
}

async fn shell(host: &Host, call: &ToolCall) {
    let outcome = host.invoke(call).await;
    assert!(!outcome.is_error(), "{:?}", outcome.result);
    std::hint::black_box(outcome.render());
}

const NAMES: [&str; 6] = [
    "direct",
    "direct_fork",
    "run_unconfined",
    "run_confined",
    "shell_unconfined",
    "shell_confined",
];

fn exec(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let unconfined = runtime.block_on(shell_host(confine::Mode::None));
    let confined = runtime.block_on(shell_host(confine::Mode::Landlock));
    let call = ToolCall {
        id: "call_1".into(),
        name: "shell/exec.run".into(),
        arguments: json!({"program": TRUE}),
    };
    let mut group = c.benchmark_group("exec_true");
    group.sample_size(30);
    let samples = std::cell::RefCell::new(Vec::new());
    group.bench_function("paired", |b| {
        b.to_async(&runtime).iter_custom(|iters| {
            let (unconfined, confined, call, samples) = (&unconfined, &confined, &call, &samples);
            async move {
                let mut totals = [Duration::ZERO; 6];
                for _ in 0..iters {
                    let start = Instant::now();
                    direct().await;
                    totals[0] += start.elapsed();
                    let start = Instant::now();
                    direct_fork().await;
                    totals[1] += start.elapsed();
                    let start = Instant::now();
                    run(None).await;
                    totals[2] += start.elapsed();
                    let start = Instant::now();
                    run(Some(Policy::default())).await;
                    totals[3] += start.elapsed();
                    let start = Instant::now();
                    shell(unconfined, call).await;
                    totals[4] += start.elapsed();
                    let start = Instant::now();
                    shell(confined, call).await;
                    totals[5] += start.elapsed();
                }
                samples
                    .borrow_mut()
                    .push(totals.map(|t| t.as_secs_f64() * 1e6 / iters as f64));
                totals.iter().sum()
            }
        });
    });
    group.finish();
    report(&samples.into_inner());
}

/// Prints the median of each way and of the ratios, over the samples.
fn report(samples: &[[f64; 6]]) {
    fn median(mut values: Vec<f64>) -> f64 {
        values.sort_by(f64::total_cmp);
        values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
    }
    let of = |i: usize| median(samples.iter().map(|s| s[i]).collect());
    let ratio = |a: usize, b: usize| median(samples.iter().map(|s| s[a] / s[b]).collect());
    let medians: Vec<String> = (0..6)
        .map(|i| format!("{} {:.0} µs", NAMES[i], of(i)))
        .collect();
    eprintln!(
        "paired medians over {} samples: {}",
        samples.len(),
        medians.join(", ")
    );
    eprintln!(
        "ratios: run confined/unconfined {:.2}, shell confined/unconfined {:.2}, shell_unconfined/direct {:.2}, shell_confined/direct {:.2}, run_unconfined/direct {:.2}, direct_fork/direct {:.2}, run_unconfined/direct_fork {:.2}",
        ratio(3, 2),
        ratio(5, 4),
        ratio(4, 0),
        ratio(5, 0),
        ratio(2, 0),
        ratio(1, 0),
        ratio(2, 1)
    );
}

criterion_group!(benches, exec);
criterion_main!(benches);
