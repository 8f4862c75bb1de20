//! What the tests share: a real registry (Debian's docker-registry) on
//! loopback, real loopback HTTP servers that misbehave on purpose, and
//! real components built with wasm-encoder.
//!
//! Invariants: a registry started here serves only 127.0.0.1, keeps its
//! data in a temporary directory, and ends when its [`Registry`] is
//! dropped or, at the latest, when the test process ends (it is watched
//! through a pipe only this process holds), so no registry outlives the
//! tests. Nothing is skipped: a missing docker-registry is installed with
//! apt-get when the tests run as root, and is otherwise a panic that
//! says how to install it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tiny_harness_oci::{Client, Credentials, Limits, OciError, Reference, Store, Transport};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

pub use tiny_harness_oci::test_registry::Registry;

/// `oci://127.0.0.1:PORT/REST` of `registry`, parsed.
pub fn reference(registry: &Registry, rest: &str) -> Reference {
    registry.reference(rest).parse().unwrap()
}

/// A client for loopback registries.
pub fn client(limits: Limits, credentials: Credentials) -> Client {
    Client::new(limits, credentials, Transport::PlainHttp).unwrap()
}

/// Limits for tests: short times, the default sizes.
pub fn quick_limits() -> Limits {
    Limits {
        timeout: Duration::from_secs(20),
        connect_timeout: Duration::from_secs(5),
        ..Limits::default()
    }
}

/// A real component that imports the interface `import` and exports it
/// again under the name `export`: a type section with one empty instance
/// type, an import of it, an export of the import.
pub fn component(import: &str, export: &str) -> Vec<u8> {
    use wasm_encoder::{
        ComponentExportKind, ComponentExportSection, ComponentImportSection, ComponentTypeRef,
        ComponentTypeSection, InstanceType,
    };
    let mut component = wasm_encoder::Component::new();
    let mut types = ComponentTypeSection::new();
    types.instance(&InstanceType::new());
    component.section(&types);
    let mut imports = ComponentImportSection::new();
    imports.import(import, ComponentTypeRef::Instance(0));
    component.section(&imports);
    let mut exports = ComponentExportSection::new();
    exports.export(export, ComponentExportKind::Instance, 0, None);
    component.section(&exports);
    component.finish()
}

/// Resolves, fetches and stores the component `reference` names, as a
/// caller would.
pub async fn pull(
    client: &Client,
    reference: &Reference,
    store: &Store,
) -> Result<PathBuf, OciError> {
    let resolved = client.resolve(reference).await?;
    let bytes = client.fetch(reference, &resolved.layer_digest).await?;
    store.put(&resolved.layer_digest, &bytes)
}

/// The files under `dir`, recursively (none if it does not exist).
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(files_under(&path));
        } else {
            found.push(path);
        }
    }
    found
}

/// Asserts `error` displays as one line naming `reference`.
pub fn one_line_naming(error: &OciError, reference: &str) {
    let text = error.to_string();
    assert!(
        !text.contains('\n') && !text.contains('\r'),
        "not one line: {text}"
    );
    assert!(
        text.contains(reference),
        "{text:?} does not name {reference}"
    );
}

/// What a misbehaving server does with a request.
#[derive(Clone)]
pub enum Behaviour {
    /// Answer this.
    Reply {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
        /// Send `Content-Length` (else the body ends when the connection
        /// closes).
        length: bool,
    },
    /// Never answer (the connection stays open).
    Hang,
    /// Answer 200 announcing a body of this length, then send none and
    /// keep the connection open.
    Announce(u64),
    /// Answer 200 and send bytes for ever, counting them.
    Endless(Arc<AtomicU64>),
    /// Answer `status` announcing a body of `length` bytes, and send it,
    /// made as it goes (never held whole), counting what was sent.
    Flood {
        status: u16,
        length: u64,
        sent: Arc<AtomicU64>,
    },
}

impl Behaviour {
    /// 200 with `body` and `content_type`.
    pub fn ok(content_type: &str, body: impl Into<Vec<u8>>) -> Behaviour {
        Behaviour::Reply {
            status: 200,
            headers: vec![("Content-Type".into(), content_type.into())],
            body: body.into(),
            length: true,
        }
    }

