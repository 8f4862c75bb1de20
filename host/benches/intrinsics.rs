//! Intrinsics: a call through the invoker, and `Workflow::apply` alone.
//!
//! - `call_intrinsic/complete_step_1000`: `Host::call_intrinsic` of
//!   `complete_step` on a 1,000-step plan: lookup, validation against the
//!   generated schema, the command checked against the bound workflow, the
//!   output check, the apply and the untrusted render.
//! - `apply/complete_step/N`: `Workflow::apply` of `complete_step` alone
//!   on plans of 100, 1,000 and 10,000 steps. Flat across N is the point:
//!   applying costs the step and its neighbours, not the plan.
//! - `apply/spawn_subtask_after/H`: a sub-task spawned after a history of
//!   H commands (sub-tasks and UI messages already applied): flat across H.
//!
//! Each plan is a chain (step k depends on step k-1), completed in order,
//! so every completion touches one dependency and frees one dependent. A
//! workflow is rebuilt, outside the timing, when its steps run out.
//!
//! Run: `cargo bench -p tiny-harness-host --bench intrinsics`.

// A benchmark or example that cannot set up has nothing to measure or
// show: it stops at once, saying where.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use serde_json::json;
use tiny_harness_host::{HostBuilder, ToolCall, Workflow, WorkflowCommand};
use tiny_harness_intrinsic::StepSpec;

fn chain(n: usize) -> Workflow {
    let steps = (0..n)
        .map(|k| StepSpec {
            name: format!("s{k}"),
            description: format!("step {k}"),
            depends_on: if k == 0 {
                vec![]
            } else {
                vec![format!("s{}", k - 1)]
            },
        })
        .collect();
    let mut workflow = Workflow::new();
    workflow
        .apply(&WorkflowCommand::AttachPlan { steps })
        .expect("a chain is a DAG");
    workflow
}

/// Times `run(workflow, k)` for k = 0, 1, ... over fresh chains of `n`
/// steps, rebuilding (untimed) when one is used up.
fn over_chains(iters: u64, n: usize, mut run: impl FnMut(&mut Workflow, usize)) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let mut workflow = chain(n);
        let chunk = left.min(n as u64) as usize;
        let start = Instant::now();
        for k in 0..chunk {
            run(&mut workflow, k);
        }
        total += start.elapsed();
        left -= chunk as u64;
    }
    total
}

fn complete(k: usize) -> WorkflowCommand {
    WorkflowCommand::CompleteStep {
        step: format!("s{k}"),
        output: "done".into(),
    }
}

fn benches(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let host = runtime
        .block_on(HostBuilder::new().intrinsics(true).build())
        .unwrap();

    let calls: Vec<ToolCall> = (0..1000)
        .map(|k| ToolCall {
            id: "b".into(),
            name: "complete_step".into(),
            arguments: json!({"step": format!("s{k}"), "output": "done"}),
        })
        .collect();
    c.bench_function("call_intrinsic/complete_step_1000", |b| {
        b.iter_custom(|iters| {
            over_chains(iters, 1000, |workflow, k| {
                let done = runtime.block_on(host.call_intrinsic(&calls[k], workflow, None));
                assert!(done.command.is_some());
                std::hint::black_box(done.outcome.render());
            })
        })
    });

    let mut group = c.benchmark_group("apply/complete_step");
    for n in [100, 1_000, 10_000] {
        let commands: Vec<WorkflowCommand> = (0..n).map(complete).collect();
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
            b.iter_custom(|iters| {
                over_chains(iters, n, |workflow, k| {
                    std::hint::black_box(workflow.apply(&commands[k]).unwrap());
                })
            })
        });
    }
    group.finish();

    let mut group = c.benchmark_group("apply/spawn_subtask_after");
    let spawn = WorkflowCommand::SpawnSubtask {
        name: "n".into(),
        goal: "g".into(),
        acceptance_criteria: vec![],
        agent: None,
        step: None,
    };
    for history in [0usize, 900] {
        let mut base = chain(10);
        for _ in 0..history {
            base.apply(&spawn).unwrap();
            let ui =
                json!({"version": "v0.9", "createSurface": {"surfaceId": "s", "catalogId": "c"}});
            let delete = json!({"version": "v0.9", "deleteSurface": {"surfaceId": "s"}});
            base.apply(&WorkflowCommand::UiEmitted {
                messages: vec![ui, delete],
            })
            .unwrap();
        }
        group.bench_with_input(
            BenchmarkId::from_parameter(history * 2),
            &history,
            |b, _| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    let mut left = iters;
                    while left > 0 {
                        let mut workflow = base.clone();
                        let chunk = left.min(50);
                        let start = Instant::now();
                        for _ in 0..chunk {
                            std::hint::black_box(workflow.apply(&spawn).unwrap());
                        }
                        total += start.elapsed();
                        left -= chunk;
                    }
                    total
                })
            },
        );
    }
    group.finish();
}

criterion_group!(intrinsics, benches);
criterion_main!(intrinsics);
