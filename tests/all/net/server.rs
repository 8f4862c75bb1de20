//! A small HTTP/1.1 server on loopback for the net tests: one request per
//! connection, every request recorded, so a test can show that a refused
//! request never reached it.
//!
//! Routes: `/hello` (text), `/echo` (the method, a header and the body
//! back as JSON), `/bytes/N` (N bytes of `a`), `/binary` (bytes 0 to 255),
//! `/redirect?to=URL` (302 to URL), `/slow` (headers, then a body that
//! never comes), `/endless` (a chunked body without end).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The most bytes of a request head the server reads.
const MAX_HEAD: usize = 64 * 1024;

/// A running server; it stops when dropped.
pub struct Server {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    /// Starts a server on `127.0.0.1`, on a free port.
    pub async fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let log = log.clone();
                tokio::spawn(async move {
                    let _ = serve(stream, log).await;
                });
            }
        });
        Server { addr, seen, task }
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://127.0.0.1:PORT` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port())
    }

    /// The request lines it has received (`GET /hello`), in order.
    pub fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

async fn serve(mut stream: TcpStream, log: Arc<Mutex<Vec<String>>>) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let head_end = loop {
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        if buf.len() > MAX_HEAD {
            return Ok(());
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default().to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let length: usize = header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < length {
        let mut chunk = vec![0u8; (length - body.len()).min(64 * 1024)];
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    let mut parts = request_line.split(' ');
    let method = parts.next().unwrap_or_default().to_owned();
    let target = parts.next().unwrap_or_default().to_owned();
    log.lock().unwrap().push(format!(
        "{method} {}",
        target.split('?').next().unwrap_or("")
    ));
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));

    match path {
        "/hello" => respond(&mut stream, "200 OK", "text/plain", b"hello from loopback").await,
        "/echo" => {
            let echoed = serde_json::json!({
                "method": method,
                "x_test": header("x-test"),
                "body": String::from_utf8_lossy(&body),
            });
            respond(
                &mut stream,
                "200 OK",
                "application/json",
                echoed.to_string().as_bytes(),
            )
            .await
        }
        "/binary" => {
            let bytes: Vec<u8> = (0..=255u8).collect();
            respond(&mut stream, "200 OK", "application/octet-stream", &bytes).await
        }
        "/missing" => respond(&mut stream, "404 Not Found", "text/plain", b"no such page").await,
        "/redirect" => {
            let to = query.strip_prefix("to=").unwrap_or("/hello");
            let head = format!(
                "HTTP/1.1 302 Found\r\nlocation: {to}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            );
            stream.write_all(head.as_bytes()).await
        }
        "/slow" => {
            stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\nconnection: close\r\n\r\n")
                .await?;
            tokio::time::sleep(Duration::from_secs(60)).await;
            Ok(())
        }
        "/endless" => {
            stream
                .write_all(
                    b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n",
                )
                .await?;
            let chunk = format!("4000\r\n{}\r\n", "z".repeat(0x4000));
            loop {
                stream.write_all(chunk.as_bytes()).await?;
            }
        }
        other => match other
            .strip_prefix("/bytes/")
            .and_then(|n| n.parse::<usize>().ok())
        {
            Some(n) => respond(&mut stream, "200 OK", "text/plain", &vec![b'a'; n]).await,
            None => respond(&mut stream, "404 Not Found", "text/plain", b"no such page").await,
        },
    }
}

async fn respond(
    stream: &mut TcpStream,
    status: &str,
    content_type: &str,
    body: &[u8],
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body).await?;
    stream.shutdown().await
}