    /// `status` with an empty body and `headers`.
    pub fn status(status: u16, headers: &[(&str, &str)]) -> Behaviour {
        Behaviour::Reply {
            status,
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            body: Vec::new(),
            length: true,
        }
    }
}

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub headers: BTreeMap<String, String>,
}

/// A real HTTP/1.1 server on 127.0.0.1 that answers by a routing function.
pub struct Server {
    pub port: u16,
    /// How many requests it has had.
    pub requests: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Server {
    /// Serves each request by `route` (given the path and headers).
    pub async fn start(route: impl Fn(&Seen) -> Behaviour + Send + Sync + 'static) -> Server {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let route = Arc::new(route);
        let requests = Arc::new(AtomicUsize::new(0));
        let counter = requests.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (route, counter) = (route.clone(), counter.clone());
                tokio::spawn(async move {
                    let _ = serve(stream, &*route, &counter).await;
                });
            }
        });
        Server {
            port,
            requests,
            task,
        }
    }

    /// `oci://127.0.0.1:PORT/REST`, parsed.
    pub fn reference(&self, rest: &str) -> Reference {
        format!("oci://127.0.0.1:{}/{rest}", self.port)
            .parse()
            .unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serves the requests of one connection.
async fn serve(
    mut stream: tokio::net::TcpStream,
    route: &(dyn Fn(&Seen) -> Behaviour + Send + Sync),
    counter: &AtomicUsize,
) -> std::io::Result<()> {
    let mut buffer = Vec::new();
    loop {
        let head_end = loop {
            if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                break end + 4;
            }
            let mut chunk = [0u8; 4096];
            let n = stream.read(&mut chunk).await?;
            if n == 0 || buffer.len() > 64 << 10 {
                return Ok(());
            }
            buffer.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
        buffer.drain(..head_end);
        counter.fetch_add(1, Ordering::SeqCst);
        let mut lines = head.split("\r\n");
        let mut request_line = lines.next().unwrap_or("").split(' ');
        let method = request_line.next().unwrap_or("").to_owned();
        let path = request_line.next().unwrap_or("").to_owned();
        let headers: BTreeMap<String, String> = lines
            .filter_map(|line| line.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        // The request's body is read and dropped, so that the next
        // request on the connection starts where it should.
        let mut body = headers
            .get("content-length")
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(0);
        while body > 0 {
            if buffer.is_empty() {
                let mut chunk = [0u8; 4096];
                let n = stream.read(&mut chunk).await?;
                if n == 0 {
                    return Ok(());
                }
                buffer.extend_from_slice(&chunk[..n]);
            }
            let take = body.min(buffer.len());
            buffer.drain(..take);
            body -= take;
        }
        match route(&Seen {
            method,
            path,
            headers,
        }) {
            Behaviour::Reply {
                status,
                headers,
                body,
                length,
            } => {
                let mut out = format!("HTTP/1.1 {status} X\r\n");
                for (k, v) in &headers {
                    out.push_str(&format!("{k}: {v}\r\n"));
                }
                if length {
                    out.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
                } else {
                    out.push_str("Connection: close\r\n\r\n");
                }
                stream.write_all(out.as_bytes()).await?;
                stream.write_all(&body).await?;
                if !length {
                    return stream.shutdown().await;
                }
            }
            Behaviour::Hang => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                return Ok(());
            }
            Behaviour::Announce(length) => {
                let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {length}\r\n\r\n");
                stream.write_all(head.as_bytes()).await?;
                tokio::time::sleep(Duration::from_secs(3600)).await;
                return Ok(());
            }
            Behaviour::Flood {
                status,
                length,
                sent,
            } => {
                let head = format!(
                    "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
                );
                stream.write_all(head.as_bytes()).await?;
                let chunk = vec![b' '; 64 << 10];
                let mut left = length;
                while left > 0 {
                    let n = left.min(chunk.len() as u64);
                    stream.write_all(&chunk[..n as usize]).await?;
                    sent.fetch_add(n, Ordering::SeqCst);
                    left -= n;
                }
            }
            Behaviour::Endless(sent) => {
                stream
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n")
                    .await?;
                let chunk = vec![b'x'; 64 << 10];
                loop {
                    stream.write_all(&chunk).await?;
                    sent.fetch_add(chunk.len() as u64, Ordering::SeqCst);
                }
            }
        }
    }
}
