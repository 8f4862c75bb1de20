//! The facade's own tests: a host built without some of its features, and
//! both launchers (plugins' `exec` and MCP servers') deciding every grant
//! alike. Behaviour against real plugins and servers is in the `tests`
//! crate at the top of the repository.

#[cfg(not(all(feature = "mcp", feature = "http", feature = "intrinsics")))]
mod features;
#[cfg(feature = "mcp")]
mod launchers;
