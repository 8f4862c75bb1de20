//! One call through an HTTP MCP server that asks for OAuth, in a host's
//! persistent session, four ways side by side in every iteration:
//!
//! - `static_header`: the token written into the config as a header
//!   (`Authorization = "Bearer ${TOKEN}"`), as before logins existed;
//! - `control`: a second host configured the same way, so that the run
//!   shows what one way measures against itself (the noise);
//! - `logged_in`: the host attaching the token of `mcp login` itself
//!   (its session client, the same one the static ways use: the header
//!   kept while the token holds, checked against a clock and the token
//!   file's generation at every request);
//! - `logged_in_again`: a second logged-in host, the same login.
//!
//! All reach the same server (`tests/mcp/servers/oauth_http.py`), in an
//! order that rotates, so the difference is the host's bookkeeping.
//! Prints the medians of each, of their ratios to `static_header`, and of
//! the logged-in pair's time over the static pair's.
//! Each call asserts it succeeded.
//!
//! Run: `cargo bench -p tiny-harness-host --bench oauth`.

// A benchmark or example that cannot set up has nothing to measure or
// show: it stops at once, saying where.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use tiny_harness_host::{Config, Host, HostBuilder, ToolCall};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The OAuth test server, with `token` valid from the start.
fn server(token: &str) -> (Child, String) {
    let mut child = Command::new("/usr/bin/python3")
        .arg(root().join("tests/mcp/servers/oauth_http.py"))
        .env("STATIC_TOKEN", token)
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs the server");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("its port");
    let port = line.trim().trim_start_matches("listening on ").to_owned();
    (child, format!("http://127.0.0.1:{port}/mcp"))
}

/// A config for the server at `url`, with `extra` in its entry.
fn config(dir: &Path, url: &str, extra: &str) -> PathBuf {
    let path = dir.join("agent.toml");
    std::fs::write(
        &path,
        format!(
            "[plugins.mcp]\npath = \"builtin:mcp\"\n\n[plugins.mcp.grants]\nnet = [\"http://127.0.0.1:*\"]\nenv = [\"BENCH_TOKEN\"]\n\n[plugins.mcp.config.mcpServers.remote]\nurl = \"{url}\"\n{extra}"
        ),
    )
    .expect("config");
    path
}

async fn host(config: &Path) -> Host {
    let config = Config::load(config).expect("config");
    HostBuilder::new()
        .config(&config)
        .build()
        .await
        .expect("load")
}

async fn whoami(host: &Host) {
    let call = ToolCall {
        id: "b".into(),
        name: "mcp/remote.whoami".into(),
        arguments: serde_json::json!({}),
    };
    let outcome = host.invoke(&call).await;
    let rendered = outcome.render();
    assert!(rendered.contains("scopes: read"), "{rendered}");
}

/// The config entry's line that puts the token in a header.
const STATIC_HEADER: &str = "headers = { Authorization = \"Bearer ${BENCH_TOKEN}\" }\n";

/// The ways, in the order of `ways` in [`bench`]: two static, two logged in.
const WAYS: [&str; 4] = ["static_header", "control", "logged_in", "logged_in_again"];

