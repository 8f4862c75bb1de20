//! Scale-out on a real load balancer: two `serve --http` replicas of one
//! config and one lock behind Debian's HAProxy, one of them killed in the
//! middle of a load of idempotent calls and started again on its port,
//! and not one call lost or answered twice.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::super::{run_in, sandbox, stderr};
use super::{Gateway, dechunk, post};

mod haproxy;
use haproxy::HaProxy;

/// The calls sent through the balancer.
const CALLS: usize = 300;
/// The client threads sending them, each one call at a time: at most this
/// many calls are in flight at any instant.
const THREADS: usize = 4;
/// How long a poll waits before it looks again.
const POLL: Duration = Duration::from_millis(20);
/// The longest any one wait of the test may take.
const DEADLINE: Duration = Duration::from_secs(60);

/// The `_meta` every 2026-07-28 request carries.
fn meta_2026() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

/// A 2026-07-28 `tools/call` of `fs__workspace.stat` (read-only,
/// idempotent) with the JSON-RPC id `id`: its body and the headers that
/// must agree with it.
fn stat_2026(id: &str) -> (String, String) {
    let body = json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {
            "name": "fs__workspace.stat",
            "arguments": {"path": "hello.txt"},
            "_meta": meta_2026(),
        },
    });
    let headers = "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n\
                   Mcp-Name: fs__workspace.stat\r\n";
    (body.to_string(), headers.to_owned())
}

/// A 2026-07-28 `tools/list` with the JSON-RPC id `id`, and its headers.
fn list_2026(id: &str) -> (String, String) {
    let body = json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/list",
        "params": {"_meta": meta_2026()},
    });
    let headers = "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\n";
    (body.to_string(), headers.to_owned())
}

/// The JSON-RPC messages of a whole HTTP response (status line, headers,
/// body), each as the exact text sent: the data of each SSE event, or the
/// body of an `application/json` one.
fn messages(response: &str) -> Result<Vec<String>, String> {
    let (head, body) = response
        .split_once("\r\n\r\n")
        .ok_or("the headers do not end")?;
    let head = head.to_ascii_lowercase();
    let body = if head.contains("\r\ntransfer-encoding: chunked") {
        dechunk(body).ok_or("the chunked body is cut short")?
    } else {
        body.to_owned()
    };
    if head.contains("\r\ncontent-type: application/json") {
        return Ok(vec![body]);
    }
    if !head.contains("\r\ncontent-type: text/event-stream") {
        return Err("neither JSON nor an event stream".to_owned());
    }
    let mut events = Vec::new();
    let mut data: Vec<&str> = Vec::new();
    for line in body.lines().chain([""]) {
        if line.is_empty() {
            if !data.is_empty() {
                events.push(data.join("\n"));
                data.clear();
            }
        } else if let Some(value) = line.strip_prefix("data:") {
            data.push(value.strip_prefix(' ').unwrap_or(value));
        }
    }
    Ok(events)
}

/// The one JSON-RPC message of `response`, exactly as sent.
fn one_message(response: &str) -> String {
    let messages = messages(response).unwrap_or_else(|why| panic!("{why}: {response}"));
    assert_eq!(messages.len(), 1, "{response}");
    messages.into_iter().next().unwrap()
}

/// A port of 127.0.0.1 free a moment ago.
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// The `tools/list` answer of the replica at `addr`, exactly as sent.
fn tools_of(addr: SocketAddr) -> String {
    let (body, headers) = list_2026("list");
    let (status, response) = post(addr, &headers, &body);
    assert_eq!(status, 200, "{addr}: {response}");
    let message = one_message(&response);
    let parsed: Value = serde_json::from_str(&message).unwrap();
    assert_eq!(
        parsed["result"]["tools"].as_array().unwrap().len(),
        5,
        "{message}"
    );
    message
}

/// The `result` of a JSON-RPC message.
fn result_of(message: &str) -> Value {
    serde_json::from_str::<Value>(message).unwrap()["result"].clone()
}

