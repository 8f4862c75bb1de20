//! A trivial sandboxed tool call (`hello/hello.greet` of `plugins/hello`)
//! through the gateway over streamable HTTP, against the in-process
//! invoker and a bare rmcp server over bare wasmtime, side by side, at 1
//! and at 16 concurrent clients.
//!
//! - `host_invoke_render` (a): `Host::invoke` and the untrusted block, in
//!   process: what the protocol costs is the gateway's row minus this.
//! - `gateway_http` (b): a stateless 2026-07-28 `tools/call` POST to a
//!   [`Gateway`] on loopback (`bind_http`, the anonymous client, no
//!   tokens), over one keep-alive HTTP/1.1 connection per client (hyper's
//!   client), the answer read whole.
//! - `bare_rmcp_http` (c): the same POST to rmcp's `StreamableHttpService`
//!   served the same way (hyper, HTTP/1.1, rmcp configured as the gateway
//!   configures it, a stateless answer as one JSON body), whose
//!   `call_tool` instantiates the same component with bare wasmtime (a
//!   fresh `Store` per call, the `InstancePre` made once, as
//!   `host/benches/invoke.rs`'s `bare_wasmtime`): what our layers cost is
//!   (b) relative to this.
//! - `http_floor`: the same POST to a hyper server that reads the body and
//!   answers a fixed result: a loopback HTTP round trip with no MCP and no
//!   tool, so that (c) minus this is rmcp's streamable HTTP.
//! - `rmcp_invoker_http`: the bare rmcp server whose `call_tool` is
//!   `Host::invoke` and the untrusted block, answered as the gateway
//!   answers (text and structured content): what lies between (c) and
//!   (b) is then split into the invoker's part and the gateway's own
//!   (its HTTP guard, routing, handler and client sets).
//! - `gateway_tokens`: (b) with a tokens file of 2 clients, each with a
//!   `[serve.clients.NAME]` entry of every tool; the call carries a token.
//! - `gateway_client_set`: the same, the calling client's entry a glob
//!   (`hello/*`) and a rename (`greet`); the call names `greet`.
//! - `paired_gateway_over_bare` (bare, rmcp and invoker, gateway) and
//!   `paired_layers` (plain, tokens, client set): those calls back to back
//!   in every iteration, so that they see the same machine; the medians and
//!   the medians of the per-sample ratios are printed at the end. These
//!   ratios are the fair comparison on a noisy machine.
//!
//! In `call_16_clients`, one criterion iteration is one call from each of
//! 16 clients: 16 tasks each make `iters` calls in a row on their own
//! connection (the in-process row spawns its 16 tasks on the server's
//! runtime). Every call's latency is recorded; the table printed to stdout
//! at the end gives each row's calls per second, median and p99 over
//! criterion's measurement samples (its warm-up is left out).
//!
//! Then the memory of idle 2025-11-25 sessions (`initialize`, then
//! `notifications/initialized`, then nothing): the process's RSS
//! (`/proc/self/status`) and its malloc heap in use, before and after
//! opening K sessions, on the gateway and on the bare server.
//!
//! The servers run on a 2-worker runtime, as `tiny-harness serve` does;
//! the clients on one more thread (a current-thread runtime). No tracing
//! subscriber is installed, so the gateway's log line per request costs
//! next to nothing here. The rate limit is raised (`requests_per_second`:
//! the default 200 would refuse most calls of one client).
//!
//! Run: `cargo bench -p tiny-harness-serve --bench gateway`.

// A benchmark that cannot set up has nothing to measure: it stops at
// once, saying where.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "gateway/client.rs"]
mod client;
#[path = "gateway/figures.rs"]
mod figures;
#[path = "gateway/servers.rs"]
mod servers;

use client::*;
use figures::*;
use servers::*;

