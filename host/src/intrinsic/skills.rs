//! Skills in the Agent Skills layout, read with no ambient authority.
//!
//! ```text
//! <root>/<name>/SKILL.md          front matter (name, description), then the body
//! <root>/<name>/scripts/...       optional resources, by kind
//! <root>/<name>/references/...
//! <root>/<name>/assets/...
//! ```
//!
//! Invariants:
//! - **Only the root.** The root is opened once as a capability
//!   ([`cap_std::fs::Dir`]); every later open is relative to it through
//!   cap-std, which refuses `..` that climbs out, absolute paths and
//!   symlinks that lead out by construction, not by string checks. (A hard
//!   link inside the root to a file elsewhere is that file: whoever can
//!   make one in the root can already choose its contents.)
//! - **Text, bounded.** `SKILL.md` is at most [`MAX_SKILL_FILE`] bytes and
//!   a resource at most [`MAX_RESOURCE`], both UTF-8; only regular files
//!   are read, opened without blocking (a FIFO cannot stall the host).
//!   At most [`MAX_SKILLS`] skills and [`MAX_RESOURCES`] resources per
//!   skill are listed.
//! - **One bad skill skips itself.** A malformed `SKILL.md` (or a name
//!   that differs from its directory's) leaves that skill out of the list
//!   with its reason in the report; the others are listed.

use std::io::{self, Read as _};
use std::path::Path;

use cap_std::fs::{Dir, OpenOptions};
use serde::Serialize;

use super::args::ResourceKind;
use super::error::IntrinsicError;
use super::front_matter::{self, SkillFile};
use super::limits::{
    MAX_RESOURCE, MAX_RESOURCE_DEPTH, MAX_RESOURCES, MAX_SKILL_DESCRIPTION, MAX_SKILL_FILE,
    MAX_SKILLS,
};

/// The skills a host offers: a capability on the skills root, or none.
#[derive(Debug)]
pub struct Skills {
    root: Result<Dir, String>,
}

/// One usable skill, as `list_skills` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkillInfo {
    /// Its name (its directory's).
    pub name: String,
    /// Its description.
    pub description: String,
}

/// A directory of the root that is not a usable skill, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// The directory's name.
    pub dir: String,
    /// Why it was skipped.
    pub reason: String,
}

/// What scanning the root found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LoadReport {
    /// The usable skills, by name.
    pub skills: Vec<SkillInfo>,
    /// The directories skipped, by name.
    pub skipped: Vec<Skipped>,
}

/// One resource of a skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Resource {
    /// Its kind directory.
    pub kind: ResourceKind,
    /// Its path inside that directory.
    pub resource: String,
    /// Its size in bytes.
    pub bytes: u64,
}

impl Skills {
    /// No skills root: every skill intrinsic says that none is configured.
    pub fn none() -> Self {
        Skills {
            root: Err("no skills root is configured (set [skills] root in the host config)".into()),
        }
    }

    /// Opens the skills root at `root`: the one use of ambient authority.
    pub fn open(root: &Path) -> Result<Self, IntrinsicError> {
        let dir = Dir::open_ambient_dir(root, cap_std::ambient_authority()).map_err(|e| {
            IntrinsicError::SkillsUnavailable(format!(
                "cannot open the skills root {}: {e}",
                root.display()
            ))
        })?;
        Ok(Skills { root: Ok(dir) })
    }

    fn root(&self) -> Result<&Dir, IntrinsicError> {
        self.root
            .as_ref()
            .map_err(|e| IntrinsicError::SkillsUnavailable(e.clone()))
    }

