//! Exec grants: programs resolved on a fake `PATH` of temporary
//! directories, and commands matched against them.

use std::ffi::OsString;
use std::os::unix::fs::{PermissionsExt as _, symlink};
use std::path::{Path, PathBuf};

use super::super::*;

/// Writes a file at `path` with `mode`, creating its directory.
fn file(path: &Path, mode: u32) -> PathBuf {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    path.to_owned()
}

/// An executable file.
fn program(path: &Path) -> PathBuf {
    file(path, 0o755)
}

/// A `PATH` value of `dirs`, in order.
fn path_of(dirs: &[&Path]) -> OsString {
    std::env::join_paths(dirs).unwrap()
}

/// `target` as a path relative to the current directory (`../../tmp/x`).
fn relative_to_cwd(target: &Path) -> PathBuf {
    let cwd = std::env::current_dir().unwrap().canonicalize().unwrap();
    let mut up = PathBuf::new();
    for _ in cwd.components().skip(1) {
        up.push("..");
    }
    up.join(target.strip_prefix("/").unwrap())
}

fn resolve_on(written: &str, path: &OsString) -> Result<ExecGrant, String> {
    ExecGrant::resolve(written, Path::new("/nonexistent-base"), Some(path))
        .map_err(|e| e.to_string())
}

// ---- resolution ----

#[test]
fn a_bare_name_resolves_to_the_first_executable_file_on_path() {
    let dir = tempfile::tempdir().unwrap();
    let (first, second) = (dir.path().join("first"), dir.path().join("second"));
    let wanted = program(&first.join("tool"));
    program(&second.join("tool"));
    let grant = resolve_on("tool", &path_of(&[&first, &second])).unwrap();
    assert_eq!(grant.program(), wanted);
    assert_eq!(grant.written(), "tool");
    assert_eq!(grant.canonical(), wanted.canonicalize().unwrap());
}

#[test]
fn a_non_executable_file_on_path_is_passed_over() {
    let dir = tempfile::tempdir().unwrap();
    let (plain, bin) = (dir.path().join("plain"), dir.path().join("bin"));
    file(&plain.join("tool"), 0o644);
    let wanted = program(&bin.join("tool"));
    let grant = resolve_on("tool", &path_of(&[&plain, &bin])).unwrap();
    assert_eq!(grant.program(), wanted);

    // With nothing else, the error says which file was passed over and why.
    let err = resolve_on("tool", &path_of(&[&plain])).unwrap_err();
    let shown = plain.join("tool");
    assert_eq!(
        err,
        format!(
            "program \"tool\" was not found on PATH ({} is not executable): install it, or give its path",
            shown.display()
        )
    );
}

#[test]
fn a_directory_named_like_the_program_is_passed_over() {
    let dir = tempfile::tempdir().unwrap();
    let (dirs, bin) = (dir.path().join("dirs"), dir.path().join("bin"));
    std::fs::create_dir_all(dirs.join("tool")).unwrap();
    let wanted = program(&bin.join("tool"));
    let grant = resolve_on("tool", &path_of(&[&dirs, &bin])).unwrap();
    assert_eq!(grant.program(), wanted);

    let err = resolve_on("tool", &path_of(&[&dirs])).unwrap_err();
    assert!(err.contains("is a directory, not a program"), "{err}");
}

#[test]
fn a_name_on_no_directory_of_path_is_an_error_that_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let err = resolve_on("no-such-tool", &path_of(&[dir.path()])).unwrap_err();
    assert_eq!(
        err,
        "program \"no-such-tool\" was not found on PATH: install it, or give its path"
    );
    let err = ExecGrant::resolve("tool", dir.path(), None).unwrap_err();
    assert!(matches!(err, ResolveError::Missing(_)), "{err:?}");
    let err = err.to_string();
    assert!(err.contains("PATH has no absolute directory"), "{err}");
}

#[test]
fn relative_and_empty_path_entries_are_not_searched() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    program(&bin.join("tool"));
    let relative = relative_to_cwd(&bin);
    assert!(
        relative.join("tool").is_file(),
        "the relative entry reaches it"
    );
    let mut path = OsString::from(":");
    path.push(relative.as_os_str());
    let err = resolve_on("tool", &path).unwrap_err();
    assert!(err.contains("PATH has no absolute directory"), "{err}");
}

#[test]
fn a_path_is_relative_to_the_config_directory_and_made_absolute() {
    let dir = tempfile::tempdir().unwrap();
    let wanted = program(&dir.path().join("bin/tool"));
    let empty = path_of(&[]);
    let grant = ExecGrant::resolve("bin/tool", dir.path(), Some(&empty)).unwrap();
    assert_eq!(grant.program(), wanted);
    assert_eq!(grant.written(), "bin/tool");

    // A relative config directory still gives an absolute program.
    let base = relative_to_cwd(dir.path());
    let grant = ExecGrant::resolve("./bin/tool", &base, None).unwrap();
    assert!(
        grant.program().is_absolute(),
        "{}",
        grant.program().display()
    );
    assert_eq!(grant.canonical(), wanted.canonicalize().unwrap());

    // An absolute path ignores the config directory.
    let grant = ExecGrant::resolve(wanted.to_str().unwrap(), Path::new("/elsewhere"), None);
    assert_eq!(grant.unwrap().program(), wanted);
}

