//! The relative links of a `SKILL.md` body, for the check at load.
//!
//! Invariants: only Markdown links count (inline `[text](target)`,
//! images, and reference definitions `[id]: target`), never bare words or
//! code (fenced blocks and inline code spans are skipped); a target with a
//! scheme (`https:`, `mailto:`), a `//` host, a leading `/` or only a
//! `#fragment` is not relative and is left alone. The work is linear in
//! the body, and at most [`MAX_LINKS`] targets are returned.

/// The most link targets one body yields.
pub(super) const MAX_LINKS: usize = 256;

/// The relative link targets in `body`, as written, in order, each once.
pub(super) fn relative(body: &str) -> Vec<&str> {
    let mut found: Vec<&str> = Vec::new();
    let mut fence: Option<&str> = None;
    for line in body.lines() {
        let trimmed = line.trim_start();
        if let Some(open) = fence {
            if trimmed.starts_with(open) {
                fence = None;
            }
            continue;
        }
        if trimmed.starts_with("```") {
            fence = Some("```");
            continue;
        }
        if trimmed.starts_with("~~~") {
            fence = Some("~~~");
            continue;
        }
        let mut targets = Vec::new();
        if let Some(target) = definition(trimmed) {
            targets.push(target);
        } else {
            inline(line, &mut targets);
        }
        for target in targets {
            if is_relative(target) && !found.contains(&target) {
                found.push(target);
                if found.len() >= MAX_LINKS {
                    return found;
                }
            }
        }
    }
    found
}

/// The target of a reference definition line, `[id]: target "title"`.
fn definition(line: &str) -> Option<&str> {
    let rest = line.strip_prefix('[')?;
    let close = rest.find("]:")?;
    if close == 0 || rest[..close].contains('[') {
        return None;
    }
    target_of(rest[close + 2..].trim_start())
}

/// The targets of the inline links and images on `line`, outside code
/// spans.
fn inline<'a>(line: &'a str, out: &mut Vec<&'a str>) {
    let bytes = line.as_bytes();
    let mut i = 0;
    let mut in_code = false;
    while i < bytes.len() {
        match bytes[i] {
            b'`' => in_code = !in_code,
            b']' if !in_code && bytes.get(i + 1) == Some(&b'(') => {
                let start = i + 2;
                // The target ends at the `)` that balances the `(`.
                let mut depth = 1;
                let mut end = None;
                for (j, &b) in bytes.iter().enumerate().skip(start) {
                    match b {
                        b'(' => depth += 1,
                        b')' => {
                            depth -= 1;
                            if depth == 0 {
                                end = Some(j);
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                let Some(end) = end else { return };
                if let Some(target) = target_of(line[start..end].trim()) {
                    out.push(target);
                }
                i = end;
            }
            _ => {}
        }
        i += 1;
    }
}

/// A link destination without its title: `<a b.md>` or `a.md "Title"`.
fn target_of(text: &str) -> Option<&str> {
    let target = if let Some(rest) = text.strip_prefix('<') {
        &rest[..rest.find('>')?]
    } else {
        text.split_whitespace().next()?
    };
    (!target.is_empty()).then_some(target)
}

/// Whether a target names a file of the skill, relative to its root.
fn is_relative(target: &str) -> bool {
    if target.starts_with('#') || target.starts_with('/') {
        return false;
    }
    // A scheme: letters, then letters, digits, `+`, `-` or `.`, then `:`.
    let scheme = target
        .find(':')
        .map(|colon| &target[..colon])
        .is_some_and(|s| {
            s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        });
    !scheme
}

#[cfg(test)]
mod tests {
    use super::relative;

    #[test]
    fn only_relative_markdown_links_count() {
        let body = "# PDF\n\
            See [the reference](REFERENCE.md) and [forms](./FORMS.md#filling).\n\
            Best practices: [here](./reference/mcp_best_practices.md \"Best\").\n\
            ![logo](assets/logo%20dark.png) and [site](https://example.com/a.md),\n\
            [mail](mailto:a@example.com), [top](#top), [abs](/etc/passwd).\n\
            Inline `[code](not-a-link.md)` and a bare REFERENCE.md mention.\n\
            ```\n[fenced](also-not.md)\n```\n\
            [def]: <templates/a b.md> \"Title\"\n\
            [again](REFERENCE.md) [paren](docs/a_(b).md)\n";
        assert_eq!(
            relative(body),
            [
                "REFERENCE.md",
                "./FORMS.md#filling",
                "./reference/mcp_best_practices.md",
                "assets/logo%20dark.png",
                "templates/a b.md",
                "docs/a_(b).md",
            ]
        );
    }

    #[test]
    fn the_count_is_bounded() {
        let body: String = (0..1000).map(|i| format!("[x](f{i}.md)\n")).collect();
        assert_eq!(relative(&body).len(), super::MAX_LINKS);
        assert!(relative("[unclosed](a.md").is_empty());
    }
}
