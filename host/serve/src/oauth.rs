//! OAuth 2.1 access tokens from an authorization server in front of the
//! gateway: JWTs checked against the server's keys (`[serve.oauth]`), and
//! the protected-resource metadata (RFC 9728) that tells a client where
//! to get one.
//!
//! Invariants:
//! - A token is accepted only when signed by a key of the JWKS with an
//!   asymmetric algorithm the key is for (never `none`, never HMAC: a
//!   public key set cannot hold a shared secret), issued by `issuer`, for
//!   `audience`, not expired (60 s of leeway), holding every scope of
//!   `scopes`, and naming its client in `client_claim`.
//! - A token is at most [`MAX_TOKEN_BYTES`]; a JWKS at most
//!   [`MAX_JWKS_BYTES`] with [`MAX_KEYS`] keys. A JWKS from a URL is
//!   fetched at start and again for a key id it lacks, at most once per
//!   [`REFETCH_AFTER`], so that an unknown `kid` cannot make the gateway
//!   fetch on every request.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{JwkSet, KeyAlgorithm};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};

use crate::config::{ServeError, check_client_name};

/// The longest token read.
pub const MAX_TOKEN_BYTES: usize = 16 << 10;
/// The largest JWKS read.
pub const MAX_JWKS_BYTES: usize = 1 << 20;
/// The most keys a JWKS may hold.
pub const MAX_KEYS: usize = 64;
/// The shortest time between two fetches of a JWKS URL.
pub const REFETCH_AFTER: Duration = Duration::from_secs(60);

/// Where the authorization server's keys are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Jwks {
    /// A JWKS document at this URL (`https`, or `http` on loopback).
    Url(String),
    /// A JWKS document in this file.
    File(PathBuf),
}

/// `[serve.oauth]`: what an access token must be.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OAuthConfig {
    /// `issuer`: the authorization server's issuer identifier (`iss`).
    pub issuer: String,
    /// `audience`: this gateway's resource identifier (`aud`), the URL
    /// clients reach `/mcp` at (`https://tools.example.com/mcp`).
    pub audience: String,
    /// `jwks`: the authorization server's keys.
    pub jwks: Jwks,
    /// `client_claim`: the claim naming the client (`client_id` unless
    /// set), whose `[serve.clients.NAME]` entry says what it may use.
    pub client_claim: String,
    /// `scopes`: the scopes every token must hold.
    pub scopes: Vec<String>,
}

impl OAuthConfig {
    /// The URL of the protected-resource metadata for [`Self::audience`]:
    /// `/.well-known/oauth-protected-resource` put between its origin and
    /// its path (RFC 9728, section 3).
    pub fn metadata_url(&self) -> String {
        match self.audience.split_once("://") {
            Some((scheme, rest)) => {
                let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
                format!(
                    "{scheme}://{authority}/.well-known/oauth-protected-resource{}",
                    path.trim_end_matches('/')
                )
            }
            None => "/.well-known/oauth-protected-resource".to_owned(),
        }
    }

    /// The protected-resource metadata document.
    pub fn metadata(&self) -> serde_json::Value {
        serde_json::json!({
            "resource": self.audience,
            "authorization_servers": [self.issuer],
            "scopes_supported": self.scopes,
            "bearer_methods_supported": ["header"],
            "resource_name": "tiny-harness",
        })
    }
}

/// Why a token was not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Rejection {
    /// Not a valid token (401, `invalid_token`).
    Invalid(String),
    /// Valid, but without a scope it needs (403, `insufficient_scope`).
    Scope(String),
}

/// The checker of access tokens.
#[derive(Debug)]
pub(crate) struct Verifier {
    config: OAuthConfig,
    keys: RwLock<JwkSet>,
    fetched: Mutex<Instant>,
    http: Option<reqwest::Client>,
}

