//! From a declaration to what the host will start or reach, under the
//! plugin's grants.
//!
//! Invariants:
//! - A stdio server runs only a program in the plugin's `exec` grants, an
//!   HTTP server is reached only at a URL its `net` grants allow, and a
//!   `${NAME}` reference resolves only for a host variable in its `env`
//!   grants. Each refusal names the grant that would allow it.
//! - The program's environment is the baseline ([`BASELINE_ENV`]) plus what
//!   the declaration sets; nothing else of the host's leaks through.
//! - Values that may be secret (environment values, header values, a URL's
//!   userinfo and query) never reach `Debug`, `Display` or an error.

use std::fmt;
use std::time::Duration;
use tiny_harness_core::display::redact_url;

pub use tiny_harness_sandbox::grant::LaunchError;
pub use tiny_harness_sandbox::grant::start::{BASELINE_ENV, MAX_PAIRS};
use tiny_harness_sandbox::grant::start::{expand, granted_dir, prepare, prepare_granted};
use tiny_harness_sandbox::grant::{self, Grants, NetGrant};

use super::declaration::{Declaration, Http, Stdio, Transport};

/// How long a server may take to start when its declaration does not say:
/// enough for an interpreter's first start (imports compiled, caches
/// filled), far more than a call needs.
pub const DEFAULT_START_TIMEOUT: Duration = Duration::from_secs(60);

/// The longest start a declaration may ask for.
pub const MAX_START_TIMEOUT: Duration = Duration::from_secs(600);

/// Why the host will not start or reach a declared server: one line that
/// says what to do, and the error behind it, when there is one, as the
/// source (its message already in the line).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LaunchRefused {
    /// The host's own reason.
    #[error("{0}")]
    Reason(String),
    /// An error whose own line says why.
    #[error("{0}")]
    Error(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The host's reason for an error, which the reason names.
    #[error("{reason}")]
    Caused {
        /// Why, in one line (the error's message in it).
        reason: String,
        /// The error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl LaunchRefused {
    /// Refused for `error`, whose own line says why.
    pub fn error(error: impl std::error::Error + Send + Sync + 'static) -> LaunchRefused {
        LaunchRefused::Error(Box::new(error))
    }
}

impl From<String> for LaunchRefused {
    fn from(reason: String) -> LaunchRefused {
        LaunchRefused::Reason(reason)
    }
}

/// A declared server, checked against the grants and resolved.
#[derive(Debug)]
pub struct Launch {
    /// The server name.
    pub server: String,
    /// What to start or reach.
    pub target: Target,
    /// The longest one call may take.
    pub timeout: Duration,
    /// The longest starting may take (the program started and its session
    /// open), apart from the call timeout.
    pub start_timeout: Duration,
    /// Start with the host.
    pub eager: bool,
    /// Roots to answer `roots/list` with, as `file://` URIs of granted
    /// directories.
    pub roots: Vec<String>,
    /// For a server run from its install: what is checked before each
    /// start of its program.
    pub store_check: Option<crate::store::StartCheck>,
}

/// What a [`Launch`] starts or reaches.
#[derive(Debug)]
pub enum Target {
    /// A program to start.
    Process(Program),
    /// A streamable HTTP endpoint.
    Http(Endpoint),
}

pub use tiny_harness_sandbox::grant::start::Program;

/// A granted endpoint with its resolved headers.
pub struct Endpoint {
    /// The URL.
    pub url: url::Url,
    /// The grant that allows it.
    pub grant: NetGrant,
    /// Headers for every request.
    pub headers: Vec<(String, String)>,
    /// Where the server's OAuth login is kept (`mcp login`), when the host
    /// keeps logins (it does beside a config file): the host attaches the
    /// token to its requests, the plugin never sees it.
    #[cfg(feature = "oauth")]
    pub login: Option<super::oauth::Slot>,
    /// The declared OAuth settings, their references resolved (boxed:
    /// most servers have none).
    #[cfg(feature = "oauth")]
    pub oauth: Option<Box<super::oauth::Settings>>,
}

impl Endpoint {
    /// What the OAuth side needs of it.
    pub(crate) fn auth(&self) -> super::oauth::Auth<'_> {
        super::oauth::Auth {
            #[cfg(feature = "oauth")]
            url: &self.url,
            #[cfg(feature = "oauth")]
            login: self.login.as_ref(),
            #[cfg(feature = "oauth")]
            settings: self.oauth.as_deref(),
            #[cfg(not(feature = "oauth"))]
            endpoint: std::marker::PhantomData,
        }
    }
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys: Vec<&str> = self.headers.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("Endpoint")
            .field("url", &redact_url(self.url.as_str()))
            .field("grant", &self.grant.as_str())
            .field("headers", &keys)
            .field("login", &self.auth().login_key())
            .finish()
    }
}

impl Launch {
    /// Checks `declaration` of plugin `plugin` against `grants`. `timeout`
    /// is the plugin's own call timeout, which a declared one may shorten.
    pub fn resolve(
        plugin: &str,
        declaration: &Declaration,
        grants: &Grants,
        timeout: Duration,
    ) -> Result<Launch, LaunchError> {
        Launch::resolve_with(plugin, declaration, grants, timeout, None)
    }