use std::cell::RefCell;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use http::{HeaderMap, HeaderValue, Request, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::json;
use tiny_harness_host::{Host, HostBuilder, PluginEngine, PluginSpec, ToolCall};
use tiny_harness_serve::{Gateway, HttpOptions, MCP_PATH, ServeConfig, Tokens};
use tiny_harness_wasm::bindings::{ContentPart, PluginPre};
use tokio_util::sync::CancellationToken;
use wasmtime::Store;
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// Criterion's samples per row; the last this many routine runs of a row
/// are its measurement (the runs before are its warm-up), so the table
/// assumes no `--sample-size` on the command line.
const SAMPLES: usize = 50;
/// The concurrent clients of the second group.
const CLIENTS: usize = 16;
/// The tool's MCP name.
const WIRE_NAME: &str = "hello__hello.greet";
/// What every successful call's answer holds.
const GREETING: &str = "Hello, bench!";
/// Two clients' tokens.
const TOKENS: &str = "ci cccccccccccccccccccccccccccccccc\nide iiiiiiiiiiiiiiiiiiiiiiiiiiiiiiii\n";
const IDE_TOKEN: &str = "iiiiiiiiiiiiiiiiiiiiiiiiiiiiiiii";
/// Limits that let one client call as fast as it can and open many
/// sessions.
const LIMITS: &str = "[serve.limits]\nrequests_per_second = 1000000\nsessions = 65536\n";

fn hello_wasm() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../target/wasm-plugins/wasm32-wasip2/release"
    ))
    .join("hello.wasm")
}

// ---------------------------------------------------------------------
// The benchmark.

struct Setup {
    server: tokio::runtime::Runtime,
    client: tokio::runtime::Runtime,
    host: Host,
    plain: Arc<Target>,
    bare: Arc<Target>,
    floor: Arc<Target>,
    rmcp_invoker: Arc<Target>,
    tokens: Arc<Target>,
    set: Arc<Target>,
    shutdown: CancellationToken,
}

fn setup() -> Setup {
    let server = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let client = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let engine = PluginEngine::new().expect("engine");
    let host = server.block_on(
        HostBuilder::new()
            .engine(engine.clone())
            .plugin(PluginSpec::new("hello", hello_wasm()))
            .build(),
    );
    let host = host.expect("load");
    let shutdown = CancellationToken::new();
    let every = "[serve.clients.ci]\ntools = [\"*\"]\n";
    let (plain, bare, floor, rmcp_invoker, tokens, set) = server.block_on(async {
        let plain = serve_gateway(host.clone(), LIMITS, None, &shutdown).await;
        let bare = serve_bare(
            BareServer::Wasmtime(BareTool::new(&engine)),
            shutdown.clone(),
        )
        .await;
        let rmcp_invoker = serve_bare(BareServer::Invoker(host.clone()), shutdown.clone()).await;
        let floor = serve_floor(shutdown.clone()).await;
        let tokens = serve_gateway(
            host.clone(),
            &format!("{LIMITS}{every}[serve.clients.ide]\ntools = [\"*\"]\n"),
            Some(TOKENS),
            &shutdown,
        )
        .await;
        let set = serve_gateway(
            host.clone(),
            &format!(
                "{LIMITS}{every}[serve.clients.ide]\ntools = [\"hello/*\"]\n\
                 rename = {{ greet = \"hello/hello.greet\" }}\n"
            ),
            Some(TOKENS),
            &shutdown,
        )
        .await;
        (plain, bare, floor, rmcp_invoker, tokens, set)
    });
    Setup {
        server,
        client,
        host,
        plain: Target::call(plain, WIRE_NAME, None),
        bare: Target::call(bare, WIRE_NAME, None),
        floor: Target::call(floor, WIRE_NAME, None),
        rmcp_invoker: Target::call(rmcp_invoker, WIRE_NAME, None),
        tokens: Target::call(tokens, WIRE_NAME, Some(IDE_TOKEN)),
        set: Target::call(set, "greet", Some(IDE_TOKEN)),
        shutdown,
    }
}

fn hello_call() -> ToolCall {
    ToolCall {
        id: "call_1".into(),
        name: "hello/hello.greet".into(),
        arguments: json!({"name": "bench"}),
    }
}

/// `iters` calls in a row on each of `clients` (spawned on the current
/// runtime), which are given back: the wall time and every latency.
async fn http_load(clients: &RefCell<Vec<Client>>, iters: u64) -> (Duration, Vec<Duration>) {
    let taken = clients.take();
    let start = Instant::now();
    let tasks: Vec<_> = taken
        .into_iter()
        .map(|mut client| {
            tokio::spawn(async move {
                let mut calls = Vec::with_capacity(iters as usize);
                for _ in 0..iters {
                    let at = Instant::now();
                    client.call().await;
                    calls.push(at.elapsed());
                }
                (client, calls)
            })
        })
        .collect();
    let mut all = Vec::new();
    let mut back = Vec::new();
    for task in tasks {
        let (client, calls) = task.await.unwrap();
        back.push(client);
        all.extend(calls);
    }
    let wall = start.elapsed();
    *clients.borrow_mut() = back;
    (wall, all)
}