fn bench(c: &mut Criterion) {
    let token = "static-bench-token";
    // SAFETY: set before any thread of this process reads the environment.
    unsafe { std::env::set_var("BENCH_TOKEN", token) };
    let (mut child, url) = server(token);
    let statics = tempfile::tempdir().expect("dir");
    let header = config(statics.path(), &url, STATIC_HEADER);
    let logins = tempfile::tempdir().expect("dir");
    let login = config(logins.path(), &url, "");
    let browser = format!(
        "/usr/bin/python3 {}",
        root().join("tests/conformance/browser.py").display()
    );
    let done = Command::new(env!("CARGO_BIN_EXE_tiny-harness"))
        .args(["--config"])
        .arg(&login)
        .args(["mcp", "login", "remote", "--wait", "30"])
        .env("BROWSER", browser)
        .output()
        .expect("login");
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );

    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let (with_header, logged_in) =
        runtime.block_on(async { (host(&header).await, host(&login).await) });
    runtime.block_on(async {
        whoami(&with_header).await;
        whoami(&logged_in).await;
    });

    // For a profiler: `OAUTH_BENCH_ONLY=static|login` runs only that way,
    // `OAUTH_BENCH_CALLS` times (after a 3 s pause to attach to the pid it
    // prints), and prints the wall time and the process's CPU per call.
    if let Ok(only) = std::env::var("OAUTH_BENCH_ONLY") {
        let calls: u32 = std::env::var("OAUTH_BENCH_CALLS")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(2000);
        let chosen = if only == "static" {
            &with_header
        } else {
            &logged_in
        };
        eprintln!("ready {}", std::process::id());
        std::thread::sleep(Duration::from_secs(3));
        let before = cpu();
        let start = Instant::now();
        runtime.block_on(async {
            for _ in 0..calls {
                whoami(chosen).await;
            }
        });
        let (user, system) = cpu();
        let per_call = |d: Duration| d.as_secs_f64() * 1e6 / f64::from(calls);
        eprintln!(
            "{only}: {:.1} us a call, of it CPU {:.1} us user and {:.1} us system",
            per_call(start.elapsed()),
            per_call(user - before.0),
            per_call(system - before.1)
        );
        let _ = child.kill();
        let _ = child.wait();
        return;
    }
    // A second host with the static header is the control: the ratio of
    // the two static hosts is what the same way measures against itself
    // in this run, the noise the logged-in ratio is read against.
    let control_dir = tempfile::tempdir().expect("dir");
    let control = config(control_dir.path(), &url, STATIC_HEADER);
    // And a second logged-in host (the same config, so the same login):
    // what the logged-in way measures against itself.
    let (control, logged_in_again) = runtime.block_on(async {
        let (control, again) = (host(&control).await, host(&login).await);
        whoami(&control).await;
        whoami(&again).await;
        (control, again)
    });
    let ways = [&with_header, &control, &logged_in, &logged_in_again];
    let mut group = c.benchmark_group("oauth_call");
    let samples = std::cell::RefCell::new(Vec::new());
    group.bench_function("paired", |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let mut spent = [Duration::ZERO; WAYS.len()];
                // The order rotates, so that no way is always the first or
                // the last call the server sees.
                for i in 0..iters {
                    for k in 0..ways.len() {
                        let way = (i as usize + k) % ways.len();
                        let start = Instant::now();
                        whoami(ways[way]).await;
                        spent[way] += start.elapsed();
                    }
                }
                samples
                    .borrow_mut()
                    .push(spent.map(|d| (d / iters as u32).as_secs_f64()));
                spent[2]
            })
        });
    });
    // What the session client does when its header no longer holds (at
    // most once a recheck of the token file): look the token up in the
    // file (the cached contents, a stat when the recheck is due, a copy).
    let tokens = tiny_harness_mcp::oauth::Tokens::beside(&login);
    group.bench_function("token_lookup", |b| {
        b.iter(|| {
            let found = tokens
                .credentials("mcp/remote", &url)
                .expect("the token file");
            assert!(found.is_some());
            found
        })
    });
    group.finish();
    let samples = samples.into_inner();
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    };
    let of = |way: usize| median(samples.iter().map(|s| s[way]).collect());
    let ratio = |way: usize| median(samples.iter().map(|s| s[way] / s[0]).collect());
    let mut line = String::from("oauth_call:");
    for (way, name) in WAYS.iter().enumerate() {
        line.push_str(&format!(
            " {name} {:.1} us (ratio {:.3});",
            of(way) * 1e6,
            ratio(way)
        ));
    }
    // Each pair against the other: what logging in costs beyond what two
    // hosts doing the same thing differ by.
    let pairs = median(
        samples
            .iter()
            .map(|s| (s[2] + s[3]) / (s[0] + s[1]))
            .collect(),
    );
    println!(
        "{line} logged-in pair / static pair {pairs:.3} (medians over {} samples)",
        samples.len()
    );
    runtime.block_on(async {
        with_header.shutdown().await;
        control.shutdown().await;
        logged_in.shutdown().await;
        logged_in_again.shutdown().await;
    });
    let _ = child.kill();
    let _ = child.wait();
}

/// The user and system CPU time this process has used.
fn cpu() -> (Duration, Duration) {
    // SAFETY: getrusage writes into the zeroed struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    (time(usage.ru_utime), time(usage.ru_stime))
}

criterion_group!(benches, bench);
criterion_main!(benches);
