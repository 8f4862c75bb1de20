//! `mcp login` and `mcp logout` against a real OAuth-protected MCP server
//! with its own authorization server (`tests/mcp/servers/oauth_http.py`),
//! the browser played by `tests/conformance/browser.py` through
//! `$BROWSER`: the login is kept beside the config, owner-only; the host
//! attaches it, refreshes it, asks for a step-up's scope at the next
//! login; and every bad answer is one line that writes nothing.

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use super::{stderr, stdout, wait_live, workspace_root};

/// The OAuth server, on a free loopback port, until dropped.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start(env: &[(&str, &str)], events: &Path) -> Server {
        let script = workspace_root().join("tests/mcp/servers/oauth_http.py");
        let mut child = Command::new("/usr/bin/python3")
            .arg(script)
            .envs(env.iter().copied())
            .env("EVENTS_FILE", events)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("/usr/bin/python3 runs the OAuth test server");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().strip_prefix("listening on ").expect("its port");
        Server {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A config in `dir` with the server at `url` as `mcp/remote`.
fn config_for(dir: &Path, url: &str) -> PathBuf {
    let path = dir.join("agent.toml");
    std::fs::write(
        &path,
        format!(
            "[plugins.mcp]\npath = \"builtin:mcp\"\n\n[plugins.mcp.grants]\nnet = [\"http://127.0.0.1:*\"]\n\n[plugins.mcp.config.mcpServers.remote]\nurl = \"{url}\"\n"
        ),
    )
    .unwrap();
    path
}

/// A server started with `env`, a config for it in a new directory (with
/// the server's event log), and a login to it.
fn logged_in(env: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf, Server, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events");
    let server = Server::start(env, &log);
    let config = config_for(dir.path(), &server.url);
    let login = run(&config, &["mcp", "login", "remote", "--wait", "20"]);
    assert_eq!(login.status.code(), Some(0), "{}", output_of(&login));
    (dir, log, server, config)
}

/// The binary with `--config config` and `args`, the test browser as
/// `$BROWSER`.
fn run(config: &Path, args: &[&str]) -> Output {
    let browser = format!(
        "/usr/bin/python3 {}",
        workspace_root()
            .join("tests/conformance/browser.py")
            .display()
    );
    let child = Command::new(env!("CARGO_BIN_EXE_tiny-harness"))
        .arg("--config")
        .arg(config)
        .args(args)
        .current_dir(config.parent().unwrap())
        .env("BROWSER", browser)
        .env("TINY_HARNESS_CACHE_DIR", super::shared_cache())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    wait_live(child)
}

fn events(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The access token the token file holds for `mcp/remote`.
fn access_token(dir: &Path) -> String {
    let text = std::fs::read_to_string(dir.join("agent.tokens")).unwrap();
    let file: serde_json::Value = serde_json::from_str(&text).unwrap();
    file["servers"]["mcp/remote"]["credentials"]["token_response"]["access_token"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn output_of(output: &Output) -> String {
    format!("{}{}", stdout(output), stderr(output))
}

#[test]
fn a_login_is_kept_beside_the_config_owner_only_and_attached_by_the_host() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events");
    let server = Server::start(&[], &log);
    let config = config_for(dir.path(), &server.url);

    let before = run(&config, &["tools"]);
    assert!(
        stderr(&before).contains("asks for an OAuth login: run tiny-harness mcp login remote"),
        "{}",
        stderr(&before)
    );
    // The empty list says why, not that no plugin supplies tools.
    assert!(
        stdout(&before).contains("MCP server mcp/remote did not start"),
        "{}",
        stdout(&before)
    );

    let login = run(&config, &["mcp", "login", "remote", "--wait", "20"]);
    assert_eq!(login.status.code(), Some(0), "{}", output_of(&login));
    let said = stdout(&login);
    assert!(
        said.contains("logged in to mcp/remote (client dynamic); scopes: read"),
        "{said}"
    );
    assert!(
        stderr(&login).contains("/as/authorize?"),
        "the URL is printed"
    );
    let seen = events(&log);
    assert!(seen.contains(&"register".to_owned()), "{seen:?}");
    assert!(seen.contains(&"authorize read".to_owned()), "{seen:?}");
    assert!(
        seen.contains(&"token authorization_code".to_owned()),
        "{seen:?}"
    );

    let tokens = dir.path().join("agent.tokens");
    let mode = std::fs::metadata(&tokens).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let token = access_token(dir.path());
    assert!(token.starts_with("tok-"));

    let call = run(&config, &["call", "mcp/remote.whoami", "{}"]);
    assert_eq!(call.status.code(), Some(0), "{}", output_of(&call));
    assert!(stdout(&call).contains("scopes: read"), "{}", stdout(&call));
    assert!(
        events(&log).contains(&format!("mcp tools/call {token}")),
        "the host sent the token"
    );
    let plugins = run(&config, &["plugins"]);
    let shown = stdout(&plugins);
    assert!(
        shown.contains("logged in until") && shown.contains("refreshed by the host; scopes: read"),
        "{shown}"
    );
    // The token is in the token file and nowhere else.
    for output in [&login, &call, &plugins] {
        assert!(!output_of(output).contains(&token));
    }
    for file in ["agent.toml", "agent.lock"] {
        let text = std::fs::read_to_string(dir.path().join(file)).unwrap();
        assert!(
            !text.contains("tok-") && !text.contains("refresh-"),
            "{file}"
        );
    }

    // Others may read it: refused, with what to do.
    std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o644)).unwrap();
    let refused = run(&config, &["call", "mcp/remote.whoami", "{}"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        output_of(&refused).contains("chmod 600"),
        "{}",
        output_of(&refused)
    );
    assert!(!output_of(&refused).contains(&token));
    std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o600)).unwrap();

    let logout = run(&config, &["mcp", "logout", "remote"]);
    assert_eq!(stdout(&logout), "logged out of mcp/remote\n");
    assert!(!tokens.exists());
    let after = run(&config, &["call", "mcp/remote.whoami", "{}"]);
    assert_eq!(after.status.code(), Some(1));
    let said = stdout(&after);
    assert!(
        said.contains("code=\"login_required\"") && said.contains("tiny-harness mcp login remote"),
        "{said}"
    );
}

