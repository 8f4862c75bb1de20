//! Skills in the Agent Skills layout, read with no ambient authority.
//!
//! ```text
//! <root>/<name>/SKILL.md          front matter (name, description), then the body
//! <root>/<name>/<any path>        its resources, named by their path from <name>/
//!                                 (REFERENCE.md, reference/guide.md, scripts/fill.py)
//! ```
//!
//! Invariants:
//! - **Only the root.** The root is opened once as a capability
//!   ([`cap_std::fs::Dir`]); every later open is relative to it through
//!   cap-std, which refuses `..` that climbs out, absolute paths and
//!   symlinks that lead out by construction, not by string checks. (A hard
//!   link inside the root to a file elsewhere is that file: whoever can
//!   make one in the root can already choose its contents.)
//! - **Every file is a resource**, except `SKILL.md` itself and hidden
//!   names (a leading dot: `.git`, `.DS_Store`), because skills link their
//!   files by relative path from wherever they sit.
//! - **Text, or said to be binary.** Only UTF-8 without NUL is returned as
//!   text; any other file gets an answer with its size and media type.
//!   `SKILL.md` and a text resource are bounded ([`SkillLimits`]); only
//!   regular files are read, opened without blocking (a FIFO cannot stall
//!   the host). At most [`MAX_SKILLS`] skills are listed, and at most
//!   [`SkillLimits::resources`] resources per skill,
//!   [`MAX_RESOURCE_DEPTH`] directories down.
//! - **One bad skill skips itself.** A malformed `SKILL.md` (or a name
//!   that differs from its directory's) leaves that skill out of the list
//!   with its reason in the report; the others are listed.

use std::io::{self, Read as _};
use std::path::Path;

use cap_std::fs::Dir;
use serde::Serialize;

use super::args::ResourceKind;
use super::error::IntrinsicError;
use super::front_matter::{self, SkillFile};
use super::limits::{
    MAX_RESOURCE, MAX_RESOURCE_DEPTH, MAX_RESOURCES, MAX_SKILL_DESCRIPTION, MAX_SKILL_FILE,
    MAX_SKILLS,
};

mod files;
mod links;

use files::BadPath;
pub(crate) use files::kind_of;

/// The skills a host offers: a capability on the skills root, or none.
#[derive(Debug)]
pub struct Skills {
    root: Result<Dir, String>,
    limits: SkillLimits,
}

/// The bounds `[skills]` sets on what a skill may make the host read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SkillLimits {
    /// The largest `SKILL.md`, in bytes (`skill_kib`).
    pub skill_file: u64,
    /// The largest resource returned as text, in bytes (`resource_kib`).
    pub resource: u64,
    /// The most resources listed per skill (`resources`).
    pub resources: usize,
}

impl Default for SkillLimits {
    fn default() -> Self {
        SkillLimits {
            skill_file: MAX_SKILL_FILE,
            resource: MAX_RESOURCE,
            resources: MAX_RESOURCES,
        }
    }
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

/// One resource of a skill, as `list_skill_resources` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Resource {
    /// Its path from the skill's directory, as `SKILL.md` links it.
    pub resource: String,
    /// A hint of where it is: its first directory, or `root`.
    pub kind: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// Whether it is UTF-8 text (from its first bytes).
    pub text: bool,
    /// Its media type, from its name or its first bytes.
    pub media_type: &'static str,
}

/// What `load_skill_resource` read: the text, or that the file is binary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceContent {
    /// Its path from the skill's directory.
    pub resource: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// Its media type.
    pub media_type: &'static str,
    /// Its text; `None` for a binary file, which is never shown.
    pub text: Option<String>,
}

impl Skills {
    /// No skills root: every skill intrinsic says that none is configured.
    pub fn none() -> Self {
        Skills {
            root: Err("no skills root is configured (set [skills] root in the host config)".into()),
            limits: SkillLimits::default(),
        }
    }

