//! Where pip installs from, as the user configured it: pip's own settings
//! (`PIP_INDEX_URL`, `PIP_EXTRA_INDEX_URL`, `PIP_FIND_LINKS`, and
//! `index-url`/`extra-index-url`/`find-links` in pip's config files) and
//! uv's (`UV_DEFAULT_INDEX`, `UV_INDEX_URL`, `UV_INDEX`,
//! `UV_EXTRA_INDEX_URL`), which are handed to pip as pip's when pip has
//! none of its own. A confined pip may connect to exactly their ports.
//!
//! And, when pip finds nothing to install, what the index offers: a
//! package with only source distributions is not installed (building one
//! runs its code), and the refusal says so instead of pip's "No matching
//! distribution".

use std::path::PathBuf;
use std::time::Duration;

/// The index pip uses when nothing names another.
pub(super) const PYPI: &str = "https://pypi.org/simple/";

/// The largest index page read when explaining a refusal.
const MAX_PAGE_BYTES: usize = 4 << 20;

/// How long the index may take to show that page.
const PAGE_TIMEOUT: Duration = Duration::from_secs(15);

/// The user's index settings.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct Indexes {
    /// The index pip installs from, if one is configured.
    pub index: Option<String>,
    /// Further indexes and find-links locations.
    pub extra: Vec<String>,
    /// The variables to give pip so that it uses uv's settings (only when
    /// pip has none of its own).
    pub env: Vec<(String, String)>,
}

impl Indexes {
    /// From the environment and pip's config files (`files`, read when
    /// present).
    pub fn configured(files: &[PathBuf]) -> Indexes {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let words = |value: Option<String>| -> Vec<String> {
            value
                .map(|v| v.split_whitespace().map(str::to_owned).collect())
                .unwrap_or_default()
        };
        let mut from_files = (None, Vec::new());
        for file in files {
            if let Ok(text) = std::fs::read_to_string(file) {
                read_pip_config(&text, &mut from_files);
            }
        }
        let mut indexes = Indexes::default();
        if let Some(index) = var("PIP_INDEX_URL").or(from_files.0) {
            indexes.index = Some(index);
        } else if let Some(index) = var("UV_DEFAULT_INDEX").or_else(|| var("UV_INDEX_URL")) {
            indexes
                .env
                .push(("PIP_INDEX_URL".to_owned(), index.clone()));
            indexes.index = Some(index);
        }
        indexes.extra.extend(words(var("PIP_EXTRA_INDEX_URL")));
        indexes.extra.extend(words(var("PIP_FIND_LINKS")));
        indexes.extra.extend(from_files.1);
        if var("PIP_EXTRA_INDEX_URL").is_none() {
            let uv: Vec<String> = words(var("UV_INDEX"))
                .into_iter()
                .chain(words(var("UV_EXTRA_INDEX_URL")))
                // `UV_INDEX` entries may be named: `name=https://...`.
                .map(|w| match w.split_once('=') {
                    Some((name, url)) if !name.contains(':') => url.to_owned(),
                    _ => w,
                })
                .collect();
            if !uv.is_empty() {
                indexes
                    .env
                    .push(("PIP_EXTRA_INDEX_URL".to_owned(), uv.join(" ")));
                indexes.extra.extend(uv);
            }
        }
        indexes
    }

    /// The index pip installs from, for people.
    pub fn shown(&self) -> String {
        super::shown_registry(self.index.as_deref().unwrap_or(PYPI))
    }

    /// The ports a confined pip may connect to: 443 and 80 (where PyPI
    /// sends it), and every configured location's.
    pub fn ports(&self) -> Vec<u16> {
        let mut ports = vec![443, 80];
        for location in self.index.iter().chain(&self.extra) {
            if let Some(port) = url::Url::parse(location.trim())
                .ok()
                .filter(|u| matches!(u.scheme(), "http" | "https"))
                .and_then(|u| u.port_or_known_default())
            {
                ports.push(port);
            }
        }
        ports.sort_unstable();
        ports.dedup();
        ports
    }