#[test]
fn a_step_up_fails_the_call_and_the_next_login_asks_for_the_wider_scope() {
    let (_dir, log, _server, config) = logged_in(&[("CALL_SCOPE", "write")]);

    let call = run(&config, &["call", "mcp/remote.whoami", "{}"]);
    assert_eq!(call.status.code(), Some(1));
    let said = stdout(&call);
    assert!(
        said.contains("code=\"login_required\"")
            && said.contains("needs a wider scope than its login grants (read write)"),
        "{said}"
    );

    let again = run(&config, &["mcp", "login", "remote", "--wait", "20"]);
    assert_eq!(again.status.code(), Some(0), "{}", output_of(&again));
    assert!(events(&log).contains(&"authorize read write".to_owned()));
    let call = run(&config, &["call", "mcp/remote.whoami", "{}"]);
    assert_eq!(call.status.code(), Some(0), "{}", output_of(&call));
    assert!(stdout(&call).contains("scopes: read write"));
}

#[test]
fn a_rejected_token_is_refreshed_and_a_rejected_refresh_says_to_log_in() {
    let (dir, log, _server, config) = logged_in(&[("REJECT_FIRST", "1")]);
    let first = access_token(dir.path());
    let call = run(&config, &["call", "mcp/remote.whoami", "{}"]);
    assert_eq!(call.status.code(), Some(0), "{}", output_of(&call));
    assert!(events(&log).contains(&"token refresh_token".to_owned()));
    assert_ne!(access_token(dir.path()), first, "the new token is saved");

    // Rejected in the middle of a session, at the call: the call is made
    // again on a new session with the new token (the server did not act
    // on it, so this holds for a tool not marked idempotent too).
    let (dir, log, _server, config) = logged_in(&[("REJECT_FIRST_CALL", "1"), ("PLAIN_TOOL", "1")]);
    let first = access_token(dir.path());
    let call = run(&config, &["call", "mcp/remote.whoami", "{}"]);
    assert_eq!(call.status.code(), Some(0), "{}", output_of(&call));
    let second = access_token(dir.path());
    assert_ne!(second, first, "the new token is saved");
    let seen = events(&log);
    let calls: Vec<&String> = seen
        .iter()
        .filter(|e| e.starts_with("mcp tools/call "))
        .collect();
    assert_eq!(
        calls,
        [
            &format!("mcp tools/call {first}"),
            &format!("mcp tools/call {second}")
        ],
        "{seen:?}"
    );

    let (_dir, _log, _server, config) =
        logged_in(&[("REJECT_FIRST", "1"), ("REFRESH_MODE", "reject")]);
    let call = run(&config, &["call", "mcp/remote.whoami", "{}"]);
    assert_eq!(call.status.code(), Some(1));
    let said = stdout(&call);
    assert!(
        said.contains("code=\"login_required\"")
            && said.contains("no longer accepts its login")
            && said.contains("tiny-harness mcp login remote"),
        "{said}"
    );
}