#[test]
fn a_path_must_be_an_executable_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    file(&dir.path().join("plain"), 0o644);
    std::fs::create_dir(dir.path().join("folder")).unwrap();
    for (written, why) in [
        ("./plain", "is not executable"),
        ("./folder", "is a directory, not a program"),
        ("./missing", "does not exist"),
        ("/dev/null", "is not a regular file"),
    ] {
        let err = ExecGrant::resolve(written, dir.path(), None).unwrap_err();
        // Not on this machine: the grant is unusable, not the config.
        assert!(matches!(err, ResolveError::Missing(_)), "{err:?}");
        let err = err.to_string();
        assert!(
            err.starts_with(&format!("program {written:?} (")) && err.contains(why),
            "{written}: {err}"
        );
        assert!(
            err.ends_with(": give the path of an executable file"),
            "{err}"
        );
    }
    let err = ExecGrant::resolve("", dir.path(), None).unwrap_err();
    // No machine has it: the config itself is wrong.
    assert!(matches!(err, ResolveError::Invalid(_)), "{err:?}");
    assert!(err.to_string().contains("names no program"), "{err}");
}

#[test]
fn a_symlink_is_run_by_its_own_path_and_matched_by_its_target() {
    let dir = tempfile::tempdir().unwrap();
    let target = program(&dir.path().join("real/multi"));
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    symlink(&target, bin.join("applet")).unwrap();
    let grant = resolve_on("applet", &path_of(&[&bin])).unwrap();
    assert_eq!(grant.program(), bin.join("applet"), "not followed");
    assert_eq!(grant.canonical(), target.canonicalize().unwrap());
}

// ---- matching ----

#[test]
fn a_bare_name_and_an_absolute_path_to_the_same_file_match_one_grant() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    let tool = program(&bin.join("tool"));
    let path = path_of(&[&bin]);
    let by_name = [resolve_on("tool", &path).unwrap()];
    let by_path = [resolve_on(tool.to_str().unwrap(), &path).unwrap()];
    for grants in [&by_name, &by_path] {
        for command in ["tool", tool.to_str().unwrap()] {
            let found = find_program(grants, command, Some(&path));
            assert_eq!(found, Ok(&grants[0]), "{command}");
        }
    }
}

#[test]
fn a_symlink_to_a_granted_file_is_allowed_and_runs_the_grant() {
    let dir = tempfile::tempdir().unwrap();
    let tool = program(&dir.path().join("real/tool"));
    let links = dir.path().join("links");
    std::fs::create_dir(&links).unwrap();
    symlink(&tool, links.join("alias")).unwrap();
    let grants = [resolve_on(tool.to_str().unwrap(), &path_of(&[])).unwrap()];
    let found = find_program(&grants, "alias", Some(&path_of(&[&links]))).unwrap();
    assert_eq!(found.program(), tool);
    let via_link = links.join("alias");
    let found = find_program(&grants, via_link.to_str().unwrap(), None).unwrap();
    assert_eq!(found.program(), tool);
}

#[test]
fn a_granted_name_resolving_to_another_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (granted, other) = (dir.path().join("granted"), dir.path().join("other"));
    program(&granted.join("python3"));
    let impostor = program(&other.join("python3"));
    let grants = [resolve_on("python3", &path_of(&[&granted])).unwrap()];
    let denied = find_program(&grants, "python3", Some(&path_of(&[&other, &granted])));
    let denied = denied.unwrap_err();
    assert_eq!(denied.resolved.as_deref(), Some(impostor.as_path()));
    assert_eq!(
        denied.to_string(),
        format!(
            "program \"python3\" ({}) is not granted: add exec = [{{ program = \"python3\" }}] to the plugin's grants",
            impostor.display()
        )
    );
    assert_eq!(denied.suggestion(), "exec = [{ program = \"python3\" }]");

    // A symlink to an ungranted file, under a granted file's name, too.
    let links = dir.path().join("links");
    std::fs::create_dir(&links).unwrap();
    symlink(&impostor, links.join("python3")).unwrap();
    let denied = find_program(&grants, "python3", Some(&path_of(&[&links]))).unwrap_err();
    assert_eq!(denied.resolved, Some(links.join("python3")));
}

#[test]
fn a_relative_command_is_refused_even_when_its_file_is_granted() {
    let dir = tempfile::tempdir().unwrap();
    let tool = program(&dir.path().join("bin/tool"));
    let grants = [ExecGrant::resolve("bin/tool", dir.path(), None).unwrap()];
    let relative = relative_to_cwd(&tool);
    let command = relative.to_str().unwrap();
    assert!(Path::new(command).is_file(), "it reaches the granted file");
    let denied = find_program(&grants, command, None).unwrap_err();
    assert_eq!(denied.resolved, None);
    assert!(
        denied
            .to_string()
            .contains("is a relative path, which is never granted"),
        "{denied}"
    );
}

#[test]
fn a_missing_command_says_it_was_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let path = path_of(&[dir.path()]);
    let denied = find_program(&[], "nowhere", Some(&path)).unwrap_err();
    assert_eq!(denied.resolved, None);
    assert_eq!(
        denied.to_string(),
        "program \"nowhere\" was not found on PATH: install it, then add exec = [{ program = \"nowhere\" }] to the plugin's grants"
    );
    let denied = find_program(&[], "/no/such/program", Some(&path)).unwrap_err();
    assert!(
        denied.to_string().contains("is not an executable file"),
        "{denied}"
    );
}

#[test]
fn a_suggestion_is_one_line_of_toml_naming_the_command_exactly() {
    let command = "we\"ird\\name\nwith\u{1b}controls";
    let denied = find_program(&[], command, None).unwrap_err();
    assert!(!denied.to_string().contains(['\n', '\u{1b}']), "{denied}");
    let suggestion = denied.suggestion();
    assert!(!suggestion.contains(['\n', '\u{1b}']), "{suggestion}");
    let table: toml::Table = toml::from_str(&suggestion).unwrap();
    assert_eq!(table["exec"][0]["program"].as_str(), Some(command));
}
