//! MCP calls through the host against a bare rmcp client, side by side,
//! on npm's server-everything over stdio (`echo`).
//!
//! - `bare_rmcp`: an rmcp client with no handler of its own, on the same
//!   kind of transport (the child's pipes), one persistent session:
//!   `tools/call` and nothing else.
//! - `host_invoke_render`: `Host::invoke` (lookup, validation, the pin
//!   check, the session's call, result conversion, output check) and the
//!   untrusted block.
//! - `paired_host_over_bare`: both back to back in every iteration; prints
//!   the medians and the ratio.
//! - `paired_unconfined_over_bare`: the same with the host starting `node`
//!   unconfined (`confinement = "none"`), as the bare client starts it:
//!   the host's own work apart from the confinement's.
//! - `paired_source_over_bare`: the bare call, and the MCP source's own
//!   call (`ToolSource::call`, without the invoker): how much of the
//!   host's part is the source's.
//! - `paired_second_bare_over_bare`: the bare call, and the same call on a
//!   second bare client with its own `node`: the ratio of two sessions
//!   that do the same work (the floor the other ratios are read against).
//! - `paired_own_session_bare_over_bare`: the same, with the second
//!   `node` started in a session of its own (`setsid`), as the host starts
//!   every program: on a kernel with autogroup scheduling
//!   (`/proc/sys/kernel/sched_autogroup_enabled`) each session is a
//!   scheduling group, so this is the floor the host's rows meet on a
//!   busy machine (`docs/performance.md`, "A busy machine").
//! - `paired_timed_bare_over_bare`: the bare call, and the bare call with
//!   a 30 s deadline (`tokio::time::timeout_at`, as the host gives each
//!   call): what registering a timer per call costs on this runtime.
//! - Each paired row whose two clients have servers of their own also
//!   prints each server's CPU time per call (`common/servers.rs`): the
//!   CPU columns hold the bench process only.
//! - `session_per_call`: what a client without persistent sessions pays
//!   per call: start the program, initialise, call, close.
//! - `iteration_relist`: `begin_iteration` then a call (so a `tools/list`
//!   of the whole server first), against `host_invoke_render`.
//! - `host_start_10_locked`: a host whose 10 servers are all in the lock,
//!   started as the CLI starts (a fresh engine over the compile cache):
//!   the registry is ready and no program has started (asserted).
//!
//! Run: `cargo bench -p tiny-harness-host --bench mcp`.

// A benchmark or example that cannot set up has nothing to measure or
// show: it stops at once, saying where.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use rmcp::model::CallToolRequestParams;
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService};
use rmcp::transport::async_rw::AsyncRwTransport;
use serde_json::json;
use tiny_harness_core::source::ToolSource;
use tiny_harness_host::{CompileCache, Host, HostBuilder, PluginEngine, PluginSpec, ToolCall};
use tiny_harness_mcp::State;
use tiny_harness_sandbox::confine::Mode;
use tiny_harness_sandbox::grant::ExecGrant;

#[path = "../../tests/all/common/npm.rs"]
mod npm;
#[path = "common/pairs.rs"]
mod pairs;
#[path = "common/servers.rs"]
mod servers;

use pairs::{median, paired, report_pairs};
use servers::{Servers, report_servers, started_by};

fn mcp_wasm() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../target/wasm-plugins/wasm32-wasip2/release"
    ))
    .join("mcp.wasm")
}

/// `node`, which may read the server's package when it runs confined.
fn node() -> ExecGrant {
    ExecGrant::resolve("node", Path::new("."), std::env::var_os("PATH").as_deref())
        .expect("node")
        .allow_read(npm::servers_dir())
        .expect("tests/mcp")
}

/// The mcp plugin with `servers` copies of server-everything.
fn spec(servers: usize) -> PluginSpec {
    let js = npm::everything_js();
    let mut entries = serde_json::Map::new();
    for i in 0..servers {
        entries.insert(
            format!("everything{i}"),
            json!({"command": "node", "args": [js, "stdio"]}),
        );
    }
    let mut spec = PluginSpec::new("mcp", mcp_wasm());
    spec.config = json!({ "mcpServers": entries });
    spec.grants.add_exec(node()).expect("one grant");
    spec
}

async fn start_host(servers: usize, lock: Option<&Path>) -> Host {
    start_host_with(HostBuilder::new(), servers, lock).await
}

async fn start_host_with(mut builder: HostBuilder, servers: usize, lock: Option<&Path>) -> Host {
    if let Some(lock) = lock {
        builder = builder.lock_file(lock);
    }
    builder.plugin(spec(servers)).build().await.expect("load")
}

