//! A pasted API key never reaches any byte of the store or of the model's requests.

use dream_core::testing::ScriptedModel;
use dream_core::{Message, Role};
use dream_engine::AuditAction;
use serde_json::json;

use crate::common::*;

const OPENAI_KEY: &str = "sk-proj-Q7vTn3XcLp0aZ8rWm2YsKd5FhGj9BeUi4oNqAx1Ct6Rz";
const GITHUB_TOKEN: &str = "ghp_R4nD0mT0k3nV4lu3F0rT3st1ng0nlyAbCdEf12";
const MODEL_LEAK: &str = "AKIAZ7Q2M4V8T3K9W6PX";

#[tokio::test]
async fn a_pasted_api_key_reaches_no_byte_of_the_store_or_the_model() {
    let model = ScriptedModel::new();
    // A compromised endpoint that also tries to plant a credential of its own.
    model.push_text(answer(json!({"create": [
        {"name": "Runner", "kind": "project", "content": "The project uses Vitest.", "evidence": [{"session": "S1", "message": 0}]},
        {"name": "AWS", "kind": "reference", "content": format!("Use access key {MODEL_LEAK} for deploys."),
         "metadata": {"nested": {"deeper": [format!("backup key {MODEL_LEAK}")]}}, "evidence": [{"session": "S1", "message": 0}]}
    ]})));
    let h = Harness::new(quick()).with_model(&model);
    let mut events = h.dream.subscribe(None);
    let session = h
        .dream
        .log_session(vec![
            Message::new(
                Role::User,
                format!("We use Vitest. My OpenAI key is {OPENAI_KEY}, keep it safe."),
            ),
            Message::new(Role::Assistant, "Noted."),
            Message::new(Role::Tool, format!("env: GITHUB_TOKEN={GITHUB_TOKEN}")),
        ])
        .await
        .unwrap();
    let stored = h.dream.session(&session).await.unwrap().unwrap();
    assert!(
        !stored.redactions.is_empty(),
        "the redaction is recorded by rule id"
    );
    assert!(stored.messages[0].content.contains("[REDACTED:"));
    let report = h.dream.dream(true).await.unwrap();
    assert_eq!(report.created.len(), 1);
    assert_eq!(report.quarantined.len(), 1);

    // The model never saw the user's secrets.
    let requests = serde_json::to_string(&model.requests()).unwrap();
    for secret in [OPENAI_KEY, GITHUB_TOKEN] {
        assert!(!requests.contains(secret), "the model was sent a secret");
    }
    assert!(requests.contains("[REDACTED:"));

    // No byte of the store holds any of them: sessions, memories, audit, quarantine, journal.
    let bytes = all_bytes(&*h.store).await;
    for secret in [OPENAI_KEY, GITHUB_TOKEN, MODEL_LEAK] {
        assert!(!contains(&bytes, secret), "a secret reached the store");
        // Not even a long fragment of it.
        assert!(
            !contains(&bytes, &secret[4..20]),
            "a fragment of a secret reached the store"
        );
    }
    let q = h.dream.quarantine().await.unwrap();
    assert!(q[0].has_secret());
    assert!(q[0].memory.content.contains("[REDACTED:"));

    // Nor any event.
    let mut seen = Vec::new();
    seen.extend(events.poll().await.unwrap().into_iter().map(|e| e.event));
    assert!(
        seen.len() >= 3,
        "the session, the pass and its memories are in the feed"
    );
    let events_text = serde_json::to_string(&seen).unwrap();
    for secret in [OPENAI_KEY, GITHUB_TOKEN, MODEL_LEAK] {
        assert!(!events_text.contains(secret));
    }
    let audit = h.dream.audit(t0()).await.unwrap();
    assert!(
        audit
            .iter()
            .any(|a| a.action == AuditAction::SessionLogged && !a.rules.is_empty())
    );
}