#[test]
fn a_bad_authorization_server_is_one_line_and_nothing_is_written() {
    for (env, wait, want) in [
        (
            ("TOKEN_MODE", "garbage"),
            "20",
            "the authorization server did not give tokens",
        ),
        (
            ("TOKEN_MODE", "hang"),
            "3",
            "its token endpoint did not answer within the login's 3 s",
        ),
        (
            ("STATE_MODE", "wrong"),
            "20",
            "the redirect does not answer this login",
        ),
        (
            ("AUTHORIZE_MODE", "elsewhere"),
            "2",
            "no redirect came back within 2 s",
        ),
        (
            ("PRM_RESOURCE", "http://other.example/mcp"),
            "20",
            "cannot discover how to log in to it",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("events");
        let server = Server::start(&[env], &log);
        let config = config_for(dir.path(), &server.url);
        let login = run(&config, &["mcp", "login", "remote", "--wait", wait]);
        assert_eq!(
            login.status.code(),
            Some(2),
            "{env:?}: {}",
            output_of(&login)
        );
        let err = stderr(&login);
        let last = err.lines().last().unwrap_or_default();
        assert!(
            last.starts_with("tiny-harness: error: server mcp/remote: ") && last.contains(want),
            "{env:?}: {err}"
        );
        assert!(stdout(&login).is_empty());
        assert!(
            !dir.path().join("agent.tokens").exists(),
            "{env:?}: nothing written"
        );
        drop(server);
    }
}

#[test]
fn at_a_terminal_a_step_up_asks_once_logs_in_and_calls_again() {
    let (dir, log, server, config) = logged_in(&[("CALL_SCOPE", "write")]);
    let browser = format!(
        "/usr/bin/python3 {}",
        workspace_root()
            .join("tests/conformance/browser.py")
            .display()
    );
    let config_arg = config.display().to_string();
    let seen = super::terminal::in_terminal_with(
        dir.path(),
        &["--config", &config_arg, "call", "mcp/remote.whoami", "{}"],
        &[("BROWSER", &browser)],
        b"y\n",
    );
    assert_eq!(seen.exit, Some(0), "{}", seen.screen);
    assert_eq!(
        seen.screen.matches("now? [Y/n]").count(),
        1,
        "{}",
        seen.screen
    );
    assert!(
        seen.screen.contains("scopes: read write"),
        "{}",
        seen.screen
    );
    assert!(events(&log).contains(&"authorize read write".to_owned()));
    drop(server);

    // A server that still refuses after the login: asked once, then the
    // call fails with what to do (no loop).
    let (dir, log, _server, config) = logged_in(&[("CALL_SCOPE", "write"), ("GRANT_ONLY", "read")]);
    let config_arg = config.display().to_string();
    let seen = super::terminal::in_terminal_with(
        dir.path(),
        &["--config", &config_arg, "call", "mcp/remote.whoami", "{}"],
        &[("BROWSER", &browser)],
        b"y\ny\ny\n",
    );
    assert_eq!(seen.exit, Some(1), "{}", seen.screen);
    assert_eq!(
        seen.screen.matches("now? [Y/n]").count(),
        1,
        "{}",
        seen.screen
    );
    assert!(seen.screen.contains("login_required"), "{}", seen.screen);
    let authorizations = events(&log)
        .iter()
        .filter(|e| e.starts_with("authorize"))
        .count();
    assert_eq!(authorizations, 2, "the first login and the one asked for");
}

#[test]
fn an_http_server_that_answers_discover_with_an_empty_result_is_reached_with_initialize() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events");
    let server = Server::start(&[("DISCOVER", "empty"), ("STATIC_TOKEN", "static-t")], &log);
    let config = config_for(dir.path(), &server.url);
    let text = std::fs::read_to_string(&config).unwrap()
        + "headers = { Authorization = \"Bearer static-t\" }\n";
    std::fs::write(&config, text).unwrap();
    // No lock yet: `plugins` starts the server to list it.
    let plugins = run(&config, &["plugins"]);
    assert!(
        stdout(&plugins).contains(
            "protocol 2025-11-25 (the server answered server/discover with an empty result, so initialize)"
        ),
        "{}",
        stdout(&plugins)
    );
    let call = run(&config, &["call", "mcp/remote.whoami", "{}"]);
    assert_eq!(call.status.code(), Some(0), "{}", output_of(&call));
    let seen = events(&log);
    let discover = seen
        .iter()
        .position(|e| e.starts_with("mcp server/discover"));
    let initialize = seen.iter().position(|e| e.starts_with("mcp initialize"));
    assert!(discover < initialize && initialize.is_some(), "{seen:?}");
}

