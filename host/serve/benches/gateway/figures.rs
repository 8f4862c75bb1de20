//! The memory of idle sessions, and the table printed at the end.

use super::*;

// ---------------------------------------------------------------------
// Idle sessions.

/// The process's resident set and malloc heap in use, in bytes.
pub(crate) fn memory() -> (u64, Option<u64>) {
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
pub(crate) fn heap_in_use() -> Option<u64> {
    // SAFETY: mallinfo2 only reads the allocator's statistics.
    let info = unsafe { libc::mallinfo2() };
    Some((info.uordblks + info.hblkhd) as u64)
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn heap_in_use() -> Option<u64> {
    None
}

/// Opens `k` 2025-11-25 sessions on `addr` over 8 connections and leaves
/// them idle.
pub(crate) async fn open_sessions(addr: SocketAddr, k: usize) {
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
pub(crate) struct SessionFigure {
    /// Which server.
    pub(crate) server: &'static str,
    /// Which step.
    pub(crate) step: usize,
    /// The sessions opened in it.
    pub(crate) opened: usize,
    /// Bytes of resident set per session.
    pub(crate) rss: f64,
    /// Bytes of malloc heap in use per session, where glibc says.
    pub(crate) heap: Option<f64>,
}

/// How criterion runs: `Some(true)` measuring (`cargo bench`), `Some(false)`
/// in its test mode (`cargo test --bench`, or `-- --test`), `None` listing.
pub(crate) fn measuring() -> Option<bool> {
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
pub(crate) fn idle_sessions(setup: &Setup, measuring: bool) -> Vec<SessionFigure> {
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

pub(crate) fn report(rows: &Rows, pairs: &[Pairs], sessions: &[SessionFigure]) {
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
