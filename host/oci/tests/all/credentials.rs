//! Credentials: where `docker login` keeps them (the config's `auths`, a
//! credential helper on PATH, the environment that names the config),
//! presented to a real registry that requires them (docker-registry with
//! htpasswd, one for this file), and to a token service.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use crate::support::{
    Behaviour, Registry, Server, client, component, one_line_naming, quick_limits, reference,
};
use base64::Engine as _;
use tiny_harness_oci::manifest::{CONFIG_MEDIA_TYPE, LAYER_MEDIA_TYPE, MANIFEST_MEDIA_TYPE};
use tiny_harness_oci::{Credentials, Digest, DockerConfig, OciError};

const USER: &str = "alice";
const PASSWORD: &str = "correct horse";

static REGISTRY: LazyLock<Registry> = LazyLock::new(|| Registry::with_htpasswd(USER, PASSWORD));

fn basic(user: &str, password: &str) -> Credentials {
    Credentials::Basic {
        username: user.to_owned(),
        password: password.to_owned(),
    }
}

/// A Docker config holding `json`, with `helpers` (name, script) as
/// `docker-credential-NAME` in a directory that is the whole search path.
fn docker_config(dir: &Path, json: &serde_json::Value, helpers: &[(&str, &str)]) -> DockerConfig {
    let file = dir.join("config.json");
    std::fs::write(&file, serde_json::to_vec(json).unwrap()).unwrap();
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for (name, script) in helpers {
        let path = bin.join(format!("docker-credential-{name}"));
        std::fs::write(&path, format!("#!/bin/sh\n{script}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    // The helpers' own commands (cat, sleep, head) come from the system.
    let search_path = format!("{}:/usr/bin:/bin", bin.display());
    DockerConfig {
        file,
        search_path: Some(search_path.into()),
    }
}

/// A helper that knows `USER`/`PASSWORD` for `host` and nothing else, as
/// docker-credential-helpers answer.
fn helper_for(host: &str) -> String {
    format!(
        r#"[ "$1" = get ] || exit 2
server=$(cat)
if [ "$server" = "{host}" ]; then
  printf '{{"ServerURL":"%s","Username":"{USER}","Secret":"{PASSWORD}"}}' "$server"
else
  echo "credentials not found in native keychain"; exit 1
fi"#
    )
}

#[tokio::test]
async fn the_registry_accepts_good_credentials_and_refuses_bad_ones() {
    let reference = reference(&REGISTRY, "private/tool:1");
    let bytes = component("wasi:cli/environment@0.2.0", "tiny:demo/private@0.1.0");
    let good = client(quick_limits(), basic(USER, PASSWORD));
    let pushed = good
        .push(&reference, &bytes, BTreeMap::new())
        .await
        .unwrap();
    let resolved = good.resolve(&reference).await.unwrap();
    assert_eq!(resolved.manifest_digest, pushed.manifest_digest);
    assert_eq!(
        good.fetch(&reference, &resolved.layer_digest)
            .await
            .unwrap(),
        bytes
    );

    for credentials in [
        basic(USER, "wrong"),
        basic("mallory", PASSWORD),
        Credentials::Anonymous,
    ] {
        let bad = client(quick_limits(), credentials.clone());
        let error = bad.resolve(&reference).await.unwrap_err();
        assert!(
            matches!(error, OciError::Unauthorized { code: 401, .. }),
            "{credentials:?}: {error}"
        );
        one_line_naming(&error, &reference.to_string());
        assert!(
            error
                .to_string()
                .contains(&format!("docker login {}", REGISTRY.host())),
            "{error}"
        );
        let error = bad
            .fetch(&reference, &resolved.layer_digest)
            .await
            .unwrap_err();
        assert!(matches!(error, OciError::Unauthorized { .. }), "{error}");
        let error = bad
            .push(&reference, &bytes, BTreeMap::new())
            .await
            .unwrap_err();
        assert!(
            matches!(error, OciError::Unauthorized { .. }),
            "{credentials:?}: {error}"
        );
        one_line_naming(&error, &reference.to_string());
    }
}

#[tokio::test]
async fn credentials_come_from_the_configs_auths() {
    let dir = tempfile::tempdir().unwrap();
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
    let json = serde_json::json!({"auths": {
        "other.example": {"auth": "eDp5"},
        format!("http://{}/v1/", REGISTRY.host()): {"auth": auth},
    }});
    let config = docker_config(dir.path(), &json, &[]);
    let credentials = Credentials::from_docker_config(&config, &REGISTRY.host())
        .await
        .unwrap();
    assert_eq!(credentials, basic(USER, PASSWORD));
    let reference = reference(&REGISTRY, "private/auths:1");
    let client = client(quick_limits(), credentials);
    client
        .push(&reference, &component("a:b/c", "d"), BTreeMap::new())
        .await
        .unwrap();
    client.resolve(&reference).await.unwrap();

    // A registry the config knows nothing of is anonymous.
    let none = Credentials::from_docker_config(&config, "elsewhere.example")
        .await
        .unwrap();
    assert_eq!(none, Credentials::Anonymous);

    // An auth that is not base64 of user:password is an error naming the
    // file.
    let json = serde_json::json!({"auths": {REGISTRY.host(): {"auth": "not base64!"}}});
    let config = docker_config(dir.path(), &json, &[]);
    let error = Credentials::from_docker_config(&config, &REGISTRY.host())
        .await
        .unwrap_err();
    assert!(matches!(error, OciError::DockerConfig { .. }), "{error}");
    one_line_naming(&error, &config.file.display().to_string());
}

#[tokio::test]
async fn credentials_come_from_a_helper_on_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let host = REGISTRY.host();
    let helpers = [
        ("tinytest", helper_for(&host)),
        ("wrongpass", helper_for("nowhere")),
    ];
    let helpers: Vec<(&str, &str)> = helpers.iter().map(|(n, s)| (*n, s.as_str())).collect();

    // credHelpers for this registry, and the auths entry it wins over.
    let json = serde_json::json!({
        "credHelpers": {host.clone(): "tinytest"},
        "auths": {host.clone(): {"auth": "eDp5"}},
    });
    let config = docker_config(dir.path(), &json, &helpers);
    let credentials = Credentials::from_docker_config(&config, &host)
        .await
        .unwrap();
    assert_eq!(credentials, basic(USER, PASSWORD));
    let reference = reference(&REGISTRY, "private/helper:1");
    let client = client(quick_limits(), credentials);
    client
        .push(&reference, &component("a:b/c", "d"), BTreeMap::new())
        .await
        .unwrap();
    client.resolve(&reference).await.unwrap();

    // credsStore for every registry; one it has nothing for is anonymous.
    let json = serde_json::json!({"credsStore": "tinytest"});
    let config = docker_config(dir.path(), &json, &helpers);
    assert_eq!(
        Credentials::from_docker_config(&config, &host)
            .await
            .unwrap(),
        basic(USER, PASSWORD)
    );
    assert_eq!(
        Credentials::from_docker_config(&config, "other.example")
            .await
            .unwrap(),
        Credentials::Anonymous
    );
}

#[tokio::test]
async fn a_helper_that_is_missing_fails_hangs_or_floods_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let host = REGISTRY.host();
    let helpers = [
        ("broken", "echo 'keychain locked'; exit 3"),
        ("sleepy", "cat >/dev/null; sleep 30"),
        (
            "flood",
            "cat >/dev/null; head -c 200000 /dev/zero | tr '\\0' x",
        ),
        ("nonsense", "cat >/dev/null; echo not json"),
    ];
    let run = |name: &str| {
        let json = serde_json::json!({"credHelpers": {host.clone(): name}});
        docker_config(dir.path(), &json, &helpers)
    };

    let error = Credentials::from_docker_config(&run("nosuch"), &host)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, OciError::HelperMissing { program, .. } if program == "docker-credential-nosuch"),
        "{error}"
    );
    one_line_naming(&error, "docker-credential-nosuch");

    let error = Credentials::from_docker_config(&run("broken"), &host)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("keychain locked"), "{error}");
    one_line_naming(&error, &host);

    let started = Instant::now();
    let error = Credentials::from_docker_config(&run("sleepy"), &host)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("within 5 s"), "{error}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );

    let error = Credentials::from_docker_config(&run("flood"), &host)
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("more than 65536 bytes"),
        "{error}"
    );

    let error = Credentials::from_docker_config(&run("nonsense"), &host)
        .await
        .unwrap_err();
    assert!(matches!(error, OciError::Helper { .. }), "{error}");

    let error = Credentials::from_docker_config(&run("../evil"), &host)
        .await
        .unwrap_err();
    assert!(matches!(error, OciError::Helper { .. }), "{error}");
}