    /// Why pip found nothing to install for `requirement`, when the index
    /// says: it has only source distributions of it, or no wheel that
    /// fits here. `None` when the index does not say (no such project, or
    /// the index cannot be read).
    pub async fn why_nothing(&self, requirement: &str) -> Option<String> {
        let name = project(requirement)?;
        let base = self.index.as_deref().unwrap_or(PYPI);
        let page = url::Url::parse(base.trim())
            .ok()?
            .join(&format!("{}/", name))
            .ok()?;
        let body = fetch(page).await?;
        let files: Vec<&str> = body
            .split("href=")
            .skip(1)
            .filter_map(|rest| {
                let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
                let rest = &rest[1..];
                let end = rest.find(quote)?;
                let href = &rest[..end];
                let file = href.split(['#', '?']).next()?;
                file.rsplit('/').next()
            })
            .collect();
        if files.is_empty() {
            return None;
        }
        let wheels = files.iter().filter(|f| f.ends_with(".whl")).count();
        let shown = super::shown_registry(base);
        Some(if wheels == 0 {
            format!(
                "{shown} has only source distributions of {name}, and only wheels are installed \
                 (building a source distribution runs the package's code): install it yourself \
                 into a virtualenv and name that venv's program in the config"
            )
        } else {
            format!(
                "none of the {wheels} wheels of {name} on {shown} fits this platform and Python \
                 (only wheels are installed: building from source runs the package's code): \
                 install it yourself into a virtualenv and name that venv's program in the config"
            )
        })
    }
}

/// `index-url`, `extra-index-url` and `find-links` of a pip config file's
/// `[global]` or `[install]` section, into `found` (the index, the rest).
fn read_pip_config(text: &str, found: &mut (Option<String>, Vec<String>)) {
    let mut section = String::new();
    let mut key = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with(['#', ';']) {
            continue;
        }
        if let Some(name) = trimmed.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
            section = name.trim().to_ascii_lowercase();
            key.clear();
            continue;
        }
        if !matches!(section.as_str(), "global" | "install") {
            continue;
        }
        // A continuation line (indented) adds values to the key above.
        let (name, value) = if line.starts_with([' ', '\t']) && !key.is_empty() {
            (key.clone(), trimmed.to_owned())
        } else if let Some((name, value)) = trimmed.split_once(['=', ':']) {
            key = name.trim().to_ascii_lowercase().replace('_', "-");
            (key.clone(), value.trim().to_owned())
        } else {
            continue;
        };
        for word in value.split_whitespace() {
            match name.as_str() {
                "index-url" => found.0 = Some(word.to_owned()),
                "extra-index-url" | "find-links" => found.1.push(word.to_owned()),
                _ => {}
            }
        }
    }
}

/// The normalised project name of a requirement (`Foo_Bar==1.0` is
/// `foo-bar`), if it has one.
fn project(requirement: &str) -> Option<String> {
    let name: String = requirement
        .trim()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .collect();
    if name.is_empty() {
        return None;
    }
    let mut normal = String::new();
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !normal.ends_with('-') {
                normal.push('-');
            }
        } else {
            normal.push(c.to_ascii_lowercase());
        }
    }
    Some(normal)
}

/// The page at `url`, if it answers 200 within [`PAGE_TIMEOUT`] and
/// [`MAX_PAGE_BYTES`]; redirects are not followed.
async fn fetch(url: url::Url) -> Option<String> {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(PAGE_TIMEOUT)
        .build()
        .ok()?;
    let mut response = client
        .get(url)
        .header("Accept", "text/html")
        .send()
        .await
        .ok()?;
    if !response.status().is_success() {
        return None;
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.ok()? {
        if body.len() + chunk.len() > MAX_PAGE_BYTES {
            return None;
        }
        body.extend_from_slice(&chunk);
    }
    String::from_utf8(body).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pip_config_file_names_its_indexes() {
        let mut found = (None, Vec::new());
        read_pip_config(
            "[global]\nindex-url = http://127.0.0.1:3141/simple/\nextra-index-url =\n    \
             https://a.example:8443/simple/\n    https://b.example/simple/\n[freeze]\n\
             index-url = http://nope:1/\n[install]\nfind_links: file:///wheels\n",
            &mut found,
        );
        assert_eq!(found.0.as_deref(), Some("http://127.0.0.1:3141/simple/"));
        assert_eq!(
            found.1,
            [
                "https://a.example:8443/simple/",
                "https://b.example/simple/",
                "file:///wheels"
            ]
        );
        let indexes = Indexes {
            index: found.0,
            extra: found.1,
            env: Vec::new(),
        };
        assert_eq!(indexes.ports(), [80, 443, 3141, 8443]);
    }

    #[test]
    fn a_requirement_names_its_project() {
        assert_eq!(project("Foo_Bar.baz==1.0").as_deref(), Some("foo-bar-baz"));
        assert_eq!(
            project("mcp-server-time[x]>=2").as_deref(),
            Some("mcp-server-time")
        );
        assert_eq!(project("==1"), None);
    }
}
