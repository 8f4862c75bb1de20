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
// The bare baseline: rmcp's server, bare wasmtime.

/// The least state a WASI component needs.
struct Bare {
    ctx: WasiCtx,
    table: ResourceTable,
}

impl WasiView for Bare {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.ctx,
            table: &mut self.table,
        }
    }
}

/// The hello component, pre-linked once; a fresh store per call.
#[derive(Clone)]
struct BareTool {
    engine: PluginEngine,
    pre: Arc<PluginPre<Bare>>,
}

impl BareTool {
    fn new(engine: &PluginEngine) -> BareTool {
        let component = Component::from_file(engine.engine(), hello_wasm()).expect("component");
        let mut linker = Linker::new(engine.engine());
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).expect("wasi");
        let pre = PluginPre::new(linker.instantiate_pre(&component).expect("link")).expect("world");
        BareTool {
            engine: engine.clone(),
            pre: Arc::new(pre),
        }
    }

    /// `greet` with `arguments` (JSON), its text parts joined.
    async fn call(&self, arguments: &str) -> Result<String, String> {
        let state = Bare {
            ctx: WasiCtx::builder().build(),
            table: ResourceTable::new(),
        };
        let mut store = Store::new(self.engine.engine(), state);
        store.set_epoch_deadline(u64::MAX / 2);
        let plugin = self
            .pre
            .instantiate_async(&mut store)
            .await
            .map_err(|e| e.to_string())?;
        let result = plugin
            .call_call(&mut store, "{}", "hello", "greet", arguments)
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("{e:?}"))?;
        let mut text = String::new();
        for part in result.content {
            if let ContentPart::Text(part) = part {
                text.push_str(&part);
            }
        }
        Ok(text)
    }
}

/// A bare rmcp server with one tool, run by bare wasmtime or, to split
/// the gateway's cost, by the host's invoker.
#[derive(Clone)]
enum BareServer {
    /// (c): the component in a fresh store.
    Wasmtime(BareTool),
    /// `Host::invoke` and the untrusted block, as the gateway answers
    /// (text and structured content), without the gateway.
    Invoker(Host),
}

impl ServerHandler for BareServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("bare", "0"))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if request.name != WIRE_NAME {
            return Err(McpError::invalid_params("no such tool", None));
        }
        let arguments = request.arguments.unwrap_or_default();
        let result = match self {
            BareServer::Wasmtime(tool) => {
                let arguments = serde_json::to_string(&arguments)
                    .map_err(|e| McpError::internal_error(e.to_string(), None))?;
                let text = tool
                    .call(&arguments)
                    .await
                    .map_err(|e| McpError::internal_error(e, None))?;
                CallToolResult::success(vec![ContentBlock::text(text)])
            }
            BareServer::Invoker(host) => {
                let call = ToolCall {
                    id: "7".into(),
                    name: "hello/hello.greet".into(),
                    arguments: serde_json::Value::Object(arguments),
                };
                let outcome = host.invoke(&call).await;
                let content = vec![ContentBlock::text(outcome.render())];
                let mut result = if outcome.is_error() {
                    CallToolResult::error(content)
                } else {
                    CallToolResult::success(content)
                };
                result.structured_content = outcome.structured().cloned();
                result
            }
        };
        Ok(CallToolResponse::Complete(result))
    }
}

/// Serves the bare server on a loopback port the way the gateway serves
/// (hyper's HTTP/1.1 connections, no delay, rmcp's checks of `Host` and
/// `Origin`), until `shutdown`.
async fn serve_bare(server: BareServer, shutdown: CancellationToken) -> SocketAddr {
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(["localhost", "127.0.0.1", "::1", "[::1]"])
        .enforce_origin_validation()
        .with_max_request_body_bytes(1 << 20)
        .with_json_response(true)
        .with_cancellation_token(shutdown.child_token());
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let service = hyper_util::service::TowerToHyperService::new(service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (stream, _) = tokio::select! {
                accepted = listener.accept() => accepted.expect("accept"),
                () = shutdown.cancelled() => return,
            };
            let _ = stream.set_nodelay(true);
            let service = service.clone();
            tokio::spawn(async move {
                let mut builder = hyper::server::conn::http1::Builder::new();
                builder
                    .timer(TokioTimer::new())
                    .header_read_timeout(Duration::from_secs(10));
                let _ = builder
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

/// The answer of the floor server: a `tools/call` result as the bare
/// server's, made once.
const FLOOR_ANSWER: &str = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"Hello, bench!"}],"isError":false}}"#;

