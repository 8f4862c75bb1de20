//! The store without a registry: installs' manifests, the tree hash, and
//! the whole-or-absent replacement.

use super::step::last_words;
use super::*;

fn code() -> Code {
    Code {
        kind: "npm".to_owned(),
        package: "pkg".to_owned(),
        version: "1.0.0".to_owned(),
        integrity: "sha512-abc".to_owned(),
        entry: "node_modules/pkg/index.js".to_owned(),
        dependencies: Default::default(),
        tree: None,
        registry: None,
        sources: Default::default(),
    }
}

#[test]
fn the_tree_hash_sees_every_change_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("a/b")).unwrap();
    std::fs::write(root.join("a/b/f.js"), "one").unwrap();
    std::fs::write(root.join("g"), "two").unwrap();
    let first = tree_hash(root).unwrap();
    assert_eq!(first.len(), 64);
    assert_eq!(tree_hash(root).unwrap(), first, "stable");
    // The manifest at the top is left out.
    std::fs::write(root.join(MANIFEST), "{}").unwrap();
    assert_eq!(tree_hash(root).unwrap(), first);
    type Change = Box<dyn Fn(&Path)>;
    let changes: Vec<Change> = vec![
        Box::new(|r| std::fs::write(r.join("a/b/f.js"), "One").unwrap()),
        Box::new(|r| std::fs::write(r.join("a/new"), "").unwrap()),
        Box::new(|r| {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(r.join("g"), std::fs::Permissions::from_mode(0o755)).unwrap()
        }),
        Box::new(|r| std::os::unix::fs::symlink("g", r.join("link")).unwrap()),
        Box::new(|r| std::fs::rename(r.join("g"), r.join("h")).unwrap()),
    ];
    let mut seen = vec![first];
    for change in changes {
        change(root);
        let now = tree_hash(root).unwrap();
        assert!(!seen.contains(&now), "a change went unseen");
        seen.push(now);
    }
}

#[test]
fn an_install_is_found_verified_and_a_damaged_one_named() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::beside(&dir.path().join("agent.toml"));
    assert_eq!(store.root(), dir.path().join("agent.store"));
    assert!(Store::beside(Path::new("agent.toml")).root().is_absolute());
    assert!(store.installed("mcp", "s").unwrap().is_none());
    let place = store.dir("mcp", "s");
    std::fs::create_dir_all(place.join("node_modules/pkg")).unwrap();
    std::fs::write(place.join("node_modules/pkg/index.js"), "x").unwrap();
    let manifest = Manifest {
        code: code(),
        tree: tree_hash(&place).unwrap(),
    };
    std::fs::write(
        place.join(MANIFEST),
        serde_json::to_string(&manifest).unwrap(),
    )
    .unwrap();
    let installed = store.installed("mcp", "s").unwrap().unwrap();
    assert_eq!(installed.manifest, manifest);
    store.verify(&installed, "s").unwrap();
    // One file changed: found, with what to do.
    std::fs::write(place.join("node_modules/pkg/index.js"), "y").unwrap();
    let error = store.verify(&installed, "s").unwrap_err().to_string();
    assert!(
        error.contains("were changed") && error.contains("mcp install s"),
        "{error}"
    );
    // A manifest that is not one.
    std::fs::write(place.join(MANIFEST), "{").unwrap();
    assert!(matches!(
        store.installed("mcp", "s"),
        Err(super::StoreError::DamagedManifest { .. })
    ));
    let error = store.installed("mcp", "s").unwrap_err().to_string();
    assert!(
        error.contains("damaged") && !error.contains('\n'),
        "{error}"
    );
    std::fs::remove_file(place.join(MANIFEST)).unwrap();
    assert!(matches!(
        store.installed("mcp", "s"),
        Err(super::StoreError::NoManifest { server, .. }) if server == "s"
    ));
    let error = store.installed("mcp", "s").unwrap_err().to_string();
    assert!(error.contains("no usable install"), "{error}");
}

