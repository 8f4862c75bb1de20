//! The HTTP client of every MCP session over HTTP: reqwest, and, when the
//! server has a login, its access token attached by the host.
//!
//! Sessions with and without a login run the same code: a login only adds
//! an `Authorization` header to the headers the config gives, so the
//! requests reach reqwest the same way.
//!
//! Invariants:
//! - A session without a login sends what its config says, nothing more.
//! - A request carries a token that was read from the token file at most
//!   [`RECHECK`](super::tokens::RECHECK) before, and never one past the
//!   point where rmcp would refresh it (30 s before it expires, or half its
//!   life when that is shorter): up to there, a request costs a clock read
//!   and an uncontended lock; past it, one request refreshes (the others
//!   wait for it, then use what it got).
//! - A token the server rejects (401) is refreshed once. A `GET` or
//!   `DELETE` is then sent once more with the new token; a `POST` is not
//!   (keeping a copy of every message for that would cost every call, in
//!   proportion to its arguments): the challenge goes to the session,
//!   which opens a new one and sends the message again when
//!   [`Attached::take_replaced`] says the login holds another token (the
//!   server did not act on a request it refused), and otherwise names
//!   `mcp login`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_core::stream::BoxStream;
use oauth2::TokenResponse as _;
use reqwest::header::{AUTHORIZATION, HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::auth::{AuthError, AuthorizationManager};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};

use super::{Settings, Slot};

type Headers = HashMap<HeaderName, HeaderValue>;
type Failure = StreamableHttpError<reqwest::Error>;
type Events = BoxStream<'static, Result<sse_stream::Sse, sse_stream::Error>>;

/// What rmcp leaves of a token's life before it refreshes it: this many
/// seconds, or half the life when that is shorter (and at least one).
const REFRESH_BUFFER_SECS: u64 = 30;

/// The client of one HTTP session.
#[derive(Clone)]
pub(crate) struct SessionClient {
    http: reqwest::Client,
    login: Option<Arc<Attached>>,
}

impl SessionClient {
    /// Requests through `http`, with the token of `login` when there is one.
    pub(crate) fn new(http: reqwest::Client, login: Option<Arc<Attached>>) -> SessionClient {
        SessionClient { http, login }
    }
}

/// A login's token, as the requests of one session use it.
pub(crate) struct Attached {
    /// Refreshes (one at a time).
    manager: tokio::sync::Mutex<AuthorizationManager>,
    /// Where the token lives.
    slot: Slot,
    /// How the host obtains a token itself, for a grant that needs no
    /// person (client credentials, enterprise): a token past its life is
    /// replaced in the session, not refreshed.
    machine: Option<Settings>,
    /// The header last made, while it holds.
    current: Mutex<Option<Held>>,
    /// Set when a `POST` was rejected and a refresh gave another token.
    replaced: AtomicBool,
}

/// A header, and what it holds for: until `until`, while the token file
/// is at `generation`.
struct Held {
    header: HeaderValue,
    until: Instant,
    generation: u64,
}

impl Attached {
    /// The token of `slot`, refreshed by `manager` (whose credential store
    /// it is), or obtained again by `machine`'s grant.
    pub(crate) fn new(
        manager: AuthorizationManager,
        slot: Slot,
        machine: Option<Settings>,
    ) -> Attached {
        Attached {
            manager: tokio::sync::Mutex::new(manager),
            slot,
            machine,
            current: Mutex::new(None),
            replaced: AtomicBool::new(false),
        }
    }

    /// Whether a request the server rejected since the last asking has a
    /// new token to go with, if sent again (once: asking clears it).
    pub(crate) fn take_replaced(&self) -> bool {
        self.replaced.swap(false, Ordering::AcqRel)
    }

    fn cached(&self) -> Option<HeaderValue> {
        let current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        current
            .as_ref()
            .filter(|held| {
                Instant::now() < held.until && held.generation == self.slot.tokens.generation()
            })
            .map(|held| held.header.clone())
    }

    fn set(&self, value: Option<Held>) {
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = value;
    }