/// One call of the load, as its client saw it.
struct Sent {
    /// Its JSON-RPC id.
    id: String,
    /// When its request was sent, and when its whole response was read.
    sent: Instant,
    answered: Instant,
    /// The status and the whole response.
    status: u16,
    response: String,
}

/// What the client threads and the test share.
#[derive(Default)]
struct Load {
    /// Calls `0..permitted` may be sent (the rest wait for it to grow).
    permitted: usize,
    /// Every call answered so far.
    done: Vec<Sent>,
    /// Set when the test ends early: the threads stop.
    stop: bool,
}

/// The load's state and the condition its changes are signalled on; when
/// dropped (the test ends, even by a failed assertion), the threads stop.
#[derive(Clone)]
struct Shared(Arc<(Mutex<Load>, Condvar)>);

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Load> {
        self.0
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Changes the state and wakes every waiter.
    fn update(&self, f: impl FnOnce(&mut Load)) {
        f(&mut self.lock());
        self.0.1.notify_all();
    }

    /// Waits until `ready` holds or the load stops; `false` after
    /// [`DEADLINE`].
    fn wait(&self, ready: impl Fn(&Load) -> bool) -> bool {
        let started = Instant::now();
        let mut load = self.lock();
        while !ready(&load) && !load.stop {
            let Some(left) = DEADLINE.checked_sub(started.elapsed()) else {
                return false;
            };
            load = self.0.1.wait_timeout(load, left).unwrap().0;
        }
        !load.stop
    }
}

/// Stops the client threads when dropped.
struct StopOnDrop(Shared);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.update(|load| load.stop = true);
    }
}

/// A client thread: takes the next call's number until [`CALLS`] are
/// taken, waits until it is permitted, sends it through the balancer at
/// `addr` and keeps what came back. It never retries: anything lost shows.
fn client(addr: SocketAddr, next: Arc<AtomicUsize>, shared: Shared) {
    loop {
        let n = next.fetch_add(1, Ordering::SeqCst);
        if n >= CALLS || !shared.wait(|load| n < load.permitted) {
            return;
        }
        let id = format!("call-{n}");
        let (body, headers) = stat_2026(&id);
        let sent = Instant::now();
        let (status, response) = post(addr, &headers, &body);
        let answered = Instant::now();
        shared.update(|load| {
            load.done.push(Sent {
                id,
                sent,
                answered,
                status,
                response,
            });
        });
    }
}

/// The call ids of a journal's lines, in order; every line must be a
/// whole JSON line of a call that ended `ok`.
fn journaled_ids(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .map(|line| {
            let line: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{}: {e}: {line}", path.display()));
            assert_eq!(line["outcome"], "ok", "{line}");
            assert_eq!(line["tool"], "fs/workspace.stat", "{line}");
            line["call_id"].as_str().unwrap().to_owned()
        })
        .collect()
}