#[test]
fn a_new_install_replaces_the_old_only_once_complete() {
    let dir = tempfile::tempdir().unwrap();
    let parent = dir.path().join("mcp");
    std::fs::create_dir_all(parent.join("s")).unwrap();
    std::fs::write(parent.join("s/old"), "").unwrap();
    // A staging dropped before it is complete leaves nothing, and the old.
    let staging = Staging::new(&parent, "s").unwrap();
    let path = staging.path().to_owned();
    std::fs::write(path.join("half"), "").unwrap();
    drop(staging);
    assert!(!path.exists());
    assert!(parent.join("s/old").exists());
    // A complete one takes its place.
    let staging = Staging::new(&parent, "s").unwrap();
    std::fs::write(staging.path().join("new"), "").unwrap();
    staging.replace(&parent.join("s")).unwrap();
    assert!(parent.join("s/new").exists() && !parent.join("s/old").exists());
    let left: Vec<_> = std::fs::read_dir(&parent).unwrap().collect();
    assert_eq!(left.len(), 1, "nothing else is left beside it");
}

#[test]
fn a_package_managers_failure_is_told_in_its_own_words() {
    let npm = "npm error code E404\nnpm error 404 Not Found - GET https://registry.npmjs.org/nope - Not found\n\
               npm error 404\nnpm error 404  'nope@*' is not in this registry.\n\
               npm error A complete log of this run can be found in: /root/.npm/_logs/x.log\n";
    assert_eq!(
        last_words(npm),
        "npm error 404 Not Found - GET https://registry.npmjs.org/nope - Not found"
    );
    let pip = "Looking in indexes\nERROR: Could not find a version\nERROR: No matching distribution found for nope\n";
    assert_eq!(
        last_words(pip),
        "ERROR: No matching distribution found for nope"
    );
    assert_eq!(last_words(""), "it said nothing");
    assert!(!last_words("a\x1b[31mb\n").contains('\x1b'));
}

/// An install of one file at `place`, its manifest with the cheap record.
fn installed_with_stat(store: &Store, place: &Path) -> super::Installed {
    std::fs::create_dir_all(place.join("node_modules/pkg")).unwrap();
    std::fs::write(place.join("node_modules/pkg/index.js"), "x").unwrap();
    let manifest = Manifest {
        code: code(),
        tree: tree_hash(place).unwrap(),
    };
    let record = super::stat_record(place).unwrap().unwrap();
    std::fs::write(place.join(super::STAT_FILE), record).unwrap();
    std::fs::write(
        place.join(MANIFEST),
        serde_json::to_string(&manifest).unwrap(),
    )
    .unwrap();
    store.installed("mcp", "s").unwrap().unwrap()
}

#[test]
fn the_cheap_check_finds_an_edit_a_touch_an_added_file_and_a_removed_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::beside(&dir.path().join("agent.toml"));
    let place = store.dir("mcp", "s");
    let file = place.join("node_modules/pkg/index.js");
    let changes: [(&str, &dyn Fn()); 5] = [
        // The same length, so only the times tell.
        ("an edit", &|| std::fs::write(&file, "y").unwrap()),
        ("a touch", &|| {
            let f = std::fs::File::options().write(true).open(&file).unwrap();
            f.set_modified(std::time::SystemTime::UNIX_EPOCH).unwrap();
        }),
        ("an added file", &|| {
            std::fs::write(place.join("node_modules/pkg/extra.js"), "").unwrap()
        }),
        ("a removed file", &|| std::fs::remove_file(&file).unwrap()),
        ("a mode", &|| {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
        }),
    ];
    for (what, change) in changes {
        let _ = std::fs::remove_dir_all(&place);
        let installed = installed_with_stat(&store, &place);
        store.check(&installed, "s").unwrap();
        change();
        let error = store.check(&installed, "s").unwrap_err().to_string();
        assert!(
            error.contains("were changed since it was installed")
                && error.contains("run tiny-harness mcp install s")
                && error.contains("node_modules/pkg"),
            "{what}: {error}"
        );
        // The full hash agrees, and ignores the record itself.
        assert_eq!(
            store.verify(&installed, "s").is_err(),
            what != "a touch",
            "{what}"
        );
    }
}