impl Verifier {
    /// Loads the keys `config` names.
    pub(crate) async fn load(config: OAuthConfig) -> Result<Verifier, ServeError> {
        let http = match &config.jwks {
            Jwks::Url(_) => Some(
                reqwest::Client::builder()
                    .timeout(Duration::from_secs(10))
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
                    .map_err(|e| oauth_error(format!("cannot make an HTTP client: {e}")))?,
            ),
            Jwks::File(_) => None,
        };
        let keys = fetch(&config.jwks, http.as_ref()).await?;
        Ok(Verifier {
            config,
            keys: RwLock::new(keys),
            fetched: Mutex::new(Instant::now()),
            http,
        })
    }

    /// The config it checks against.
    pub(crate) fn config(&self) -> &OAuthConfig {
        &self.config
    }

    /// The client `token` was issued to, or why it is not accepted.
    pub(crate) async fn verify(&self, token: &str) -> Result<String, Rejection> {
        let invalid = |why: &str| Rejection::Invalid(why.to_owned());
        if token.len() > MAX_TOKEN_BYTES {
            return Err(invalid("the token is too long"));
        }
        let header = jsonwebtoken::decode_header(token).map_err(|_| invalid("not a JWT"))?;
        let family_ok = !matches!(
            header.alg,
            Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512
        );
        if !family_ok {
            return Err(invalid("a symmetric algorithm is not accepted"));
        }
        let key = match self.key(header.kid.as_deref(), header.alg) {
            Some(key) => key,
            None => {
                self.refetch().await;
                self.key(header.kid.as_deref(), header.alg)
                    .ok_or_else(|| invalid("no key of the authorization server signed it"))?
            }
        };
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.config.issuer]);
        validation.set_audience(&[&self.config.audience]);
        validation.leeway = 60;
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        let data = jsonwebtoken::decode::<serde_json::Map<String, serde_json::Value>>(
            token,
            &key,
            &validation,
        )
        .map_err(|e| Rejection::Invalid(format!("{:?}", e.kind()).to_lowercase()))?;
        let claims = data.claims;
        let held: Vec<&str> = match (claims.get("scope"), claims.get("scp")) {
            (Some(serde_json::Value::String(scope)), _) => scope.split_whitespace().collect(),
            (_, Some(serde_json::Value::Array(scopes))) => scopes
                .iter()
                .filter_map(serde_json::Value::as_str)
                .collect(),
            _ => Vec::new(),
        };
        if let Some(missing) = self
            .config
            .scopes
            .iter()
            .find(|scope| !held.contains(&scope.as_str()))
        {
            return Err(Rejection::Scope(missing.clone()));
        }
        let client = claims
            .get(&self.config.client_claim)
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| invalid("the token names no client"))?;
        check_client_name(client)
            .map_err(|_| invalid("the token's client is not a client name"))?;
        Ok(client.to_owned())
    }

    /// The key for `kid` (or the only key, without one) that `alg` may use.
    fn key(&self, kid: Option<&str>, alg: Algorithm) -> Option<DecodingKey> {
        let keys = self.keys.read().unwrap_or_else(PoisonError::into_inner);
        let jwk = match kid {
            Some(kid) => keys.find(kid)?,
            None if keys.keys.len() == 1 => &keys.keys[0],
            None => return None,
        };
        // A key that names its algorithm is used for that one only.
        if let Some(declared) = jwk.common.key_algorithm
            && !same_algorithm(declared, alg)
        {
            return None;
        }
        let key = DecodingKey::from_jwk(jwk).ok()?;
        let fits = match &jwk.algorithm {
            jsonwebtoken::jwk::AlgorithmParameters::RSA(_) => matches!(
                alg,
                Algorithm::RS256
                    | Algorithm::RS384
                    | Algorithm::RS512
                    | Algorithm::PS256
                    | Algorithm::PS384
                    | Algorithm::PS512
            ),
            jsonwebtoken::jwk::AlgorithmParameters::EllipticCurve(_) => {
                matches!(alg, Algorithm::ES256 | Algorithm::ES384)
            }
            jsonwebtoken::jwk::AlgorithmParameters::OctetKeyPair(_) => alg == Algorithm::EdDSA,
            // A shared secret (`oct`), or a kind of key this version does
            // not know: never.
            _ => false,
        };
        fits.then_some(key)
    }

    /// Fetches the JWKS again if it comes from a URL and was not fetched
    /// within [`REFETCH_AFTER`].
    async fn refetch(&self) {
        let Jwks::Url(_) = &self.config.jwks else {
            return;
        };
        {
            let mut fetched = self.fetched.lock().unwrap_or_else(PoisonError::into_inner);
            if fetched.elapsed() < REFETCH_AFTER {
                return;
            }
            *fetched = Instant::now();
        }
        match fetch(&self.config.jwks, self.http.as_ref()).await {
            Ok(keys) => *self.keys.write().unwrap_or_else(PoisonError::into_inner) = keys,
            Err(error) => tracing::warn!(
                target: "tiny_harness::serve",
                "the authorization server's keys could not be fetched again: {error}"
            ),
        }
    }
}

