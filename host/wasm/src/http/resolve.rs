//! Name resolution for outbound HTTP: the one lookup whose answers are
//! checked and then connected to.
//!
//! Invariant: the sender resolves a name once, through a [`Resolve`], checks
//! every address it returns, and connects only to those addresses; nothing
//! downstream looks the name up again. The resolver is a trait so that an
//! embedder (or a test) can answer for names it controls.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;

/// The most addresses one lookup may return that are kept; the rest are
/// dropped before they are checked or tried.
pub const MAX_ADDRESSES: usize = 16;

/// What a lookup returns: the addresses, or why there are none.
pub type Resolved = Result<Vec<IpAddr>, ResolveError>;

/// Why a name did not resolve: one line naming it (the plugin sees it as
/// its DNS error), with the lookup's own error as the source.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResolveError {
    /// The name is not in the table, and there is no fallback.
    #[error("cannot resolve {0}: no such name")]
    NoSuchName(String),
    /// The lookup failed.
    #[error("cannot resolve {host}: {source}")]
    Lookup {
        /// The name looked up.
        host: String,
        /// The lookup's error.
        #[source]
        source: std::io::Error,
    },
}

/// Resolves a DNS name to addresses.
pub trait Resolve: fmt::Debug + Send + Sync {
    /// The addresses of `host` (a lowercased DNS name, never an IP
    /// literal). An empty list means the name has no address.
    fn resolve<'a>(&'a self, host: &'a str) -> Pin<Box<dyn Future<Output = Resolved> + Send + 'a>>;
}

/// The system's resolver (`getaddrinfo`, through tokio), which honours
/// `/etc/hosts`.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn resolve<'a>(&'a self, host: &'a str) -> Pin<Box<dyn Future<Output = Resolved> + Send + 'a>> {
        Box::pin(async move {
            let found = tokio::net::lookup_host((host, 0)).await.map_err(|source| {
                ResolveError::Lookup {
                    host: host.to_owned(),
                    source,
                }
            })?;
            Ok(found.map(|addr| addr.ip()).take(MAX_ADDRESSES).collect())
        })
    }
}

/// A fixed table of names and their addresses, consulted before a fallback
/// resolver (if any). A name absent from the table and without a fallback
/// does not resolve.
#[derive(Debug, Default)]
pub struct StaticResolver {
    names: HashMap<String, Vec<IpAddr>>,
    fallback: Option<Box<dyn Resolve>>,
}

impl StaticResolver {
    /// An empty table with no fallback.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `name` (compared lowercased) resolving to `addresses`.
    pub fn with(mut self, name: &str, addresses: impl IntoIterator<Item = IpAddr>) -> Self {
        self.names
            .insert(name.to_ascii_lowercase(), addresses.into_iter().collect());
        self
    }

    /// Sends names absent from the table to `fallback`.
    pub fn or_else(mut self, fallback: impl Resolve + 'static) -> Self {
        self.fallback = Some(Box::new(fallback));
        self
    }
}

impl Resolve for StaticResolver {
    fn resolve<'a>(&'a self, host: &'a str) -> Pin<Box<dyn Future<Output = Resolved> + Send + 'a>> {
        Box::pin(async move {
            match (self.names.get(&host.to_ascii_lowercase()), &self.fallback) {
                (Some(addresses), _) => Ok(addresses.iter().copied().take(MAX_ADDRESSES).collect()),
                (None, Some(fallback)) => fallback.resolve(host).await,
                (None, None) => Err(ResolveError::NoSuchName(host.to_owned())),
            }
        })
    }
}
