//! The two reads from a registry, the manifest and the blob, over a
//! reqwest client of our own (oci-client reads whole answers into memory
//! and follows redirects anywhere; it cannot be told otherwise), and the
//! redirects, authentication and bounded reading that the push (the
//! `push` module) shares.
//!
//! Invariants:
//! - a request goes only to the registry's own origin (scheme, host and
//!   port) or to the token service its challenge names; a redirect is
//!   followed only within the same origin, at most [`MAX_REDIRECTS`] times,
//!   and one to anywhere else is [`OciError::Redirect`] naming both URLs;
//! - a token service is reached over HTTPS, or over plain HTTP only when
//!   the registry is (on loopback) and it is on loopback too;
//! - every body is read chunk by chunk against a limit, and reading stops
//!   at the first chunk past it (a `Content-Length` over it stops before
//!   any): manifests at [`Limits::manifest_bytes`], blobs at
//!   [`Limits::blob_bytes`], the rest at [`MAX_SMALL_BODY`];
//! - credentials and tokens go in an `Authorization` header to the
//!   registry's origin (credentials also to its token service, as the
//!   token protocol has it), never in a URL, never elsewhere;
//! - nothing here bounds time: every caller runs under the operation's
//!   timeout ([`crate::Client`]).

use std::collections::HashMap;
use std::sync::Mutex;

use base64::Engine as _;
use reqwest::StatusCode;
use reqwest::header::{
    ACCEPT, AUTHORIZATION, CONTENT_LENGTH, HeaderValue, LOCATION, WWW_AUTHENTICATE,
};
use sha2::{Digest as _, Sha256};
use url::Url;

use crate::Limits;
use crate::credentials::Credentials;
use crate::error::{OciError, one_line};
use crate::reference::{Digest, Reference};

/// The most redirects one request follows.
pub const MAX_REDIRECTS: usize = 5;

/// The most memory reserved ahead for a body, whatever its announced
/// length.
const MAX_RESERVE: u64 = 8 << 20;

/// The largest token answer read.
pub const MAX_SMALL_BODY: u64 = 64 << 10;

/// The `Authorization` values this client has earned, by registry and
/// repository.
pub(crate) type Tokens = Mutex<HashMap<String, HeaderValue>>;

/// A body that was read whole, within its limit.
pub(crate) struct Body {
    pub bytes: Vec<u8>,
    pub content_type: Option<String>,
    pub digest_header: Option<String>,
}

/// One operation's reads from the registry of one reference.
pub(crate) struct Puller<'a> {
    pub http: &'a reqwest::Client,
    pub reference: &'a Reference,
    /// `scheme://registry`.
    pub origin: Url,
    pub credentials: &'a Credentials,
    pub tokens: &'a Tokens,
    pub limits: &'a Limits,
    /// What a token is asked for: `pull`, or `pull,push` for a push.
    pub actions: &'static str,
}

