//! `tiny-harness mcp login SERVER`: the authorization-code flow with PKCE
//! through a loopback redirect, as the MCP authorization spec and RFC 8252
//! describe it for a native client.
//!
//! 1. The server is asked for its tools without a token, the way a
//!    session asks ([`tiny_harness_mcp::McpSource::without_login`]); one that
//!    answers needs no login, and none is attempted. Its 401 (or 403)
//!    `WWW-Authenticate` challenge names its protected-resource metadata
//!    and the scopes it wants (RFC 9728; without one, the well-known
//!    locations are tried, then RFC 8414 and OpenID discovery).
//! 2. The client is the pre-registered one the config names, else a
//!    Client ID Metadata Document the config names (when the
//!    authorization server supports them), else one registered
//!    dynamically (RFC 7591).
//! 3. The scopes asked for: those named on the command line, those a
//!    server asked for since the last login (a step-up) and those granted
//!    before; else the challenge's, else the metadata's `scopes_supported`,
//!    else none.
//! 4. The person opens the URL (printed, and opened with `$BROWSER` or the
//!    desktop's opener); the authorization server redirects to
//!    `http://127.0.0.1:PORT/callback`, whose `state` must be the one this
//!    login sent (rmcp checks it and the PKCE verifier), and the code is
//!    exchanged for tokens, saved in the token file.
//!
//! Invariants: nothing is written until the tokens are in hand; a failure
//! at any step leaves the token file as it was. The wait for the redirect
//! is bounded ([`Login::wait`]), each request to the loopback listener is
//! bounded in size and time, and requests for other paths are answered
//! 404 without ending the wait.

use std::time::Duration;

use rmcp::transport::auth::{AuthError, AuthorizationCallback, AuthorizationManager};
use rmcp::transport::auth::{AuthorizationMetadata, AuthorizationRequest, AuthorizationSession};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::browser;
use tiny_harness_core::display::one_line;
use tiny_harness_mcp::oauth::{OAuthError, Slot};

/// The longest a login waits for the person by default.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(300);

/// The largest request the loopback listener reads.
const MAX_CALLBACK_BYTES: usize = 16 << 10;

/// The most requests the listener answers while it waits (a browser asks
/// for a favicon or two; a flood is not a login).
const MAX_CALLBACK_REQUESTS: usize = 64;

/// How a login is to be done.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Login {
    /// Scopes to ask for beyond those the server names.
    pub scopes: Vec<String>,
    /// A pre-registered client id (no registration then).
    pub client_id: Option<String>,
    /// The pre-registered client's secret, if it is a confidential one.
    pub client_secret: Option<String>,
    /// The HTTPS URL of a Client ID Metadata Document the person hosts.
    pub client_metadata_url: Option<String>,
    /// The loopback port to listen on (a pre-registered redirect URI
    /// needs a fixed one); `None`: any free port.
    pub callback_port: Option<u16>,
    /// Open the URL in a browser (it is always printed).
    pub open_browser: bool,
    /// The longest to wait for the redirect.
    pub wait: Duration,
}

impl Default for Login {
    fn default() -> Login {
        Login {
            scopes: Vec::new(),
            client_id: None,
            client_secret: None,
            client_metadata_url: None,
            callback_port: None,
            open_browser: true,
            wait: DEFAULT_WAIT,
        }
    }
}

/// What a login obtained.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LoggedIn {
    /// The scopes granted.
    pub scopes: Vec<String>,
    /// Whether the access token can be refreshed without the person.
    pub refreshable: bool,
    /// How the client was registered: `pre-registered`, `metadata
    /// document` or `dynamic`.
    pub client: &'static str,
}

