//! Skills shaped as published collections shape them: resources beside
//! `SKILL.md` and in any directory, linked by relative path (`./`,
//! `#section`), binary assets, and a `SKILL.md` larger than 64 KiB.

use std::path::Path;

use serde_json::{Value, json};
use tiny_harness_host::{ContentPart, HostBuilder, SkillLimits, Workflow};

use super::{call, code, data, host};

/// A font's first bytes (the TrueType version tag), then binary.
const FONT: &[u8] = b"\x00\x01\x00\x00\x00\x0f\x00\x80\x00\x03\x00\x70GDEF\xb4\x42\xb0\x82";
/// A PNG's signature and the start of its header chunk.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01";

fn write(path: &Path, contents: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, contents).unwrap();
}

fn skill(root: &Path, name: &str, body: &str) {
    write(
        &root.join(name).join("SKILL.md"),
        format!("---\nname: {name}\ndescription: The {name} skill.\n---\n{body}").as_bytes(),
    );
}

/// Three skills in the shapes of a published collection.
fn published(root: &Path) {
    skill(
        root,
        "pdf",
        "# PDF\nFor advanced features see [the reference](REFERENCE.md); to fill a form, \
         read [FORMS.md](./FORMS.md#filling) and follow its instructions.\n\
         Extract text with `python scripts/extract.py` ([script](scripts/extract.py)).\n\
         Also [a typo](REFERNCE.md), [gone](./templates/none.md#top), [the web](https://example.com/x.md) \
         and [a section](#usage).\n",
    );
    write(
        &root.join("pdf/REFERENCE.md"),
        b"# Reference\npypdf details\n",
    );
    write(
        &root.join("pdf/FORMS.md"),
        b"# Forms\n## filling\nfield by field\n",
    );
    write(&root.join("pdf/scripts/extract.py"), b"print('extract')\n");
    write(&root.join("pdf/.DS_Store"), b"\x00\x00\x00\x01Bud1");

    skill(
        root,
        "mcp-builder",
        "Read [best practices](./reference/mcp_best_practices.md) and \
         [evaluation](reference/evaluation.md#rules).\n",
    );
    for file in [
        "reference/mcp_best_practices.md",
        "reference/evaluation.md",
        "templates/server.py",
        "examples/echo.md",
        "core/notes.txt",
        "agents/reviewer.md",
        "themes/dark/colors.json",
    ] {
        write(&root.join("mcp-builder").join(file), b"text of the file\n");
    }

    skill(
        root,
        "canvas-design",
        "Fonts are in [canvas-fonts](canvas-fonts/); the logo is ![logo](assets/logo%20dark.png).\n",
    );
    write(&root.join("canvas-design/canvas-fonts/Mono.ttf"), FONT);
    write(&root.join("canvas-design/assets/logo dark.png"), PNG);
    write(
        &root.join("canvas-design/assets/deck.pptx"),
        b"PK\x03\x04\x14\x00\x06\x00",
    );
}

/// `load_skill_resource` of `path` in skill `name`.
async fn resource(
    host: &tiny_harness_host::Host,
    w: &mut Workflow,
    name: &str,
    path: &str,
) -> tiny_harness_host::IntrinsicOutcome {
    call(
        host,
        w,
        None,
        "load_skill_resource",
        json!({"name": name, "resource": path}),
    )
    .await
}

/// `list_skill_resources` of skill `name`.
async fn listing(
    host: &tiny_harness_host::Host,
    w: &mut Workflow,
    name: &str,
) -> tiny_harness_host::IntrinsicOutcome {
    call(host, w, None, "list_skill_resources", json!({"name": name})).await
}