/// A bare rmcp client session with server-everything, negotiated as the
/// host negotiates it.
/// A bare rmcp session on its own `node`; with `own_session`, `node`
/// starts in a session of its own, as the host starts every program
/// (decision 0011), so that the kernel schedules it as the host's servers.
async fn bare_session(
    own_session: bool,
) -> (RunningService<RoleClient, ()>, tokio::process::Child) {
    let mut command = tokio::process::Command::new(node().program());
    if own_session {
        // SAFETY: `setsid` is one system call on no memory of ours.
        unsafe {
            command.pre_exec(|| {
                if libc::setsid() < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let mut child = command
        .arg(npm::everything_js())
        .arg("stdio")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("node");
    if own_session {
        // A row whose `setsid` did not take would measure the floor twice.
        let pid = libc::pid_t::try_from(child.id().expect("node runs")).unwrap();
        // SAFETY: `getsid` reads a process's session id; no memory of ours.
        assert_eq!(unsafe { libc::getsid(pid) }, pid, "node leads a session");
    }
    let transport =
        AsyncRwTransport::new_client(child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let lifecycle = ClientLifecycleMode::Auto {
        preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
        legacy_version: Some(rmcp::model::ProtocolVersion::LATEST_WITH_INITIALIZE),
    };
    let service = ().serve_with_lifecycle(transport, lifecycle).await.expect("session");
    (service, child)
}

fn echo_params() -> CallToolRequestParams {
    let arguments = json!({"message": "bench"});
    CallToolRequestParams::new("echo").with_arguments(arguments.as_object().unwrap().clone())
}

fn mcp(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (host, host_node) = started_by(|| runtime.block_on(start_host(1, None)));
    // The same, with `node` started as the bare client starts it: what the
    // host's own work costs, apart from the confinement's.
    let mut unconfined = spec(1);
    unconfined.grants.confinement = Mode::None;
    let (host_unconfined, unconfined_node) = started_by(|| {
        runtime
            .block_on(HostBuilder::new().plugin(unconfined).build())
            .expect("load")
    });
    let (bare, bare_child) = runtime.block_on(bare_session(false));
    let bare_node = bare_child.id().expect("node runs");
    let call = ToolCall {
        id: "bench".into(),
        name: "mcp/everything0.echo".into(),
        arguments: json!({"message": "bench"}),
    };

    let mut group = c.benchmark_group("mcp_call");
    group.bench_function("bare_rmcp", |b| {
        b.to_async(&runtime).iter(|| async {
            let result = bare.peer().call_tool(echo_params()).await.expect("echo");
            std::hint::black_box(echoed(result))
        });
    });
    group.bench_function("host_invoke_render", |b| {
        b.to_async(&runtime).iter(|| async {
            let outcome = host.invoke(&call).await;
            assert!(!outcome.is_error(), "{}", outcome.render());
            outcome.render().len()
        });
    });
    let (confined, confined_servers) = served_pairs(
        (&mut group, &runtime),
        "paired_host_over_bare",
        (bare_node, host_node),
        async || bare_echo(&bare).await,
        async || host_echo(&host, &call).await,
    );
    let (unconfined, unconfined_servers) = served_pairs(
        (&mut group, &runtime),
        "paired_unconfined_over_bare",
        (bare_node, unconfined_node),
        async || bare_echo(&bare).await,
        async || host_echo(&host_unconfined, &call).await,
    );
    // The MCP source's own call, without the invoker (no registry,
    // validation, recorder or render): what of the host's part is the
    // source's.
    let (_, source) = host.mcp_sources().into_iter().next().expect("a source");
    let arguments = json!({"message": "bench"});
    let (source_only, source_servers) = served_pairs(
        (&mut group, &runtime),
        "paired_source_over_bare",
        (bare_node, host_node),
        async || bare_echo(&bare).await,
        async || {
            let deadline = Instant::now() + Duration::from_secs(30);
            let result = source
                .call("everything0", "echo", &arguments, deadline)
                .await;
            assert!(!result.expect("echo").is_error);
        },
    );
    // Two bare clients, each with its own `node`: what pairing two
    // sessions shows when neither does more than the other (the floor a
    // ratio of the rows above is read against).
    let (second_bare, second_child) = runtime.block_on(bare_session(false));
    let (floor, floor_servers) = served_pairs(
        (&mut group, &runtime),
        "paired_second_bare_over_bare",
        (bare_node, second_child.id().expect("node runs")),
        async || bare_echo(&bare).await,
        async || bare_echo(&second_bare).await,
    );
    // The same, with the second `node` in a session of its own, as the
    // host starts its servers: under autogroup scheduling it is then a
    // scheduling group of its own, which the host's rows share.
    let (own_bare, own_child) = runtime.block_on(bare_session(true));
    let (own, own_servers) = served_pairs(
        (&mut group, &runtime),
        "paired_own_session_bare_over_bare",
        (bare_node, own_child.id().expect("node runs")),
        async || bare_echo(&bare).await,
        async || bare_echo(&own_bare).await,
    );
    // The bare call with a deadline, as the host gives each call: what a
    // timer registered per call costs on this runtime.
    let timed = paired(
        &mut group,
        &runtime,
        "paired_timed_bare_over_bare",
        async || bare_echo(&bare).await,
        async || {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
            let call = bare.peer().call_tool(echo_params());
            let result = tokio::time::timeout_at(deadline, call)
                .await
                .expect("in time")
                .expect("echo");
            std::hint::black_box(echoed(result));
        },
    );
    group.bench_function("iteration_relist", |b| {
        b.to_async(&runtime).iter(|| async {
            host.begin_iteration();
            let outcome = host.invoke(&call).await;
            assert!(!outcome.is_error());
            outcome.render().len()
        });
    });
    group.finish();
    report_pairs("bare_rmcp", "host_invoke_render", &confined);
    report_servers("bare_rmcp", "host_invoke_render", confined_servers);
    report_pairs(
        "bare_rmcp",
        "host_invoke_render (node unconfined)",
        &unconfined,
    );
    report_servers("bare_rmcp", "host_invoke_render", unconfined_servers);
    report_pairs("bare_rmcp", "the MCP source's call alone", &source_only);
    report_servers("bare_rmcp", "the MCP source", source_servers);
    report_pairs("bare_rmcp", "bare_rmcp with a deadline", &timed);
    report_pairs("bare_rmcp", "a second bare_rmcp", &floor);
    report_servers("bare_rmcp", "a second bare_rmcp", floor_servers);
    report_pairs("bare_rmcp", "bare_rmcp, node in a session of its own", &own);
    report_servers("bare_rmcp", "the one in a session of its own", own_servers);

    let mut slow = c.benchmark_group("mcp_session");
    slow.sample_size(10);
    let per_call = std::cell::RefCell::new(Vec::new());
    slow.bench_function("session_per_call", |b| {
        b.to_async(&runtime).iter_custom(|iters| {
            let per_call = &per_call;
            async move {
                let start = Instant::now();
                for _ in 0..iters {
                    let (session, child) = bare_session(false).await;
                    let result = session.peer().call_tool(echo_params()).await.expect("echo");
                    std::hint::black_box(echoed(result));
                    let _ = session.cancel().await;
                    drop(child);
                }
                let each = start.elapsed();
                per_call.borrow_mut().push(each / iters as u32);
                each
            }
        });
    });
    let dir = tempfile::tempdir().unwrap();
    let lock = dir.path().join("tiny-harness.lock");
    let first = runtime.block_on(start_host(10, Some(&lock)));
    assert!(lock.exists());
    runtime.block_on(first.shutdown());
    drop(first);
    // As the CLI starts: a fresh engine over the compile cache, so the
    // plugin's machine code is loaded, not compiled.
    let cache = tempfile::tempdir().unwrap();
    let engine = || {
        let cache = CompileCache::new(cache.path().to_owned());
        HostBuilder::new().engine(PluginEngine::with_compile_cache(Some(cache)).expect("engine"))
    };
    runtime.block_on(start_host_with(engine(), 10, Some(&lock)));
    slow.bench_function("host_start_10_locked", |b| {
        b.to_async(&runtime).iter(|| async {
            let host = start_host_with(engine(), 10, Some(&lock)).await;
            assert_eq!(host.registry().len(), 130, "every tool, from the lock");
            assert!(
                host.mcp_sources()
                    .iter()
                    .all(|(_, s)| s.status().state == State::NotStarted),
                "a locked server was started"
            );
            host
        });
    });
    slow.finish();
    let persistent = median(
        std::mem::take(&mut *per_call.borrow_mut())
            .into_iter()
            .map(|d| d.as_secs_f64() * 1e6)
            .collect(),
    );
    if persistent.is_finite() {
        eprintln!("session_per_call median {persistent:.0} µs per call");
    }
    runtime.block_on(host.shutdown());
    runtime.block_on(host_unconfined.shutdown());
}

/// A paired row of two clients whose servers (`servers`: the first's and
/// the second's pids) are their own: both calls back to back in every
/// iteration, so that both see the same machine; returns each sample's two
/// means, and each server's CPU time per call over the row.
fn served_pairs(
    (group, runtime): (
        &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
        &tokio::runtime::Runtime,
    ),
    name: &str,
    (first_server, second_server): (u32, u32),
    first: impl AsyncFn(),
    second: impl AsyncFn(),
) -> (Vec<pairs::Pair>, Option<(f64, f64)>) {
    let servers = Servers::new(first_server, second_server);
    servers.around(|| {
        paired(group, runtime, name, first, async || {
            servers.served();
            second().await;
        })
    })
}

/// One call of `call` through `host`, checked: measuring an error path
/// would say nothing of a call.
async fn host_echo(host: &Host, call: &ToolCall) {
    let outcome = host.invoke(call).await;
    std::hint::black_box(outcome.render());
    assert!(!outcome.is_error(), "{}", outcome.render());
}

criterion_group!(benches, mcp);
criterion_main!(benches);

/// One bare `echo` call on `bare`, checked.
async fn bare_echo(bare: &RunningService<RoleClient, ()>) {
    let result = bare.peer().call_tool(echo_params()).await.expect("echo");
    std::hint::black_box(echoed(result));
}

/// `result`, which must be the echo, not an error: a row that measured an
/// error path would say nothing of a call.
fn echoed(result: rmcp::model::CallToolResult) -> rmcp::model::CallToolResult {
    assert_ne!(result.is_error, Some(true), "{result:?}");
    result
}
