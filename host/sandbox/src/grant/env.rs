//! The environment variables a plugin may set for a program it has the
//! host start (an exec grant's `env = ["GIT_DIR", "LC_*"]`).
//!
//! Invariant: a program obeys its environment (git runs
//! `GIT_CONFIG_VALUE_0` as a shell command, the loader loads `LD_PRELOAD`,
//! node runs `NODE_OPTIONS`), so a variable a plugin sets widens what an
//! argument-pinned grant allows. Only names the grant lists are set; the
//! dynamic loader's variables ([`is_loader`]) never, whatever is listed.

use tiny_harness_core::display::one_line;

use super::toml_string;

/// The variable names an exec grant lets a plugin set: exact names, or
/// patterns where `*` stands for any run of characters (`LC_*`, `*`).
/// The default (no `env` in the grant) allows none.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EnvNames {
    written: Vec<String>,
}

impl EnvNames {
    /// The most names one grant may list.
    pub const MAX_NAMES: usize = 256;
    /// The longest name or pattern.
    pub const MAX_NAME_BYTES: usize = 256;

    /// Checks `names`; an error is one line naming the entry.
    pub fn new(names: &[String]) -> Result<EnvNames, super::GrantError> {
        if names.len() > Self::MAX_NAMES {
            return Err(super::GrantError::TooManyNames {
                count: names.len(),
                max: Self::MAX_NAMES,
            });
        }
        for name in names {
            let valid = !name.is_empty()
                && name.len() <= Self::MAX_NAME_BYTES
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'*');
            if !valid {
                return Err(super::GrantError::NotAName {
                    name: one_line(&name.chars().take(64).collect::<String>()).into_owned(),
                    max: Self::MAX_NAME_BYTES,
                });
            }
            if is_loader(name.trim_end_matches('*')) || name.starts_with("LD_") {
                return Err(super::GrantError::LoaderName { name: name.clone() });
            }
        }
        Ok(EnvNames {
            written: names.to_vec(),
        })
    }

    /// The names and patterns as written.
    pub fn written(&self) -> &[String] {
        &self.written
    }

    /// The longest name a program may be given (longer ones are refused
    /// before any pattern is tried, which bounds matching).
    pub const MAX_SET_NAME_BYTES: usize = 4096;

    /// Whether `name` may be set: listed, and not the loader's.
    pub fn allows(&self, name: &str) -> bool {
        name.len() <= Self::MAX_SET_NAME_BYTES
            && !is_loader(name)
            && self
                .written
                .iter()
                .any(|p| glob(p.as_bytes(), name.as_bytes()))
    }
}

/// Whether `name` is read by the dynamic loader or the C library as it
/// starts a program (`LD_PRELOAD`, `LD_LIBRARY_PATH`, `LD_AUDIT`, …,
/// `GLIBC_TUNABLES`): never settable for a program.
pub fn is_loader(name: &str) -> bool {
    name.starts_with("LD_") || name == "GLIBC_TUNABLES"
}

/// The grant that would let a plugin set `name` for `program`: its exec
/// grant with `name` added to `env`, as a config writes it.
pub fn suggestion(program: &str, name: &str, granted: &EnvNames) -> String {
    let mut names: Vec<String> = granted.written.iter().map(|n| toml_string(n)).collect();
    names.push(toml_string(&one_line(
        &name.chars().take(128).collect::<String>(),
    )));
    format!(
        "exec = [{{ program = {}, env = [{}] }}]",
        toml_string(program),
        names.join(", ")
    )
}

/// `*`-only wildcard matching: the greedy algorithm with one backtrack
/// point, at most pattern × text steps (both bounded).
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&b| b == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> EnvNames {
        EnvNames::new(&list.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn only_listed_names_and_patterns_are_allowed() {
        let granted = names(&["GIT_DIR", "LC_*", "*_COLOR"]);
        for yes in ["GIT_DIR", "LC_ALL", "LC_", "NO_COLOR", "_COLOR"] {
            assert!(granted.allows(yes), "{yes}");
        }
        for no in [
            "GIT_DIRX",
            "GIT_CONFIG_COUNT",
            "XLC_ALL",
            "COLOR",
            "git_dir",
        ] {
            assert!(!granted.allows(no), "{no}");
        }
        assert!(!EnvNames::default().allows("GIT_DIR"));
    }

    #[test]
    fn the_loaders_variables_are_never_allowed() {
        let everything = names(&["*"]);
        assert!(everything.allows("GIT_DIR"));
        for loader in [
            "LD_PRELOAD",
            "LD_LIBRARY_PATH",
            "LD_AUDIT",
            "GLIBC_TUNABLES",
        ] {
            assert!(!everything.allows(loader), "{loader}");
        }
        for written in ["LD_PRELOAD", "LD_*", "GLIBC_TUNABLES"] {
            let e = EnvNames::new(&[written.to_owned()])
                .unwrap_err()
                .to_string();
            assert!(e.contains("dynamic loader"), "{e}");
        }
    }

    #[test]
    fn bad_entries_are_refused_with_the_entry() {
        for bad in ["", "A=B", "A B", "A\u{0}"] {
            let e = EnvNames::new(&[bad.to_owned()]).unwrap_err().to_string();
            assert!(e.contains("not a variable name"), "{e}");
        }
        let many = vec!["A".to_owned(); EnvNames::MAX_NAMES + 1];
        assert!(
            EnvNames::new(&many)
                .unwrap_err()
                .to_string()
                .contains("at most 256")
        );
    }

    #[test]
    fn the_suggestion_extends_the_grant_as_written() {
        assert_eq!(
            suggestion("git", "GIT_DIR", &EnvNames::default()),
            r#"exec = [{ program = "git", env = ["GIT_DIR"] }]"#
        );
        assert_eq!(
            suggestion("git", "GIT_DIR", &names(&["LC_*"])),
            r#"exec = [{ program = "git", env = ["LC_*", "GIT_DIR"] }]"#
        );
    }

    #[test]
    fn glob_matching_handles_many_stars_quickly() {
        let pattern = "*A*A*A*A*A*A*A*A*B".as_bytes();
        let text = vec![b'A'; 4096];
        assert!(!glob(pattern, &text));
        assert!(glob(b"*", b""));
        assert!(glob(b"A*C", b"ABBC"));
        assert!(!glob(b"A*C", b"ABBD"));
    }
}
