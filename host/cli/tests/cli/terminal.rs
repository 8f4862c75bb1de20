//! The user's terminal, out of reach of the programs the host starts: the
//! command line runs on a real pseudo-terminal (its controlling terminal,
//! as under a shell), and a hostile MCP server and a program the shell
//! plugin runs each try to open `/dev/tty`, write escape sequences to it
//! and push a line into its input with `TIOCSTI`
//! (`tests/mcp/servers/hostile.py`). Nothing they try may reach the
//! terminal: neither its screen nor what the shell reads next.

use std::io::Read as _;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{npm, shared_cache};

/// What the terminal showed while the command ran, and what was left in
/// its input for the next reader (the user's shell).
pub(super) struct Seen {
    pub screen: String,
    pub pending: Vec<u8>,
    pub exit: Option<i32>,
}

/// Runs the binary in `dir` with `args` as the session leader of a new
/// pseudo-terminal, its standard streams on it.
fn in_terminal(dir: &Path, args: &[&str]) -> Seen {
    in_terminal_with(dir, args, &[], b"")
}

/// [`in_terminal`] with `env` set and `typed` typed ahead into the
/// terminal (read by the command when it reads its input).
pub(super) fn in_terminal_with(
    dir: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    typed: &[u8],
) -> Seen {
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty writes two descriptors into the integers given.
    let opened = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(opened, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened and are owned here.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let stdio = || Stdio::from(slave.try_clone().unwrap());
    let mut command = Command::new(env!("CARGO_BIN_EXE_tiny-harness"));
    command
        .args(args)
        .current_dir(dir)
        .env("TINY_HARNESS_CACHE_DIR", shared_cache())
        .envs(env.iter().copied())
        .stdin(stdio())
        .stdout(stdio())
        .stderr(stdio());
    // SAFETY: setsid and ioctl are async-signal-safe system calls.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = command.spawn().expect("the binary starts");
    if !typed.is_empty() {
        use std::io::Write as _;
        std::fs::File::from(master.try_clone().unwrap())
            .write_all(typed)
            .unwrap();
    }
    // The command holds copies of the terminal, which would keep the
    // screen reader below from ever seeing its end.
    drop(command);
    // The screen is read while it runs, so that it never blocks on a full
    // terminal.
    let mut screen_end = std::fs::File::from(master.try_clone().unwrap());
    let reader = std::thread::spawn(move || {
        let mut screen = Vec::new();
        let mut chunk = [0u8; 4096];
        // Ends with EIO once no process holds the terminal but this one.
        while let Ok(n) = screen_end.read(&mut chunk) {
            if n == 0 {
                break;
            }
            screen.extend_from_slice(&chunk[..n]);
        }
        screen
    });
    let deadline = Instant::now() + super::LIVENESS;
    let exit = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the command hung on the terminal");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // What was typed into the terminal is waiting on its reading end.
    // SAFETY: fcntl on a descriptor owned here.
    unsafe {
        let flags = libc::fcntl(slave.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(slave.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
        // Non-canonical, so that a partial line is readable too.
        let mut modes: libc::termios = std::mem::zeroed();
        libc::tcgetattr(slave.as_raw_fd(), &mut modes);
        modes.c_lflag &= !libc::ICANON;
        libc::tcsetattr(slave.as_raw_fd(), libc::TCSANOW, &modes);
    }
    let mut pending = Vec::new();
    let mut input = std::fs::File::from(slave);
    let mut chunk = [0u8; 4096];
    while let Ok(n) = input.read(&mut chunk) {
        if n == 0 {
            break;
        }
        pending.extend_from_slice(&chunk[..n]);
    }
    drop(input);
    drop(master);
    let screen = String::from_utf8_lossy(&reader.join().unwrap()).into_owned();
    Seen {
        screen,
        pending,
        exit,
    }
}

/// The hostile server as an MCP server of the mcp plugin, and the same
/// script as a program the shell plugin may run.
fn config(dir: &Path) {
    let plugins = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../target/wasm-plugins/wasm32-wasip2/release"
    ));
    let servers = npm::servers_dir().canonicalize().unwrap();
    let script = servers.join("servers/hostile.py");
    let grant = format!(
        "exec = [{{ program = \"/usr/bin/python3\", read = [{:?}] }}]",
        servers.display().to_string()
    );
    std::fs::write(
        dir.join("tty.toml"),
        format!(
            "[plugins.mcp]\npath = {:?}\n[plugins.mcp.grants]\n{grant}\n\
             [plugins.mcp.config.mcpServers.h]\ncommand = \"/usr/bin/python3\"\nargs = [{:?}]\n\n\
             [plugins.shell]\npath = {:?}\n[plugins.shell.grants]\n{grant}\n",
            plugins.join("mcp.wasm").display().to_string(),
            script.display().to_string(),
            plugins.join("shell.wasm").display().to_string(),
        ),
    )
    .unwrap();
}

/// Nothing of the attempt reached the terminal, and the attempt was made.
fn untouched(seen: &Seen, report_key: &str) {
    assert_eq!(seen.exit, Some(0), "{}", seen.screen);
    assert!(
        seen.screen.contains(report_key),
        "the probe did not run: {}",
        seen.screen
    );
    // Refused: it has no controlling terminal, and its streams are pipes.
    for refused in ["\"tty_open\": \"ok\"", "\"tty_inject\": \"ok\""] {
        assert!(!seen.screen.contains(refused), "{}", seen.screen);
    }
    for forged in ["PWNED", "INJECTED", "\u{1b}]0;"] {
        assert!(
            !seen.screen.contains(forged),
            "{forged:?} reached the screen: {:?}",
            seen.screen
        );
    }
    assert!(
        seen.pending.is_empty(),
        "typed into the terminal: {:?}",
        String::from_utf8_lossy(&seen.pending)
    );
}

#[test]
fn a_server_cannot_type_into_or_write_on_the_users_terminal() {
    let dir = tempfile::tempdir().unwrap();
    config(dir.path());
    let seen = in_terminal(
        dir.path(),
        &["--config", "tty.toml", "call", "mcp/h.probe", "{}"],
    );
    untouched(&seen, "tty_open");
}

#[test]
fn a_program_the_shell_plugin_runs_cannot_reach_the_users_terminal() {
    let dir = tempfile::tempdir().unwrap();
    config(dir.path());
    let script = npm::servers_dir()
        .canonicalize()
        .unwrap()
        .join("servers/hostile.py");
    let arguments = serde_json::json!({
        "program": "/usr/bin/python3",
        "args": [script.display().to_string(), "probe"],
    })
    .to_string();
    let seen = in_terminal(
        dir.path(),
        &["--config", "tty.toml", "call", "shell/exec.run", &arguments],
    );
    untouched(&seen, "tty_open");
}
