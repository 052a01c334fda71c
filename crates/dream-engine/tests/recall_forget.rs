//! Two processes on one real `.dream/` directory (dream-fs): a memory forgotten in
//! one process is not admitted by the next recall in the other, whose index was
//! warm from before the forget.
//!
//! The forget is done in the storage layout every process shares: under the lease
//! on lock `dream`, delete `memories/<id>` and bump `state/generation`, both writes
//! fenced.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use dream_conformance::process::{ChildProcess, child_role};
use dream_core::{
    Bytes, Key, LockName, Memory, MemoryId, MemoryKind, Namespace, Precondition, RecordId,
    RecordStore, Scope, SessionId, SystemClock, Write, render_memory,
};
use dream_engine::recall::{FirewallVerdict, Recall, RecallOptions};
use dream_fs::FsStore;

const DIR_ENV: &str = "DREAM_RECALL_FORGET_DIR";

fn memory_key(id: &str) -> Key {
    Key::new(
        Namespace::new("memories").unwrap(),
        RecordId::new(id).unwrap(),
    )
}

fn generation_key() -> Key {
    Key::new(
        Namespace::new("state").unwrap(),
        RecordId::new("generation").unwrap(),
    )
}

fn fact(id: &str, name: &str, content: &str) -> Memory {
    let mut m = Memory::new(
        MemoryId::new(id).unwrap(),
        MemoryKind::Project,
        name,
        name,
        content,
        Utc::now(),
    );
    m.scope = Scope::new("proj").unwrap();
    m.sources = vec![SessionId::new("s1").unwrap()];
    m
}

/// Deletes `id` and bumps the generation under the store lease, fenced.
async fn forget(store: &dyn RecordStore, id: &str) {
    let lock = LockName::new("dream").unwrap();
    let lease = store
        .try_lease(&lock, Duration::from_secs(10))
        .await
        .unwrap()
        .expect("the lock is free");
    let fence = lease.fence();
    assert!(
        store
            .delete(&memory_key(id), Write::any().fenced(fence.clone()))
            .await
            .unwrap()
    );
    let (generation, pre) = match store.get(&generation_key()).await.unwrap() {
        Some(r) => (
            std::str::from_utf8(&r.value)
                .unwrap()
                .parse::<u64>()
                .unwrap(),
            Precondition::Matches(r.version),
        ),
        None => (0, Precondition::Absent),
    };
    store
        .put(
            &generation_key(),
            Bytes::from((generation + 1).to_string()),
            Write { pre, fence: None }.fenced(fence),
        )
        .await
        .unwrap();
    assert!(store.release(lease).await.unwrap());
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn forget_in_one_process_is_not_admitted_by_the_next_recall_in_another() {
    if let Some(role) = child_role() {
        assert_eq!(role, "forget");
        let dir = std::env::var(DIR_ENV).unwrap();
        runtime().block_on(async {
            let store = FsStore::open(&dir).await.unwrap();
            forget(&store, "vitest").await;
        });
        println!("FORGOTTEN");
        return;
    }

    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(".dream");
    let rt = runtime();
    let scope = Scope::new("proj").unwrap();
    let store: Arc<dyn RecordStore> = Arc::new(rt.block_on(FsStore::open(&dir)).unwrap());
    let recall = Recall::new(
        store.clone(),
        Arc::new(SystemClock),
        RecallOptions::default(),
    );

    rt.block_on(async {
        for m in [
            fact("vitest", "Test runner", "We run the tests with Vitest."),
            fact("ci", "CI", "The tests run on every push."),
        ] {
            store
                .put(
                    &memory_key(m.id.as_str()),
                    render_memory(&m).into(),
                    Write::absent(),
                )
                .await
                .unwrap();
        }
        store
            .put(&generation_key(), Bytes::from_static(b"1"), Write::absent())
            .await
            .unwrap();
        let before = recall.recall("tests", &scope, 5).await.unwrap();
        assert_eq!(before.generation, 1);
        assert_eq!(
            before.verdict_of("vitest").map(|r| r.verdict),
            Some(FirewallVerdict::Used),
            "{before}"
        );
    });

    let dir_text = dir.to_str().unwrap().to_owned();
    let mut child = ChildProcess::spawn(
        "forget_in_one_process_is_not_admitted_by_the_next_recall_in_another",
        "forget",
        &[(DIR_ENV, &dir_text)],
    )
    .unwrap();
    child
        .wait_for_line("FORGOTTEN", Duration::from_secs(60))
        .unwrap();
    assert!(child.wait(Duration::from_secs(60)).unwrap().success());

    rt.block_on(async {
        let after = recall.recall("tests", &scope, 5).await.unwrap();
        assert_eq!(after.generation, 2);
        assert!(after.verdict_of("vitest").is_none(), "{after}");
        assert!(after.used().all(|m| m.id.as_str() != "vitest"));
        assert_eq!(
            after.verdict_of("ci").map(|r| r.verdict),
            Some(FirewallVerdict::Used)
        );
        let context = recall.recall_as_context("vitest", &scope, 5).await.unwrap();
        assert!(!context.contains("Vitest"), "{context}");
    });
}