/// The environment test's other half: run in a child process with
/// `OCI_TEST_EXPECT` set, it checks what [`Credentials::for_registry`]
/// finds there; run by the test harness without it, it does nothing.
#[tokio::test]
async fn environment_child() {
    let Ok(expected) = std::env::var("OCI_TEST_EXPECT") else {
        return;
    };
    let credentials = Credentials::for_registry("127.0.0.1:5999").await.unwrap();
    let found = match credentials {
        Credentials::Basic { username, password } => format!("{username}:{password}"),
        _ => "anonymous".to_owned(),
    };
    assert_eq!(found, expected);
}

#[test]
fn the_environment_names_the_config() {
    let dir = tempfile::tempdir().unwrap();
    let auth = |pair: &str| base64::engine::general_purpose::STANDARD.encode(pair);
    let write = |path: &Path, pair: &str| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let json = serde_json::json!({"auths": {"127.0.0.1:5999": {"auth": auth(pair)}}});
        std::fs::write(path, json.to_string()).unwrap();
    };
    write(
        &dir.path().join("docker-config/config.json"),
        "from:docker-config",
    );
    write(&dir.path().join("home/.docker/config.json"), "from:home");
    let child = |docker_config: Option<&Path>, home: &Path, expected: &str| {
        let mut command = std::process::Command::new(std::env::current_exe().unwrap());
        command
            .args(["--exact", "credentials::environment_child", "--nocapture"])
            .env("OCI_TEST_EXPECT", expected)
            .env("HOME", home);
        match docker_config {
            Some(dir) => command.env("DOCKER_CONFIG", dir),
            None => command.env_remove("DOCKER_CONFIG"),
        };
        let output = command.output().unwrap();
        assert!(
            output.status.success(),
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            String::from_utf8_lossy(&output.stdout).contains("1 passed"),
            "the child ran the test"
        );
    };
    child(
        Some(&dir.path().join("docker-config")),
        &dir.path().join("home"),
        "from:docker-config",
    );
    child(None, &dir.path().join("home"), "from:home");
    child(None, &dir.path().join("nowhere"), "anonymous");
}

