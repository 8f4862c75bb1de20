//! A server's declared OAuth settings (`oauth` in its `mcpServers` entry):
//! checked against the plugin's grants, `${NAME}` references resolved.
//!
//! Invariants: a secret or a key is only ever a `${NAME}` reference to a
//! granted host variable, never written in the config; `Debug` never shows
//! either.

use tiny_harness_core::declaration::{Grant, OAuth};
use tiny_harness_sandbox::grant::start::{LaunchError, MAX_PAIRS};

/// A server's declared OAuth settings (`oauth` in its `mcpServers`
/// entry), checked and with their `${NAME}` references resolved. The
/// secret and the key are never shown (`Debug` names only what is set).
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct Settings {
    /// The grant.
    pub grant: Grant,
    /// A pre-registered client id.
    pub client_id: Option<String>,
    /// Its secret.
    pub client_secret: Option<String>,
    /// A PEM private key for a JWT assertion (RFC 7523).
    pub private_key: Option<String>,
    /// The key's algorithm: `ES256` (default), `ES384`, `RS256`, `RS384`
    /// or `RS512`.
    pub signing_algorithm: String,
    /// An HTTPS Client ID Metadata Document URL.
    pub client_metadata_url: Option<String>,
    /// Scopes to ask for beyond those the server names.
    pub scopes: Vec<String>,
    /// The loopback redirect's port.
    pub callback_port: Option<u16>,
    /// The enterprise grant's identity provider.
    pub identity_provider: Option<IdentityProviderSettings>,
}

/// The enterprise grant's identity provider, its references resolved.
#[derive(Clone)]
#[non_exhaustive]
pub struct IdentityProviderSettings {
    /// Its issuer URL.
    pub issuer: String,
    /// Its token endpoint.
    pub token_endpoint: String,
    /// The client's id there.
    pub client_id: String,
    /// The client's secret there.
    pub client_secret: Option<String>,
    /// The person's ID token.
    pub id_token: String,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("grant", &self.grant)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .field("private_key", &self.private_key.as_ref().map(|_| "…"))
            .field("signing_algorithm", &self.signing_algorithm)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("scopes", &self.scopes)
            .field("callback_port", &self.callback_port)
            .field(
                "identity_provider",
                &self.identity_provider.as_ref().map(|i| &i.issuer),
            )
            .finish()
    }
}

/// The signing algorithms a JWT assertion may use.
pub const SIGNING_ALGORITHMS: &[&str] = &["ES256", "ES384", "RS256", "RS384", "RS512"];

impl Settings {
    /// `declared` of plugin `plugin`, checked against `grants`.
    pub fn resolve(
        plugin: &str,
        declared: &OAuth,
        grants: &tiny_harness_sandbox::grant::Grants,
    ) -> Result<Settings, LaunchError> {
        let references = References { plugin, grants };
        let client_id = declared
            .client_id
            .as_deref()
            .map(|id| references.expand(id, "client_id"))
            .transpose()?;
        let client_secret = references.secret(&declared.client_secret, "client_secret")?;
        let private_key = references.secret(&declared.private_key, "private_key")?;
        let signing_algorithm = check_form(declared)?;
        let (has_id, has_secret, has_key) = (
            client_id.is_some(),
            client_secret.is_some(),
            private_key.is_some(),
        );
        check_client_credentials(declared.grant, has_id, has_secret, has_key)?;
        let identity_provider = references.identity_provider(declared)?;
        check_grant_fit(declared.grant, has_id, has_key)?;
        Ok(Settings {
            grant: declared.grant,
            client_id,
            client_secret,
            private_key,
            signing_algorithm,
            client_metadata_url: declared.client_metadata_url.clone(),
            scopes: declared.scopes.clone(),
            callback_port: declared.callback_port,
            identity_provider,
        })
    }
}

/// A refusal of the `oauth` settings: `why`, prefixed.
fn invalid(why: String) -> LaunchError {
    LaunchError::Invalid(format!("oauth: {why}"))
}

/// How the `${NAME}` references of one plugin's settings resolve: only
/// to host variables in its `env` grant.
struct References<'a> {
    plugin: &'a str,
    grants: &'a tiny_harness_sandbox::grant::Grants,
}