/// Logs in to the server of `slot` at `url`, which answered `challenge`
/// (its `WWW-Authenticate` header) to a session opened without a token
/// ([`tiny_harness_mcp::McpSource::without_login`]; `None` when it gave none),
/// telling the person what to do through `tell`.
pub async fn login(
    slot: &Slot,
    url: &url::Url,
    challenge: Option<&str>,
    request: &Login,
    tell: &mut (dyn FnMut(&str) + Send),
) -> Result<LoggedIn, OAuthError> {
    let server = slot.key().to_owned();
    let mut manager = AuthorizationManager::new(url.as_str())
        .await
        .map_err(|e| failed(&server, "cannot start a login", &e))?;
    let metadata = discover(&mut manager, url, challenge, &server).await?;
    manager.set_metadata(metadata.clone());
    manager.set_credential_store(slot.clone());
    let scopes = scopes_to_ask(slot, request, &manager).await?;
    let (listener, port) = listen(&server, request.callback_port).await?;
    let redirect_uri = format!("http://127.0.0.1:{port}/callback");
    let client = client(
        &mut manager,
        &metadata,
        request,
        &redirect_uri,
        scopes,
        &server,
    )
    .await?;

    let session = AuthorizationSession::new(manager, client.authorization)
        .await
        .map_err(|(_, e)| failed(&server, "cannot start the authorization", &e))?;
    let address = session.get_authorization_url().to_owned();
    tell(&format!(
        "to log in to {server}, open this URL in a browser (waiting up to {} s):\n{address}",
        request.wait.as_secs()
    ));
    if request.open_browser
        && let Err(why) = browser::open(&address)
    {
        tell(&why.to_string());
    }
    let deadline = tokio::time::Instant::now() + request.wait;
    let callback = callback(&listener, port, deadline, &address, request, &server).await?;
    exchange(&session, &callback, deadline, request, &server).await?;
    // The tokens are saved (rmcp saved them through the slot): add what a
    // call needs without discovering again, and forget the step-up.
    slot.update(|entry| {
        entry.map(|mut entry| {
            entry.client_secret = client.dynamic_secret;
            entry.metadata = Some(metadata);
            entry.wanted_scopes.clear();
            entry
        })
    })?;
    let state = slot.state()?.ok_or_else(|| {
        OAuthError::Server(format!(
            "server {server}: the authorization server answered without an access token"
        ))
    })?;
    Ok(LoggedIn {
        scopes: state.scopes,
        refreshable: state.refreshable,
        client: client.kind,
    })
}

/// A refusal from rmcp's side of the login, on one line.
fn failed(server: &str, what: &str, e: &AuthError) -> OAuthError {
    OAuthError::Server(format!(
        "server {server}: {what}: {}",
        one_line(&e.to_string())
    ))
}

/// The authorization server's metadata, from the server's challenge or
/// the well-known places.
async fn discover(
    manager: &mut AuthorizationManager,
    url: &url::Url,
    challenge: Option<&str>,
    server: &str,
) -> Result<AuthorizationMetadata, OAuthError> {
    let what = "cannot discover how to log in to it";
    match manager.resolve_metadata_from_challenge(challenge).await {
        Ok(resolution) => Ok(resolution.metadata),
        // A 2025-03-26 server (no protected-resource metadata) serves its
        // authorization server's metadata at its own origin, and some
        // give an issuer other than that origin, which RFC 8414 would
        // refuse; it is taken when every endpoint it names is on the
        // server's own origin (the server is then its own authorization
        // server, and no other can be mixed up with it).
        Err(e @ AuthError::AuthorizationServerMismatch { .. }) => same_origin_metadata(url)
            .await
            .ok_or_else(|| failed(server, what, &e)),
        Err(e) => Err(failed(server, what, &e)),
    }
}

/// The scopes asked for: those granted and wanted before, those named on
/// the command line; else what the server names.
async fn scopes_to_ask(
    slot: &Slot,
    request: &Login,
    manager: &AuthorizationManager,
) -> Result<Vec<String>, OAuthError> {
    let before = slot.entry()?;
    let mut scopes: Vec<String> = Vec::new();
    let mut add = |list: &[String]| {
        for scope in list {
            if !scope.is_empty() && !scopes.contains(scope) {
                scopes.push(scope.clone());
            }
        }
    };
    if let Some(before) = &before {
        add(&before.credentials.granted_scopes);
        add(&before.wanted_scopes);
    }
    add(&request.scopes);
    if scopes.is_empty() {
        scopes = manager.select_initial_scopes(&[]).await;
    }
    Ok(scopes)
}

/// The loopback listener the redirect comes back to, and its port.
async fn listen(
    server: &str,
    port: Option<u16>,
) -> Result<(tokio::net::TcpListener, u16), OAuthError> {
    let port = port.unwrap_or(0);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|e| {
            OAuthError::Authorization(format!(
                "server {server}: cannot listen on 127.0.0.1:{port} for the redirect: {e}"
            ))
        })?;
    let port = listener
        .local_addr()
        .map_err(|e| OAuthError::Authorization(format!("server {server}: {e}")))?
        .port();
    Ok((listener, port))
}