#[test]
fn a_token_past_its_refresh_point_is_refreshed_before_it_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events");
    // Every token expires at once: the host must refresh before each use.
    let server = Server::start(&[("EXPIRES_IN", "0")], &log);
    let config = config_for(dir.path(), &server.url);
    let login = run(&config, &["mcp", "login", "remote", "--wait", "20"]);
    assert_eq!(login.status.code(), Some(0), "{}", output_of(&login));
    let first = access_token(dir.path());
    let call = run(&config, &["call", "mcp/remote.whoami", "{}"]);
    assert_eq!(call.status.code(), Some(0), "{}", output_of(&call));
    let seen = events(&log);
    assert!(seen.contains(&"token refresh_token".to_owned()), "{seen:?}");
    // The expired token never reached the server: no 401 was needed.
    assert!(
        !seen
            .iter()
            .any(|e| e.starts_with("mcp ") && e.ends_with(&first)),
        "{seen:?}"
    );
}

/// One `whoami` call through `host`: its rendered outcome.
async fn whoami(host: &tiny_harness_host::Host) -> String {
    let call = tiny_harness_host::ToolCall {
        id: "w".into(),
        name: "mcp/remote.whoami".into(),
        arguments: serde_json::json!({}),
    };
    host.invoke(&call).await.render().to_owned()
}

#[test]
fn a_running_session_takes_up_another_login_and_a_logout_from_the_token_file() {
    use tiny_harness_host::{Config, HostBuilder};
    let (dir, log, _server, config) = logged_in(&[]);
    let first = access_token(dir.path());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let host = runtime.block_on(async {
        let loaded = Config::load(&config).unwrap();
        HostBuilder::new().config(&loaded).build().await.unwrap()
    });
    let calls_with = |token: &str| {
        let line = format!("mcp tools/call {token}");
        events(&log).iter().filter(|e| **e == line).count()
    };
    for _ in 0..2 {
        let said = runtime.block_on(whoami(&host));
        assert!(said.contains("scopes: read"), "{said}");
    }
    assert_eq!(calls_with(&first), 2);
    assert!(!events(&log).contains(&"token refresh_token".to_owned()));

    // Another program logs in again: the session's next requests, within
    // the token file's recheck, carry the new token.
    let again = run(&config, &["mcp", "login", "remote", "--wait", "20"]);
    assert_eq!(again.status.code(), Some(0), "{}", output_of(&again));
    let second = access_token(dir.path());
    assert_ne!(second, first);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while calls_with(&second) == 0 {
        assert!(std::time::Instant::now() < deadline, "{:?}", events(&log));
        let said = runtime.block_on(whoami(&host));
        assert!(said.contains("scopes: read"), "{said}");
        std::thread::sleep(Duration::from_millis(100));
    }

    // And logs out: the session stops sending it.
    let logout = run(&config, &["mcp", "logout", "remote"]);
    assert_eq!(logout.status.code(), Some(0), "{}", output_of(&logout));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let said = runtime.block_on(whoami(&host));
        if said.contains("login_required") {
            assert!(said.contains("tiny-harness mcp login remote"), "{said}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{said}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_machine_token_past_its_life_is_obtained_again_within_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events");
    // Every token expires at once, and the grant gives no refresh token:
    // only obtaining a new one, in the session, lets a request through.
    let server = Server::start(
        &[("MACHINE_SECRET", "bot-secret"), ("EXPIRES_IN", "0")],
        &log,
    );
    let config = dir.path().join("agent.toml");
    std::fs::write(
        &config,
        format!(
            "[plugins.mcp]\npath = \"builtin:mcp\"\n\n[plugins.mcp.grants]\nnet = [\"http://127.0.0.1:*\"]\nenv = [\"BOT_SECRET\"]\n\n[plugins.mcp.config.mcpServers.remote]\nurl = \"{}\"\noauth = {{ grant = \"client_credentials\", client_id = \"bot\", client_secret = \"${{BOT_SECRET}}\" }}\n",
            server.url
        ),
    )
    .unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_tiny-harness"))
        .arg("--config")
        .arg(&config)
        .args(["call", "mcp/remote.whoami", "{}"])
        .current_dir(dir.path())
        .env("BOT_SECRET", "bot-secret")
        .env("TINY_HARNESS_CACHE_DIR", super::shared_cache())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let call = wait_live(child);
    assert_eq!(call.status.code(), Some(0), "{}", output_of(&call));
    assert!(stdout(&call).contains("scopes: read"), "{}", stdout(&call));
    let seen = events(&log);
    let obtained = seen
        .iter()
        .filter(|e| *e == "token client_credentials")
        .count();
    // One at the start, then one for each request of the session.
    assert!(obtained >= 3, "{seen:?}");
    assert!(
        !seen
            .iter()
            .any(|e| e.starts_with("mcp ") && e.ends_with(' ')),
        "no request went without a token: {seen:?}"
    );
}