    /// The header to send: `None` when there is no usable login (the
    /// request goes without, and the server's challenge says why).
    async fn header(&self) -> Result<Option<HeaderValue>, AuthError> {
        if let Some(header) = self.cached() {
            return Ok(Some(header));
        }
        let mut manager = self.manager.lock().await;
        // Another request may have refreshed while this one waited.
        if let Some(header) = self.cached() {
            return Ok(Some(header));
        }
        match manager.get_access_token().await {
            Ok(token) => self.remember(&token).map(Some),
            Err(AuthError::AuthorizationRequired) => match self.obtain(&mut manager).await? {
                Some(token) => self.remember(&token).map(Some),
                None => Ok(None),
            },
            Err(e) => Err(e),
        }
    }

    /// For a grant that needs no person, a new token obtained into
    /// `manager`; else `None`.
    async fn obtain(
        &self,
        manager: &mut AuthorizationManager,
    ) -> Result<Option<String>, AuthError> {
        let Some(settings) = &self.machine else {
            return Ok(None);
        };
        *manager = self
            .slot
            .obtain(settings, true)
            .await
            .map_err(|e| AuthError::TokenRefreshFailed(e.to_string()))?;
        // Used as obtained, however short its life.
        let seen = self
            .slot
            .seen()
            .map_err(|e| AuthError::CredentialStoreError(e.to_string()))?;
        Ok(seen
            .credentials
            .and_then(|c| c.token_response)
            .map(|r| r.access_token().secret().to_owned()))
    }

    /// After the server rejected `sent`: another header, or `None` when
    /// the login cannot give one.
    async fn renew(&self, sent: &HeaderValue) -> Result<Option<HeaderValue>, AuthError> {
        let mut manager = self.manager.lock().await;
        if let Some(header) = self.cached().filter(|h| h != sent) {
            return Ok(Some(header));
        }
        self.set(None);
        let token = match manager.refresh_token().await {
            Ok(fresh) => fresh.access_token().secret().to_owned(),
            Err(AuthError::AuthorizationRequired | AuthError::TokenRefreshRejected(_)) => {
                match self.obtain(&mut manager).await? {
                    Some(token) => token,
                    None => return Ok(None),
                }
            }
            Err(e) => return Err(e),
        };
        let header = self.remember(&token)?;
        Ok((header != *sent).then_some(header))
    }

    /// The header for `token`, kept while the token file's entry says the
    /// token holds, and no longer than the file's recheck.
    fn remember(&self, token: &str) -> Result<HeaderValue, AuthError> {
        let mut header = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
            AuthError::InternalError("the access token is not a valid header value".into())
        })?;
        header.set_sensitive(true);
        // Not kept when the file cannot say how long it holds.
        if let Ok(seen) = self.slot.seen()
            && let Some(response) = seen
                .credentials
                .as_ref()
                .and_then(|c| c.token_response.as_ref())
            && response.access_token().secret() == token
        {
            let received = seen.credentials.as_ref().and_then(|c| c.token_received_at);
            let left = match (response.expires_in(), received) {
                (Some(life), Some(at)) => fresh_for(life, at, super::machine::now()),
                // No expiry known: used until the server rejects it.
                _ => super::tokens::RECHECK,
            };
            let until = (Instant::now() + left).min(seen.at + super::tokens::RECHECK);
            self.set(Some(Held {
                header: header.clone(),
                until,
                generation: seen.generation,
            }));
        }
        Ok(header)
    }
}

/// How much longer a token that lasts `life` from `received` (seconds
/// since the epoch) may be sent at `now` before rmcp would refresh it
/// (when less than `min(30 s, life / 2)`, and at least 1 s, is left).
fn fresh_for(life: Duration, received: u64, now: u64) -> Duration {
    let life = life.as_secs();
    let buffer = REFRESH_BUFFER_SECS.min(life / 2).max(1);
    let until = received.saturating_add(life).saturating_sub(buffer);
    // A clock that went back does not make a token last longer.
    Duration::from_secs(until.saturating_sub(now.max(received)))
}

