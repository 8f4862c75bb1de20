//! HAProxy in front of the replicas: its config, the process, and what
//! its runtime API says of each replica.

use super::*;

/// HAProxy in the foreground (`-db`), a child of the test, killed when
/// dropped.
pub(super) struct HaProxy {
    child: Child,
    /// Where it listens for clients.
    pub(super) addr: SocketAddr,
    /// Its stats socket (the runtime API).
    socket: PathBuf,
    /// What it writes on stderr: alerts and one line per request.
    log: PathBuf,
}

/// The name of the backend that holds the replicas.
const BACKEND: &str = "replicas";

impl HaProxy {
    /// Writes a config into `dir` that balances a free port of 127.0.0.1
    /// over `servers`, and starts HAProxy with it.
    pub(super) fn start(program: &Path, dir: &Path, servers: &[(&str, SocketAddr)]) -> HaProxy {
        let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let socket = dir.join("haproxy.sock");
        let log = dir.join("haproxy.log");
        let servers: String = servers
            .iter()
            .map(|(name, addr)| format!("    server {name} {addr} check\n"))
            .collect();
        // What matters here:
        // - `option httpchk GET /readyz` with `inter 200ms fall 1 rise 1`:
        //   a replica that stops answering is out of the rotation within a
        //   check, and one started again is back in at its first 200.
        // - `retry-on conn-failure empty-response response-timeout` with
        //   `retries 3` and `option redispatch 1`: a request that could not
        //   be sent to a replica (refused: it is dead and not yet marked
        //   down), or that was sent and got no response at all (the replica
        //   died with it in flight), is sent again, to another replica.
        //   That is safe here only because every call of this load is of a
        //   read-only, idempotent tool (`fs/workspace.stat`): a request that
        //   got no response may have run, and running it again changes
        //   nothing. A deployment should enable these L7 retries only for
        //   calls of idempotent tools (say, in a backend of their own that
        //   a rule on the `Mcp-Name` header selects); for any other call,
        //   `retry-on conn-failure` alone (the request never reached a
        //   replica) is the most that is safe. At 2026-07-28 the status
        //   and headers of a call's answer are sent only with its result,
        //   so "no response" means no result was sent.
        // - `timeout server 10s`: far beyond a call here, so that only a
        //   replica that hangs is given up on (`response-timeout`).
        let config = format!(
            "global\n\
             \x20   stats socket {socket} mode 600 level admin\n\
             \x20   log stderr format raw local0 info\n\
             \n\
             defaults\n\
             \x20   mode http\n\
             \x20   log global\n\
             \x20   option httplog\n\
             \x20   timeout connect 1s\n\
             \x20   timeout client 30s\n\
             \x20   timeout server 10s\n\
             \x20   timeout check 1s\n\
             \n\
             frontend mcp\n\
             \x20   bind {addr}\n\
             \x20   default_backend {BACKEND}\n\
             \n\
             backend {BACKEND}\n\
             \x20   balance roundrobin\n\
             \x20   option httpchk GET /readyz\n\
             \x20   http-check expect status 200\n\
             \x20   default-server inter 200ms fall 1 rise 1\n\
             \x20   retries 3\n\
             \x20   option redispatch 1\n\
             \x20   retry-on conn-failure empty-response response-timeout\n\
             {servers}",
            socket = socket.display(),
        );
        let path = dir.join("haproxy.cfg");
        std::fs::write(&path, config).unwrap();
        let child = Command::new(program)
            .args(["-db", "-f"])
            .arg(&path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        HaProxy {
            child,
            addr,
            socket,
            log,
        }
    }

    /// What it logged so far.
    pub(super) fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The rows of `show stat` of [`BACKEND`] by `svname`: one per server,
    /// and the backend's own totals under `BACKEND`; `None` while the
    /// socket does not answer.
    pub(super) fn stats(&self) -> Option<BTreeMap<String, BTreeMap<String, String>>> {
        let mut stream = UnixStream::connect(&self.socket).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        stream.write_all(b"show stat\n").ok()?;
        let mut text = String::new();
        stream.read_to_string(&mut text).ok()?;
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next()?.strip_prefix("# ")?.split(',').collect();
        let rows = lines
            .map(|line| {
                header
                    .iter()
                    .zip(line.split(','))
                    .map(|(k, v)| ((*k).to_owned(), v.to_owned()))
                    .collect::<BTreeMap<_, _>>()
            })
            .filter(|row| row.get("pxname").map(String::as_str) == Some(BACKEND))
            .map(|row| (row["svname"].clone(), row))
            .collect();
        Some(rows)
    }

    /// The servers' states, for a failure's message.
    pub(super) fn servers(&self) -> String {
        let Some(stats) = self.stats() else {
            return "the stats socket does not answer".to_owned();
        };
        stats
            .values()
            .map(|row| {
                let [name, status, check] = ["svname", "status", "check_status"]
                    .map(|key| row.get(key).map_or("?", String::as_str));
                format!("{name} {status} {check}")
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Polls the stats until `server` has `status` (`UP`, `DOWN`), failing
    /// after [`DEADLINE`] or if HAProxy exits.
    pub(super) fn wait_for(&mut self, server: &str, status: &str) {
        let started = Instant::now();
        let mut last = None;
        loop {
            if let Some(exit) = self.child.try_wait().unwrap() {
                panic!("haproxy exited ({exit}): {}", self.log());
            }
            if let Some(stats) = self.stats() {
                let row = stats.get(server).unwrap_or_else(|| panic!("no {server}"));
                // `UP` after a check that passed, not the state a server
                // starts in before its first check.
                let checked = status != "UP" || row["check_status"] == "L7OK";
                if row["status"] == status && checked {
                    return;
                }
                last = Some(format!("{} {}", row["status"], row["check_status"]));
            }
            assert!(
                started.elapsed() < DEADLINE,
                "haproxy did not see {server} {status} within {DEADLINE:?} (last {last:?}): {}",
                self.log()
            );
            std::thread::sleep(POLL);
        }
    }
}

impl Drop for HaProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
