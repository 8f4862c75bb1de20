//! `tiny-harness mcp add`: a server added to the config, with the grants
//! its launcher needs, after checking that the config still loads.

use std::path::Path;
use std::process::ExitCode;

use crate::tooling::add::{self, Request};
use tiny_harness_core::display::one_line;
use tiny_harness_mcp::launcher;

use super::emit;

pub(super) fn add(
    config: &Path,
    request: &Request,
    command: &[String],
) -> anyhow::Result<ExitCode> {
    let server = one_line(&request.name).into_owned();
    let (program, args) = command
        .split_first()
        .ok_or_else(|| anyhow::anyhow!("server {server}: give its command after --"))?;
    let cwd = std::env::current_dir()
        .map_err(|e| anyhow::anyhow!("cannot tell the current directory: {e}"))?;
    let path = std::env::var_os("PATH");
    let plan = launcher::plan(program, args, path.as_deref(), &cwd);
    // A launcher that fetches its package need not be here: `mcp install`
    // installs the package without it, and confined it would not run.
    if !plan.found && !plan.fetches() {
        let why = plan
            .notes
            .first()
            .map(String::as_str)
            .unwrap_or("not found");
        anyhow::bail!("server {server} was not added: {}", one_line(why));
    }
    // Read, changed and written under the config's edit lock: another
    // command changing it at once lands too.
    let _editing = tiny_harness_core::file::edit::EditLock::take(config)?;
    let text = config_text(config)?;
    let added = add::add(&text, request, &plan)
        .map_err(|e| anyhow::anyhow!("{}: server {server} was not added: {e}", config.display()))?;
    // Never write a config the host would refuse.
    tiny_harness_host::Config::parse(config, &added.text).map_err(|e| {
        anyhow::anyhow!("server {server} was not added: the config would not load with it: {e}")
    })?;
    tiny_harness_core::file::replace(config, added.text.as_bytes())
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", config.display()))?;
    let mut review = added.review;
    review.insert(0, format!("{}:", config.display()));
    review.push(format!(
        "review the grants in {}, then: tiny-harness{} tools",
        config.display(),
        if config == Path::new(tiny_harness_host::Config::DEFAULT_FILE) {
            String::new()
        } else {
            format!(" --config {}", config.display())
        }
    ));
    emit(
        &review
            .iter()
            .map(|l| one_line(l).into_owned())
            .collect::<Vec<_>>()
            .join("\n"),
    )?;
    if plan.fetches() {
        eprintln!(
            "tiny-harness: warning: server {server} will not start confined: {}",
            one_line(plan.notes.first().map(String::as_str).unwrap_or_default())
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `tiny-harness mcp doctor SERVER`.
/// The MCP source `name` (`<server>` or `<plugin>/<server>`) of `host`,
/// with its plugin; an error listing the servers there are.
fn find<'a>(
    sources: &'a [(String, std::sync::Arc<tiny_harness_mcp::McpSource>)],
    name: &str,
) -> anyhow::Result<&'a (String, std::sync::Arc<tiny_harness_mcp::McpSource>)> {
    let found = sources.iter().find(|(plugin, source)| {
        source.server() == name || format!("{plugin}/{}", source.server()) == name
    });
    found.ok_or_else(|| {
        let names: Vec<String> = sources
            .iter()
            .map(|(p, s)| format!("{p}/{}", s.server()))
            .collect();
        anyhow::anyhow!(
            "there is no mcp server {} (servers: {})",
            one_line(name),
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        )
    })
}

pub(super) async fn doctor(host: &tiny_harness_host::Host, name: &str) -> anyhow::Result<ExitCode> {
    use tiny_harness_mcp::launch::Target;
    let sources = host.mcp_sources();
    let (plugin, source) = find(&sources, name)?;
    let key = format!("{plugin}/{}", source.server());
    let Some(launch) = source.launch() else {
        // Refused before anything ran: the reason says what to do.
        emit(&format!(
            "{key}: {}",
            one_line(&source.status().state.to_string())
        ))?;
        return Ok(ExitCode::from(1));
    };
    let Target::Process(program) = &launch.target else {
        anyhow::bail!("{key} is reached over HTTP: mcp doctor starts stdio servers");
    };
    let diagnosis = crate::tooling::doctor::diagnose(source)
        .await
        .map_err(|e| anyhow::anyhow!("{key}: {e}"))?;
    let confined = if program.policy.is_some() {
        "confined"
    } else {
        "unconfined (confinement = \"none\")"
    };
    let mut lines = vec![format!(
        "{key}: ran {confined} for {} ms; {}",
        diagnosis.ran.as_millis(),
        one_line(&diagnosis.ended)
    )];
    use crate::tooling::doctor::Denied;
    if diagnosis.denied.is_empty() {
        lines.push("nothing was denied".to_owned());
    } else {
        lines.push("denied:".to_owned());
        for denial in &diagnosis.denied {
            lines.push(match denial {
                Denied::Read(path) => format!("  read {}", one_line(path)),
                Denied::Write(path) => format!("  write {}", one_line(path)),
                Denied::Execute(path) => format!("  run {}", one_line(path)),
                Denied::Connect(address, port) => format!("  connect {}:{port}", one_line(address)),
                Denied::UnixSocket => "  a Unix socket".to_owned(),
            });
        }
    }
    if !diagnosis.fixes.is_empty() {
        lines.push("to allow them, add (merging with what is there):".to_owned());
        lines.extend(diagnosis.fixes.iter().map(|f| format!("  {f}")));
    }
    lines.extend(
        diagnosis
            .notes
            .iter()
            .map(|n| format!("note: {}", one_line(n))),
    );
    emit(&lines.join("\n"))?;
    Ok(if diagnosis.denied.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The HTTP endpoint of server `name`, and where its login is kept.
fn endpoint<'a>(
    source: &'a tiny_harness_mcp::McpSource,
    key: &str,
) -> anyhow::Result<(
    &'a tiny_harness_mcp::launch::Endpoint,
    &'a tiny_harness_mcp::oauth::Slot,
)> {
    use tiny_harness_mcp::launch::Target;
    let Some(launch) = source.launch() else {
        anyhow::bail!("{key}: {}", one_line(&source.status().state.to_string()));
    };
    let Target::Http(endpoint) = &launch.target else {
        anyhow::bail!("{key} is a stdio server: only HTTP servers take a login");
    };
    let slot = endpoint.login.as_ref().ok_or_else(|| {
        anyhow::anyhow!("{key}: this host keeps no logins (it keeps them beside a config file)")
    })?;
    Ok((endpoint, slot))
}

pub(super) async fn login(
    host: &tiny_harness_host::Host,
    name: &str,
    scopes: Vec<String>,
    open_browser: bool,
    wait: u64,
) -> anyhow::Result<ExitCode> {
    let done = log_in(host, name, scopes, open_browser, wait).await?;
    emit(&done)?;
    Ok(ExitCode::SUCCESS)
}

/// Logs in to server `name` of `host` (see `mcp login`); what was done,
/// as one line.
pub(super) async fn log_in(
    host: &tiny_harness_host::Host,
    name: &str,
    scopes: Vec<String>,
    open_browser: bool,
    wait: u64,
) -> anyhow::Result<String> {
    let sources = host.mcp_sources();
    let (plugin, source) = find(&sources, name)?;
    let key = format!("{plugin}/{}", source.server());
    let (endpoint, slot) = endpoint(source, &key)?;
    let settings = endpoint.oauth.as_deref().cloned().unwrap_or_default();
    use tiny_harness_mcp::declaration::Grant;
    if let Some(grant) = match settings.grant {
        Grant::ClientCredentials => Some("client_credentials"),
        Grant::Enterprise => Some("enterprise"),
        _ => None,
    } {
        // No person: the host obtains the token itself (and would at the
        // next call); a login checks that it can.
        slot.obtain(&settings, true)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let state = slot.state().map_err(|e| anyhow::anyhow!("{e}"))?;
        let scopes = state.map(|s| s.scopes).unwrap_or_default();
        return Ok(format!(
            "logged in to {key} without a browser (grant {grant}); scopes: {}; the host obtains a new token as needed",
            if scopes.is_empty() {
                "none named".to_owned()
            } else {
                one_line(&scopes.join(" ")).into_owned()
            }
        ));
    }
    let mut request = crate::tooling::login::Login {
        scopes,
        ..Default::default()
    };
    request.scopes.extend(settings.scopes.iter().cloned());
    request.client_id = settings.client_id.clone();
    request.client_secret = settings.client_secret.clone();
    request.client_metadata_url = settings.client_metadata_url.clone();
    request.callback_port = settings.callback_port;
    request.open_browser = open_browser;
    request.wait = std::time::Duration::from_secs(wait);
    // First as a session would, without a token: a server that answers
    // has nothing to log in to, and nothing is registered or written.
    use tiny_harness_mcp::Unauthenticated;
    let (challenge, unreached) = match source.without_login().await {
        Some(Unauthenticated::Answered) => {
            let kept = slot.state().ok().flatten().is_some();
            return Ok(format!(
                "{key} answered without asking for a login: there is nothing to log in to{}",
                if kept {
                    " (the login kept for it is not needed: tiny-harness mcp logout removes it)"
                } else {
                    ""
                }
            ));
        }
        Some(Unauthenticated::Challenged(challenge)) => (Some(challenge), None),
        Some(Unauthenticated::Failed(why)) => (None, Some(why)),
        _ => (None, None),
    };
    let mut tell = |line: &str| eprintln!("tiny-harness: {line}");
    let done = crate::tooling::login::login(
        slot,
        &endpoint.url,
        challenge.as_deref(),
        &request,
        &mut tell,
    )
    .await
    .map_err(|e| match &unreached {
        // A 401 without a challenge is common (the well-known places
        // are then tried); anything else is said beside the failure.
        Some(why) => anyhow::anyhow!(
            "{e} (without a token, the server did not answer either: {})",
            one_line(why)
        ),
        None => anyhow::anyhow!("{e}"),
    })?;
    Ok(format!(
        "logged in to {key} (client {}); scopes: {}; {}; tokens in {}",
        done.client,
        if done.scopes.is_empty() {
            "none named".to_owned()
        } else {
            one_line(&done.scopes.join(" ")).into_owned()
        },
        if done.refreshable {
            "refreshed by the host as needed"
        } else {
            "no refresh token: log in again when it expires"
        },
        one_line(&slot.tokens().path().display().to_string())
    ))
}

/// When `outcome` asks for a login and a person is at the terminal: asks
/// them, logs in (the browser opened as `mcp login` does) and says
/// whether to call again. At most once per call, so a server that keeps
/// asking cannot loop.
pub(super) async fn offer_login(
    host: &tiny_harness_host::Host,
    outcome: &tiny_harness_host::CallOutcome,
) -> bool {
    use std::io::{BufRead as _, IsTerminal as _, Write as _};
    let Err(tiny_harness_host::CallError::LoginRequired(why)) = &outcome.result else {
        return false;
    };
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return false;
    }
    let Some(server) = outcome
        .tool
        .split_once('.')
        .map(|(server, _)| server.to_owned())
    else {
        return false;
    };
    eprint!(
        "tiny-harness: {}
tiny-harness: log in to {server} now? [Y/n] ",
        one_line(why)
    );
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    if std::io::stdin().lock().read_line(&mut answer).is_err()
        || answer.trim().eq_ignore_ascii_case("n")
    {
        return false;
    }
    match log_in(
        host,
        &server,
        Vec::new(),
        true,
        crate::tooling::login::DEFAULT_WAIT.as_secs(),
    )
    .await
    {
        Ok(done) => {
            eprintln!("tiny-harness: {}", one_line(&done));
            true
        }
        Err(e) => {
            eprintln!("tiny-harness: {}", one_line(&e.to_string()));
            false
        }
    }
}

pub(super) async fn logout(host: &tiny_harness_host::Host, name: &str) -> anyhow::Result<ExitCode> {
    let sources = host.mcp_sources();
    let (plugin, source) = find(&sources, name)?;
    let key = format!("{plugin}/{}", source.server());
    let (_, slot) = endpoint(source, &key)?;
    let had = slot
        .tokens()
        .update(&key, |_| None)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    emit(&if had {
        format!("logged out of {key}")
    } else {
        format!("{key} had no login")
    })?;
    Ok(ExitCode::SUCCESS)
}

/// The text of the config at `config` for a command that adds to it:
/// empty when there is no such file yet.
pub(super) fn config_text(config: &Path) -> anyhow::Result<String> {
    match std::fs::symlink_metadata(config) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        _ => {
            let bytes = tiny_harness_core::file::read_regular(
                config,
                "config file",
                tiny_harness_core::file::MAX_CONFIG_BYTES,
            )
            .map_err(|e| anyhow::anyhow!("cannot read {}: {}", config.display(), e.reason))?;
            String::from_utf8(bytes)
                .map_err(|_| anyhow::anyhow!("{} is not UTF-8 text", config.display()))
        }
    }
}