impl SessionClient {
    /// `call` with the login's header added to `headers`, and once more
    /// with another after a 401.
    async fn attached<P, T, F, Fut>(
        &self,
        headers: Headers,
        payload: P,
        call: F,
    ) -> Result<T, Failure>
    where
        P: Clone,
        F: Fn(Headers, P) -> Fut,
        Fut: Future<Output = Result<T, Failure>>,
    {
        let Some(login) = &self.login else {
            return call(headers, payload).await;
        };
        let Some(header) = login.header().await? else {
            return call(headers, payload).await;
        };
        let spare = (headers.clone(), payload.clone());
        let mut first = headers;
        first.insert(AUTHORIZATION, header.clone());
        match call(first, payload).await {
            Err(StreamableHttpError::AuthRequired(challenge)) => {
                let Some(fresh) = login.renew(&header).await? else {
                    return Err(StreamableHttpError::AuthRequired(challenge));
                };
                let (mut headers, payload) = spare;
                headers.insert(AUTHORIZATION, fresh);
                call(headers, payload).await
            }
            other => other,
        }
    }

    /// `post` of `message` with the login's header added to `headers`;
    /// after a 401, the login refreshed for the session to send it again.
    async fn posted<F, Fut>(
        &self,
        headers: Headers,
        message: ClientJsonRpcMessage,
        post: F,
    ) -> Result<StreamableHttpPostResponse, Failure>
    where
        F: FnOnce(Headers, ClientJsonRpcMessage) -> Fut,
        Fut: Future<Output = Result<StreamableHttpPostResponse, Failure>>,
    {
        let Some(login) = &self.login else {
            return post(headers, message).await;
        };
        let Some(header) = login.header().await? else {
            return post(headers, message).await;
        };
        let mut headers = headers;
        headers.insert(AUTHORIZATION, header.clone());
        let answer = post(headers, message).await;
        if let Err(StreamableHttpError::AuthRequired(_)) = &answer
            && login.renew(&header).await?.is_some()
        {
            login.replaced.store(true, Ordering::Release);
        }
        answer
    }
}

impl StreamableHttpClient for SessionClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        self.posted(custom_headers, message, move |headers, message| {
            self.http
                .post_message(uri, message, session_id, auth_header, headers)
        })
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: Headers,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        self.posted(custom_headers, message, move |headers, message| {
            self.http.post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                headers,
                max_sse_event_size,
            )
        })
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: Headers,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        self.posted(custom_headers, message, move |headers, message| {
            self.http.post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                headers,
                limits,
            )
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> Result<(), Failure> {
        self.attached(custom_headers, (), |headers, ()| {
            self.http.delete_session(
                uri.clone(),
                session_id.clone(),
                auth_header.clone(),
                headers,
            )
        })
        .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> Result<Events, Failure> {
        self.attached(custom_headers, last_event_id, |headers, last_event_id| {
            self.http.get_stream(
                uri.clone(),
                session_id.clone(),
                last_event_id,
                auth_header.clone(),
                headers,
            )
        })
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: Headers,
        max_sse_event_size: usize,
    ) -> Result<Events, Failure> {
        self.attached(custom_headers, last_event_id, |headers, last_event_id| {
            self.http.get_stream_with_max_sse_event_size(
                uri.clone(),
                session_id.clone(),
                last_event_id,
                auth_header.clone(),
                headers,
                max_sse_event_size,
            )
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_kept_until_rmcp_would_refresh_it_and_no_longer() {
        let hour = Duration::from_secs(3600);
        assert_eq!(fresh_for(hour, 1000, 1000), Duration::from_secs(3570));
        assert_eq!(fresh_for(hour, 1000, 4570), Duration::ZERO);
        // A short life keeps half of it back.
        assert_eq!(
            fresh_for(Duration::from_secs(40), 0, 0),
            Duration::from_secs(20)
        );
        for life in [0, 1] {
            assert_eq!(fresh_for(Duration::from_secs(life), 0, 0), Duration::ZERO);
        }
        // A clock that went back does not make a token last longer.
        assert_eq!(fresh_for(hour, 1000, 0), Duration::from_secs(3570));
        // Wherever the host would send it, rmcp would not refresh it yet
        // (its rule: refresh when what is left is under the buffer).
        for life in 0..200u64 {
            for elapsed in 0..220u64 {
                let kept = fresh_for(Duration::from_secs(life), 0, elapsed);
                let remaining = life.saturating_sub(elapsed);
                let buffer = REFRESH_BUFFER_SECS.min(life / 2).max(1);
                if kept > Duration::ZERO {
                    assert!(remaining >= buffer, "life {life}, elapsed {elapsed}");
                }
            }
        }
    }
}
