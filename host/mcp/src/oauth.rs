//! OAuth 2.1 for remote MCP servers, as the MCP authorization spec
//! describes it: a person logs in once (`tiny-harness mcp login SERVER`),
//! and the host attaches, refreshes and keeps the tokens itself
//! ([`Slot`], the [`rmcp`] credential store of one server).
//!
//! Invariants:
//! - The plugin that declares a server never sees its tokens: the host
//!   attaches them to its own HTTP requests.
//! - Tokens live only in the token file ([`tokens`]), mode 0600, beside
//!   the config; never in the config, the lock, a log, an error or a
//!   result.
//! - A token is sent only to the URL it was issued for: an entry whose
//!   resource is not the server's URL now is not used.
//! - Discovery, registration and token requests go through rmcp's
//!   filtered client: names an authorization server gives may resolve to
//!   a loopback or private address only when the MCP URL itself is one,
//!   never to link-local (cloud metadata) addresses; every response is
//!   bounded and every request has a timeout.

mod attach;
mod machine;
pub mod settings;
pub mod tokens;

use std::sync::Arc;

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, CredentialStore, OAuthClientConfig, StoredCredentials,
};

pub(crate) use attach::{Attached, SessionClient};
pub use settings::{IdentityProviderSettings, SIGNING_ALGORITHMS, Settings};
use tiny_harness_core::declaration::Grant;
pub use tokens::{Entry, Tokens};

/// Why a login, or the use of a login, failed: one line that names what
/// to do.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthError {
    /// The token file cannot be used (its owner, mode or contents).
    #[error("{0}")]
    TokenFile(String),
    /// The server or its authorization server answered something the
    /// host cannot use, or could not be reached.
    #[error("{0}")]
    Server(String),
    /// The person's side: no redirect in time, a redirect this login did
    /// not ask for, or a refusal from the authorization server.
    #[error("{0}")]
    Authorization(String),
}

/// One server's place in the token file: what rmcp loads and saves.
#[derive(Debug, Clone)]
pub struct Slot {
    tokens: Arc<Tokens>,
    key: String,
    resource: String,
}

impl Slot {
    /// The entry `key` (`<plugin>/<server>`) of `tokens`, for the server
    /// at `resource`.
    pub fn new(tokens: Arc<Tokens>, key: &str, resource: &url::Url) -> Slot {
        Slot {
            tokens,
            key: key.to_owned(),
            resource: resource.as_str().to_owned(),
        }
    }

    /// `<plugin>/<server>`.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The token file.
    pub fn tokens(&self) -> &Tokens {
        &self.tokens
    }

    /// The entry, if there is one for this URL (an entry for another URL
    /// is not this server's any more).
    pub fn entry(&self) -> Result<Option<Entry>, OAuthError> {
        Ok(self
            .tokens
            .entry(&self.key)?
            .filter(|e| e.resource == self.resource))
    }

    /// The credentials for this URL, with when the file was last seen to
    /// hold them and its generation then.
    fn seen(&self) -> Result<tokens::Seen, OAuthError> {
        self.tokens.credentials_seen(&self.key, &self.resource)
    }

    /// Changes the entry (for this URL), the rest of the file untouched.
    pub fn update(
        &self,
        change: impl FnOnce(Option<Entry>) -> Option<Entry>,
    ) -> Result<bool, OAuthError> {
        let resource = self.resource.clone();
        self.tokens.update(&self.key, |old| {
            change(old.filter(|e| e.resource == resource))
        })
    }

    /// Records scopes a server asked for (a step-up), so that the next
    /// login asks for them.
    pub fn want(&self, scopes: &[String]) -> Result<(), OAuthError> {
        self.update(|entry| {
            entry.map(|mut entry| {
                for scope in scopes {
                    if !entry.wanted_scopes.contains(scope) {
                        entry.wanted_scopes.push(scope.clone());
                    }
                }
                entry
            })
        })
        .map(|_| ())
    }

