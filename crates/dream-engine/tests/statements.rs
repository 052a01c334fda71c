//! What the person says, kept (issue 34): the offline pass over a corpus of
//! everyday statements written blind (`tests/fixtures/statements/`), each asked
//! about later in other words. Per half, the share of durable statements that
//! became a memory, the share recalled as `used` when asked, and the share of
//! non-memories (questions, greetings, requests, status, pasted material,
//! chatter) that became one. The blind half is scored, never tuned on; every
//! look at it is logged in its `LOOKS.md`.

#[path = "support/statements_score.rs"]
mod statements_score;
use statements_score::{pct, report, score};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn development_half() {
    let s = score("dev.jsonl", None).await;
    report("dev.jsonl", &s);
    // Floors just under the measured numbers: a regression fails.
    assert!(pct(s.stored, s.durable) >= 97.0, "durable kept");
    // Recall by words alone, with its relevance floor (issue 38): the
    // questions avoid the statements' words; the local model's test
    // (dream-embed, local_model_statements) recalls 81.9 % of this set.
    assert!(pct(s.used, s.durable) >= 24.0, "recalled used");
    assert!(
        pct(s.chatter_stored, s.non_memories) <= 2.0,
        "non-memories stored"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn second_development_set() {
    let s = score("dev2.jsonl", None).await;
    report("dev2.jsonl", &s);
    assert!(pct(s.stored, s.durable) >= 92.0, "durable kept");
    assert!(pct(s.used, s.durable) >= 19.0, "recalled used");
    assert!(
        pct(s.chatter_stored, s.non_memories) <= 3.0,
        "non-memories stored"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn third_development_set() {
    let s = score("dev3.jsonl", None).await;
    report("dev3.jsonl", &s);
    assert!(pct(s.stored, s.durable) >= 88.0, "durable kept");
    assert!(
        pct(s.chatter_stored, s.non_memories) <= 24.0,
        "non-memories stored"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fourth_development_set() {
    let s = score("dev4.jsonl", None).await;
    report("dev4.jsonl", &s);
    assert_eq!(s.absent, 30, "every absent question is asked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifth_development_set() {
    let s = score("dev5.jsonl", None).await;
    report("dev5.jsonl", &s);
    assert!(s.durable == 80 && s.non_memories == 120, "the whole set");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blind_half() {
    let s = score("blind.jsonl", None).await;
    report("blind.jsonl", &s);
    assert!(s.durable >= 150, "the blind half is scored whole");
}
