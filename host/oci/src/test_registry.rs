//! A real OCI registry for tests (feature `test-registry`): Debian's
//! `docker-registry` serving
//! 127.0.0.1 on a port of its own, its data in a temporary directory,
//! optionally behind htpasswd (bcrypt) authentication. Publish to it and
//! add from it as a user would (`plugin publish`, `plugin add`).
//!
//! Invariants: a registry started here serves only 127.0.0.1, keeps its
//! data in a temporary directory, and ends when its [`Registry`] is
//! dropped or, at the latest, when the test process ends (it is watched
//! through a pipe only this process holds), so no registry outlives the
//! tests. Nothing is skipped: a missing docker-registry is installed
//! with apt-get when the tests run as root, and is otherwise a panic that
//! says how to install it.

// A test fixture that cannot start has nothing to test with: it panics
// at once, saying why.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

/// Where Debian installs the registry.
pub const DOCKER_REGISTRY: &str = "/usr/bin/docker-registry";

/// A docker-registry serving 127.0.0.1 on a port of its own.
pub struct Registry {
    /// The port it serves on 127.0.0.1.
    pub port: u16,
    /// Its configuration, data and log.
    pub dir: tempfile::TempDir,
    child: Child,
    /// Closing it ends the registry (see the module's invariants).
    lifeline: Option<ChildStdin>,
}

impl Registry {
    /// A registry without authentication.
    pub fn start() -> Registry {
        Registry::start_with(None)
    }

    /// A registry that requires `user` and `password` (htpasswd, bcrypt).
    pub fn with_htpasswd(user: &str, password: &str) -> Registry {
        let hash = bcrypt::hash(password, 4).unwrap();
        Registry::start_with(Some(format!("{user}:{hash}\n")))
    }

    fn start_with(htpasswd: Option<String>) -> Registry {
        // Installed with apt-get on first use when running as root;
        // otherwise one line naming the command.
        tiny_harness_prereq::system_program(DOCKER_REGISTRY, "docker-registry");
        // The port was free when chosen; another process may take it
        // before the registry binds it, so a few tries.
        let mut last = String::new();
        for _ in 0..3 {
            match Registry::try_start(htpasswd.as_deref()) {
                Ok(registry) => return registry,
                Err(log) if log.contains("address already in use") => last = log,
                Err(log) => panic!("docker-registry did not start: {log}"),
            }
        }
        panic!("docker-registry found no free port: {last}");
    }

    /// A registry on a fresh port, or what it logged before it exited.
    fn try_start(htpasswd: Option<&str>) -> Result<Registry, String> {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let mut config = format!(
            "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n  secret: tiny-harness-test\n",
            dir.path().join("data").display()
        );
        if let Some(entry) = htpasswd {
            let file = dir.path().join("htpasswd");
            std::fs::write(&file, entry).unwrap();
            config.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: tiny-harness-test\n    path: {}\n",
                file.display()
            ));
        }
        let config_file = dir.path().join("config.yml");
        std::fs::write(&config_file, config).unwrap();
        let log = std::fs::File::create(dir.path().join("registry.log")).unwrap();
        // sh runs the registry; when this process's end of the pipe on
        // fd 3 closes (drop, or this process's exit, so also for a registry
        // in a static), it ends the registry and removes its directory.
        let script = r#"exec 3<&0
"$1" serve "$0" </dev/null &
pid=$!
(cat <&3 >/dev/null; kill $pid 2>/dev/null; while kill -0 $pid 2>/dev/null; do sleep 0.05; done; rm -rf "$2") &
wait $pid"#;
        let mut child = Command::new("/bin/sh")
            .arg("-c")
            .arg(script)
            .arg(&config_file)
            .arg(DOCKER_REGISTRY)
            .arg(dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let lifeline = child.stdin.take();
        let mut registry = Registry {
            port,
            dir,
            child,
            lifeline,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if registry.child.try_wait().unwrap().is_some() {
                return Err(registry.log());
            }
            if http_status(port, "/v2/").is_some() {
                return Ok(registry);
            }
            assert!(
                Instant::now() < deadline,
                "docker-registry did not answer GET /v2/ within 30 s: {}",
                registry.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// What the registry logged.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("registry.log")).unwrap_or_default()
    }

    /// `oci://127.0.0.1:PORT/REST`.
    pub fn reference(&self, rest: &str) -> String {
        format!("oci://127.0.0.1:{}/{rest}", self.port)
    }

    /// `127.0.0.1:PORT`.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        drop(self.lifeline.take());
        let _ = self.child.wait();
    }
}

/// A port that was free a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The status of `GET path` on 127.0.0.1:`port`, if something answers.
pub fn http_status(port: u16, path: &str) -> Option<u16> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).ok()?;
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}