    /// What `plugins` shows: whether there is a login, and until when its
    /// access token holds (seconds since the epoch), and whether it can be
    /// refreshed.
    pub fn state(&self) -> Result<Option<LoginState>, OAuthError> {
        use oauth2::TokenResponse as _;
        Ok(self.entry()?.and_then(|entry| {
            let response = entry.credentials.token_response.as_ref()?;
            let until = match (response.expires_in(), entry.credentials.token_received_at) {
                (Some(lasts), Some(at)) => Some(at.saturating_add(lasts.as_secs())),
                _ => None,
            };
            Some(LoginState {
                until,
                refreshable: response.refresh_token().is_some(),
                scopes: entry.credentials.granted_scopes.clone(),
            })
        }))
    }

    /// A manager for this server's calls, from its login: `None` when
    /// there is no login for it.
    pub(crate) async fn manager(&self) -> Result<Option<AuthorizationManager>, OAuthError> {
        let Some(entry) = self.entry()? else {
            return Ok(None);
        };
        if entry.credentials.token_response.is_none() {
            return Ok(None);
        }
        let mut manager = AuthorizationManager::new(self.resource.as_str())
            .await
            .map_err(|e| self.server_error(&e))?;
        if let Some(metadata) = entry.metadata.clone() {
            manager.set_metadata(metadata);
        }
        manager.set_credential_store(self.clone());
        if !manager
            .initialize_from_store()
            .await
            .map_err(|e| self.server_error(&e))?
        {
            return Ok(None);
        }
        if let Some(secret) = entry.client_secret {
            let mut config = OAuthClientConfig::new(
                entry.credentials.client_id.clone(),
                "http://127.0.0.1/callback",
            );
            config.client_secret = Some(secret);
            manager
                .configure_client(config)
                .map_err(|e| self.server_error(&e))?;
        }
        Ok(Some(manager))
    }

    fn server_error(&self, error: &AuthError) -> OAuthError {
        OAuthError::Server(format!(
            "server {}: {}",
            self.key,
            tiny_harness_core::display::one_line(&error.to_string())
        ))
    }
}

/// A server's login, as `plugins` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoginState {
    /// When the access token stops holding (seconds since the epoch), if
    /// the authorization server said.
    pub until: Option<u64>,
    /// Whether the host can refresh it without the person.
    pub refreshable: bool,
    /// The scopes granted.
    pub scopes: Vec<String>,
}

#[async_trait::async_trait]
impl CredentialStore for Slot {
    // At every request of a logged-in session: only the credentials are
    // copied out of the (cached) file.
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        self.tokens
            .credentials(&self.key, &self.resource)
            .map_err(|e| AuthError::CredentialStoreError(e.to_string()))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let resource = self.resource.clone();
        self.update(|entry| {
            Some(match entry {
                Some(mut entry) => {
                    entry.credentials = credentials;
                    entry
                }
                None => Entry {
                    resource,
                    credentials,
                    client_secret: None,
                    wanted_scopes: Vec::new(),
                    metadata: None,
                },
            })
        })
        .map(|_| ())
        .map_err(|e| AuthError::CredentialStoreError(e.to_string()))
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.update(|_| None)
            .map(|_| ())
            .map_err(|e| AuthError::CredentialStoreError(e.to_string()))
    }
}