#[test]
fn replicas_behind_haproxy_lose_no_call_when_one_is_killed_and_started_again() {
    let haproxy = tiny_harness_prereq::system_program("/usr/sbin/haproxy", "haproxy");
    let dir = sandbox();
    let config = dir.path().join("tiny-harness.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    // The rate is counted per client and per replica; the one anonymous
    // client here is the whole load, which is about failing over, not
    // about being slowed down.
    std::fs::write(
        &config,
        format!("{text}\n[serve.limits]\nrequests_per_second = 100000\n"),
    )
    .unwrap();
    // The lock, written once; every replica then runs `--locked`: it
    // never writes it and refuses a tool surface that differs from it.
    let output = run_in(dir.path(), &["tools"], None);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(dir.path().join("tiny-harness.lock").is_file());

    let journal = |name: &str| dir.path().join(format!("{name}.jsonl"));
    let replica = |name: &str| {
        let path = journal(name);
        Gateway::start(
            dir.path(),
            &["--locked", "--journal", path.to_str().unwrap()],
        )
    };
    let mut a = replica("a");
    let mut b = replica("b");

    // Both replicas list the same tools, byte for byte (the same request
    // to each: the same id).
    let listed = tools_of(b.addr);
    assert_eq!(tools_of(a.addr), listed);
    assert_eq!(result_of(&tools_of(a.addr)), result_of(&listed));

    let temp = tempfile::tempdir().unwrap();
    let mut balancer = HaProxy::start(&haproxy, temp.path(), &[("a", a.addr), ("b", b.addr)]);
    balancer.wait_for("a", "UP");
    balancer.wait_for("b", "UP");
    // HAProxy passes the client's `Host` on, which the gateway accepts:
    // a loopback name (`post` sends `Host: 127.0.0.1:PORT`).
    let (body, headers) = list_2026("list");
    let (status, response) = post(balancer.addr, &headers, &body);
    assert_eq!(
        status,
        200,
        "{response}\nhaproxy: {}; replicas exited: {:?}\n{}",
        balancer.servers(),
        (a.child.try_wait().unwrap(), b.child.try_wait().unwrap()),
        balancer.log()
    );
    assert_eq!(one_message(&response), listed);

    // The load: CALLS calls from THREADS threads, the first two thirds
    // permitted at once, the last third once the killed replica is back.
    let shared = Shared(Arc::default());
    let _stop = StopOnDrop(shared.clone());
    shared.update(|load| load.permitted = CALLS * 2 / 3);
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let (addr, next, shared) = (balancer.addr, next.clone(), shared.clone());
            std::thread::spawn(move || client(addr, next, shared))
        })
        .collect();

    // A third answered: kill `a` (SIGKILL) with calls in flight.
    assert!(
        shared.wait(|load| load.done.len() >= CALLS / 3),
        "a third of the calls were not answered within {DEADLINE:?}"
    );
    let kill_started = Instant::now();
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    let killed = Instant::now();
    let answered_at_kill = shared.lock().done.len();
    // Out of the rotation at its next check; meanwhile the calls sent to
    // it are refused and sent again to `b`.
    balancer.wait_for("a", "DOWN");
    let marked_down = kill_started.elapsed();

    // Started again on its port (its journal survives it; the new one
    // keeps a journal of its own), back in the rotation at its first
    // check, listing exactly the same tools.
    let a2 = Gateway::start_at(
        dir.path(),
        a.addr,
        &["--locked", "--journal", journal("a2").to_str().unwrap()],
    );
    balancer.wait_for("a", "UP");
    assert_eq!(tools_of(a2.addr), listed);
    shared.update(|load| load.permitted = CALLS);

    for thread in threads {
        if let Err(panic) = thread.join() {
            std::panic::resume_unwind(panic);
        }
    }
    let took = started.elapsed();
    let done = std::mem::take(&mut shared.lock().done);
    assert_eq!(done.len(), CALLS, "calls answered within {DEADLINE:?} each");

    // The client's side. Each call was sent once, as one request, and the
    // client never retried: it must have got exactly one answer, a 200
    // holding one JSON-RPC response with its own id and a result. A call
    // lost (a 502 or 503 from the balancer, an empty or cut response) or
    // answered twice (a response for another id, or two responses) is
    // what must never happen.
    let mut answered: BTreeMap<String, usize> = BTreeMap::new();
    for call in &done {
        assert_eq!(
            call.status,
            200,
            "{}: {}\n{}",
            call.id,
            call.response,
            balancer.log()
        );
        // A 200 that never ends is a response the balancer had begun to
        // forward when its replica died: it can neither finish it nor send
        // the request again. The gateway answers a 2026-07-28 call whose
        // answer is only its result as `application/json`, written whole,
        // so that cannot happen (an event stream's end, written apart,
        // could be cut off after the result).
        let messages = messages(&call.response).unwrap_or_else(|why| {
            panic!(
                "{}: {why}: its replica died after the answer began, and the balancer could \
                 neither finish it nor retry it:\n{}",
                call.id, call.response
            )
        });
        assert_eq!(messages.len(), 1, "{}: {}", call.id, call.response);
        let message: Value = serde_json::from_str(&messages[0]).unwrap();
        assert_eq!(message["id"], call.id.as_str(), "{message}");
        assert_eq!(message["result"]["isError"], false, "{message}");
        assert_eq!(
            message["result"]["structuredContent"]["size"], 25,
            "{message}"
        );
        *answered.entry(call.id.clone()).or_default() += 1;
    }
    let sent: BTreeSet<String> = (0..CALLS).map(|n| format!("call-{n}")).collect();
    assert_eq!(answered.keys().cloned().collect::<BTreeSet<_>>(), sent);
    assert!(answered.values().all(|&n| n == 1), "{answered:?}");

    // The replicas' side, from their journals (one line per call run,
    // written as it ends, with its id): which calls ran where, and how
    // often.
    //
    // Every call ran at least once. A call ran twice only if its first run
    // was on `a` and its response was cut off by the kill (the balancer
    // then sent the request again, to `b`): so a call that ran twice (1)
    // ran once on `a` and once elsewhere, (2) was in flight at the kill
    // (sent before `a` was reaped, answered after the kill began), and (3)
    // there are at most THREADS of them, since each thread has at most
    // one call in flight at the instant `a` died. Running twice is allowed
    // for these because the tool is idempotent; its client still got one
    // answer (above).
    let on_a = journaled_ids(&journal("a"));
    let on_b = journaled_ids(&journal("b"));
    let on_a2 = journaled_ids(&journal("a2"));
    let mut runs: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (replica, ids) in [("a", &on_a), ("b", &on_b), ("a2", &on_a2)] {
        for id in ids {
            runs.entry(id.as_str()).or_default().push(replica);
        }
    }
    let ran: BTreeSet<String> = runs.keys().map(|id| (*id).to_owned()).collect();
    assert_eq!(ran, sent, "the calls run are not the calls sent");
    let in_flight_at_kill: BTreeSet<&str> = done
        .iter()
        .filter(|call| call.sent < killed && call.answered > kill_started)
        .map(|call| call.id.as_str())
        .collect();
    let twice: Vec<(&str, &Vec<&str>)> = runs
        .iter()
        .filter(|(_, replicas)| replicas.len() > 1)
        .map(|(id, replicas)| (*id, replicas))
        .collect();
    for (id, replicas) in &twice {
        assert_eq!(replicas.len(), 2, "{id} ran on {replicas:?}");
        assert_eq!(replicas[0], "a", "{id} ran on {replicas:?}");
        assert_ne!(replicas[1], "a", "{id} ran on {replicas:?}");
        assert!(
            in_flight_at_kill.contains(id),
            "{id} ran on {replicas:?} but was not in flight at the kill \
             (in flight: {in_flight_at_kill:?})"
        );
    }
    assert!(twice.len() <= THREADS, "{twice:?}");
    // Every replica took its share: `a` before the kill, `b` throughout,
    // the new `a` in the last third.
    assert!(!on_a.is_empty() && !on_b.is_empty() && !on_a2.is_empty());

    // What the balancer saw: responses of `a` cut off by the kill
    // (`eresp`), and the requests it sent again (`wretr`: to the same
    // server, `wredis`: to another).
    let stats = balancer.stats().unwrap();
    eprintln!(
        "{CALLS} calls in {took:?}: {} on a, {} on b, {} on the new a; {answered_at_kill} \
         answered at the kill, {} in flight then, {} run twice; a marked down {marked_down:?} \
         after the kill; haproxy: {} cut off, {} retried, {} redispatched",
        on_a.len(),
        on_b.len(),
        on_a2.len(),
        in_flight_at_kill.len(),
        twice.len(),
        stats["a"]["eresp"],
        stats["BACKEND"]["wretr"],
        stats["BACKEND"]["wredis"],
    );
}