    /// The same skills, read within `limits`.
    pub fn with_limits(mut self, limits: SkillLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Opens the skills root at `root`: the one use of ambient authority.
    pub fn open(root: &Path) -> Result<Self, IntrinsicError> {
        let dir = Dir::open_ambient_dir(root, cap_std::ambient_authority()).map_err(|e| {
            IntrinsicError::SkillsUnavailable(format!(
                "cannot open the skills root {}: {e}",
                root.display()
            ))
        })?;
        Ok(Skills {
            root: Ok(dir),
            limits: SkillLimits::default(),
        })
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
            match read_skill(root, name, self.limits.skill_file) {
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
        read_skill(root, name, self.limits.skill_file).map_err(|reason| {
            IntrinsicError::SkillUnusable {
                name: name.to_owned(),
                reason,
            }
        })
    }

    /// Every resource of skill `name` (at most [`SkillLimits::resources`]),
    /// and whether the list was cut there.
    pub fn resources(&self, name: &str) -> Result<(Vec<Resource>, bool), IntrinsicError> {
        let skill = self.skill_dir(name)?;
        let mut walk = Walk {
            found: Vec::new(),
            cut: false,
            max: self.limits.resources,
            // Entries looked at, listed or not: a skill that holds a huge
            // tree costs a bounded walk.
            budget: self.limits.resources.saturating_mul(4).max(64),
        };
        walk.dir(&skill, "", 0);
        Ok((walk.found, walk.cut))
    }

    /// Resource `resource` of skill `name`: a path from the skill's
    /// directory (`./` and a `#fragment` allowed, as links write them),
    /// or, as before, a path inside the `kind` directory.
    pub fn resource(
        &self,
        name: &str,
        kind: Option<ResourceKind>,
        resource: &str,
    ) -> Result<ResourceContent, IntrinsicError> {
        let skill = self.skill_dir(name)?;
        let asked = match kind {
            // An absolute path stays one, and is refused as such.
            Some(kind)
                if !resource.starts_with('/')
                    && !resource.starts_with(&format!("{}/", kind.as_str())) =>
            {
                format!("{}/{resource}", kind.as_str())
            }
            _ => resource.to_owned(),
        };
        let fail = |reason: String| IntrinsicError::ResourceUnreadable {
            name: name.to_owned(),
            resource: asked.clone(),
            reason,
        };
        let path = files::normalize(&asked).map_err(|bad| match bad {
            BadPath::Escapes => IntrinsicError::ResourceDenied {
                name: name.to_owned(),
                resource: asked.clone(),
            },
            BadPath::Empty => fail("it names no file".into()),
            BadPath::SkillFile => {
                fail("it is the skill's own instructions; load_skill reads them".into())
            }
            BadPath::Hidden => {
                fail("hidden files (a name that starts with a dot) are not resources".into())
            }
        })?;
        let (path, file) = match files::open(&skill, &path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                // As a link writes it (`%20`), or as a file system that
                // ignores case would find it (`REFERENCE.md` of
                // `reference.md`).
                let decoded = files::percent_decoded(&path).and_then(|p| files::normalize(&p).ok());
                let found = decoded.iter().chain(std::iter::once(&path)).find_map(|p| {
                    if skill.symlink_metadata(p).is_ok() {
                        Some(p.clone())
                    } else {
                        files::case_insensitive(&skill, p)
                    }
                });
                match found {
                    Some(found) => {
                        let file = files::open(&skill, &found);
                        (found, file)
                    }
                    None => (path, Err(e)),
                }
            }
            opened => (path, opened),
        };
        let file = file.map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => IntrinsicError::ResourceNotFound {
                name: name.to_owned(),
                resource: asked.clone(),
            },
            // cap-std refuses an escape with an error of its own; an
            // absolute path or a symlink out is such an escape.
            _ => IntrinsicError::ResourceDenied {
                name: name.to_owned(),
                resource: asked.clone(),
            },
        })?;
        let meta = file.metadata().map_err(|e| fail(e.to_string()))?;
        if meta.is_dir() {
            return Err(fail(
                "it is a directory; list_skill_resources lists the files in it".into(),
            ));
        }
        if !meta.is_file() {
            return Err(fail("it is not a regular file".into()));
        }
        let bytes = meta.len();
        let max = self.limits.resource;
        let head = files::head(&file, files::SNIFF).map_err(|e| fail(e.to_string()))?;
        let whole = (head.len() as u64) >= bytes;
        let binary = |head: &[u8]| ResourceContent {
            media_type: files::media_type(&path, head, false),
            resource: path.clone(),
            bytes,
            text: None,
        };
        if !files::is_text(&head, whole) {
            return Ok(binary(&head));
        }
        if bytes > max {
            return Err(fail(format!(
                "it is {bytes} bytes of text, more than the limit of {max} (raise [skills] resource_kib in the host config)"
            )));
        }
        let mut all = head;
        (&file)
            .take(max + 1 - all.len() as u64)
            .read_to_end(&mut all)
            .map_err(|e| fail(e.to_string()))?;
        if all.len() as u64 > max {
            return Err(fail(format!(
                "it grew past the limit of {max} bytes while it was read"
            )));
        }
        match String::from_utf8(all) {
            Ok(text) if !text.contains('\0') => Ok(ResourceContent {
                media_type: files::media_type(&path, text.as_bytes(), true),
                resource: path.clone(),
                bytes: text.len() as u64,
                text: Some(text),
            }),
            Ok(text) => Ok(binary(text.as_bytes())),
            Err(e) => Ok(binary(e.as_bytes())),
        }
    }

    /// The relative links of skill `name`'s `body` that name no file or
    /// directory of the skill, as written (at most `MAX_LINKS`).
    /// `body` is the one [`Skills::load`] just read: the skill is not read
    /// and checked again.
    pub fn missing_links(&self, name: &str, body: &str) -> Vec<String> {
        let Some(skill) = self.root().ok().and_then(|root| root.open_dir(name).ok()) else {
            return Vec::new();
        };
        let exists = |path: &str| match files::normalize(path) {
            Ok(path) => {
                skill.metadata(&path).is_ok() || files::case_insensitive(&skill, &path).is_some()
            }
            // A link to SKILL.md (or to its own section) is the skill.
            Err(BadPath::SkillFile) => true,
            Err(_) => false,
        };
        links::relative(body)
            .into_iter()
            .filter(|link| {
                !exists(link) && !files::percent_decoded(link).is_some_and(|p| exists(&p))
            })
            .map(|link| tiny_harness_core::display::one_line(link).into_owned())
            .collect()
    }

    /// The directory of a usable skill `name`.
    fn skill_dir(&self, name: &str) -> Result<Dir, IntrinsicError> {
        self.load(name)?;
        self.root()?
            .open_dir(name)
            .map_err(|_| IntrinsicError::UnknownSkill(name.to_owned()))
    }
}

