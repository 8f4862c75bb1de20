//! The YAML front matter of a `SKILL.md`: just enough YAML for what the
//! Agent Skills layout puts there.
//!
//! A `SKILL.md` starts with a line `---`, then `key: value` lines, then a
//! line `---`, then the body. Only `name` and `description` are read;
//! other top-level keys (`license`, `allowed-tools`, a `metadata:` map
//! with indented lines under it) are skipped. Values may be plain, single-
//! or double-quoted, or a `|` / `>` block scalar of indented lines.
//!
//! Why not a YAML crate: two strings are needed, the input is untrusted
//! and small, and the maintained general parsers bring anchors, aliases
//! and tags (and with them billion-laughs-style expansion) that a skill's
//! header has no use for. This parser is bounded by construction: it
//! reads at most [`MAX_FRONT_MATTER`] bytes, makes one pass, and never
//! allocates more than it reads.

use super::limits::MAX_FRONT_MATTER;

/// A parsed `SKILL.md`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFile {
    /// `name`.
    pub name: String,
    /// `description`.
    pub description: String,
    /// Everything after the closing `---`, leading blank lines dropped.
    pub body: String,
}

/// Parses `text`, or says in one line why it is not a `SKILL.md`.
pub(crate) fn parse(text: &str) -> Result<SkillFile, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    match lines.next() {
        Some(first) if first.trim_end() == "---" => {}
        _ => return Err("it does not start with a --- line of YAML front matter".into()),
    }
    let mut header = Vec::new();
    let mut consumed = text.len() - lines.clone().map(str::len).sum::<usize>();
    let mut closed = false;
    for line in lines.by_ref() {
        consumed += line.len();
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        if consumed > MAX_FRONT_MATTER {
            return Err(format!(
                "its front matter is longer than {MAX_FRONT_MATTER} bytes"
            ));
        }
        header.push(line.trim_end_matches(['\n', '\r']));
    }
    if !closed {
        return Err("its front matter has no closing --- line".into());
    }
    let mut name = None;
    let mut description = None;
    let mut i = 0;
    while i < header.len() {
        let line = header[i];
        i += 1;
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            // An indented line belongs to a key this parser skips.
            continue;
        }
        let Some((key, raw)) = line.split_once(':') else {
            return Err(format!(
                "front matter line {:?} is not `key: value`",
                tiny_harness_core::display::one_line(line)
            ));
        };
        let key = key.trim();
        let raw = raw.trim();
        let value = if raw.starts_with('|') || raw.starts_with('>') {
            let folded = raw.starts_with('>');
            let mut block = Vec::new();
            while i < header.len()
                && (header[i].starts_with([' ', '\t']) || header[i].trim().is_empty())
            {
                block.push(header[i].trim());
                i += 1;
            }
            while block.last().is_some_and(|l| l.is_empty()) {
                block.pop();
            }
            block.join(if folded { " " } else { "\n" })
        } else {
            scalar(raw).map_err(|e| format!("front matter key {key:?}: {e}"))?
        };
        let slot = match key {
            "name" => &mut name,
            "description" => &mut description,
            _ => continue,
        };
        if slot.replace(value).is_some() {
            return Err(format!("front matter key {key:?} appears twice"));
        }
    }
    let name = name.ok_or("its front matter has no name")?;
    let description = description.ok_or("its front matter has no description")?;
    let rest = &text[consumed.min(text.len())..];
    let body = rest.trim_start_matches(['\n', '\r']).to_owned();
    Ok(SkillFile {
        name,
        description,
        body,
    })
}

/// A one-line scalar: plain (a trailing ` # comment` dropped), `'single'`
/// (`''` for a quote) or `"double"` (the common escapes).
fn scalar(raw: &str) -> Result<String, String> {
    if let Some(inner) = raw.strip_prefix('\'') {
        let inner = inner
            .strip_suffix('\'')
            .ok_or("a single-quoted value is not closed")?;
        return Ok(inner.replace("''", "'"));
    }
    if let Some(inner) = raw.strip_prefix('"') {
        let inner = inner
            .strip_suffix('"')
            .ok_or("a double-quoted value is not closed")?;
        let mut out = String::with_capacity(inner.len());
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            if c != '\\' {
                out.push(c);
                continue;
            }
            out.push(match chars.next() {
                Some('n') => '\n',
                Some('t') => '\t',
                Some('"') => '"',
                Some('\\') => '\\',
                Some('/') => '/',
                other => {
                    return Err(format!(
                        "the escape \\{} is not supported",
                        other.map(String::from).unwrap_or_default()
                    ));
                }
            });
        }
        return Ok(out);
    }
    let plain = match raw.find(" #") {
        Some(at) => &raw[..at],
        None => raw,
    };
    Ok(plain.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_name_description_and_body() {
        let file = parse(
            "---\nname: pdf\ndescription: \"Fill PDF forms: \\\"quoted\\\"\"\nlicense: MIT\n\
             metadata:\n  author: x\n---\n\n# PDF\nUse it.\n",
        )
        .unwrap();
        assert_eq!(file.name, "pdf");
        assert_eq!(file.description, "Fill PDF forms: \"quoted\"");
        assert_eq!(file.body, "# PDF\nUse it.\n");
    }

    #[test]
    fn block_scalars_and_single_quotes() {
        let file = parse("---\nname: 'it''s'\ndescription: >\n  one\n  two\n---\nbody").unwrap();
        assert_eq!(file.name, "it's");
        assert_eq!(file.description, "one two");
        let file = parse("---\nname: a\ndescription: |\n  one\n  two\n---\n").unwrap();
        assert_eq!(file.description, "one\ntwo");
    }

    #[test]
    fn malformed_files_say_why() {
        for (text, why) in [
            ("# no header", "does not start"),
            ("---\nname: a\n", "no closing"),
            ("---\nname: a\n---\n", "no description"),
            ("---\ndescription: d\n---\n", "no name"),
            ("---\nname: a\nname: b\ndescription: d\n---\n", "twice"),
            ("---\njust text\n---\n", "not `key: value`"),
            ("---\nname: \"open\ndescription: d\n---\n", "not closed"),
        ] {
            let err = parse(text).unwrap_err();
            assert!(err.contains(why), "{text:?}: {err}");
        }
        let long = format!(
            "---\nname: a\ndescription: {}\n---\n",
            "x".repeat(MAX_FRONT_MATTER)
        );
        assert!(parse(&long).unwrap_err().contains("longer than"));
    }
}
