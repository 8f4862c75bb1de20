//! `tiny-harness mcp doctor`: a confined server that reads outside its
//! grants and one that dials out without a net grant, each denial named
//! with the config line that would allow it; and the hint a failed
//! confined server's status gives.

use super::{npm, run_in, stderr, stdout, venv};

/// The doctor traces with strace: installed first if it is missing.
fn doctor(dir: &std::path::Path, server: &str) -> std::process::Output {
    tiny_harness_prereq::system_program("/usr/bin/strace", "strace");
    run_in(dir, &["mcp", "doctor", server], None)
}

fn text(output: &std::process::Output) -> String {
    format!("{}{}", stdout(output), stderr(output))
}

#[test]
fn a_server_that_reads_outside_its_grants_fails_with_the_hint_and_the_doctor_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let secrets = tempfile::tempdir().unwrap();
    let canary = secrets.path().join("canary.txt");
    std::fs::write(&canary, "CANARY").unwrap();
    let canary = canary.canonicalize().unwrap();
    let script = format!("exec /bin/cat {}", canary.display());
    let add = run_in(
        dir.path(),
        &["mcp", "add", "reader", "--", "/bin/sh", "-c", &script],
        None,
    );
    assert_eq!(add.status.code(), Some(0), "{}", text(&add));
    let plugins = stdout(&run_in(dir.path(), &["plugins"], None));
    assert!(
        plugins
            .contains("it ran confined: tiny-harness mcp doctor reader names what it was denied"),
        "{plugins}"
    );
    let doctor = doctor(dir.path(), "reader");
    assert_eq!(doctor.status.code(), Some(1), "{}", text(&doctor));
    let report = stdout(&doctor);
    assert!(report.contains("ran confined"), "{report}");
    assert!(
        report.contains(&format!("  read {}", canary.display())),
        "{report}"
    );
    let parent = canary.parent().unwrap().display().to_string();
    assert!(
        report.contains(&format!(
            r#"exec = [{{ program = "/bin/sh", read = [{parent:?}] }}]"#
        )),
        "{report}"
    );
    assert!(
        !report.contains("CANARY\n"),
        "the canary was read: {report}"
    );
}

#[test]
fn a_server_that_dials_out_without_a_net_grant_is_named_with_the_grant() {
    let dir = tempfile::tempdir().unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let python = venv::python().display().to_string();
    let script = npm::servers_dir().join("servers/nosy.py");
    let env = format!("PORT={port}");
    let add = run_in(
        dir.path(),
        &[
            "mcp",
            "add",
            "nosy",
            "--env",
            &env,
            "--env",
            "PYTHONDONTWRITEBYTECODE=1",
            "--",
            &python,
            &script.display().to_string(),
        ],
        None,
    );
    assert_eq!(add.status.code(), Some(0), "{}", text(&add));
    let doctor = doctor(dir.path(), "mcp/nosy");
    assert_eq!(doctor.status.code(), Some(1), "{}", text(&doctor));
    let report = stdout(&doctor);
    assert!(report.contains("it listed its tools"), "{report}");
    assert!(
        report.contains(&format!("  connect 127.0.0.1:{port}")),
        "{report}"
    );
    assert!(
        report.contains(&format!(r#"net = ["https://127.0.0.1:{port}"]"#)),
        "{report}"
    );
    // Nothing got through while it was diagnosed.
    listener.set_nonblocking(true).unwrap();
    assert!(
        listener.accept().is_err(),
        "the server reached the listener"
    );

    let unknown = run_in(dir.path(), &["mcp", "doctor", "ghost"], None);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        stderr(&unknown).contains("there is no mcp server ghost (servers: mcp/nosy)"),
        "{}",
        text(&unknown)
    );
}
