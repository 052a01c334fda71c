//! The OpenAI-compatible client (no key, `max_tokens`) against a local server.

mod common;

use common::Flavor;

provider_cases!(Flavor::Compatible);

#[tokio::test]
async fn a_key_given_to_a_compatible_server_is_sent_as_bearer() {
    use dream_core::llm::LanguageModel;
    let server = common::Server::start(vec![Flavor::Compatible.ok("ok", false)]).await;
    let model = Flavor::Compatible
        .config(server.url("/v1"))
        .api_key(dream_llm::ApiKey::new(common::KEY).unwrap())
        .build()
        .unwrap();
    model.complete(&common::request(false)).await.unwrap();
    let seen = server.requests();
    assert_eq!(
        seen[0].header("authorization"),
        Some(format!("Bearer {}", common::KEY).as_str())
    );
    assert_eq!(seen[0].path, "/v1/chat/completions");
}