#[test]
fn the_cheap_check_passes_over_documentation_declarations_and_maps_but_not_their_directories() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::beside(&dir.path().join("agent.toml"));
    let place = store.dir("mcp", "s");
    std::fs::create_dir_all(place.join("node_modules/pkg/docs.md")).unwrap();
    for (file, text) in [
        ("README.md", "read me"),
        ("index.d.ts", "export {};"),
        ("index.js.map", "{}"),
        ("docs.md/index.js", "x"),
    ] {
        std::fs::write(place.join("node_modules/pkg").join(file), text).unwrap();
    }
    let installed = installed_with_stat(&store, &place);
    let record = std::fs::read_to_string(place.join(super::STAT_FILE)).unwrap();
    assert!(
        !record.contains("README.md")
            && !record.contains("index.d.ts")
            && !record.contains(".map")
            && record.contains("node_modules/pkg/docs.md/index.js"),
        "{record}"
    );
    // Edited in place: the cheap check passes over them, the full one
    // does not.
    for file in ["README.md", "index.d.ts", "index.js.map"] {
        std::fs::write(place.join("node_modules/pkg").join(file), "changed").unwrap();
    }
    store.check(&installed, "s").unwrap();
    assert!(store.verify(&installed, "s").is_err());
    // A directory named like one is checked, and so is a documentation
    // file added where a program would look for code.
    std::fs::write(place.join("node_modules/pkg/docs.md/index.js"), "y").unwrap();
    assert!(
        store
            .check(&installed, "s")
            .unwrap_err()
            .to_string()
            .contains("docs.md/index.js")
    );
    std::fs::write(place.join("node_modules/pkg/docs.md/index.js"), "x").unwrap();
    let _ = std::fs::remove_file(place.join(super::STAT_FILE));
    let installed = installed_with_stat(&store, &place);
    std::fs::write(place.join("node_modules/pkg/NEW.md"), "").unwrap();
    assert!(
        store
            .check(&installed, "s")
            .unwrap_err()
            .to_string()
            .contains("an entry in node_modules/pkg/ was added")
    );
}

#[test]
fn an_install_without_the_cheap_record_is_checked_in_full_once_and_gets_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::beside(&dir.path().join("agent.toml"));
    let place = store.dir("mcp", "s");
    std::fs::create_dir_all(place.join("node_modules/pkg")).unwrap();
    std::fs::write(place.join("node_modules/pkg/index.js"), "x").unwrap();
    let tree = tree_hash(&place).unwrap();
    let old = serde_json::json!({"code": code(), "tree": tree});
    std::fs::write(place.join(MANIFEST), old.to_string()).unwrap();
    let installed = store.installed("mcp", "s").unwrap().unwrap();
    let record = place.join(super::STAT_FILE);
    assert!(!record.exists());
    store.check(&installed, "s").unwrap();
    assert_eq!(
        std::fs::read_to_string(&record).unwrap(),
        super::stat_record(&place).unwrap().unwrap()
    );
    let again = store.installed("mcp", "s").unwrap().unwrap();
    assert_eq!(again.manifest.tree, tree, "the full hash is kept");
    store.verify(&again, "s").unwrap();
    store.check(&again, "s").unwrap();
    // A changed file in such an install is refused by the full check.
    std::fs::remove_file(&record).unwrap();
    std::fs::write(place.join("node_modules/pkg/index.js"), "y").unwrap();
    let installed = store.installed("mcp", "s").unwrap().unwrap();
    assert!(
        store
            .check(&installed, "s")
            .unwrap_err()
            .to_string()
            .contains("were changed")
    );
}
