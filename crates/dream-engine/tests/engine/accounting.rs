//! Every session accounted for (issues "every fact kept" and "remember what the
//! person says"): a pass says what each consumed session yielded and how many
//! are still pending, and a session leaves `pending` only when what the
//! consolidator found in it is stored or it holds nothing durable.

use dream_core::testing::ScriptedModel;
use dream_engine::Options;
use serde_json::json;

use super::common::{Harness, answer, quick, user};

#[tokio::test]
async fn a_plan_whose_every_action_is_dropped_leaves_the_batch_pending() {
    let model = ScriptedModel::new();
    let h = Harness::new(quick()).with_model(&model);
    let deep = json!({"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": {"i": 1}}}}}}}}});
    model.push_text(answer(json!({"create": [
        {"name": 7, "kind": "project", "content": "x"},
        {"name": "Runner", "kind": "project", "content": "We use Vitest.", "metadata": deep,
         "evidence": [{"session": "S1", "message": 0}]},
    ], "update": "everything"})));
    h.dream.log_session(user("We use Vitest.")).await.unwrap();
    let report = h.dream.dream(true).await.unwrap();
    assert!(report.sessions_consumed.is_empty(), "{report:#?}");
    assert_eq!(report.held_back.len(), 1, "{report:#?}");
    assert!(report.held_back[0].attempt);
    let reason = report.yields[0].reason.as_deref().unwrap();
    assert!(reason.starts_with("left pending"), "{reason}");
    assert_eq!(h.dream.stats().await.unwrap().pending_sessions, 1);
    assert!(h.dream.list().await.unwrap().is_empty());

    // An honest empty plan ("nothing durable") consumes its batch.
    model.push_text(answer(json!({"create": [], "update": [], "delete": []})));
    let report = h.dream.dream(true).await.unwrap();
    assert_eq!(report.sessions_consumed.len(), 1);
    assert!(report.yields[0].is_empty());
    let reason = report.yields[0].reason.as_deref().unwrap();
    assert!(reason.contains("no new lasting statement"), "{reason}");
    assert_eq!(report.pending, 0);
}

#[tokio::test]
async fn a_session_whose_proposals_were_all_refused_says_so() {
    let model = ScriptedModel::new();
    let h = Harness::new(quick()).with_model(&model);
    h.dream.log_session(user("We use Vitest.")).await.unwrap();
    h.dream
        .log_session(user("The build is slow."))
        .await
        .unwrap();
    // The second create names a port no message holds: the gate refuses it.
    model.push_text(answer(json!({"create": [
        {"name": "Runner", "kind": "project", "content": "We use Vitest.",
         "evidence": [{"session": "S1", "message": 0}]},
        {"name": "Build", "kind": "project", "content": "The build server listens on port 9417.",
         "evidence": [{"session": "S2", "message": 0}]},
    ]})));
    let report = h.dream.dream(true).await.unwrap();
    assert_eq!(report.created.len(), 1, "{report:#?}");
    assert_eq!(report.refused.len(), 1, "{report:#?}");
    assert!(report.yields[0].reason.is_none(), "{report:#?}");
    let reason = report.yields[1].reason.as_deref().unwrap();
    assert!(
        reason.contains("left pending: create refused: unsupported"),
        "{reason}"
    );
    // Refused, the statement is not consumed: its session waits for the next pass.
    assert_eq!(report.sessions_consumed.len(), 1, "{report:#?}");
    assert_eq!(report.pending, 1);
}

#[tokio::test]
async fn a_pass_says_what_each_session_yielded_and_what_is_still_pending() {
    let h = Harness::new(Options {
        batch_sessions: 20,
        ..quick()
    });
    for i in 0..50 {
        let text = if i % 2 == 0 {
            format!("Remember that service {i} listens on port {}.", 8000 + i)
        } else {
            "Thanks, that helps.".to_owned()
        };
        h.dream.log_session(user(&text)).await.unwrap();
    }
    let report = h.dream.dream(true).await.unwrap();
    assert_eq!(report.sessions_consumed.len(), 20);
    assert_eq!(report.pending, 30);
    assert_eq!(report.yields.len(), 20);
    let durable = report.yields.iter().filter(|y| !y.is_empty()).count();
    assert_eq!(durable, 10, "{report:#?}");
    assert_eq!(h.dream.stats().await.unwrap().pending_sessions, 30);
    // Distinct identifiers are distinct memories.
    assert_eq!(report.created.len(), 10, "{report:#?}");
}