    /// Scans the root: every usable skill, and every directory skipped.
    pub fn list(&self) -> Result<LoadReport, IntrinsicError> {
        let root = self.root()?;
        let mut names = Vec::new();
        let entries = root.entries().map_err(|e| {
            IntrinsicError::SkillsUnavailable(format!("cannot list the skills root: {e}"))
        })?;
        for entry in entries.flatten() {
            let is_dir = root
                .metadata(entry.file_name())
                .map(|m| m.is_dir())
                .unwrap_or(true);
            if is_dir {
                names.push(entry.file_name());
            }
            if names.len() > MAX_SKILLS * 4 {
                break;
            }
        }
        names.sort();
        let mut report = LoadReport::default();
        for os_name in names {
            let Some(name) = os_name.to_str() else {
                report.skipped.push(Skipped {
                    dir: os_name.to_string_lossy().into_owned(),
                    reason: "its name is not UTF-8".into(),
                });
                continue;
            };
            if report.skills.len() >= MAX_SKILLS {
                report.skipped.push(Skipped {
                    dir: name.to_owned(),
                    reason: format!("more than {MAX_SKILLS} skills; only the first are offered"),
                });
                continue;
            }
            match read_skill(root, name) {
                Ok(file) => report.skills.push(SkillInfo {
                    name: file.name,
                    description: file.description,
                }),
                Err(reason) => report.skipped.push(Skipped {
                    dir: name.to_owned(),
                    reason,
                }),
            }
        }
        Ok(report)
    }

    /// Reads skill `name`'s `SKILL.md`.
    pub fn load(&self, name: &str) -> Result<SkillFile, IntrinsicError> {
        let root = self.root()?;
        check_skill_name(name).map_err(|_| IntrinsicError::UnknownSkill(name.to_owned()))?;
        if !root.is_dir(name) {
            return Err(IntrinsicError::UnknownSkill(name.to_owned()));
        }
        read_skill(root, name).map_err(|reason| IntrinsicError::SkillUnusable {
            name: name.to_owned(),
            reason,
        })
    }

    /// Every resource of skill `name` (at most [`MAX_RESOURCES`]), and
    /// whether the list was cut there.
    pub fn resources(&self, name: &str) -> Result<(Vec<Resource>, bool), IntrinsicError> {
        let skill = self.skill_dir(name)?;
        let mut found = Vec::new();
        let mut cut = false;
        for kind in ResourceKind::ALL {
            if let Ok(dir) = skill.open_dir(kind.as_str()) {
                walk(&dir, kind, "", 0, &mut found, &mut cut);
            }
        }
        Ok((found, cut))
    }

    /// The text of resource `resource` of kind `kind` of skill `name`.
    pub fn resource(
        &self,
        name: &str,
        kind: ResourceKind,
        resource: &str,
    ) -> Result<String, IntrinsicError> {
        let skill = self.skill_dir(name)?;
        let not_found = || IntrinsicError::ResourceNotFound {
            name: name.to_owned(),
            kind: kind.as_str(),
            resource: resource.to_owned(),
        };
        let denied = || IntrinsicError::ResourceDenied {
            name: name.to_owned(),
            kind: kind.as_str(),
            resource: resource.to_owned(),
        };
        let dir = skill.open_dir(kind.as_str()).map_err(|_| not_found())?;
        let text = read_text(&dir, resource, MAX_RESOURCE).map_err(|e| match e {
            ReadError::Io(e) if e.kind() == io::ErrorKind::NotFound => not_found(),
            ReadError::NotFile => not_found(),
            ReadError::Io(e) if e.kind() == io::ErrorKind::PermissionDenied => denied(),
            // cap-std refuses an escape with an error of its own; an
            // absolute path or a symlink out is such an escape.
            ReadError::Io(_) => denied(),
            ReadError::Unreadable(reason) => IntrinsicError::ResourceUnreadable {
                name: name.to_owned(),
                resource: resource.to_owned(),
                reason,
            },
        })?;
        Ok(text)
    }

    /// The directory of a usable skill `name`.
    fn skill_dir(&self, name: &str) -> Result<Dir, IntrinsicError> {
        self.load(name)?;
        self.root()?
            .open_dir(name)
            .map_err(|_| IntrinsicError::UnknownSkill(name.to_owned()))
    }
}

