//! The bench's client (keep-alive HTTP/1.1, one connection per
//! client) and the recording of every call's latency.

use super::*;

// ---------------------------------------------------------------------
// The client.

/// What a client sends: where, its headers and its body.
pub(crate) struct Target {
    pub(crate) addr: SocketAddr,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

impl Target {
    /// A stateless 2026-07-28 `tools/call` of the tool the client names
    /// `name`, with `token` as a bearer token.
    pub(crate) fn call(addr: SocketAddr, name: &str, token: Option<&str>) -> Arc<Target> {
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
pub(crate) fn base_headers(addr: SocketAddr) -> HeaderMap {
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
pub(crate) struct Client {
    pub(crate) send: SendRequest<Full<Bytes>>,
    pub(crate) target: Arc<Target>,
}

impl Client {
    /// Connects to `target`; the connection is driven on the runtime this
    /// runs in.
    pub(crate) async fn connect(target: Arc<Target>) -> Client {
        let stream = tokio::net::TcpStream::connect(target.addr).await.unwrap();
        stream.set_nodelay(true).unwrap();
        let (send, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .unwrap();
        tokio::spawn(connection);
        Client { send, target }
    }

    /// `n` connections to `target`.
    pub(crate) async fn connect_many(target: &Arc<Target>, n: usize) -> Vec<Client> {
        let mut clients = Vec::with_capacity(n);
        for _ in 0..n {
            clients.push(Client::connect(target.clone()).await);
        }
        clients
    }

    /// A POST of `body` with `headers`: the status, headers and the whole
    /// body.
    pub(crate) async fn post(
        &mut self,
        headers: HeaderMap,
        body: Bytes,
    ) -> (StatusCode, HeaderMap, Bytes) {
        self.send.ready().await.expect("the connection is open");
        let mut request = Request::post(MCP_PATH).body(Full::new(body)).unwrap();
        *request.headers_mut() = headers;
        let response = self.send.send_request(request).await.expect("a response");
        let (parts, body) = response.into_parts();
        let body = body.collect().await.expect("the body").to_bytes();
        (parts.status, parts.headers, body)
    }

    /// The target's call, checked: a greeting, not an error.
    pub(crate) async fn call(&mut self) {
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
pub(crate) struct Row {
    pub(crate) runs: Vec<(Duration, Vec<Duration>)>,
}

/// The rows, in the order they ran.
#[derive(Default)]
pub(crate) struct Rows(pub(crate) RefCell<Vec<(String, Row)>>);

impl Rows {
    pub(crate) fn record(&self, row: &str, wall: Duration, calls: Vec<Duration>) {
        let mut rows = self.0.borrow_mut();
        if rows.last().is_none_or(|(name, _)| name != row) {
            rows.push((row.to_owned(), Row::default()));
        }
        rows.last_mut().unwrap().1.runs.push((wall, calls));
    }
}

/// What the table shows of a row.
pub(crate) struct Summary {
    pub(crate) calls: usize,
    pub(crate) per_second: f64,
    pub(crate) median: Duration,
    pub(crate) p99: Duration,
}

impl Row {
    /// Over the measurement (the last `SAMPLES` runs).
    pub(crate) fn summary(&self) -> Summary {
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

pub(crate) fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

pub(crate) fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Per-sample figures of a paired row: one value per way.
pub(crate) struct Pairs {
    /// The row.
    pub(crate) name: String,
    /// Each way's label, in the order they run.
    pub(crate) labels: Vec<&'static str>,
    /// Per sample, each way's time per iteration.
    pub(crate) samples: RefCell<Vec<Vec<Duration>>>,
}
