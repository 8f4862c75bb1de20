//! The client-credentials grant (machine to machine, SEP-1046): the host
//! obtains a server's token itself, with a client secret or a signed JWT
//! assertion (RFC 7523), and keeps it in the token file like a login's.

use rmcp::transport::auth::AuthorizationManager;

use super::{OAuthError, Settings, Slot};

impl Slot {
    /// A manager holding a new token obtained with the client's own
    /// credentials (machine to machine).
    async fn client_credentials(
        &self,
        settings: &Settings,
    ) -> Result<AuthorizationManager, OAuthError> {
        use rmcp::transport::auth::{ClientCredentialsConfig, JwtSigningAlgorithm};
        let known = self.entry()?.and_then(|e| e.metadata);
        let client_id = settings.client_id.clone().unwrap_or_default();
        let resource = Some(self.resource.clone());
        let scopes = settings.scopes.clone();
        let config = match (&settings.client_secret, &settings.private_key) {
            (Some(secret), _) => ClientCredentialsConfig::ClientSecret {
                client_id,
                client_secret: secret.clone(),
                scopes,
                resource,
            },
            (None, Some(key)) => ClientCredentialsConfig::PrivateKeyJwt {
                client_id,
                signing_key: key.as_bytes().to_vec(),
                signing_algorithm: match settings.signing_algorithm.as_str() {
                    "ES384" => JwtSigningAlgorithm::ES384,
                    "RS256" => JwtSigningAlgorithm::RS256,
                    "RS384" => JwtSigningAlgorithm::RS384,
                    "RS512" => JwtSigningAlgorithm::RS512,
                    _ => JwtSigningAlgorithm::ES256,
                },
                token_endpoint_audience: None,
                scopes,
                resource,
            },
            (None, None) => {
                return Err(OAuthError::Server(format!(
                    "server {}: the client-credentials grant needs oauth.client_secret or oauth.private_key",
                    self.key
                )));
            }
        };
        let metadata = self
            .apart(move |slot| async move { slot.exchange(known, config).await })
            .await?;
        self.obtained(metadata).await
    }

    /// Runs `work` on a runtime of its own, on a blocking thread: rmcp's
    /// token exchanges are not `Send` (oauth2's request holds a
    /// non-`Sync` closure), so they cannot run on the host's tasks.
    async fn apart<T, F, Fut>(&self, work: F) -> Result<T, OAuthError>
    where
        T: Send + 'static,
        F: FnOnce(Slot) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<T, OAuthError>>,
    {
        let slot = self.clone();
        tokio::task::spawn_blocking(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| OAuthError::Server(format!("server {}: {e}", slot.key)))?;
            runtime.block_on(work(slot))
        })
        .await
        .map_err(|e| OAuthError::Server(format!("server {}: {e}", self.key)))?
    }

    /// The manager for calls, made here from the token file an exchange
    /// saved to, with the authorization server's `metadata` kept beside.
    async fn obtained(
        &self,
        metadata: rmcp::transport::auth::AuthorizationMetadata,
    ) -> Result<AuthorizationManager, OAuthError> {
        self.update(|entry| {
            entry.map(|mut entry| {
                entry.metadata = Some(metadata);
                entry
            })
        })?;
        self.manager().await?.ok_or_else(|| {
            OAuthError::Server(format!(
                "server {}: its authorization server answered without an access token",
                self.key
            ))
        })
    }

    /// Obtains a token for `config`, saved to the token file; the
    /// authorization server's metadata (`known`, else discovered).
    async fn exchange(
        &self,
        known: Option<rmcp::transport::auth::AuthorizationMetadata>,
        config: rmcp::transport::auth::ClientCredentialsConfig,
    ) -> Result<rmcp::transport::auth::AuthorizationMetadata, OAuthError> {
        let mut manager = AuthorizationManager::new(self.resource.as_str())
            .await
            .map_err(|e| self.server_error(&e))?;
        let metadata = match known {
            Some(metadata) => metadata,
            None => {
                manager
                    .resolve_metadata()
                    .await
                    .map_err(|e| self.server_error(&e))?
                    .metadata
            }
        };
        manager.set_metadata(metadata.clone());
        manager.set_credential_store(self.clone());
        manager
            .configure_client_credentials(&config)
            .map_err(|e| self.server_error(&e))?;
        manager
            .exchange_client_credentials(&config)
            .await
            .map_err(|e| {
                OAuthError::Server(format!(
                    "server {}: its authorization server gave no token for the client's credentials (check oauth.client_id and its secret or key): {}",
                    self.key,
                    tiny_harness_core::display::one_line(&e.to_string())
                ))
            })?;
        Ok(metadata)
    }
}

