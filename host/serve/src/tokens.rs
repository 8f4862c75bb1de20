//! The tokens file of `serve --tokens`: one `NAME TOKEN` line per client.
//!
//! Invariants:
//! - The file is refused when it is not the user's own, when anyone but
//!   its owner may read or write it,
//!   when it is not a regular file, or past [`MAX_TOKENS_BYTES`]; a line
//!   that is not `NAME TOKEN` is refused with its number, never its text
//!   (it may hold a secret).
//! - A token is compared with every client's in constant time (each
//!   comparison runs whether or not an earlier one matched), and no token
//!   is ever logged or shown.

use std::path::Path;

use subtle::ConstantTimeEq;

use crate::config::{ServeError, check_client_name};

/// The largest tokens file read.
pub const MAX_TOKENS_BYTES: u64 = 1 << 20;
/// The shortest token accepted: 128 bits as hex, or about that in base64.
pub const MIN_TOKEN_LEN: usize = 22;

/// The clients' bearer tokens, by client name.
#[derive(Clone)]
pub struct Tokens {
    entries: Vec<(String, Vec<u8>)>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens")
            .field("clients", &self.names().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Tokens {
    /// Reads the tokens file at `path`.
    pub fn load(path: &Path) -> Result<Tokens, ServeError> {
        let refuse = |reason: String| ServeError::Tokens {
            path: path.to_owned(),
            reason,
        };
        let file = std::fs::File::open(path).map_err(|e| refuse(format!("cannot open it: {e}")))?;
        let meta = file
            .metadata()
            .map_err(|e| refuse(format!("cannot read it: {e}")))?;
        if !meta.is_file() {
            return Err(refuse("it is not a regular file".to_owned()));
        }
        {
            use std::os::unix::fs::MetadataExt;
            let me = rustix::process::geteuid().as_raw();
            if meta.uid() != me {
                return Err(refuse(format!(
                    "it belongs to user {}, not to you (user {me}); use a tokens file of your own",
                    meta.uid()
                )));
            }
            if meta.mode() & 0o077 != 0 {
                return Err(refuse(format!(
                    "others may read or write it (mode {:o}); run chmod 600 on it",
                    meta.mode() & 0o777
                )));
            }
        }
        if meta.len() > MAX_TOKENS_BYTES {
            return Err(refuse(format!(
                "it is larger than {MAX_TOKENS_BYTES} bytes"
            )));
        }
        let mut text = String::new();
        use std::io::Read;
        file.take(MAX_TOKENS_BYTES)
            .read_to_string(&mut text)
            .map_err(|e| refuse(format!("cannot read it as UTF-8 text: {e}")))?;
        Tokens::parse(&text).map_err(refuse)
    }

    /// The tokens in `text` (the file's contents): `#` comments and blank
    /// lines are skipped.
    pub fn parse(text: &str) -> Result<Tokens, String> {
        let mut entries: Vec<(String, Vec<u8>)> = Vec::new();
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = number + 1;
            let mut parts = line.split_whitespace();
            let (Some(name), Some(token), None) = (parts.next(), parts.next(), parts.next()) else {
                return Err(format!("line {at}: expected `NAME TOKEN`"));
            };
            check_client_name(name).map_err(|why| format!("line {at}: {why}"))?;
            if token.len() < MIN_TOKEN_LEN {
                return Err(format!(
                    "line {at}: the token of {name} is shorter than {MIN_TOKEN_LEN} characters \
                     (make one with `openssl rand -hex 32`)"
                ));
            }
            if entries.iter().any(|(other, _)| other == name) {
                return Err(format!("line {at}: {name} has a token already"));
            }
            if entries.iter().any(|(_, other)| other == token.as_bytes()) {
                return Err(format!("line {at}: {name}'s token is another client's too"));
            }
            entries.push((name.to_owned(), token.as_bytes().to_vec()));
        }
        if entries.is_empty() {
            return Err("it names no client; write one `NAME TOKEN` line per client".to_owned());
        }
        Ok(Tokens { entries })
    }

    /// The client whose token `presented` is, compared with every token
    /// in constant time.
    pub fn client(&self, presented: &[u8]) -> Option<&str> {
        let mut found = None;
        for (name, token) in &self.entries {
            if bool::from(token.as_slice().ct_eq(presented)) {
                found = Some(name.as_str());
            }
        }
        found
    }

    /// The clients named, in file order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(name, _)| name.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

    #[test]
    fn tokens_name_their_clients() {
        let tokens = Tokens::parse(&format!("# clients\nci {A}\n\nide {B}\n")).unwrap();
        assert_eq!(tokens.client(A.as_bytes()), Some("ci"));
        assert_eq!(tokens.client(B.as_bytes()), Some("ide"));
        assert_eq!(tokens.client(b"aaaa"), None);
        assert_eq!(tokens.client(b""), None);
        assert!(!format!("{tokens:?}").contains(A));
    }

    #[test]
    fn bad_lines_are_refused_without_their_text() {
        for (text, says) in [
            (format!("ci {A} extra"), "line 1: expected"),
            ("ci tiny1".to_owned(), "shorter than"),
            (format!("ci {A}\nci {B}"), "line 2: ci has a token already"),
            (format!("ci {A}\nide {A}"), "another client's"),
            (format!("c/i {A}"), "client name"),
            ("# nothing\n".to_owned(), "names no client"),
        ] {
            let error = Tokens::parse(&text).err().unwrap();
            assert!(error.contains(says), "{text:?}: {error}");
            assert!(!error.contains(A) && !error.contains("tiny1"), "{error}");
        }
    }

    #[test]
    fn a_file_others_may_read_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens");
        std::fs::write(&path, format!("ci {A}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let error = Tokens::load(&path).unwrap_err().to_string();
        assert!(error.contains("chmod 600"), "{error}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(Tokens::load(&path).is_ok());
        let error = Tokens::load(&dir.path().join("missing"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("cannot open it"), "{error}");
    }
}