impl References<'_> {
    /// `value` of setting `what`, its references resolved.
    fn expand(&self, value: &str, what: &str) -> Result<String, LaunchError> {
        tiny_harness_sandbox::grant::start::expand(
            self.plugin,
            value,
            self.grants.env(),
            &format!("oauth.{what}"),
        )
    }

    /// A secret is named, never written: the config may be shared, the
    /// host's environment is where secrets live.
    fn secret(&self, value: &Option<String>, what: &str) -> Result<Option<String>, LaunchError> {
        let Some(value) = value else {
            return Ok(None);
        };
        let whole = value.starts_with("${")
            && value.ends_with('}')
            && value[2..value.len() - 1]
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !whole {
            return Err(invalid(format!(
                "{what} must be a ${{NAME}} reference to a host variable in the plugin's env grant, not the value itself"
            )));
        }
        self.expand(value, what).map(Some)
    }

    /// The enterprise grant's identity provider, which that grant needs
    /// and no other takes.
    fn identity_provider(
        &self,
        declared: &OAuth,
    ) -> Result<Option<IdentityProviderSettings>, LaunchError> {
        match (&declared.identity_provider, declared.grant) {
            (Some(idp), Grant::Enterprise) => {
                let id_token = self
                    .secret(&Some(idp.id_token.clone()), "identity_provider.id_token")?
                    .unwrap_or_default();
                Ok(Some(IdentityProviderSettings {
                    issuer: endpoint(&idp.issuer, "issuer")?,
                    token_endpoint: endpoint(&idp.token_endpoint, "token_endpoint")?,
                    client_id: self.expand(&idp.client_id, "identity_provider.client_id")?,
                    client_secret: self
                        .secret(&idp.client_secret, "identity_provider.client_secret")?,
                    id_token,
                }))
            }
            (None, Grant::Enterprise) => Err(invalid(
                "the enterprise grant needs identity_provider (issuer, token_endpoint, client_id, id_token)"
                    .to_owned(),
            )),
            (Some(_), _) => Err(invalid(
                "identity_provider is for the enterprise grant".to_owned(),
            )),
            (None, _) => Ok(None),
        }
    }
}

/// The identity provider's URL `value` (its setting `what`): https, or
/// plain HTTP only where nothing leaves the machine (the core's loopback
/// rule, as for a registry).
fn endpoint(value: &str, what: &str) -> Result<String, LaunchError> {
    let parsed = url::Url::parse(value).ok();
    let loopback = parsed.as_ref().is_some_and(|u| {
        u.host()
            .is_some_and(|host| tiny_harness_core::net::is_loopback(&host))
    });
    let fine = parsed
        .as_ref()
        .is_some_and(|u| u.scheme() == "https" || (u.scheme() == "http" && loopback));
    if !fine {
        return Err(invalid(format!(
            "identity_provider.{what} must be an https URL (http only on loopback)"
        )));
    }
    Ok(value.to_owned())
}

/// The settings' form: the signing algorithm (returned, `ES256` when none
/// is set), the client metadata document's URL, the scopes.
fn check_form(declared: &OAuth) -> Result<String, LaunchError> {
    let signing_algorithm = declared
        .signing_algorithm
        .clone()
        .unwrap_or_else(|| "ES256".to_owned());
    if !SIGNING_ALGORITHMS.contains(&signing_algorithm.as_str()) {
        return Err(invalid(format!(
            "signing_algorithm {:?} is not one of {}",
            tiny_harness_core::display::one_line(&signing_algorithm),
            SIGNING_ALGORITHMS.join(", ")
        )));
    }
    if let Some(document) = &declared.client_metadata_url {
        let parsed = url::Url::parse(document).ok();
        if !parsed.is_some_and(|u| u.scheme() == "https" && u.path() != "/") {
            return Err(invalid(
                "client_metadata_url must be an https URL with a path (the document's address)"
                    .to_owned(),
            ));
        }
    }
    if declared.scopes.len() > MAX_PAIRS
        || declared.scopes.iter().any(|s| {
            s.is_empty() || s.len() > 256 || s.chars().any(|c| c.is_whitespace() || c.is_control())
        })
    {
        return Err(invalid(format!(
            "scopes must be at most {} words of 1 to 256 characters without spaces",
            MAX_PAIRS
        )));
    }
    Ok(signing_algorithm)
}

/// The client-credentials grant needs a client id, and a secret or a key
/// (one of them).
fn check_client_credentials(
    grant: Grant,
    has_id: bool,
    has_secret: bool,
    has_key: bool,
) -> Result<(), LaunchError> {
    if grant != Grant::ClientCredentials {
        return Ok(());
    }
    if !has_id {
        return Err(invalid(
            "the client-credentials grant needs client_id".to_owned(),
        ));
    }
    if has_secret == has_key {
        return Err(invalid(
            "the client-credentials grant needs client_secret or private_key (one of them)"
                .to_owned(),
        ));
    }
    Ok(())
}