/// What a server's 401 or 403 `challenge` means for the person, as one
/// line, and whether a login would help: it asks for a login, or no longer
/// accepts the one there is, or wants a wider scope (recorded, so that the
/// next `mcp login` asks for it). A 403 for scopes already granted is not
/// helped by a login, and says so.
/// `logged_in`: whether the session carried a token.
pub(crate) fn refusal(server: &str, auth: Auth<'_>, challenge: &str, logged_in: bool) -> Refusal {
    use rmcp::transport::auth::WWWAuthenticateParams;
    let kept = auth.login;
    let params = WWWAuthenticateParams::parse(challenge, auth.url);
    let login = format!("run tiny-harness mcp login {server}");
    let Some(slot) = kept else {
        return Refusal {
            reason: format!(
                "server {server} asks for an OAuth login, and this host keeps none (it keeps them beside a config file: {login} with --config)"
            ),
            login_would_help: true,
        };
    };
    if params.is_insufficient_scope() {
        let wanted: Vec<String> = params
            .scope
            .as_deref()
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        let granted = slot
            .state()
            .ok()
            .flatten()
            .map(|s| s.scopes)
            .unwrap_or_default();
        let shown = tiny_harness_core::display::one_line(&wanted.join(" ")).into_owned();
        if !wanted.is_empty() && wanted.iter().all(|s| granted.contains(s)) {
            return Refusal {
                reason: format!(
                    "server {server} refuses the call although its login grants the scopes it asks for ({shown}); logging in again will not help"
                ),
                login_would_help: false,
            };
        }
        if let Err(e) = slot.want(&wanted) {
            tracing::warn!(target: "tiny_harness::mcp", server, "{e}");
        }
        return Refusal {
            reason: format!(
                "server {server} needs a wider scope than its login grants ({}): {login}, which asks for it",
                if shown.is_empty() { "unnamed" } else { &shown }
            ),
            login_would_help: true,
        };
    }
    Refusal {
        reason: if logged_in {
            format!(
                "server {server} no longer accepts its login (expired or revoked, and it could not be refreshed): {login}"
            )
        } else {
            format!("server {server} asks for an OAuth login: {login}")
        },
        login_would_help: true,
    }
}

/// [`refusal`] of a call on an open session: it carried a token when the
/// server's login holds one.
pub(crate) fn refusal_during_call(server: &str, auth: Auth<'_>, challenge: &str) -> Refusal {
    let logged_in = auth
        .login
        .and_then(|slot| slot.state().ok().flatten())
        .is_some();
    refusal(server, auth, challenge, logged_in)
}

/// The token a session with `endpoint` carries: its login's, or (for a
/// grant that needs no person) one the host obtains; `None` when it has
/// no login.
pub(crate) async fn attach(auth: Auth<'_>) -> Result<Option<Arc<Attached>>, OAuthError> {
    let machine = machine_grant(auth);
    let Some(slot) = auth.login else {
        return Ok(None);
    };
    let manager = match machine {
        Some(settings) => Some(slot.obtain(settings, false).await?),
        None => slot.manager().await?,
    };
    Ok(manager.map(|manager| {
        let machine = machine.cloned();
        Arc::new(Attached::new(manager, slot.clone(), machine))
    }))
}

/// A new token for a session with `endpoint` whose token the server
/// rejected, where the host obtains its tokens itself (a grant that needs
/// no person); `None` otherwise.
pub(crate) async fn attach_anew(auth: Auth<'_>) -> Result<Option<Arc<Attached>>, OAuthError> {
    let (Some(slot), Some(settings)) = (auth.login, machine_grant(auth)) else {
        return Ok(None);
    };
    let manager = slot.obtain(settings, true).await?;
    Ok(Some(Arc::new(Attached::new(
        manager,
        slot.clone(),
        Some(settings.clone()),
    ))))
}

/// The declared settings of a grant that needs no person (client
/// credentials, enterprise): the host obtains the token.
fn machine_grant(auth: Auth<'_>) -> Option<&Settings> {
    auth.settings
        .filter(|o| matches!(o.grant, Grant::ClientCredentials | Grant::Enterprise))
}

impl Auth<'_> {
    /// The key of its login, for `Debug`.
    pub(crate) fn login_key(&self) -> Option<&str> {
        self.login.map(Slot::key)
    }
}

/// What the OAuth side needs of a server's endpoint.
#[derive(Clone, Copy)]
pub(crate) struct Auth<'a> {
    /// The server's URL.
    pub url: &'a url::Url,
    /// Where its login is kept, when the host keeps logins.
    pub login: Option<&'a Slot>,
    /// Its declared OAuth settings.
    pub settings: Option<&'a Settings>,
}

/// The HTTP client of a session: reqwest's, with `login`'s token attached.
pub(crate) fn session_client(http: reqwest::Client, login: Option<Arc<Attached>>) -> SessionClient {
    SessionClient::new(http, login)
}

/// A server's refusal of the host's credentials, for people and the model.
#[derive(Debug, Clone)]
pub(crate) struct Refusal {
    /// One line saying what to do.
    pub reason: String,
    /// Whether `mcp login` would help (else the call is simply denied).
    pub login_would_help: bool,
}
