//! Keys come from the standard variables only when the caller asks. The test
//! re-executes its own binary with the variables set (setting them in this
//! process would need `unsafe`).

mod common;

use std::process::Command;

use common::{Flavor, Server, request};
use dream_core::llm::LanguageModel;
use dream_llm::{ApiKey, ConfigError, ModelOptions, ModelSelection};

const CHILD: &str = "DREAM_LLM_ENV_KEY_CHILD";
const OPENAI_ENV_KEY: &str = "sk-from-env-openai-7Yh2";
const ANTHROPIC_ENV_KEY: &str = "sk-ant-from-env-Kq81";

#[test]
fn keys_come_from_the_environment_only_when_asked() {
    if std::env::var_os(CHILD).is_some() {
        child();
        println!("child checks passed");
        return;
    }
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "keys_come_from_the_environment_only_when_asked",
            "--nocapture",
        ])
        .env(CHILD, "1")
        .env("OPENAI_API_KEY", format!("  {OPENAI_ENV_KEY}\n"))
        .env("ANTHROPIC_API_KEY", ANTHROPIC_ENV_KEY)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "child failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("child checks passed"), "{stdout}\n{stderr}");
}

fn child() {
    // The keys are in the environment, yet nothing uses them unasked.
    assert_eq!(
        ModelOptions::openai("gpt-4o-mini").build().unwrap_err(),
        ConfigError::MissingKey { provider: "openai" }
    );
    assert_eq!(
        ModelOptions::anthropic("claude-x").build().unwrap_err(),
        ConfigError::MissingKey {
            provider: "anthropic"
        }
    );
    let nothing = ModelSelection::default().build().unwrap();
    assert!(nothing.consolidation.is_none() && nothing.recall.is_none());

    assert_eq!(
        format!("{:?}", ApiKey::from_env("OPENAI_API_KEY").unwrap()),
        "ApiKey([redacted])"
    );

    // Asked for, each key reaches its provider's header (trimmed).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        for (flavor, expected) in [
            (Flavor::OpenAi, format!("Bearer {OPENAI_ENV_KEY}")),
            (Flavor::Anthropic, ANTHROPIC_ENV_KEY.to_owned()),
        ] {
            let server = Server::start(vec![flavor.ok("ok", false)]).await;
            let url = server.url(flavor.default_style_base());
            let config = match flavor {
                Flavor::OpenAi => ModelOptions::openai("gpt-4o-mini"),
                _ => ModelOptions::anthropic("claude-sonnet-4-5"),
            };
            let model = config
                .base_url(url)
                .use_env_proxy(false)
                .api_key_from_env()
                .build()
                .unwrap();
            model.complete(&request(false)).await.unwrap();
            let seen = server.requests();
            let header = if flavor == Flavor::OpenAi {
                "authorization"
            } else {
                "x-api-key"
            };
            assert_eq!(seen[0].header(header), Some(expected.as_str()));
        }
    });
}

#[test]
fn a_missing_standard_variable_is_reported_by_name() {
    if std::env::var_os(CHILD).is_some() {
        for (config, var) in [
            (ModelOptions::anthropic("claude-x"), "ANTHROPIC_API_KEY"),
            (ModelOptions::openai("gpt-4o-mini"), "OPENAI_API_KEY"),
        ] {
            assert_eq!(
                config.api_key_from_env().build().unwrap_err(),
                ConfigError::MissingEnv {
                    var: var.to_owned()
                }
            );
        }
        println!("child checks passed");
        return;
    }
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_missing_standard_variable_is_reported_by_name",
            "--nocapture",
        ])
        .env(CHILD, "1")
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "child failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("child checks passed"), "{stdout}\n{stderr}");
}
