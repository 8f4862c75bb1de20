//! The servers the bench calls: the bare baseline (rmcp's server over
//! bare wasmtime), the plain HTTP floor, and the gateway.

use super::*;

// ---------------------------------------------------------------------
// The bare baseline: rmcp's server, bare wasmtime.

/// The least state a WASI component needs.
pub(crate) struct Bare {
    pub(crate) ctx: WasiCtx,
    pub(crate) table: ResourceTable,
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
pub(crate) struct BareTool {
    pub(crate) engine: PluginEngine,
    pub(crate) pre: Arc<PluginPre<Bare>>,
}

impl BareTool {
    pub(crate) fn new(engine: &PluginEngine) -> BareTool {
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
    pub(crate) async fn call(&self, arguments: &str) -> Result<String, String> {
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
pub(crate) enum BareServer {
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
pub(crate) async fn serve_bare(server: BareServer, shutdown: CancellationToken) -> SocketAddr {
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
pub(crate) const FLOOR_ANSWER: &str = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"Hello, bench!"}],"isError":false}}"#;

/// Serves a fixed answer to every request, after reading its body, the
/// way the other servers serve (hyper's HTTP/1.1 connections, no delay):
/// the floor of a loopback HTTP round trip, with no MCP and no tool.
pub(crate) async fn serve_floor(shutdown: CancellationToken) -> SocketAddr {
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
pub(crate) async fn serve_gateway(
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