fn resources(listed: &Value) -> Vec<(String, String, bool, String)> {
    listed["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["resource"].as_str().unwrap().to_owned(),
                r["kind"].as_str().unwrap().to_owned(),
                r["text"].as_bool().unwrap(),
                r["media_type"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn every_file_a_skill_links_is_listed_and_loads_by_its_path() {
    let dir = tempfile::tempdir().unwrap();
    published(dir.path());
    let host = host(Some(dir.path())).await;
    let mut w = Workflow::new();
    let listed = listing(&host, &mut w, "pdf").await;
    assert_eq!(
        resources(&data(&listed)),
        [
            (
                "FORMS.md".into(),
                "root".into(),
                true,
                "text/markdown".into()
            ),
            (
                "REFERENCE.md".into(),
                "root".into(),
                true,
                "text/markdown".into()
            ),
            (
                "scripts/extract.py".into(),
                "scripts".into(),
                true,
                "text/x-python".into()
            ),
        ],
        "SKILL.md and hidden files are not resources"
    );
    assert_eq!(data(&listed)["truncated"], false);

    // Each path as SKILL.md writes it loads.
    for (path, says) in [
        ("REFERENCE.md", "pypdf details"),
        ("./FORMS.md#filling", "field by field"),
        ("scripts/extract.py", "print('extract')"),
    ] {
        let read = resource(&host, &mut w, "pdf", path).await;
        assert!(read.outcome.render().contains(says), "{path}");
    }

    // Written on a file system that ignores case: `REFERENCE.md` of a
    // file named `reference.md` is found, under its real name; a name two
    // files match ignoring case is not guessed.
    write(
        &dir.path().join("mcp-builder/Guides/Setup.md"),
        b"setup steps\n",
    );
    write(&dir.path().join("mcp-builder/twice/a.md"), b"lower\n");
    write(&dir.path().join("mcp-builder/twice/A.md"), b"upper\n");
    let read = resource(&host, &mut w, "mcp-builder", "guides/SETUP.md").await;
    assert!(read.outcome.render().contains("setup steps"));
    assert_eq!(data(&read)["resource"], "Guides/Setup.md");
    let ambiguous = resource(&host, &mut w, "mcp-builder", "TWICE/a.MD").await;
    assert_eq!(code(&ambiguous), "resource_not_found");
    std::fs::remove_dir_all(dir.path().join("mcp-builder/Guides")).unwrap();
    std::fs::remove_dir_all(dir.path().join("mcp-builder/twice")).unwrap();

    let listed = listing(&host, &mut w, "mcp-builder").await;
    let paths: Vec<String> = resources(&data(&listed)).into_iter().map(|r| r.0).collect();
    assert_eq!(
        paths,
        [
            "agents/reviewer.md",
            "core/notes.txt",
            "examples/echo.md",
            "reference/evaluation.md",
            "reference/mcp_best_practices.md",
            "templates/server.py",
            "themes/dark/colors.json",
        ]
    );
    let read = resource(
        &host,
        &mut w,
        "mcp-builder",
        "./reference/mcp_best_practices.md",
    )
    .await;
    assert_eq!(data(&read)["resource"], "reference/mcp_best_practices.md");
    assert_eq!(data(&read)["kind"], "reference");
}

#[tokio::test]
async fn a_binary_file_is_described_never_shown() {
    let dir = tempfile::tempdir().unwrap();
    published(dir.path());
    let host = host(Some(dir.path())).await;
    let mut w = Workflow::new();
    let listed = listing(&host, &mut w, "canvas-design").await;
    assert_eq!(
        resources(&data(&listed)),
        [
            (
                "assets/deck.pptx".into(),
                "assets".into(),
                false,
                "application/vnd.openxmlformats-officedocument.presentationml.presentation".into()
            ),
            (
                "assets/logo dark.png".into(),
                "assets".into(),
                false,
                "image/png".into()
            ),
            (
                "canvas-fonts/Mono.ttf".into(),
                "canvas-fonts".into(),
                false,
                "font/ttf".into()
            ),
        ]
    );
    for (path, media_type, bytes) in [
        ("canvas-fonts/Mono.ttf", "font/ttf", FONT.len()),
        // As the link writes it: a space escaped.
        ("assets/logo%20dark.png", "image/png", PNG.len()),
    ] {
        let read = resource(&host, &mut w, "canvas-design", path).await;
        assert!(!read.outcome.is_error(), "{path}: {:?}", read.outcome);
        let got = data(&read);
        assert_eq!(got["text"], false, "{path}");
        assert_eq!(got["media_type"], media_type, "{path}");
        assert_eq!(got["bytes"], bytes, "{path}");
        let Ok(result) = &read.outcome.result else {
            panic!()
        };
        assert_eq!(result.content.len(), 1, "{path}: no bytes as text");
    }
    // A directory, hidden files and SKILL.md itself are named as such.
    for (path, says) in [
        ("canvas-fonts", "is a directory"),
        ("canvas-fonts/", "is a directory"),
        ("../pdf/.DS_Store", "outside skill"),
        ("SKILL.md", "load_skill reads them"),
        ("./", "names no file"),
    ] {
        let refused = resource(&host, &mut w, "canvas-design", path).await;
        let text = refused.outcome.render();
        assert!(refused.outcome.is_error(), "{path}");
        assert!(
            text.contains(says) && text.contains("canvas-design"),
            "{path}: {text}"
        );
    }
    let hidden = resource(&host, &mut w, "pdf", ".DS_Store").await;
    assert_eq!(code(&hidden), "resource_unreadable");
}

#[tokio::test]
async fn load_skill_names_the_links_that_lead_nowhere() {
    let dir = tempfile::tempdir().unwrap();
    published(dir.path());
    let host = host(Some(dir.path())).await;
    let mut w = Workflow::new();
    for (name, missing) in [
        ("pdf", json!(["REFERNCE.md", "./templates/none.md#top"])),
        ("mcp-builder", json!([])),
        ("canvas-design", json!([])),
    ] {
        let loaded = call(&host, &mut w, None, "load_skill", json!({"name": name})).await;
        assert_eq!(data(&loaded)["missing_links"], missing, "{name}");
    }
    assert_eq!(w.skills().len(), 3);
}

#[tokio::test]
async fn a_description_past_the_formats_1024_characters_loads_within_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let long = "Reference for the API: model ids, parameters, streaming. ".repeat(19);
    assert!(long.len() > 1024);
    write(
        &dir.path().join("api/SKILL.md"),
        format!("---\nname: api\ndescription: |-\n  {long}\n---\nbody\n").as_bytes(),
    );
    let huge = "x".repeat(5000);
    write(
        &dir.path().join("huge/SKILL.md"),
        format!("---\nname: huge\ndescription: {huge}\n---\nbody\n").as_bytes(),
    );
    let host = host(Some(dir.path())).await;
    let mut w = Workflow::new();
    let listed = data(&call(&host, &mut w, None, "list_skills", json!({})).await);
    assert_eq!(listed["skills"][0]["name"], "api", "{listed}");
    assert_eq!(listed["skipped"][0]["dir"], "huge");
    assert!(
        listed["skipped"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("4096 bytes")
    );
}

#[tokio::test]
async fn a_real_sized_skill_loads_and_the_caps_are_settable() {
    let dir = tempfile::tempdir().unwrap();
    let paragraph = "Use the reference for the details of each operation.\n";
    let body: String = paragraph.repeat(100 * 1024 / paragraph.len());
    skill(dir.path(), "big", &body);
    let host = host(Some(dir.path())).await;
    let mut w = Workflow::new();
    let loaded = call(&host, &mut w, None, "load_skill", json!({"name": "big"})).await;
    assert_eq!(data(&loaded)["status"], "loaded", "a 100 KB SKILL.md loads");
    assert!(w.skills()["big"].body.len() > 100_000);

    let mut limits = SkillLimits::default();
    limits.skill_file = 64 * 1024;
    limits.resource = 1024;
    limits.resources = 1;
    let small = HostBuilder::new()
        .intrinsics(true)
        .skills_root(dir.path())
        .skill_limits(limits)
        .build()
        .await
        .unwrap();
    let mut w = Workflow::new();
    let listed = call(&small, &mut w, None, "list_skills", json!({})).await;
    let skipped = data(&listed)["skipped"].to_string();
    assert!(
        skipped.contains("more than the limit of 65536") && skipped.contains("skills] skill_kib"),
        "{skipped}"
    );
    write(
        &dir.path().join("fine/SKILL.md"),
        b"---\nname: fine\ndescription: d\n---\nok\n",
    );
    write(&dir.path().join("fine/a.md"), "a\n".repeat(600).as_bytes());
    write(&dir.path().join("fine/b.md"), b"b\n");
    let listed = listing(&small, &mut w, "fine").await;
    assert_eq!(data(&listed)["resources"].as_array().unwrap().len(), 1);
    assert_eq!(data(&listed)["truncated"], true);
    let over = resource(&small, &mut w, "fine", "a.md").await;
    let text = over.outcome.render();
    assert!(
        text.contains("1200 bytes of text") && text.contains("resource_kib"),
        "{text}"
    );
    let Ok(result) = &loaded.outcome.result else {
        panic!()
    };
    assert!(matches!(
        result.content.get(1),
        Some(ContentPart::Text { .. })
    ));
}