/// The client a login is made as, and how it came to be.
struct Client {
    authorization: AuthorizationRequest,
    /// `pre-registered`, `metadata document` or `dynamic`.
    kind: &'static str,
    /// The secret a dynamic registration gave, kept for refreshes.
    dynamic_secret: Option<String>,
}

/// The client: the pre-registered one the config names, else a Client ID
/// Metadata Document (when the authorization server takes them), else one
/// registered dynamically.
async fn client(
    manager: &mut AuthorizationManager,
    metadata: &AuthorizationMetadata,
    request: &Login,
    redirect_uri: &str,
    scopes: Vec<String>,
    server: &str,
) -> Result<Client, OAuthError> {
    let supports_documents = metadata
        .additional_fields
        .get("client_id_metadata_document_supported")
        .and_then(|v| v.as_bool())
        .unwrap_or(false);
    let mut authorization = AuthorizationRequest::new(redirect_uri.to_owned())
        .with_client_name("tiny-harness")
        .with_scopes(scopes.clone());
    let mut dynamic_secret = None;
    let kind = if let Some(id) = &request.client_id {
        authorization = authorization.with_preregistered_client(id.clone());
        if let Some(secret) = &request.client_secret {
            authorization = authorization.with_client_secret(secret.clone());
        }
        "pre-registered"
    } else if let Some(document) = request
        .client_metadata_url
        .as_ref()
        .filter(|_| supports_documents)
    {
        authorization = authorization.with_client_metadata_url(document.clone());
        "metadata document"
    } else if metadata.registration_endpoint.is_some() {
        let scope_refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
        let registered = manager
            .register_client("tiny-harness", redirect_uri, &scope_refs)
            .await
            .map_err(|e| {
                failed(
                    server,
                    "the authorization server refused to register this client",
                    &e,
                )
            })?;
        authorization = authorization.with_preregistered_client(registered.client_id.clone());
        if let Some(secret) = &registered.client_secret {
            authorization = authorization.with_client_secret(secret.clone());
        }
        dynamic_secret = registered.client_secret;
        "dynamic"
    } else {
        return Err(OAuthError::Server(format!(
            "server {server}: its authorization server registers no clients dynamically{}: set oauth.client_id (and oauth.client_secret as ${{VAR}}) in the server's config",
            if request.client_metadata_url.is_some() {
                " and takes no client metadata documents"
            } else {
                ""
            }
        )));
    };
    Ok(Client {
        authorization,
        kind,
        dynamic_secret,
    })
}

/// The authorization response the browser brings back by `deadline`,
/// answering this login (its `state` the one `address` sent).
async fn callback(
    listener: &tokio::net::TcpListener,
    port: u16,
    deadline: tokio::time::Instant,
    address: &str,
    request: &Login,
    server: &str,
) -> Result<AuthorizationCallback, OAuthError> {
    let redirected = tokio::time::timeout_at(deadline, redirect(listener, port))
        .await
        .map_err(|_| {
            OAuthError::Authorization(format!(
                "server {server}: no redirect came back within {} s: run tiny-harness mcp login again and finish in the browser",
                request.wait.as_secs()
            ))
        })?
        .map_err(|why| OAuthError::Authorization(format!("server {server}: {why}")))?;
    let callback = AuthorizationCallback::from_redirect_url(&redirected)
        .map_err(|e| failed(server, "the redirect is not an authorization response", &e))?;
    // The state must be the one this login sent: another is an old or a
    // forged redirect (rmcp would only say it knows no such state).
    let sent = url::Url::parse(address).ok().and_then(|u| {
        u.query_pairs()
            .find(|(k, _)| k == "state")
            .map(|(_, v)| v.into_owned())
    });
    if sent.as_deref() != Some(callback.csrf_token.as_str()) {
        return Err(OAuthError::Authorization(format!(
            "server {server}: the redirect does not answer this login (its state is not the one sent): run tiny-harness mcp login again"
        )));
    }
    Ok(callback)
}

/// The code exchanged for tokens by `deadline` (rmcp saves them through
/// the slot).
async fn exchange(
    session: &AuthorizationSession,
    callback: &AuthorizationCallback,
    deadline: tokio::time::Instant,
    request: &Login,
    server: &str,
) -> Result<(), OAuthError> {
    let exchange = session.handle_callback_with_issuer(
        &callback.code,
        &callback.csrf_token,
        callback.issuer.as_deref(),
    );
    tokio::time::timeout_at(deadline, exchange)
        .await
        .map_err(|_| {
            OAuthError::Server(format!(
                "server {server}: its token endpoint did not answer within the login's {} s: try again later, or with a longer --wait",
                request.wait.as_secs()
            ))
        })?
        .map_err(|e| match e {
            AuthError::AuthorizationFailed(_) | AuthError::AuthorizationServerMismatch { .. } => {
                OAuthError::Authorization(format!(
                    "server {server}: the redirect does not answer this login ({}): run tiny-harness mcp login again",
                    one_line(&e.to_string())
                ))
            }
            other => failed(server, "the authorization server did not give tokens", &other),
        })?;
    Ok(())
}

