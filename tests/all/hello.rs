//! The README's example plugin, `plugins/hello`, works as the guide says.

use crate::common::{call, error_code, host, spec, text_of};

#[tokio::test]
async fn the_example_plugin_greets() {
    let host = host(vec![spec("hello", "hello")]).await;
    let names: Vec<String> = host
        .registry()
        .tools()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(names, ["hello/hello.greet"]);

    let outcome = call(
        &host,
        "hello/hello.greet",
        serde_json::json!({"name": "Ada"}),
    )
    .await;
    assert_eq!(text_of(&outcome), "Hello, Ada!");

    let outcome = call(
        &host,
        "hello/hello.greet",
        serde_json::json!({"name": ["Ada"]}),
    )
    .await;
    assert_eq!(error_code(&outcome), "invalid_arguments");
}