/// The enterprise grant needs a client id; a private key is for the
/// client-credentials grant only.
fn check_grant_fit(grant: Grant, has_id: bool, has_key: bool) -> Result<(), LaunchError> {
    if grant == Grant::Enterprise && !has_id {
        return Err(invalid(
            "the enterprise grant needs client_id (the client at the server's authorization server)"
                .to_owned(),
        ));
    }
    if has_key && grant != Grant::ClientCredentials {
        return Err(invalid(
            "private_key is for the client-credentials grant".to_owned(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A declared identity provider with client `c` and no secret.
    fn provider(
        issuer: &str,
        token_endpoint: &str,
        id_token: &str,
    ) -> tiny_harness_core::declaration::IdentityProvider {
        let mut provider = tiny_harness_core::declaration::IdentityProvider::default();
        provider.issuer = issuer.to_owned();
        provider.token_endpoint = token_endpoint.to_owned();
        provider.client_id = "c".to_owned();
        provider.id_token = id_token.to_owned();
        provider
    }

    fn grants() -> tiny_harness_sandbox::grant::Grants {
        let mut grants = tiny_harness_sandbox::grant::Grants::default();
        // A variable every test process has, so that none is set here.
        grants.add_env("PATH").unwrap();
        grants
    }

    fn resolve(change: impl FnOnce(&mut OAuth)) -> Result<Settings, String> {
        let mut declared = OAuth::default();
        change(&mut declared);
        Settings::resolve("mcp", &declared, &grants()).map_err(|e| e.to_string())
    }

    #[test]
    fn secrets_are_references_to_granted_variables_and_never_shown() {
        let value = std::env::var("PATH").unwrap();
        let settings = resolve(|o| {
            o.client_id = Some("client".to_owned());
            o.client_secret = Some("${PATH}".to_owned());
        })
        .unwrap();
        assert_eq!(settings.client_secret.as_deref(), Some(value.as_str()));
        assert!(!format!("{settings:?}").contains(&value));

        let literal = resolve(|o| o.client_secret = Some("s3cret".to_owned())).unwrap_err();
        assert!(literal.contains("must be a ${NAME} reference"), "{literal}");
        let ungranted = resolve(|o| o.client_secret = Some("${HOME}".to_owned())).unwrap_err();
        assert!(ungranted.contains("HOME"), "{ungranted}");
    }

    #[test]
    fn bad_settings_are_refused_with_what_to_fix() {
        for (change, want) in [
            (
                Box::new(|o: &mut OAuth| {
                    o.client_metadata_url = Some("http://x.example/c.json".to_owned())
                }) as Box<dyn FnOnce(&mut OAuth)>,
                "client_metadata_url must be an https URL",
            ),
            (
                Box::new(|o: &mut OAuth| o.signing_algorithm = Some("HS256".to_owned())),
                "signing_algorithm \"HS256\" is not one of",
            ),
            (
                Box::new(|o: &mut OAuth| o.grant = Grant::ClientCredentials),
                "needs client_id",
            ),
            (
                Box::new(|o: &mut OAuth| {
                    o.grant = Grant::ClientCredentials;
                    o.client_id = Some("c".to_owned());
                }),
                "needs client_secret or private_key",
            ),
            (
                Box::new(|o: &mut OAuth| o.private_key = Some("${PATH}".to_owned())),
                "private_key is for the client-credentials grant",
            ),
            (
                Box::new(|o: &mut OAuth| o.scopes = vec!["two words".to_owned()]),
                "scopes must be",
            ),
            (
                Box::new(|o: &mut OAuth| o.grant = Grant::Enterprise),
                "the enterprise grant needs identity_provider",
            ),
            (
                Box::new(|o: &mut OAuth| {
                    o.grant = Grant::Enterprise;
                    o.client_id = Some("c".to_owned());
                    o.identity_provider = Some(provider(
                        "http://idp.example",
                        "https://idp.example/token",
                        "${PATH}",
                    ));
                }),
                "identity_provider.issuer must be an https URL",
            ),
            (
                Box::new(|o: &mut OAuth| {
                    o.grant = Grant::Enterprise;
                    o.client_id = Some("c".to_owned());
                    o.identity_provider = Some(provider(
                        "https://idp.example",
                        "https://idp.example/token",
                        "eyJhbGciOi.literal.token",
                    ));
                }),
                "identity_provider.id_token must be a ${NAME} reference",
            ),
            (
                Box::new(|o: &mut OAuth| {
                    o.identity_provider =
                        Some(tiny_harness_core::declaration::IdentityProvider::default());
                }),
                "identity_provider is for the enterprise grant",
            ),
        ] {
            let refused = resolve(change).unwrap_err();
            assert!(refused.contains(want), "{refused}");
            assert!(!refused.contains('\n'));
        }
    }

    #[test]
    fn an_identity_provider_over_http_must_be_on_loopback() {
        let enterprise = |issuer: &str| {
            let issuer = issuer.to_owned();
            resolve(move |o| {
                o.grant = Grant::Enterprise;
                o.client_id = Some("c".to_owned());
                o.identity_provider =
                    Some(provider(&issuer, "https://idp.example/token", "${PATH}"));
            })
        };
        // The core's rule (`tiny_harness_core::net`): the loopback net and
        // `localhost`, in every spelling of the address.
        for issuer in [
            "http://127.0.0.1:8080",
            "http://127.0.0.2:8080",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://LOCALHOST/",
            "http://2130706433/",
            "https://idp.example",
        ] {
            let settings = enterprise(issuer).unwrap_or_else(|e| panic!("{issuer}: {e}"));
            let idp = settings.identity_provider.unwrap();
            assert_eq!(idp.issuer, issuer);
        }
        for issuer in [
            "http://127.0.0.1.nip.io/",
            "http://localhost.example.com/",
            "http://localhost./",
            "http://foo.localhost/",
            "http://[::2]/",
            "http://10.0.0.1/",
        ] {
            let refused = enterprise(issuer).unwrap_err();
            assert!(
                refused.contains("identity_provider.issuer must be an https URL"),
                "{issuer}: {refused}"
            );
        }
    }
}