impl Puller<'_> {
    pub(crate) fn name(&self) -> String {
        self.reference.to_string()
    }

    fn key(&self) -> String {
        format!(
            "{}/{}:{}",
            self.reference.registry(),
            self.reference.repository(),
            self.actions
        )
    }

    /// The manifest the reference names (by digest if it has one), read
    /// within [`Limits::manifest_bytes`].
    pub async fn manifest(&self) -> Result<Body, OciError> {
        let target = match (self.reference.digest(), self.reference.tag()) {
            (Some(digest), _) => digest.to_string(),
            (None, Some(tag)) => tag.to_owned(),
            (None, None) => {
                return Err(OciError::WrongReference {
                    reference: self.name(),
                    reason: "name a tag or a digest",
                });
            }
        };
        let path = format!("/v2/{}/manifests/{target}", self.reference.repository());
        let response = self
            .get(&path, Some(crate::manifest::ACCEPT), "manifest")
            .await?;
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let (content_type, digest_header) =
            (header("content-type"), header("docker-content-digest"));
        let limit = self.limits.manifest_bytes;
        let too_large = || OciError::ManifestTooLarge {
            reference: self.name(),
            limit,
        };
        let bytes = self.read(response, limit, too_large, |_| {}).await?;
        Ok(Body {
            bytes,
            content_type,
            digest_header,
        })
    }

    /// The blob `digest` of the reference's repository, read within
    /// [`Limits::blob_bytes`] and checked against the digest.
    pub async fn blob(&self, digest: &Digest) -> Result<Vec<u8>, OciError> {
        let path = format!("/v2/{}/blobs/{digest}", self.reference.repository());
        let response = self.get(&path, None, "blob").await?;
        let limit = self.limits.blob_bytes;
        let too_large = || OciError::BlobTooLarge {
            reference: self.name(),
            limit,
        };
        let mut hasher = Sha256::new();
        let bytes = self
            .read(response, limit, too_large, |chunk| hasher.update(chunk))
            .await?;
        let actual = Digest::from_bytes(hasher.finalize().into());
        if actual != *digest {
            return Err(OciError::DigestMismatch {
                reference: self.name(),
                expected: digest.to_string(),
                actual: actual.to_string(),
            });
        }
        Ok(bytes)
    }

    /// Reads `response`'s body, giving each chunk to `each`, and stops with
    /// `too_large()` at the first chunk past `limit`.
    pub(crate) async fn read(
        &self,
        mut response: reqwest::Response,
        limit: u64,
        too_large: impl Fn() -> OciError,
        mut each: impl FnMut(&[u8]),
    ) -> Result<Vec<u8>, OciError> {
        let announced = response
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if announced.is_some_and(|length| length > limit) {
            return Err(too_large());
        }
        // What is announced is only a claim: reserve at most some of it.
        let reserve = announced.unwrap_or(0).min(MAX_RESERVE);
        let mut bytes = Vec::with_capacity(usize::try_from(reserve).unwrap_or(0));
        loop {
            let chunk = response
                .chunk()
                .await
                .map_err(|error| self.network(&error))?;
            let Some(chunk) = chunk else { return Ok(bytes) };
            if (bytes.len() + chunk.len()) as u64 > limit {
                return Err(too_large());
            }
            each(&chunk);
            bytes.extend_from_slice(&chunk);
        }
    }

    /// A successful answer to `GET path` on the registry, after same-origin
    /// redirects and one round of authentication.
    async fn get(
        &self,
        path: &str,
        accept: Option<&str>,
        what: &str,
    ) -> Result<reqwest::Response, OciError> {
        let mut url = self
            .origin
            .join(path)
            .map_err(|error| self.registry_error(&error.to_string()))?;
        let mut authenticated = false;
        let mut redirects = 0;
        loop {
            let authorization = self.cached();
            let mut request = self.http.get(url.clone());
            if let Some(accept) = accept {
                request = request.header(ACCEPT, accept);
            }
            if let Some(value) = &authorization {
                request = request.header(AUTHORIZATION, value.clone());
            }
            let response = request.send().await.map_err(|error| self.network(&error))?;
            let status = response.status();
            if status.is_redirection() {
                redirects += 1;
                url = self.redirect(&url, &response, redirects)?;
                continue;
            }
            match status {
                StatusCode::OK => return Ok(response),
                StatusCode::UNAUTHORIZED if !authenticated => {
                    authenticated = true;
                    let value = self.authenticate(&response).await?;
                    self.remember(value);
                }
                StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                    return Err(self.unauthorized(status));
                }
                StatusCode::NOT_FOUND => {
                    return Err(OciError::NotFound {
                        reference: self.name(),
                        what: what.to_owned(),
                    });
                }
                _ => {
                    return Err(OciError::Status {
                        reference: self.name(),
                        code: status.as_u16(),
                        what: what.to_owned(),
                    });
                }
            }
        }
    }

    /// Where a redirect from `from` leads, if it stays on the registry's
    /// origin and within [`MAX_REDIRECTS`].
    pub(crate) fn redirect(
        &self,
        from: &Url,
        response: &reqwest::Response,
        count: usize,
    ) -> Result<Url, OciError> {
        let bad = |reason: String| OciError::BadRedirect {
            reference: self.name(),
            reason,
        };
        if count > MAX_REDIRECTS {
            return Err(bad(format!("more than {MAX_REDIRECTS}")));
        }
        let location = response
            .headers()
            .get(LOCATION)
            .ok_or_else(|| {
                bad(format!(
                    "HTTP {} without a Location",
                    response.status().as_u16()
                ))
            })?
            .to_str()
            .map_err(|_| bad("a Location that is not text".to_owned()))?;
        let to = from.join(location).map_err(|_| {
            bad(format!(
                "a Location that is not a URL: {}",
                one_line(location)
            ))
        })?;
        if !same_origin(&to, from) {
            return Err(OciError::Redirect {
                reference: self.name(),
                from: origin_of(from),
                to: one_line(to.as_str()),
            });
        }
        Ok(to)
    }

    /// The `Authorization` a 401 answer's challenge asks for: the
    /// credentials themselves (Basic), or a token fetched with them
    /// (Bearer).
    pub(crate) async fn authenticate(
        &self,
        response: &reqwest::Response,
    ) -> Result<HeaderValue, OciError> {
        let unauthorized = || self.unauthorized(StatusCode::UNAUTHORIZED);
        let challenges: Vec<_> = response
            .headers()
            .get_all(WWW_AUTHENTICATE)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(http_auth::ChallengeParser::new)
            .filter_map(Result::ok)
            .collect();
        let param = |challenge: &http_auth::ChallengeRef<'_>, name: &str| {
            challenge
                .params
                .iter()
                .find(|(key, _)| key.eq_ignore_ascii_case(name))
                .map(|(_, value)| value.to_unescaped())
        };
        if let Some(bearer) = challenges
            .iter()
            .find(|c| c.scheme.eq_ignore_ascii_case("bearer"))
        {
            let realm = param(bearer, "realm")
                .ok_or_else(|| self.registry_error("a Bearer challenge without a realm"))?;
            return self.token(&realm, param(bearer, "service")).await;
        }
        if challenges
            .iter()
            .any(|c| c.scheme.eq_ignore_ascii_case("basic"))
        {
            return basic(self.credentials).ok_or_else(unauthorized);
        }
        Err(unauthorized())
    }

    /// A token for [`Self::actions`] from the token service at `realm`.
    async fn token(&self, realm: &str, service: Option<String>) -> Result<HeaderValue, OciError> {
        let mut url = Url::parse(realm).map_err(|_| {
            self.registry_error(&format!(
                "a token realm that is not a URL: {}",
                one_line(realm)
            ))
        })?;
        // Plain HTTP only when the registry itself is reached so (on
        // loopback), and only to loopback.
        let loopback_http = url.scheme() == "http"
            && self.origin.scheme() == "http"
            && url
                .host()
                .is_some_and(|host| tiny_harness_core::net::is_loopback(&host));
        if url.scheme() != "https" && !loopback_http {
            return Err(self.registry_error(&format!(
                "a token realm that is not HTTPS: {}",
                one_line(realm)
            )));
        }
        {
            let mut query = url.query_pairs_mut();
            query.append_pair(
                "scope",
                &format!(
                    "repository:{}:{}",
                    self.reference.repository(),
                    self.actions
                ),
            );
            if let Some(service) = &service {
                query.append_pair("service", service);
            }
        }
        let mut request = self.http.get(url);
        if let Some(value) = basic(self.credentials) {
            request = request.header(AUTHORIZATION, value);
        }
        let response = request.send().await.map_err(|error| self.network(&error))?;
        let status = response.status();
        match status {
            StatusCode::OK => {}
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                return Err(self.unauthorized(status));
            }
            _ => {
                return Err(OciError::Status {
                    reference: self.name(),
                    code: status.as_u16(),
                    what: "token".to_owned(),
                });
            }
        }
        let too_large = || {
            self.registry_error(&format!(
                "a token answer of more than {MAX_SMALL_BODY} bytes"
            ))
        };
        let body = self
            .read(response, MAX_SMALL_BODY, too_large, |_| {})
            .await?;
        #[derive(serde::Deserialize)]
        struct Answer {
            token: Option<String>,
            access_token: Option<String>,
        }
        let answer: Answer = serde_json::from_slice(&body).map_err(|error| {
            self.registry_error(&format!("a token answer that is not JSON: {error}"))
        })?;
        let token = answer
            .token
            .or(answer.access_token)
            .filter(|token| !token.is_empty())
            .ok_or_else(|| self.registry_error("a token answer without a token"))?;
        HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|_| self.registry_error("a token that is not a header value"))
    }

    pub(crate) fn cached(&self) -> Option<HeaderValue> {
        self.tokens
            .lock()
            .ok()
            .and_then(|tokens| tokens.get(&self.key()).cloned())
    }

    pub(crate) fn remember(&self, value: HeaderValue) {
        if let Ok(mut tokens) = self.tokens.lock() {
            tokens.insert(self.key(), value);
        }
    }

    pub(crate) fn unauthorized(&self, status: StatusCode) -> OciError {
        OciError::Unauthorized {
            reference: self.name(),
            registry: self.reference.registry().to_owned(),
            code: status.as_u16(),
        }
    }

    pub(crate) fn registry_error(&self, reason: &str) -> OciError {
        OciError::Registry {
            reference: self.name(),
            reason: one_line(reason),
        }
    }

    pub(crate) fn network(&self, error: &reqwest::Error) -> OciError {
        OciError::Network {
            reference: self.name(),
            reason: error_chain(error),
        }
    }
}

/// `Basic base64(user:password)`, if there are credentials.
pub(crate) fn basic(credentials: &Credentials) -> Option<HeaderValue> {
    match credentials {
        Credentials::Basic { username, password } => {
            let encoded =
                base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"));
            let mut value = HeaderValue::from_str(&format!("Basic {encoded}")).ok()?;
            value.set_sensitive(true);
            Some(value)
        }
        Credentials::Anonymous => None,
    }
}

/// Whether `a` and `b` are on one origin: the same scheme, host and port.
pub(crate) fn same_origin(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str() == b.host_str()
        && a.port_or_known_default() == b.port_or_known_default()
}

/// `scheme://host[:port]` of a URL, for messages.
fn origin_of(url: &Url) -> String {
    one_line(&url.origin().ascii_serialization())
}

/// An error and its sources, on one line: reqwest's own message names
/// only the URL, the cause is in the sources.
pub(crate) fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let line = cause.to_string();
        if !text.contains(&line) {
            text.push_str(": ");
            text.push_str(&line);
        }
        source = cause.source();
    }
    one_line(&text)
}
