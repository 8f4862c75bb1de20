//! Each layer of a trivial plugin call against bare wasmtime, interleaved
//! in one process, to say which layer the whole path's overhead is in.
//!
//! Every round runs, for each layer in turn, 500 pairs of (a bare call, a
//! call through that layer) back to back, and keeps the ratio of their
//! sums; the medians of 150 rounds are printed. Rounds alternate the
//! layers, so a slow spell of the machine touches all of them alike.
//!
//! - `bare_floor`: bare wasmtime without the bindings' per-instance
//!   lookup and type check of every export (what the host's calls skip):
//!   the floor, whose ratio says what those cost.
//! - `plugin_call`: `Plugin::call` (the sandbox, the instance, the result).
//! - `tool_source_call`: the same through `ToolSource::call`, as the
//!   invoker makes it (a boxed future; the invoker has checked the
//!   deadline, so the plugin does not read the clock again).
//! - `host_invoke`: `Host::invoke` (lookup, validation, pin guard, call).
//! - `in_process_invoke_render`: the host's own work alone: the whole path
//!   to an in-process tool of the same schema that answers at once (its
//!   ratio is that work as a share of a bare call).
//! - `host_invoke_render`: and the untrusted block: the whole path, the
//!   `paired_host_over_bare` row of the `invoke` bench.
//!
//! The bare call is `invoke.rs`'s `bare_wasmtime`: a new store with an
//! empty WASI context, an instance from a pre-linked component, `greet`.
//!
//! Run: `cargo bench -p tiny-harness-host --bench layers`; names after
//! `--` run only the layers whose names hold one of them (`-- plugin_call`,
//! to profile one layer against bare wasmtime). Under `cargo test` (no
//! `--bench` argument) each layer runs once, as a check.

// A benchmark that cannot set up has nothing to measure: it stops at once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use serde_json::json;
use tiny_harness_host::{Host, ToolCall, ToolSource};
use tiny_harness_wasm::{Plugin, PluginEngine};

#[path = "common/bare.rs"]
mod bare;
#[path = "common/hosts.rs"]
mod hosts;

use bare::{Bare, bare_call, bare_floor_call, bare_pre, call_index};
use hosts::hello_host;
use tiny_harness_wasm::bindings::PluginPre;
use wasmtime::component::ComponentExportIndex;

const ROUNDS: usize = 150;
const PAIRS: usize = 500;

#[derive(Clone, Copy)]
enum Layer {
    BareFloor,
    PluginCall,
    ToolSourceCall,
    HostInvoke,
    HostInvokeRender,
    InProcess,
}

impl Layer {
    const ALL: [Layer; 6] = [
        Layer::BareFloor,
        Layer::PluginCall,
        Layer::ToolSourceCall,
        Layer::HostInvoke,
        Layer::HostInvokeRender,
        Layer::InProcess,
    ];

    fn name(self) -> &'static str {
        match self {
            Layer::BareFloor => "bare_floor",
            Layer::PluginCall => "plugin_call",
            Layer::ToolSourceCall => "tool_source_call",
            Layer::HostInvoke => "host_invoke",
            Layer::HostInvokeRender => "host_invoke_render",
            Layer::InProcess => "in_process_invoke_render",
        }
    }

    async fn call(self, on: &Setup) {
        let Setup {
            host, plugin, call, ..
        } = on;
        match self {
            Layer::BareFloor => bare_floor_call(&on.engine, &on.pre, &on.index).await,
            Layer::PluginCall => {
                let result = plugin.call("hello", "greet", &call.arguments).await;
                assert!(result.is_ok_and(|r| !r.is_error));
            }
            Layer::ToolSourceCall => {
                let deadline = Instant::now() + Duration::from_secs(30);
                let result =
                    ToolSource::call(&**plugin, "hello", "greet", &call.arguments, deadline).await;
                assert!(result.is_ok_and(|r| !r.is_error));
            }
            Layer::HostInvoke => assert!(!host.invoke(call).await.is_error()),
            Layer::HostInvokeRender => {
                let outcome = host.invoke(call).await;
                assert!(!outcome.is_error());
                std::hint::black_box(outcome.render());
            }
            Layer::InProcess => {
                let outcome = host.invoke(&on.in_process).await;
                assert!(!outcome.is_error());
                std::hint::black_box(outcome.render());
            }
        }
    }
}

/// What the layers call.
struct Setup {
    engine: PluginEngine,
    pre: PluginPre<Bare>,
    index: ComponentExportIndex,
    host: Host,
    plugin: std::sync::Arc<Plugin>,
    call: ToolCall,
    in_process: ToolCall,
}

fn main() {
    let measure = std::env::args().any(|a| a == "--bench");
    // A name given after `--` runs only the layers whose names hold it (to
    // profile one layer against bare wasmtime).
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let layers: Vec<Layer> = Layer::ALL
        .into_iter()
        .filter(|layer| only.is_empty() || only.iter().any(|o| layer.name().contains(o.as_str())))
        .collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let engine = PluginEngine::new().expect("engine");
    let host = runtime.block_on(hello_host(engine.clone()));
    let pre = bare_pre(&engine);
    let index = call_index(&pre);
    let (_, plugin) = host
        .plugins()
        .into_iter()
        .find(|(name, _)| name == "hello")
        .expect("the hello plugin");
    let call = ToolCall {
        id: "call_1".into(),
        name: "hello/hello.greet".into(),
        arguments: json!({"name": "bench"}),
    };
    let in_process = ToolCall {
        name: "mem/hello.greet".into(),
        ..call.clone()
    };
    let on = Setup {
        engine,
        pre,
        index,
        host,
        plugin,
        call,
        in_process,
    };
    let (rounds, pairs, warm_up) = if measure {
        (ROUNDS, PAIRS, 3000)
    } else {
        (1, 1, 0)
    };
    let mut ratios = vec![Vec::with_capacity(rounds); layers.len()];
    runtime.block_on(async {
        for _ in 0..warm_up {
            bare_call(&on.engine, &on.pre).await;
            Layer::HostInvokeRender.call(&on).await;
        }
        for _ in 0..rounds {
            for (layer, kept) in layers.iter().zip(&mut ratios) {
                let (mut bare, mut layered) = (Duration::ZERO, Duration::ZERO);
                for _ in 0..pairs {
                    let start = Instant::now();
                    bare_call(&on.engine, &on.pre).await;
                    bare += start.elapsed();
                    let start = Instant::now();
                    layer.call(&on).await;
                    layered += start.elapsed();
                }
                kept.push(layered.as_secs_f64() / bare.as_secs_f64());
            }
        }
    });
    if !measure {
        return;
    }
    println!("median over {rounds} rounds of {pairs} pairs, layer / bare_wasmtime:");
    for (layer, mut kept) in layers.into_iter().zip(ratios) {
        kept.sort_by(f64::total_cmp);
        println!("  {:<20} {:.3}", layer.name(), kept[kept.len() / 2]);
    }
}