/// The authorization server metadata at `url`'s origin
/// (`/.well-known/oauth-authorization-server`, as 2025-03-26 servers
/// publish it), if every endpoint it names is on that origin.
async fn same_origin_metadata(url: &url::Url) -> Option<AuthorizationMetadata> {
    let origin = url.origin();
    let address = url.join("/.well-known/oauth-authorization-server").ok()?;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .ok()?;
    let mut response = client.get(address).send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.ok()? {
        body.extend_from_slice(&chunk);
        if body.len() > 1 << 20 {
            return None;
        }
    }
    let metadata: rmcp::transport::auth::AuthorizationMetadata =
        serde_json::from_slice(&body).ok()?;
    let ours = |endpoint: &str| url::Url::parse(endpoint).is_ok_and(|e| e.origin() == origin);
    let every = [
        Some(metadata.authorization_endpoint.as_str()),
        Some(metadata.token_endpoint.as_str()),
        metadata.registration_endpoint.as_deref(),
    ];
    every.iter().flatten().all(|e| ours(e)).then_some(metadata)
}

/// Waits on `listener` for the redirect to `/callback` and answers it:
/// the URL it was sent to, or why the authorization server refused.
async fn redirect(listener: &tokio::net::TcpListener, port: u16) -> Result<String, String> {
    for _ in 0..MAX_CALLBACK_REQUESTS {
        let (mut stream, _) = listener
            .accept()
            .await
            .map_err(|e| format!("the redirect listener failed: {e}"))?;
        let Ok(Ok(target)) =
            tokio::time::timeout(Duration::from_secs(10), request_target(&mut stream)).await
        else {
            continue;
        };
        let Some(query) = target.strip_prefix("/callback") else {
            let _ = answer(&mut stream, "404 Not Found", "Not the login redirect.").await;
            continue;
        };
        let full = format!("http://127.0.0.1:{port}/callback{query}");
        let parsed =
            url::Url::parse(&full).map_err(|e| format!("the redirect is malformed: {e}"))?;
        let field = |name: &str| {
            parsed
                .query_pairs()
                .find(|(k, _)| k == name)
                .map(|(_, v)| one_line(&v).chars().take(200).collect::<String>())
        };
        if let Some(error) = field("error") {
            let _ = answer(
                &mut stream,
                "200 OK",
                "The login was refused. You may close this window.",
            )
            .await;
            return Err(format!(
                "the authorization server refused the login: {error}{}",
                field("error_description")
                    .map(|d| format!(" ({d})"))
                    .unwrap_or_default()
            ));
        }
        let _ = answer(
            &mut stream,
            "200 OK",
            "Logged in: you may close this window and go back to tiny-harness.",
        )
        .await;
        return Ok(full);
    }
    Err(format!(
        "the redirect listener answered {MAX_CALLBACK_REQUESTS} requests and none was the login's"
    ))
}

/// The request target (`/callback?code=…`) of the HTTP request on
/// `stream`, read up to [`MAX_CALLBACK_BYTES`].
async fn request_target(stream: &mut tokio::net::TcpStream) -> std::io::Result<String> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 2048];
    while !buffer.windows(4).any(|w| w == b"\r\n\r\n") {
        let read = stream.read(&mut chunk).await?;
        if read == 0 || buffer.len() + read > MAX_CALLBACK_BYTES {
            return Err(std::io::Error::other(
                "not an HTTP request the listener takes",
            ));
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
    let head = String::from_utf8_lossy(&buffer);
    let line = head.lines().next().unwrap_or_default();
    let mut parts = line.split(' ');
    match (parts.next(), parts.next()) {
        (Some("GET"), Some(target)) => Ok(target.to_owned()),
        _ => Err(std::io::Error::other("not a GET request")),
    }
}

async fn answer(
    stream: &mut tokio::net::TcpStream,
    status: &str,
    text: &str,
) -> std::io::Result<()> {
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\ncache-control: no-store\r\n\r\n{text}",
        text.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}
