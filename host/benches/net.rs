//! Outbound HTTP: a loopback GET through `plugins/net` against the same GET
//! sent directly from the host, side by side, on the test suite's loopback
//! server (`/hello`, 19 bytes, one connection per request).
//!
//! - `direct_hyper`: what the host's own sender does, without WebAssembly:
//!   a TCP connection to 127.0.0.1, an HTTP/1.1 handshake with hyper, the
//!   GET, the whole body.
//! - `plugin_get`: `Host::invoke` of `net/http.get` (lookup, validation, a
//!   fresh instance, the grant and address checks, the request, the body,
//!   the JSON result and its output check).
//! - `paired_plugin_over_direct`: both back to back in every iteration;
//!   prints the medians and the ratio.
//!
//! Run: `cargo bench -p tiny-harness-host --bench net`.

// A benchmark or example that cannot set up has nothing to measure or
// show: it stops at once, saying where.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use http_body_util::{BodyExt, Empty};
use serde_json::json;
use tiny_harness_host::{Host, HostBuilder, PluginSpec, ToolCall};
use tiny_harness_sandbox::grant::NetGrant;

#[path = "../../tests/all/net/server.rs"]
#[allow(dead_code)]
mod server;

fn net_wasm() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../target/wasm-plugins/wasm32-wasip2/release"
    ))
    .join("net.wasm")
}

async fn start_host(port: u16) -> Host {
    let mut spec = PluginSpec::new("net", net_wasm());
    let grant = NetGrant::parse(&format!("http://127.0.0.1:{port}")).expect("grant");
    spec.grants.add_net(grant).expect("one grant");
    HostBuilder::new().plugin(spec).build().await.expect("load")
}

/// One GET of `/hello` on a new connection, straight from the host.
async fn direct(port: u16) -> usize {
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(wasmtime_wasi_http::io::TokioIo::new(tcp))
            .await
            .expect("handshake");
    let driver = tokio::spawn(conn);
    let request = http::Request::get("/hello")
        .header("host", format!("127.0.0.1:{port}"))
        .body(Empty::<bytes::Bytes>::new())
        .expect("request");
    let response = sender.send_request(request).await.expect("response");
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    drop(sender);
    let _ = driver.await;
    assert_eq!(body.len(), 19, "the body of /hello");
    body.len()
}

async fn through_plugin(host: &Host, url: &str) -> usize {
    let outcome = host
        .invoke(&ToolCall {
            id: "bench".into(),
            name: "net/http.get".into(),
            arguments: json!({ "url": url }),
        })
        .await;
    let result = outcome.result.expect("a result");
    assert!(!result.is_error);
    result.content.len()
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let server = rt.block_on(server::Server::start());
    let port = server.port();
    let url = server.url("/hello");
    let host = rt.block_on(start_host(port));
    assert_eq!(rt.block_on(direct(port)), 19);
    assert_eq!(rt.block_on(through_plugin(&host, &url)), 2);

    let mut group = c.benchmark_group("net");
    group.bench_function("direct_hyper", |b| {
        b.to_async(&rt).iter(|| direct(port));
    });
    group.bench_function("plugin_get", |b| {
        b.to_async(&rt).iter(|| through_plugin(&host, &url));
    });
    group.finish();

    // Paired: both in every iteration, so that drift hits both alike.
    let rounds = 2000;
    let mut directs = Vec::with_capacity(rounds);
    let mut plugins = Vec::with_capacity(rounds);
    rt.block_on(async {
        for _ in 0..rounds {
            let start = Instant::now();
            direct(port).await;
            directs.push(start.elapsed());
            let start = Instant::now();
            through_plugin(&host, &url).await;
            plugins.push(start.elapsed());
        }
    });
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let (d, p) = (median(&mut directs), median(&mut plugins));
    println!(
        "paired_plugin_over_direct: direct {:.1} us, plugin {:.1} us, ratio {:.2}",
        d.as_secs_f64() * 1e6,
        p.as_secs_f64() * 1e6,
        p.as_secs_f64() / d.as_secs_f64()
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
