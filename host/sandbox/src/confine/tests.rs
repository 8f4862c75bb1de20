//! Confinement against real programs (`/bin/sh`), in the real kernel.

use std::path::Path;
use std::process::Stdio;

use super::*;

async fn run(policy: &Policy, script: &str) -> std::process::Output {
    let mut command = tokio::process::Command::new("/bin/sh");
    command
        .args(["-c", script])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    policy
        .prepare()
        .expect("this kernel confines")
        .apply_to(&mut command);
    command.output().await.expect("sh runs")
}

fn text(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr)
}

#[tokio::test]
async fn files_outside_the_policy_cannot_be_read_or_written() {
    let granted = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("canary"), "secret").unwrap();
    std::fs::write(granted.path().join("mine"), "mine").unwrap();
    let policy = Policy {
        write: vec![granted.path().to_owned()],
        ..Policy::default()
    };
    let script = format!(
        "cat {g}/mine; echo written > {g}/new && echo wrote-granted; \
         cat {o}/canary || echo read-refused; echo x > {o}/new || echo write-refused",
        g = granted.path().display(),
        o = outside.path().display()
    );
    let output = run(&policy, &script).await;
    let text = text(&output);
    assert!(
        text.contains("mine") && text.contains("wrote-granted"),
        "{text}"
    );
    assert!(!text.contains("secret"), "the canary was read: {text}");
    assert!(
        text.contains("read-refused") && text.contains("write-refused"),
        "{text}"
    );
    assert!(!outside.path().join("new").exists());
    // Without the policy, the same script reads the canary: the test can fail.
    let plain = tokio::process::Command::new("/bin/sh")
        .args(["-c", &script])
        .output()
        .await
        .unwrap();
    assert!(String::from_utf8_lossy(&plain.stdout).contains("secret"));
}

#[tokio::test]
async fn read_only_paths_are_not_writable() {
    let dir = tempfile::tempdir().unwrap();
    let policy = Policy {
        read: vec![dir.path().to_owned()],
        ..Policy::default()
    };
    let script = format!(
        "ls {d} && echo listed; echo x > {d}/f || echo refused",
        d = dir.path().display()
    );
    let text = text(&run(&policy, &script).await);
    assert!(
        text.contains("listed") && text.contains("refused"),
        "{text}"
    );
    assert!(!dir.path().join("f").exists());
}

#[tokio::test]
async fn no_tcp_connection_without_a_grant_and_only_granted_ports_with_one() {
    let open = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = open.local_addr().unwrap().port();
    // Python is the handiest TCP client here; Debian's, from /usr.
    let python = Path::new("/usr/bin/python3");
    if !python.exists() {
        panic!("the test needs /usr/bin/python3");
    }
    let connect = |port: u16| {
        format!(
            "/usr/bin/python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2); print('connected')\" || echo refused"
        )
    };
    let none = run(&Policy::default(), &connect(port)).await;
    assert!(
        text(&none).contains("refused") && !text(&none).contains("connected"),
        "{}",
        text(&none)
    );
    let granted = Policy {
        network: Network::Ports(vec![port]),
        ..Policy::default()
    };
    let ok = run(&granted, &connect(port)).await;
    assert!(text(&ok).contains("connected"), "{}", text(&ok));
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let other_port = other.local_addr().unwrap().port();
    let refused = run(&granted, &connect(other_port)).await;
    assert!(!text(&refused).contains("connected"), "{}", text(&refused));
    let any = Policy {
        network: Network::Any,
        ..Policy::default()
    };
    assert!(text(&run(&any, &connect(other_port)).await).contains("connected"));
}

#[tokio::test]
async fn the_limits_and_no_new_privs_are_in_force() {
    let policy = Policy::default();
    let text = text(
        &run(
            &policy,
            "ulimit -n; ulimit -f; grep NoNewPrivs /proc/self/status || echo no-proc",
        )
        .await,
    );
    assert!(text.contains("1024"), "{text}");
    // RLIMIT_FSIZE of 1 GiB is 2097152 blocks of 512 bytes.
    assert!(text.contains("2097152"), "{text}");
}

#[test]
fn this_kernel_offers_the_abi_confinement_needs() {
    assert!(landlock_abi() >= 4, "Landlock ABI {}", landlock_abi());
}

fn sh(script: &str) -> Stdio3 {
    Stdio3 {
        program: "/bin/sh".into(),
        args: vec!["-c".into(), script.into()],
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        cwd: None,
        stdin: b"from stdin".to_vec(),
    }
}

#[tokio::test]
async fn run_caps_each_stream_and_passes_stdin() {
    let out = super::run(
        sh("cat; head -c 100000 /dev/zero | tr '\\0' x; echo err >&2; exit 7"),
        Some(Policy::default()),
        1000,
        std::time::Duration::from_secs(20),
    )
    .await
    .unwrap();
    assert_eq!(out.exited, Exited::Code(7));
    assert_eq!(out.stdout.len(), 1000);
    assert!(out.stdout.starts_with(b"from stdin"));
    assert!(out.stdout_truncated && !out.stderr_truncated);
    assert_eq!(out.stderr, b"err\n");
    assert!(!out.timed_out);
}

#[tokio::test]
async fn at_the_timeout_the_whole_group_is_killed() {
    let marker = format!("TINY_HARNESS_RUN_MARKER={}", std::process::id());
    let mut what = sh("sleep 30 & sleep 30");
    what.env.push((
        "TINY_HARNESS_RUN_MARKER".into(),
        std::process::id().to_string(),
    ));
    let started = std::time::Instant::now();
    let out = super::run(
        what,
        Some(Policy::default()),
        1000,
        std::time::Duration::from_millis(300),
    )
    .await
    .unwrap();
    assert!(out.timed_out);
    assert_eq!(out.exited, Exited::Signal(9));
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    // Neither sleep is left: the background one went with the group.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let left = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter(|e| {
                std::fs::read(e.path().join("environ"))
                    .is_ok_and(|env| env.split(|&b| b == 0).any(|v| v == marker.as_bytes()))
            })
            .count();
        if left == 0 {
            break;
        }
        assert!(
            std::time::Instant::now() < until,
            "{left} processes outlived the timeout"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