/// Lists the regular files under `dir` into `found`, `prefix` their path
/// so far, at most [`MAX_RESOURCE_DEPTH`] levels down.
fn walk(
    dir: &Dir,
    kind: ResourceKind,
    prefix: &str,
    depth: usize,
    found: &mut Vec<Resource>,
    cut: &mut bool,
) {
    let Ok(entries) = dir.entries() else { return };
    let mut names: Vec<String> = entries
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .take(MAX_RESOURCES * 4)
        .collect();
    names.sort();
    for name in names {
        if found.len() >= MAX_RESOURCES {
            *cut = true;
            return;
        }
        // Follows a symlink only where it stays inside the root.
        let Ok(meta) = dir.metadata(&name) else {
            continue;
        };
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        if meta.is_file() {
            found.push(Resource {
                kind,
                resource: path,
                bytes: meta.len(),
            });
        } else if meta.is_dir()
            && depth < MAX_RESOURCE_DEPTH
            && let Ok(sub) = dir.open_dir(&name)
        {
            walk(&sub, kind, &path, depth + 1, found, cut);
        }
    }
}

/// Reads and checks `<name>/SKILL.md`.
fn read_skill(root: &Dir, name: &str) -> Result<SkillFile, String> {
    check_skill_name(name)?;
    let dir = root
        .open_dir(name)
        .map_err(|e| format!("cannot open its directory: {e}"))?;
    let text = read_text(&dir, "SKILL.md", MAX_SKILL_FILE).map_err(|e| match e {
        ReadError::Io(e) if e.kind() == io::ErrorKind::NotFound => "it has no SKILL.md".to_owned(),
        ReadError::NotFile => "its SKILL.md is not a regular file".to_owned(),
        ReadError::Io(e) => format!("cannot read its SKILL.md: {e}"),
        ReadError::Unreadable(reason) => format!("its SKILL.md {reason}"),
    })?;
    let file = front_matter::parse(&text).map_err(|e| format!("its SKILL.md: {e}"))?;
    if file.name != name {
        return Err(format!(
            "its SKILL.md names it {:?}; the name must be the directory's",
            crate::display::one_line(&file.name)
        ));
    }
    if file.description.trim().is_empty() {
        return Err("its SKILL.md has an empty description".into());
    }
    if file.description.len() > MAX_SKILL_DESCRIPTION {
        return Err(format!(
            "its description is longer than {MAX_SKILL_DESCRIPTION} bytes"
        ));
    }
    Ok(file)
}

/// An Agent Skills name: 1 to 64 of `a-z`, `0-9` and `-`, no `-` at
/// either end and no `--`.
pub(crate) fn check_skill_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--");
    if ok {
        Ok(())
    } else {
        Err("its name is not 1 to 64 of a-z, 0-9 and single inner hyphens".into())
    }
}

enum ReadError {
    Io(io::Error),
    NotFile,
    Unreadable(String),
}

/// Reads the regular file `path` under `dir`: at most `max` bytes of UTF-8.
fn read_text(dir: &Dir, path: &str, max: u64) -> Result<String, ReadError> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(target_os = "linux")]
    {
        use cap_std::fs::OpenOptionsExt as _;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let file = dir.open_with(path, &options).map_err(ReadError::Io)?;
    let meta = file.metadata().map_err(ReadError::Io)?;
    if !meta.is_file() {
        return Err(ReadError::NotFile);
    }
    if meta.len() > max {
        return Err(ReadError::Unreadable(format!(
            "is {} bytes, more than the limit of {max}",
            meta.len()
        )));
    }
    let mut bytes = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() as u64 > max {
        return Err(ReadError::Unreadable(format!(
            "is more than the limit of {max} bytes"
        )));
    }
    String::from_utf8(bytes).map_err(|_| ReadError::Unreadable("is not UTF-8 text".into()))
}
