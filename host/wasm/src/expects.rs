//! What a component says it expects to be granted: the custom section
//! `tiny-harness:expects` (written by the guest SDK's `expects!`, or
//! appended by a build script), read for `plugin inspect` and `plugin
//! add`. It grants nothing: only the user's config does.
//!
//! The section is text, one expectation per line, `KIND VALUE`: `dirs
//! GUEST[:read-only|:read-write]`, `env NAME`, `exec PROGRAM`, `net
//! PATTERN`. Several sections (at the top of the component or in a core
//! module inside it, as a linker leaves them) are read as one.
//!
//! Invariants: the component is untrusted. At most [`MAX_EXPECTS_BYTES`]
//! of sections are read and [`MAX_EXPECTATIONS`] lines kept, each value at
//! most [`MAX_VALUE_BYTES`] with no control character; anything else is a
//! one-line [`ExpectsError`], and the rest of the inspection stands.

/// The custom section's name.
pub const SECTION: &str = "tiny-harness:expects";

/// The most bytes of expectation sections read, 16 KiB.
pub const MAX_EXPECTS_BYTES: usize = 16 << 10;

/// The most expectations kept.
pub const MAX_EXPECTATIONS: usize = 64;

/// The longest value of one expectation.
pub const MAX_VALUE_BYTES: usize = 512;

/// What a component expects to be granted, in the order it says it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Expects {
    /// Directories, by guest path, with whether it expects to write.
    pub dirs: Vec<(String, bool)>,
    /// Environment variables it reads.
    pub env: Vec<String>,
    /// Programs it runs.
    pub exec: Vec<String>,
    /// Network destinations (`scheme://host[:port]` patterns).
    pub net: Vec<String>,
}

impl Expects {
    /// Whether it says nothing.
    pub fn is_empty(&self) -> bool {
        self.dirs.is_empty() && self.env.is_empty() && self.exec.is_empty() && self.net.is_empty()
    }

    /// The `grants` lines a config would hold for them, as TOML
    /// (`dirs = [...]`, `env = [...]`, ...), one per kind it names; a
    /// directory's host path is `HOST` for the user to fill in.
    pub fn grant_lines(&self) -> Vec<String> {
        let quoted = |items: &[String]| {
            items
                .iter()
                .map(|i| toml_string(i))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut lines = Vec::new();
        if !self.dirs.is_empty() {
            let dirs: Vec<String> = self
                .dirs
                .iter()
                .map(|(guest, write)| {
                    format!(
                        "{{ host = \"HOST\", guest = {}, mode = \"{}\" }}",
                        toml_string(guest),
                        if *write { "read-write" } else { "read-only" }
                    )
                })
                .collect();
            lines.push(format!("dirs = [{}]", dirs.join(", ")));
        }
        for (kind, items) in [("env", &self.env), ("exec", &self.exec), ("net", &self.net)] {
            if !items.is_empty() {
                lines.push(format!("{kind} = [{}]", quoted(items)));
            }
        }
        lines
    }
}

/// A TOML basic string holding `text` (which holds no control character).
fn toml_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// Why a component's expectations could not be read. The component is
/// still described; only this part is left out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExpectsError {
    /// The sections hold more than [`MAX_EXPECTS_BYTES`].
    #[error("its {SECTION} sections hold more than {MAX_EXPECTS_BYTES} bytes")]
    TooLarge,
    /// A line is not `KIND VALUE` with a kind and value it may hold.
    #[error("its {SECTION} line {line} is not one of dirs, env, exec or net with a value: {why}")]
    Line {
        /// 1-based.
        line: usize,
        /// What is wrong with it.
        why: String,
    },
    /// More than [`MAX_EXPECTATIONS`] lines.
    #[error("it expects more than {MAX_EXPECTATIONS} grants")]
    TooMany,
}

/// The expectations of the component (or core module) `bytes`; `None`
/// when it declares none.
pub fn read(bytes: &[u8]) -> Result<Option<Expects>, ExpectsError> {
    let mut text = Vec::new();
    let mut found = false;
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        // What does not parse is told by the rest of the inspection.
        let Ok(payload) = payload else { break };
        if let wasmparser::Payload::CustomSection(section) = payload
            && section.name() == SECTION
        {
            found = true;
            if text.len() + section.data().len() > MAX_EXPECTS_BYTES {
                return Err(ExpectsError::TooLarge);
            }
            text.extend_from_slice(section.data());
            if !text.ends_with(b"\n") {
                text.push(b'\n');
            }
        }
    }
    if !found {
        return Ok(None);
    }
    parse(&String::from_utf8_lossy(&text)).map(Some)
}

