//! Clients built from provider configuration, end to end against the mock server and a script.

use super::common::{run, user_request};
use baton_llm::registry::{ProviderConfig, ProviderKind, build_client};
use baton_llm::{LlmError, ModelSpec};
use baton_test_support::{MockServer, openai_stream};
use std::collections::BTreeMap;

#[tokio::test]
async fn a_configured_provider_reads_its_key_from_the_named_variable() {
    let server = MockServer::start().await;
    server.enqueue(openai_stream::text(&["configured"], None));
    let mut providers = BTreeMap::new();
    // Tests cannot set variables (`set_var` is unsafe); PATH is always set.
    let key = std::env::var("PATH").expect("PATH is set");
    providers.insert(
        "corp".to_owned(),
        ProviderConfig {
            base_url: Some(format!("{}/v1", server.url())),
            api_key_env: Some("PATH".to_owned()),
            max_retries: Some(0),
            ..ProviderConfig::new(ProviderKind::OpenAi)
        },
    );
    let spec = ModelSpec::parse("corp/gpt-local").expect("spec");
    let client = build_client(&spec, &providers, std::path::Path::new(".")).expect("client");
    let (result, _) = run(&*client, &user_request("hi")).await;
    assert_eq!(result.expect("answer").text, "configured");
    let requests = server.requests();
    assert_eq!(
        requests[0].header("authorization"),
        Some(&*format!("Bearer {}", key.trim()))
    );
}

#[tokio::test]
async fn the_script_provider_finds_scripts_by_model_name() {
    let root = tempfile::tempdir().expect("tempdir");
    let dir = root.path().join(".baton/scripts");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(
        dir.join("demo.yaml"),
        "turns:\n  - agent: scout\n    text: scripted\n",
    )
    .expect("write");
    std::fs::write(
        root.path().join("other.yml"),
        "turns:\n  - agent: scout\n    text: by path\n",
    )
    .expect("write");
    let none = BTreeMap::new();
    for (spec, expected) in [("script/demo", "scripted"), ("script/other.yml", "by path")] {
        let spec = ModelSpec::parse(spec).expect("spec");
        let client = build_client(&spec, &none, root.path()).expect("client");
        let (result, _) = run(&*client, &user_request("hi")).await;
        assert_eq!(result.expect("answer").text, expected);
    }
    let missing = ModelSpec::parse("script/absent").expect("spec");
    match build_client(&missing, &none, root.path()) {
        Err(LlmError::Config(message)) => assert!(message.contains("absent.yaml"), "{message}"),
        Err(other) => panic!("expected a config error, got {other}"),
        Ok(_) => panic!("expected a config error"),
    }
}