    /// [`Launch::resolve`] for a stdio server whose program is granted, but
    /// not on this machine, and is run as `stand_in` instead (a fetching
    /// launcher whose server runs from its install: see
    /// [`tiny_harness_sandbox::grant::UnusableProgram::stand_in`]).
    pub fn resolve_standing_in(
        plugin: &str,
        declaration: &Declaration,
        grants: &Grants,
        timeout: Duration,
        stand_in: &grant::ExecGrant,
    ) -> Result<Launch, LaunchError> {
        Launch::resolve_with(plugin, declaration, grants, timeout, Some(stand_in))
    }

    fn resolve_with(
        plugin: &str,
        declaration: &Declaration,
        grants: &Grants,
        timeout: Duration,
        stand_in: Option<&grant::ExecGrant>,
    ) -> Result<Launch, LaunchError> {
        let target = match &declaration.transport {
            Transport::Stdio(stdio) => Target::Process(process(plugin, stdio, grants, stand_in)?),
            Transport::Http(http) => Target::Http(endpoint(plugin, http, grants)?),
        };
        if declaration.roots.len() > MAX_PAIRS {
            return Err(LaunchError::Invalid(format!(
                "it declares {} roots; at most {MAX_PAIRS} are allowed",
                declaration.roots.len()
            )));
        }
        let roots = declaration
            .roots
            .iter()
            .map(|root| {
                let dir = granted_dir(plugin, root, grants)?;
                url::Url::from_directory_path(&dir)
                    .map(String::from)
                    .map_err(|()| {
                        LaunchError::Invalid(format!(
                            "root {} is not a directory path",
                            dir.display()
                        ))
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Launch {
            server: declaration.name.clone(),
            target,
            timeout: declaration.timeout.map_or(timeout, |t| t.min(timeout)),
            start_timeout: declaration
                .start_timeout
                .map_or(DEFAULT_START_TIMEOUT, |t| t.min(MAX_START_TIMEOUT)),
            eager: declaration.eager,
            roots,
            store_check: None,
        })
    }

    /// `stdio` or `streamable-http`.
    pub fn transport(&self) -> &'static str {
        match self.target {
            Target::Process(_) => "stdio",
            Target::Http(_) => "streamable-http",
        }
    }

    /// What the server is, for people, with no secret in it: the program
    /// and its arguments, or the URL without userinfo, query or fragment.
    pub fn describe(&self) -> String {
        match &self.target {
            Target::Process(p) => {
                let mut words = vec![p.program.display().to_string()];
                words.extend(p.args.iter().cloned());
                words.join(" ")
            }
            Target::Http(e) => redact_url(e.url.as_str()),
        }
    }
}

fn process(
    plugin: &str,
    stdio: &Stdio,
    grants: &Grants,
    stand_in: Option<&grant::ExecGrant>,
) -> Result<Program, LaunchError> {
    let cwd = stdio
        .cwd
        .as_deref()
        .map(|cwd| granted_dir(plugin, cwd, grants))
        .transpose()?;
    let (command, args, env) = (&stdio.command, &stdio.args, &stdio.env);
    match stand_in {
        Some(granted) => prepare_granted(plugin, grants, granted, command, args, env, cwd),
        None => prepare(plugin, grants, command, args, env, cwd),
    }
}

fn endpoint(plugin: &str, http: &Http, grants: &Grants) -> Result<Endpoint, LaunchError> {
    let url = url::Url::parse(&http.url).map_err(|e| {
        LaunchError::Invalid(format!("{:?} is not a URL ({e})", redact_url(&http.url)))
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(LaunchError::Invalid(format!(
            "{} is not an http or https URL",
            redact_url(url.as_str())
        )));
    }
    let grant = grant::find_net(grants.net(), &url).map_err(|denied| LaunchError::NotGranted {
        plugin: plugin.to_owned(),
        what: redact_url(url.as_str()),
        grant: denied.suggestion(),
    })?;
    if http.headers.len() > MAX_PAIRS {
        return Err(LaunchError::Invalid(format!(
            "it sets {} headers; at most {MAX_PAIRS} are allowed",
            http.headers.len()
        )));
    }
    let mut headers = Vec::new();
    for (name, value) in &http.headers {
        let valid = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        if !valid {
            return Err(LaunchError::Invalid(format!(
                "{:?} is not an HTTP header name",
                tiny_harness_core::display::one_line(name)
            )));
        }
        let value = expand(plugin, value, grants.env(), &format!("header {name}"))?;
        if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
            return Err(LaunchError::Invalid(format!(
                "the value of header {name} holds a line break or NUL"
            )));
        }
        headers.push((name.clone(), value));
    }
    #[cfg(feature = "oauth")]
    let oauth = http
        .oauth
        .as_ref()
        .map(|declared| super::oauth::Settings::resolve(plugin, declared, grants).map(Box::new))
        .transpose()?;
    #[cfg(not(feature = "oauth"))]
    if http.oauth.is_some() {
        return Err(LaunchError::Invalid(
            "it declares an OAuth login (oauth), and this host was built without the oauth \
             feature of tiny-harness-host: build it with that feature, or remove the oauth block"
                .to_owned(),
        ));
    }
    Ok(Endpoint {
        url,
        grant: grant.clone(),
        headers,
        #[cfg(feature = "oauth")]
        login: None,
        #[cfg(feature = "oauth")]
        oauth,
    })
}