/// Serves a fixed answer to every request, after reading its body, the
/// way the other servers serve (hyper's HTTP/1.1 connections, no delay):
/// the floor of a loopback HTTP round trip, with no MCP and no tool.
async fn serve_floor(shutdown: CancellationToken) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (stream, _) = tokio::select! {
                accepted = listener.accept() => accepted.expect("accept"),
                () = shutdown.cancelled() => return,
            };
            let _ = stream.set_nodelay(true);
            tokio::spawn(async move {
                let service = hyper::service::service_fn(
                    |request: Request<hyper::body::Incoming>| async move {
                        let body = request.into_body().collect().await?.to_bytes();
                        std::hint::black_box(body);
                        let mut response = http::Response::new(Full::new(Bytes::from_static(
                            FLOOR_ANSWER.as_bytes(),
                        )));
                        response.headers_mut().insert(
                            header::CONTENT_TYPE,
                            HeaderValue::from_static("application/json"),
                        );
                        Ok::<_, hyper::Error>(response)
                    },
                );
                let mut builder = hyper::server::conn::http1::Builder::new();
                builder
                    .timer(TokioTimer::new())
                    .header_read_timeout(Duration::from_secs(10));
                let _ = builder
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

// ---------------------------------------------------------------------
// The gateway.

/// A gateway over `host` with the `[serve]` of `toml`, serving on a
/// loopback port until `shutdown`.
async fn serve_gateway(
    host: Host,
    toml: &str,
    tokens: Option<&str>,
    shutdown: &CancellationToken,
) -> SocketAddr {
    let table: toml::Table = toml::from_str(toml).unwrap();
    let config = ServeConfig::from_table(table.get("serve").and_then(|v| v.as_table())).unwrap();
    let gateway = Gateway::new(host, config).unwrap();
    let mut options = HttpOptions::new("127.0.0.1:0".parse().unwrap());
    options.tokens = tokens.map(|text| Tokens::parse(text).unwrap());
    let bound = gateway.bind_http(options, shutdown.clone()).await.unwrap();
    let addr = bound.local_addr().unwrap();
    tokio::spawn(bound.serve(shutdown.clone()));
    addr
}

// ---------------------------------------------------------------------
// The client.

/// What a client sends: where, its headers and its body.
struct Target {
    addr: SocketAddr,
    headers: HeaderMap,
    body: Bytes,
}

impl Target {
    /// A stateless 2026-07-28 `tools/call` of the tool the client names
    /// `name`, with `token` as a bearer token.
    fn call(addr: SocketAddr, name: &str, token: Option<&str>) -> Arc<Target> {
        let body = json!({
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {
                "name": name,
                "arguments": {"name": "bench"},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            },
        });
        let mut headers = base_headers(addr);
        headers.insert(
            "mcp-protocol-version",
            HeaderValue::from_static("2026-07-28"),
        );
        headers.insert("mcp-method", HeaderValue::from_static("tools/call"));
        headers.insert("mcp-name", HeaderValue::from_str(name).unwrap());
        if let Some(token) = token {
            let value = HeaderValue::from_str(&format!("Bearer {token}")).unwrap();
            headers.insert(header::AUTHORIZATION, value);
        }
        Arc::new(Target {
            addr,
            headers,
            body: Bytes::from(body.to_string()),
        })
    }
}

/// The headers of every POST to `/mcp`.
fn base_headers(addr: SocketAddr) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        header::HOST,
        HeaderValue::from_str(&addr.to_string()).unwrap(),
    );
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(
        header::ACCEPT,
        HeaderValue::from_static("application/json, text/event-stream"),
    );
    headers
}

/// One keep-alive HTTP/1.1 connection.
struct Client {
    send: SendRequest<Full<Bytes>>,
    target: Arc<Target>,
}