fn same_algorithm(declared: KeyAlgorithm, alg: Algorithm) -> bool {
    format!("{declared:?}") == format!("{alg:?}")
}

fn oauth_error(why: String) -> ServeError {
    ServeError::Config(format!("oauth: {why}"))
}

/// Reads a JWKS from where `jwks` says.
async fn fetch(jwks: &Jwks, http: Option<&reqwest::Client>) -> Result<JwkSet, ServeError> {
    let bytes = match (jwks, http) {
        (Jwks::File(path), _) => read_file(path)?,
        (Jwks::Url(url), Some(http)) => {
            let mut response = http
                .get(url)
                .send()
                .await
                .map_err(|e| oauth_error(format!("jwks: cannot fetch {url}: {e}")))?;
            if !response.status().is_success() {
                return Err(oauth_error(format!(
                    "jwks: {url} answered {}",
                    response.status()
                )));
            }
            let mut body = Vec::new();
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|e| oauth_error(format!("jwks: reading {url}: {e}")))?
            {
                if body.len() + chunk.len() > MAX_JWKS_BYTES {
                    return Err(oauth_error(format!(
                        "jwks: {url} is larger than {MAX_JWKS_BYTES} bytes"
                    )));
                }
                body.extend_from_slice(&chunk);
            }
            body
        }
        (Jwks::Url(_), None) => return Err(oauth_error("jwks: no HTTP client".to_owned())),
    };
    let keys: JwkSet = serde_json::from_slice(&bytes)
        .map_err(|e| oauth_error(format!("jwks: not a JWK set: {e}")))?;
    if keys.keys.is_empty() || keys.keys.len() > MAX_KEYS {
        return Err(oauth_error(format!(
            "jwks: a JWK set holds 1 to {MAX_KEYS} keys, this one {}",
            keys.keys.len()
        )));
    }
    Ok(keys)
}

fn read_file(path: &Path) -> Result<Vec<u8>, ServeError> {
    use std::io::Read as _;
    let file = std::fs::File::open(path)
        .map_err(|e| oauth_error(format!("jwks: cannot open {}: {e}", path.display())))?;
    let mut bytes = Vec::new();
    file.take(MAX_JWKS_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| oauth_error(format!("jwks: cannot read {}: {e}", path.display())))?;
    if bytes.len() > MAX_JWKS_BYTES {
        return Err(oauth_error(format!(
            "jwks: {} is larger than {MAX_JWKS_BYTES} bytes",
            path.display()
        )));
    }
    Ok(bytes)
}

/// Checks a `jwks` value: a URL (`https`, or `http` on a loopback host)
/// or a file, relative to `base`.
pub(crate) fn jwks_of(value: &str, base: &Path) -> Result<Jwks, String> {
    if let Some(rest) = value.strip_prefix("http://") {
        let host = rest.split(['/', ':']).next().unwrap_or_default();
        if !tiny_harness_core::net::is_loopback_host(host) {
            return Err(format!(
                "{value:?}: keys are fetched over https (http only from a loopback host)"
            ));
        }
        return Ok(Jwks::Url(value.to_owned()));
    }
    if value.starts_with("https://") {
        return Ok(Jwks::Url(value.to_owned()));
    }
    if value.contains("://") {
        return Err(format!("{value:?}: a jwks is an https URL or a file"));
    }
    Ok(Jwks::File(base.join(value)))
}
