//! The client-credentials grant (machine to machine, SEP-1046): the host
//! obtains a server's token itself, with a client secret or a signed JWT
//! assertion (RFC 7523), and keeps it in the token file like a login's.

use rmcp::transport::auth::AuthorizationManager;

use super::{OAuthError, Settings, Slot};

impl Slot {
    /// A manager holding a token obtained with the client's own
    /// credentials (machine to machine): the saved one while it holds,
    /// else a new one (also when `fresh`, after the server refused the
    /// saved one).
    pub async fn client_credentials(
        &self,
        settings: &Settings,
        fresh: bool,
    ) -> Result<AuthorizationManager, OAuthError> {
        use rmcp::transport::auth::{ClientCredentialsConfig, JwtSigningAlgorithm};
        if !fresh
            && let Some(state) = self.state()?
            && state.until.is_none_or(|until| until > now() + 30)
            && let Some(manager) = self.manager().await?
        {
            return Ok(manager);
        }
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
        // rmcp's token exchange is not `Send` (oauth2's request holds a
        // non-`Sync` closure), so it runs on a runtime of its own, on a
        // blocking thread; the manager used for calls is then made here,
        // from the token file it saved to.
        let slot = self.clone();
        let exchanged = tokio::task::spawn_blocking(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| OAuthError::Server(format!("server {}: {e}", slot.key)))?;
            runtime.block_on(slot.exchange(known, config))
        })
        .await
        .map_err(|e| OAuthError::Server(format!("server {}: {e}", self.key)))?;
        let metadata = exchanged?;
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
                    crate::display::one_line(&e.to_string())
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