impl Client {
    /// Connects to `target`; the connection is driven on the runtime this
    /// runs in.
    async fn connect(target: Arc<Target>) -> Client {
        let stream = tokio::net::TcpStream::connect(target.addr).await.unwrap();
        stream.set_nodelay(true).unwrap();
        let (send, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .unwrap();
        tokio::spawn(connection);
        Client { send, target }
    }

    /// `n` connections to `target`.
    async fn connect_many(target: &Arc<Target>, n: usize) -> Vec<Client> {
        let mut clients = Vec::with_capacity(n);
        for _ in 0..n {
            clients.push(Client::connect(target.clone()).await);
        }
        clients
    }

    /// A POST of `body` with `headers`: the status, headers and the whole
    /// body.
    async fn post(&mut self, headers: HeaderMap, body: Bytes) -> (StatusCode, HeaderMap, Bytes) {
        self.send.ready().await.expect("the connection is open");
        let mut request = Request::post(MCP_PATH).body(Full::new(body)).unwrap();
        *request.headers_mut() = headers;
        let response = self.send.send_request(request).await.expect("a response");
        let (parts, body) = response.into_parts();
        let body = body.collect().await.expect("the body").to_bytes();
        (parts.status, parts.headers, body)
    }

    /// The target's call, checked: a greeting, not an error.
    async fn call(&mut self) {
        let (headers, body) = (self.target.headers.clone(), self.target.body.clone());
        let (status, _, body) = self.post(headers, body).await;
        let ok = status == StatusCode::OK
            && std::str::from_utf8(&body)
                .is_ok_and(|text| text.contains(GREETING) && !text.contains("\"isError\":true"));
        assert!(ok, "{status}: {}", String::from_utf8_lossy(&body));
    }
}

// ---------------------------------------------------------------------
// Recording and reporting.

/// Every routine run of one row: its wall time and each call's latency.
#[derive(Default)]
struct Row {
    runs: Vec<(Duration, Vec<Duration>)>,
}

/// The rows, in the order they ran.
#[derive(Default)]
struct Rows(RefCell<Vec<(String, Row)>>);

impl Rows {
    fn record(&self, row: &str, wall: Duration, calls: Vec<Duration>) {
        let mut rows = self.0.borrow_mut();
        if rows.last().is_none_or(|(name, _)| name != row) {
            rows.push((row.to_owned(), Row::default()));
        }
        rows.last_mut().unwrap().1.runs.push((wall, calls));
    }
}

/// What the table shows of a row.
struct Summary {
    calls: usize,
    per_second: f64,
    median: Duration,
    p99: Duration,
}

impl Row {
    /// Over the measurement (the last `SAMPLES` runs).
    fn summary(&self) -> Summary {
        let measured = &self.runs[self.runs.len().saturating_sub(SAMPLES)..];
        let wall: Duration = measured.iter().map(|(wall, _)| *wall).sum();
        let mut calls: Vec<Duration> = measured.iter().flat_map(|(_, c)| c.clone()).collect();
        calls.sort_unstable();
        let at = |q: f64| calls[((calls.len() as f64 * q) as usize).min(calls.len() - 1)];
        Summary {
            calls: calls.len(),
            per_second: calls.len() as f64 / wall.as_secs_f64(),
            median: at(0.5),
            p99: at(0.99),
        }
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Per-sample figures of a paired row: one value per way.
struct Pairs {
    /// The row.
    name: String,
    /// Each way's label, in the order they run.
    labels: Vec<&'static str>,
    /// Per sample, each way's time per iteration.
    samples: RefCell<Vec<Vec<Duration>>>,
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

// ---------------------------------------------------------------------
// Idle sessions.

/// The process's resident set and malloc heap in use, in bytes.
fn memory() -> (u64, Option<u64>) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let rss = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .map_or(0, |kib| kib * 1024);
    (rss, heap_in_use())
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn heap_in_use() -> Option<u64> {
    // SAFETY: mallinfo2 only reads the allocator's statistics.
    let info = unsafe { libc::mallinfo2() };
    Some((info.uordblks + info.hblkhd) as u64)
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn heap_in_use() -> Option<u64> {
    None
}

/// Opens `k` 2025-11-25 sessions on `addr` over 8 connections and leaves
/// them idle.
async fn open_sessions(addr: SocketAddr, k: usize) {
    let initialize = Bytes::from(
        json!({
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "0"},
            },
        })
        .to_string(),
    );
    let initialized =
        Bytes::from(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string());
    let target = Arc::new(Target {
        addr,
        headers: base_headers(addr),
        body: Bytes::new(),
    });
    let connections = 8.min(k.max(1));
    let tasks: Vec<_> = (0..connections)
        .map(|i| {
            let (target, initialize, initialized) =
                (target.clone(), initialize.clone(), initialized.clone());
            tokio::spawn(async move {
                let mut client = Client::connect(target.clone()).await;
                for _ in (i..k).step_by(connections) {
                    let (status, headers, body) = client
                        .post(target.headers.clone(), initialize.clone())
                        .await;
                    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
                    let id = headers.get("mcp-session-id").expect("a session id").clone();
                    let mut then = target.headers.clone();
                    then.insert("mcp-session-id", id);
                    then.insert(
                        "mcp-protocol-version",
                        HeaderValue::from_static("2025-11-25"),
                    );
                    let (status, _, body) = client.post(then, initialized.clone()).await;
                    assert!(
                        status.is_success(),
                        "{status}: {}",
                        String::from_utf8_lossy(&body)
                    );
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
}

/// What one step of idle sessions cost, per session.
struct SessionFigure {
    /// Which server.
    server: &'static str,
    /// Which step.
    step: usize,
    /// The sessions opened in it.
    opened: usize,
    /// Bytes of resident set per session.
    rss: f64,
    /// Bytes of malloc heap in use per session, where glibc says.
    heap: Option<f64>,
}

/// How criterion runs: `Some(true)` measuring (`cargo bench`), `Some(false)`
/// in its test mode (`cargo test --bench`, or `-- --test`), `None` listing.
fn measuring() -> Option<bool> {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| args.iter().any(|a| a == name);
    if flag("--list") {
        return None;
    }
    Some(flag("--bench") && !flag("--test"))
}

/// Opens sessions in two steps of K on the gateway, then on the bare
/// server, reading the process's memory around each step (K = 3 in
/// criterion's test mode, which only checks that sessions open).
fn idle_sessions(setup: &Setup, measuring: bool) -> Vec<SessionFigure> {
    let (k, settle) = if measuring {
        (1000, Duration::from_millis(300))
    } else {
        (3, Duration::ZERO)
    };
    let mut figures = Vec::new();
    for (server, target) in [("gateway", &setup.plain), ("bare rmcp", &setup.bare)] {
        for step in 1..=2 {
            setup
                .client
                .block_on(async { tokio::time::sleep(settle).await });
            let before = memory();
            setup.client.block_on(open_sessions(target.addr, k));
            setup
                .client
                .block_on(async { tokio::time::sleep(settle).await });
            let after = memory();
            let rss = (after.0 as f64 - before.0 as f64) / k as f64;
            let heap = after
                .1
                .zip(before.1)
                .map(|(a, b)| (a as f64 - b as f64) / k as f64);
            figures.push(SessionFigure {
                server,
                step,
                opened: k,
                rss,
                heap,
            });
        }
    }
    figures
}

// ---------------------------------------------------------------------

fn report(rows: &Rows, pairs: &[Pairs], sessions: &[SessionFigure]) {
    let rows = rows.0.borrow();
    println!();
    println!("Per-call figures over criterion's measurement samples (warm-up left out):");
    println!();
    println!(
        "| {:<42} | {:>8} | {:>10} | {:>10} | {:>10} |",
        "row", "calls", "calls/s", "median", "p99"
    );
    println!(
        "|{:-<44}|{:->10}|{:->12}|{:->12}|{:->12}|",
        "", "", "", "", ""
    );
    let mut summaries = std::collections::HashMap::new();
    for (name, row) in rows.iter() {
        if row.runs.is_empty() {
            continue;
        }
        let s = row.summary();
        println!(
            "| {:<42} | {:>8} | {:>10.0} | {:>7.1} µs | {:>7.1} µs |",
            name,
            s.calls,
            s.per_second,
            micros(s.median),
            micros(s.p99)
        );
        summaries.insert(name.clone(), s);
    }
    println!();
    for clients in ["call_1_client", "call_16_clients"] {
        let get = |way: &str| summaries.get(&format!("{clients}/{way}"));
        if let (Some(a), Some(b), Some(c), Some(t), Some(s)) = (
            get("host_invoke_render"),
            get("gateway_http"),
            get("bare_rmcp_http"),
            get("gateway_tokens"),
            get("gateway_client_set"),
        ) {
            println!(
                "{clients}: throughput gateway/bare {:.3}; protocol (b - a) {:.1} µs median; \
                 tokens/plain throughput {:.3}, set/plain {:.3}",
                b.per_second / c.per_second,
                micros(b.median) - micros(a.median),
                t.per_second / b.per_second,
                s.per_second / b.per_second,
            );
        }
    }
    println!();
    for pairs in pairs {
        let (name, samples) = (&pairs.name, pairs.samples.borrow());
        // The measurement: the last SAMPLES runs (the warm-up's before).
        let samples = &samples[samples.len().saturating_sub(SAMPLES)..];
        if samples.is_empty() {
            continue;
        }
        let ways = samples[0].len();
        let medians: Vec<f64> = (0..ways)
            .map(|i| median(samples.iter().map(|s| micros(s[i])).collect()))
            .collect();
        let ratios: Vec<f64> = (1..ways)
            .map(|i| {
                median(
                    samples
                        .iter()
                        .map(|s| micros(s[i]) / micros(s[0]))
                        .collect(),
                )
            })
            .collect();
        let labels = &pairs.labels;
        let said: Vec<String> = labels
            .iter()
            .zip(&medians)
            .map(|(label, m)| format!("{label} {m:.2} µs"))
            .collect();
        let over: Vec<String> = labels[1..]
            .iter()
            .zip(&ratios)
            .map(|(label, r)| format!("{label}/{} {r:.3} (throughput {:.3})", labels[0], 1.0 / r))
            .collect();
        println!(
            "{name}: medians over {} samples of the time per iteration: {}; \
             medians of the per-sample time ratios: {}",
            samples.len(),
            said.join(", "),
            over.join(", "),
        );
    }
    println!();
    for SessionFigure {
        server,
        step,
        opened,
        rss,
        heap,
    } in sessions
    {
        let heap = heap.map_or_else(|| "n/a".to_owned(), |h| format!("{:.1} KiB", h / 1024.0));
        println!(
            "idle sessions, {server}, step {step} ({opened} opened): RSS {:.1} KiB, heap {heap} \
             per session",
            rss / 1024.0
        );
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