/// `iters` in-process calls in a row on each of `clients` tasks spawned on
/// `runtime`: the wall time and every latency.
async fn invoker_load(
    runtime: &tokio::runtime::Handle,
    host: &Host,
    clients: usize,
    iters: u64,
) -> (Duration, Vec<Duration>) {
    let start = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|_| {
            let host = host.clone();
            runtime.spawn(async move {
                let call = hello_call();
                let mut calls = Vec::with_capacity(iters as usize);
                for _ in 0..iters {
                    let at = Instant::now();
                    let outcome = host.invoke(&call).await;
                    std::hint::black_box(outcome.render());
                    calls.push(at.elapsed());
                    assert!(!outcome.is_error(), "{}", outcome.render());
                }
                calls
            })
        })
        .collect();
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.unwrap());
    }
    (start.elapsed(), all)
}

fn gateway(c: &mut Criterion) {
    let setup = setup();
    let rows = Rows::default();
    let pairs: RefCell<Vec<Pairs>> = RefCell::new(Vec::new());
    let handle = setup.server.handle().clone();
    let client_rt = &setup.client;

    for clients in [1, CLIENTS] {
        let group_name = if clients == 1 {
            "call_1_client".to_owned()
        } else {
            format!("call_{clients}_clients")
        };
        let mut group = c.benchmark_group(&group_name);
        group.throughput(Throughput::Elements(clients as u64));
        let row = |name: &str| format!("{group_name}/{name}");

        let name = row("host_invoke_render");
        group.bench_function("host_invoke_render", |b| {
            b.to_async(client_rt).iter_custom(|iters| {
                let (rows, name, host, handle) = (&rows, &name, &setup.host, &handle);
                async move {
                    let (wall, calls) = invoker_load(handle, host, clients, iters).await;
                    rows.record(name, wall, calls);
                    wall
                }
            });
        });

        let ways = [
            ("gateway_http", &setup.plain),
            ("bare_rmcp_http", &setup.bare),
            ("http_floor", &setup.floor),
            ("rmcp_invoker_http", &setup.rmcp_invoker),
            ("gateway_tokens", &setup.tokens),
            ("gateway_client_set", &setup.set),
        ];
        for (way, target) in ways {
            let connections =
                RefCell::new(client_rt.block_on(Client::connect_many(target, clients)));
            let name = row(way);
            group.bench_function(way, |b| {
                b.to_async(client_rt).iter_custom(|iters| {
                    let (rows, name, connections) = (&rows, &name, &connections);
                    async move {
                        let (wall, calls) = http_load(connections, iters).await;
                        rows.record(name, wall, calls);
                        wall
                    }
                });
            });
        }

        // Paired: the ways of one comparison back to back in every
        // iteration (all of one way's calls, then the next way's).
        let paired = [
            (
                "paired_gateway_over_bare",
                vec![
                    ("bare", &setup.bare),
                    ("rmcp+invoker", &setup.rmcp_invoker),
                    ("gateway", &setup.plain),
                ],
            ),
            (
                "paired_layers",
                vec![
                    ("plain", &setup.plain),
                    ("tokens", &setup.tokens),
                    ("client set", &setup.set),
                ],
            ),
        ];
        for (way, targets) in paired {
            let connections: Vec<RefCell<Vec<Client>>> = targets
                .iter()
                .map(|(_, target)| {
                    RefCell::new(client_rt.block_on(Client::connect_many(target, clients)))
                })
                .collect();
            let samples = RefCell::new(Vec::new());
            group.bench_function(way, |b| {
                b.to_async(client_rt).iter_custom(|iters| {
                    let (connections, samples) = (&connections, &samples);
                    async move {
                        let mut walls = Vec::new();
                        for one in connections {
                            walls.push(http_load(one, iters).await.0 / iters as u32);
                        }
                        samples.borrow_mut().push(walls.clone());
                        walls[walls.len() - 1] * iters as u32
                    }
                });
            });
            pairs.borrow_mut().push(Pairs {
                name: row(way),
                labels: targets.iter().map(|(label, _)| *label).collect(),
                samples,
            });
        }
        group.finish();
    }

    let Some(measuring) = measuring() else {
        return;
    };
    let sessions = idle_sessions(&setup, measuring);
    setup.shutdown.cancel();
    if measuring {
        report(&rows, &pairs.into_inner(), &sessions);
    } else {
        println!("every way answered its calls and sessions opened; figures under `cargo bench`");
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(SAMPLES);
    targets = gateway
}
criterion_main!(benches);