/// Seconds since the epoch.
pub(super) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Slot {
    /// A manager holding a new token obtained through enterprise-managed
    /// authorization (SEP-990): the person's ID token exchanged at the
    /// identity provider for an authorization grant (RFC 8693), and that
    /// at the server's authorization server for a token (RFC 7523).
    async fn enterprise(&self, settings: &Settings) -> Result<AuthorizationManager, OAuthError> {
        let known = self.entry()?.and_then(|e| e.metadata);
        let settings = settings.clone();
        let metadata = self
            .apart(move |slot| async move { slot.exchange_enterprise(known, settings).await })
            .await?;
        self.obtained(metadata).await
    }

    async fn exchange_enterprise(
        &self,
        known: Option<rmcp::transport::auth::AuthorizationMetadata>,
        settings: Settings,
    ) -> Result<rmcp::transport::auth::AuthorizationMetadata, OAuthError> {
        use rmcp::transport::auth::CredentialStore as _;
        use rmcp::transport::auth::enterprise::{
            EmaAuthorizationServer, EmaClientAuthentication, EmaExchangeRequest,
        };
        let fail = |why: String| OAuthError::Server(format!("server {}: {why}", self.key));
        let idp = settings
            .identity_provider
            .clone()
            .ok_or_else(|| fail("the enterprise grant needs identity_provider".to_owned()))?;
        let metadata = match known {
            Some(metadata) => metadata,
            None => {
                let manager = AuthorizationManager::new(self.resource.as_str())
                    .await
                    .map_err(|e| self.server_error(&e))?;
                manager
                    .resolve_metadata()
                    .await
                    .map_err(|e| self.server_error(&e))?
                    .metadata
            }
        };
        let issuer = metadata.issuer.clone().ok_or_else(|| {
            fail("its authorization server's metadata names no issuer, which the enterprise grant needs".to_owned())
        })?;
        // The token endpoint the server's metadata names must be its
        // issuer's: the grant goes nowhere the discovery did not check.
        let same_origin = |a: &str, b: &str| matches!((url::Url::parse(a), url::Url::parse(b)), (Ok(a), Ok(b)) if a.origin() == b.origin());
        if !same_origin(&issuer, &metadata.token_endpoint) {
            return Err(fail(format!(
                "its authorization server's token endpoint is not on its issuer's origin ({})",
                tiny_harness_core::display::one_line(&issuer)
            )));
        }
        let secret = |s: &Option<String>| match s {
            Some(secret) => EmaClientAuthentication::ClientSecretBasic(oauth2::ClientSecret::new(
                secret.clone(),
            )),
            None => EmaClientAuthentication::None,
        };
        let provider =
            EmaAuthorizationServer::new(&idp.issuer, &idp.token_endpoint, &idp.client_id)
                .with_client_authentication(secret(&idp.client_secret));
        let client_id = settings.client_id.clone().unwrap_or_default();
        let resource_server =
            EmaAuthorizationServer::new(&issuer, &metadata.token_endpoint, &client_id)
                .with_client_authentication(secret(&settings.client_secret));
        let http = rmcp::transport::auth::default_oauth_http_client()
            .map_err(|e| self.server_error(&e))?;
        let token = EmaExchangeRequest::new_with_id_token(
            provider,
            resource_server,
            self.resource.as_str(),
            &idp.id_token,
        )
        .with_scopes(settings.scopes.clone())
        .exchange(&http, &http)
        .await
        .map_err(|e| {
            fail(format!(
                "the enterprise exchange failed ({}): check oauth.identity_provider and a fresh id_token",
                tiny_harness_core::display::one_line(&e.to_string())
            ))
        })?;
        let mut scopes: Vec<String> = token.scopes.iter().cloned().collect();
        scopes.sort();
        let mut response = serde_json::json!({
            "access_token": token.access_token.secret(),
            "token_type": "Bearer",
        });
        if let Some(lasts) = token.expires_in {
            response["expires_in"] = serde_json::json!(lasts.as_secs());
        }
        let response = serde_json::from_value(response)
            .map_err(|e| fail(format!("the token cannot be kept: {e}")))?;
        let stored = rmcp::transport::auth::StoredCredentials::new(
            client_id,
            Some(response),
            scopes,
            Some(now()),
        )
        .with_issuer(Some(issuer));
        self.save(stored)
            .await
            .map_err(|e| fail(tiny_harness_core::display::one_line(&e.to_string()).into_owned()))?;
        Ok(metadata)
    }
}

impl Slot {
    /// A manager holding a token the host obtains itself, by `settings`'
    /// grant (client credentials or enterprise-managed): the saved one
    /// while it holds for 30 s more, else a new one (also when `fresh`,
    /// after the server refused the saved one).
    pub async fn obtain(
        &self,
        settings: &Settings,
        fresh: bool,
    ) -> Result<AuthorizationManager, OAuthError> {
        if !fresh
            && let Some(state) = self.state()?
            && state.until.is_none_or(|until| until > now() + 30)
            && let Some(manager) = self.manager().await?
        {
            return Ok(manager);
        }
        match settings.grant {
            tiny_harness_core::declaration::Grant::Enterprise => self.enterprise(settings).await,
            _ => self.client_credentials(settings).await,
        }
    }
}