#[tokio::test]
async fn a_token_service_is_asked_with_the_credentials() {
    // A registry that wants a Bearer token from a token service that wants
    // the user's password: real HTTP on both sides.
    let token_service = Server::start(|seen| {
        let expected = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"))
        );
        let scoped =
            seen.path.contains("scope=repository%3Ax%3Apull") && seen.path.contains("service=tiny");
        match (seen.headers.get("authorization") == Some(&expected), scoped) {
            (true, true) => Behaviour::ok("application/json", br#"{"token":"let-me-in"}"#.to_vec()),
            _ => Behaviour::status(401, &[]),
        }
    })
    .await;
    let challenge = format!(
        "Bearer realm=\"http://127.0.0.1:{}/token\",service=\"tiny\"",
        token_service.port
    );
    let blob = component("a:b/c", "d");
    let digest = Digest::of(&blob);
    let manifest = serde_json::json!({
        "schemaVersion": 2, "mediaType": MANIFEST_MEDIA_TYPE,
        "config": {"mediaType": CONFIG_MEDIA_TYPE, "digest": Digest::of(b"{}").to_string(), "size": 2},
        "layers": [{"mediaType": LAYER_MEDIA_TYPE, "digest": digest.to_string(), "size": blob.len()}],
    });
    let registry = Server::start(move |seen| {
        if seen.headers.get("authorization").map(String::as_str) != Some("Bearer let-me-in") {
            return Behaviour::status(401, &[("WWW-Authenticate", &challenge)]);
        }
        if seen.path.contains("/manifests/") {
            Behaviour::ok(MANIFEST_MEDIA_TYPE, serde_json::to_vec(&manifest).unwrap())
        } else {
            Behaviour::ok("application/octet-stream", blob.clone())
        }
    })
    .await;
    let reference = registry.reference("x:1");
    let good = client(quick_limits(), basic(USER, PASSWORD));
    let resolved = good.resolve(&reference).await.unwrap();
    assert_eq!(
        good.fetch(&reference, &resolved.layer_digest)
            .await
            .unwrap(),
        component("a:b/c", "d")
    );
    // The token was asked for once and reused for the blob.
    assert_eq!(
        token_service
            .requests
            .load(std::sync::atomic::Ordering::SeqCst),
        1
    );

    let bad = client(quick_limits(), basic(USER, "wrong"));
    let error = bad.resolve(&reference).await.unwrap_err();
    assert!(matches!(error, OciError::Unauthorized { .. }), "{error}");
    one_line_naming(&error, &reference.to_string());
}
