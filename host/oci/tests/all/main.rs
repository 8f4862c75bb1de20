//! The crate's integration tests, against a real registry
//! (docker-registry on loopback) and real loopback HTTP servers that
//! misbehave on purpose.
//!
//! One test binary with a module per subject, so it links once; each
//! module that needs a registry starts one of its own, shared by its
//! tests.

// Every function here is a test or serves one: a failed unwrap is a
// failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod credentials;
mod hostile;
mod push;
mod references;
mod roundtrip;