/// The expectations `text` holds, one per line.
pub fn parse(text: &str) -> Result<Expects, ExpectsError> {
    let mut expects = Expects::default();
    let mut count = 0;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        count += 1;
        if count > MAX_EXPECTATIONS {
            return Err(ExpectsError::TooMany);
        }
        let fail = |why: &str| ExpectsError::Line {
            line: i + 1,
            why: why.to_owned(),
        };
        let (kind, value) = line
            .split_once(' ')
            .ok_or_else(|| fail("no value after the kind"))?;
        let value = value.trim();
        if value.is_empty() {
            return Err(fail("an empty value"));
        }
        if value.len() > MAX_VALUE_BYTES {
            return Err(fail("a value over 512 bytes"));
        }
        if value.chars().any(char::is_control) {
            return Err(fail("a control character"));
        }
        let value = value.to_owned();
        let list = match kind {
            "dirs" => {
                let (guest, write) = match value.rsplit_once(':') {
                    Some((guest, "read-write")) => (guest.to_owned(), true),
                    Some((guest, "read-only")) => (guest.to_owned(), false),
                    _ => (value, false),
                };
                if !guest.starts_with('/') {
                    return Err(fail("a directory that is not an absolute guest path"));
                }
                if !expects.dirs.iter().any(|(g, _)| *g == guest) {
                    expects.dirs.push((guest, write));
                }
                continue;
            }
            "env" => &mut expects.env,
            "exec" => &mut expects.exec,
            "net" => &mut expects.net,
            _ => return Err(fail("an unknown kind")),
        };
        if !list.contains(&value) {
            list.push(value);
        }
    }
    Ok(expects)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_of_each_kind_are_read_in_order_once() {
        let expects = parse(
            "dirs /workspace:read-write\nexec git\nnet https://api.github.com\nexec git\n\ndirs /data\nenv TOKEN\n",
        )
        .unwrap();
        assert_eq!(
            expects.dirs,
            [("/workspace".to_owned(), true), ("/data".to_owned(), false)]
        );
        assert_eq!(expects.exec, ["git"]);
        assert_eq!(
            expects.grant_lines(),
            [
                "dirs = [{ host = \"HOST\", guest = \"/workspace\", mode = \"read-write\" }, { host = \"HOST\", guest = \"/data\", mode = \"read-only\" }]",
                "env = [\"TOKEN\"]",
                "exec = [\"git\"]",
                "net = [\"https://api.github.com\"]",
            ]
        );
    }

    #[test]
    fn what_a_hostile_component_writes_is_refused_in_one_line() {
        for (text, says) in [
            ("sudo everything\n", "line 1 is not one of dirs"),
            ("exec\n", "no value"),
            ("dirs relative\n", "absolute guest path"),
            ("exec a\u{1b}[2Jb\n", "control character"),
        ] {
            let err = parse(text).unwrap_err().to_string();
            assert!(err.contains(says), "{text:?}: {err}");
            assert!(!err.contains('\n'));
        }
        let many: String = (0..=MAX_EXPECTATIONS)
            .map(|i| format!("exec p{i}\n"))
            .collect();
        assert_eq!(parse(&many), Err(ExpectsError::TooMany));
        let long = format!("exec {}\n", "x".repeat(MAX_VALUE_BYTES + 1));
        assert!(parse(&long).is_err());
    }

    #[test]
    fn sections_are_found_at_the_top_and_in_a_core_module() {
        // A core module with the section, and one without.
        let mut module = wasm_encoder::Module::new();
        module.section(&wasm_encoder::CustomSection {
            name: SECTION.into(),
            data: b"exec git\n".into(),
        });
        let bytes = module.finish();
        assert_eq!(read(&bytes).unwrap().unwrap().exec, ["git"]);
        assert_eq!(read(&wasm_encoder::Module::new().finish()).unwrap(), None);
        let mut big = wasm_encoder::Module::new();
        big.section(&wasm_encoder::CustomSection {
            name: SECTION.into(),
            data: vec![b'x'; MAX_EXPECTS_BYTES + 1].into(),
        });
        assert_eq!(read(&big.finish()), Err(ExpectsError::TooLarge));
    }
}