/// A listing of a skill's files in progress.
struct Walk {
    found: Vec<Resource>,
    cut: bool,
    max: usize,
    budget: usize,
}

impl Walk {
    /// Lists the regular files under `dir` (`prefix` its path from the
    /// skill's directory), at most [`MAX_RESOURCE_DEPTH`] levels down,
    /// in name order.
    fn dir(&mut self, dir: &Dir, prefix: &str, depth: usize) {
        let Ok(entries) = dir.entries() else { return };
        let mut names = Vec::new();
        for entry in entries.flatten() {
            if self.budget == 0 {
                self.cut = true;
                break;
            }
            self.budget -= 1;
            // A name that is not UTF-8 cannot be asked for; a hidden one
            // is not a resource.
            if let Ok(name) = entry.file_name().into_string()
                && !name.starts_with('.')
                && !(prefix.is_empty() && name == "SKILL.md")
            {
                names.push(name);
            }
        }
        names.sort();
        for name in names {
            if self.found.len() >= self.max {
                self.cut = true;
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
                let head = files::open(dir, &name)
                    .and_then(|file| files::head(&file, files::SNIFF))
                    .unwrap_or_default();
                let text = files::is_text(&head, head.len() as u64 >= meta.len());
                self.found.push(Resource {
                    kind: files::kind_of(&path).to_owned(),
                    media_type: files::media_type(&path, &head, text),
                    resource: path,
                    bytes: meta.len(),
                    text,
                });
            } else if meta.is_dir() {
                if depth >= MAX_RESOURCE_DEPTH {
                    self.cut = true;
                } else if let Ok(sub) = dir.open_dir(&name) {
                    self.dir(&sub, &path, depth + 1);
                }
            }
        }
    }
}

/// Reads and checks `<name>/SKILL.md`.
fn read_skill(root: &Dir, name: &str, max: u64) -> Result<SkillFile, String> {
    check_skill_name(name)?;
    let dir = root
        .open_dir(name)
        .map_err(|e| format!("cannot open its directory: {e}"))?;
    let text = read_text(&dir, "SKILL.md", max).map_err(|e| match e {
        ReadError::Io(e) if e.kind() == io::ErrorKind::NotFound => "it has no SKILL.md".to_owned(),
        ReadError::NotFile => "its SKILL.md is not a regular file".to_owned(),
        ReadError::Io(e) => format!("cannot read its SKILL.md: {e}"),
        ReadError::Unreadable(reason) => format!("its SKILL.md {reason}"),
        ReadError::TooLarge(bytes) => format!(
            "its SKILL.md is {bytes} bytes, more than the limit of {max} (raise [skills] skill_kib in the host config)"
        ),
    })?;
    let file = front_matter::parse(&text).map_err(|e| format!("its SKILL.md: {e}"))?;
    if file.name != name {
        return Err(format!(
            "its SKILL.md names it {:?}; the name must be the directory's",
            tiny_harness_core::display::one_line(&file.name)
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
    TooLarge(u64),
    Unreadable(String),
}

/// Reads the regular file `path` under `dir`: at most `max` bytes of UTF-8.
fn read_text(dir: &Dir, path: &str, max: u64) -> Result<String, ReadError> {
    let file = files::open(dir, path).map_err(ReadError::Io)?;
    let meta = file.metadata().map_err(ReadError::Io)?;
    if !meta.is_file() {
        return Err(ReadError::NotFile);
    }
    if meta.len() > max {
        return Err(ReadError::TooLarge(meta.len()));
    }
    let mut bytes = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() as u64 > max {
        return Err(ReadError::TooLarge(bytes.len() as u64));
    }
    String::from_utf8(bytes).map_err(|_| ReadError::Unreadable("is not UTF-8 text".into()))
}
