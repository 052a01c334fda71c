//! Several processes on one dream-fs store: passes racing while sessions are
//! logged, and processes killed at every failpoint of apply.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use dream_conformance::process::{ChildProcess, child_role};
use dream_core::{RecordStore, parse_memory};
use dream_engine::{AuditAction, Dream, Options, SessionStatus};
use dream_fs::FsStore;

use crate::common::*;

const DIR_ENV: &str = "DREAM_TEST_STORE";

fn options() -> Options {
    Options {
        min_sessions: 1,
        min_hours: 0,
        batch_sessions: 100,
        lease_ttl: Duration::from_secs(1),
        claim_ttl: Duration::from_secs(1),
        lease_wait: Duration::from_secs(20),
        ..Options::default()
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

async fn open(dir: &Path, model: &EchoModel) -> Dream {
    let store: Arc<dyn RecordStore> = Arc::new(FsStore::open(dir).await.unwrap());
    Dream::open(store, options())
        .unwrap()
        .with_model(Arc::new(model.clone()))
}

fn store_dir(tmp: &tempfile::TempDir) -> PathBuf {
    tmp.path().join("store")
}

/// Every memory's name, and checks the store is consistent: no journal left,
/// every memory parses, no name twice.
async fn check_consistent(dream: &Dream) -> Vec<String> {
    let journal = dream_engine::layout::journal_key();
    assert!(
        dream.store().get(&journal).await.unwrap().is_none(),
        "a journal was left"
    );
    let ns = dream_engine::layout::namespace(dream_engine::layout::MEMORIES);
    let page = dream.store().list(&ns, None, 1000).await.unwrap();
    let mut names: Vec<String> = page
        .entries
        .iter()
        .map(|e| {
            parse_memory(std::str::from_utf8(&e.record.value).unwrap())
                .unwrap()
                .name
        })
        .collect();
    names.sort();
    let mut unique = names.clone();
    unique.dedup();
    assert_eq!(unique, names, "a memory was duplicated");
    names
}

#[test]
fn two_processes_dream_at_once_while_a_third_logs() {
    if let Some(role) = child_role() {
        let dir = PathBuf::from(std::env::var(DIR_ENV).unwrap());
        return runtime().block_on(async move {
            match role.as_str() {
                "dreamer" => {
                    let model = EchoModel::slow(Duration::from_secs(3));
                    let dream = open(&dir, &model).await;
                    println!("READY");
                    while !dir.with_file_name("go").exists() {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                    let report = dream.dream(true).await.unwrap();
                    println!(
                        "RESULT calls={} consumed={} created={} skipped={:?}",
                        model.calls(),
                        report.sessions_consumed.len(),
                        report.created.len(),
                        report.skipped
                    );
                }
                "logger" => {
                    let dream = open(&dir, &EchoModel::default()).await;
                    println!("READY");
                    while !dir.with_file_name("go").exists() {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                    for i in 100..112 {
                        dream.log_session(user(&format!("fact {i}"))).await.unwrap();
                        tokio::time::sleep(Duration::from_millis(250)).await;
                    }
                    println!("RESULT logged=12");
                }
                other => panic!("unknown role {other}"),
            }
        });
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = store_dir(&tmp);
    let rt = runtime();
    let parent_model = EchoModel::default();
    let parent = rt.block_on(async {
        let parent = open(&dir, &parent_model).await;
        for i in 0..6 {
            parent
                .log_session(user(&format!("fact {i}")))
                .await
                .unwrap();
        }
        parent
    });
    let dir_text = dir.to_str().unwrap();
    let name = "multiprocess::two_processes_dream_at_once_while_a_third_logs";
    let mut children: Vec<ChildProcess> = ["dreamer", "dreamer", "logger"]
        .iter()
        .map(|role| ChildProcess::spawn(name, role, &[(DIR_ENV, dir_text)]).unwrap())
        .collect();
    for child in &mut children {
        child
            .wait_for_line("READY", Duration::from_secs(60))
            .unwrap();
    }
    std::fs::write(dir.with_file_name("go"), b"go").unwrap();
    let mut results = Vec::new();
    for child in &mut children {
        results.push(
            child
                .wait_for_line("RESULT", Duration::from_secs(120))
                .unwrap(),
        );
        assert!(child.wait(Duration::from_secs(60)).unwrap().success());
    }
    let calls: usize = results[..2]
        .iter()
        .map(|r| {
            r.split("calls=")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .parse::<usize>()
                .unwrap()
        })
        .sum();
    assert_eq!(
        calls, 1,
        "exactly one process paid for the model call: {results:?}"
    );
    assert!(
        results[..2]
            .iter()
            .any(|r| r.contains("AnotherPassRunning")),
        "the passes overlapped: {results:?}"
    );

    rt.block_on(async {
        // The winner consumed a batch; nothing is lost or duplicated so far.
        let names = check_consistent(&parent).await;
        let consumed: Vec<String> = {
            let mut out = Vec::new();
            let ns = dream_engine::layout::namespace(dream_engine::layout::SESSIONS);
            for e in parent.store().list(&ns, None, 1000).await.unwrap().entries {
                let s: dream_engine::SessionRecord =
                    serde_json::from_slice(&e.record.value).unwrap();
                if s.status == SessionStatus::Consumed {
                    out.push(s.messages[0].content.clone());
                }
            }
            out.sort();
            out
        };
        assert_eq!(names, consumed, "one memory per consumed session");
        assert!(
            consumed.len() >= 6,
            "the first six sessions were pending when the winner gathered"
        );

        // The parent dreams the rest: every session consumed once, every fact once.
        let report = parent.dream(true).await.unwrap();
        assert_eq!(report.sessions_consumed.len(), 18 - consumed.len());
        let names = check_consistent(&parent).await;
        let mut expected: Vec<String> = (0..6)
            .chain(100..112)
            .map(|i| format!("fact {i}"))
            .collect();
        expected.sort();
        assert_eq!(names, expected);
        assert_eq!(parent.stats().await.unwrap().pending_sessions, 0);
        let completed = parent
            .audit(t0() - chrono::Duration::days(365 * 100))
            .await
            .unwrap()
            .into_iter()
            .filter(|a| a.action == AuditAction::PassCompleted)
            .count();
        assert_eq!(completed, 2);
    });
}

#[cfg(feature = "failpoints")]
#[test]
fn a_process_killed_at_each_failpoint_of_apply_leaves_a_consistent_store() {
    use std::os::unix::process::ExitStatusExt;

    if let Some(role) = child_role() {
        assert_eq!(role, "crasher");
        let dir = PathBuf::from(std::env::var(DIR_ENV).unwrap());
        return runtime().block_on(async move {
            let dream = open(&dir, &EchoModel::default()).await;
            println!("READY");
            let report = dream.dream(true).await;
            println!("SURVIVED {report:?}");
        });
    }
    for failpoint in dream_engine::APPLY_FAILPOINTS {
        let tmp = tempfile::tempdir().unwrap();
        let dir = store_dir(&tmp);
        let rt = runtime();
        let parent_model = EchoModel::default();
        // The second Dream is open before the crash.
        let parent = rt.block_on(async {
            let parent = open(&dir, &parent_model).await;
            for i in 0..3 {
                parent
                    .log_session(user(&format!("fact {i}")))
                    .await
                    .unwrap();
            }
            parent
        });
        let name =
            "multiprocess::a_process_killed_at_each_failpoint_of_apply_leaves_a_consistent_store";
        let mut child = ChildProcess::spawn(
            name,
            "crasher",
            &[
                (DIR_ENV, dir.to_str().unwrap()),
                (dream_core::failpoint::FAILPOINT_ENV, failpoint),
            ],
        )
        .unwrap();
        let status = child.wait(Duration::from_secs(120)).unwrap();
        assert_eq!(
            status.signal(),
            Some(9),
            "{failpoint}: the child did not die at its failpoint"
        );
        let journal_written = *failpoint != "apply-before-journal";
        let cleared = *failpoint == "apply-after-journal-clear";

        rt.block_on(async {
            // Past every lease of the dead process (TTL 1 s).
            tokio::time::sleep(Duration::from_secs(3)).await;
            let report = parent.dream(true).await.unwrap();
            let names = check_consistent(&parent).await;
            assert_eq!(names, vec!["fact 0", "fact 1", "fact 2"], "{failpoint}");
            let stats = parent.stats().await.unwrap();
            assert_eq!(stats.pending_sessions, 0, "{failpoint}");
            assert_eq!(
                stats.generation, 1,
                "{failpoint}: exactly one pass happened"
            );
            assert!(parent.last_success().await.unwrap().is_some());
            let audit = parent
                .audit(t0() - chrono::Duration::days(365 * 100))
                .await
                .unwrap();
            let completed = audit
                .iter()
                .filter(|a| a.action == AuditAction::PassCompleted)
                .count();
            assert_eq!(completed, 1, "{failpoint}");
            let rolled = audit
                .iter()
                .any(|a| a.action == AuditAction::JournalRolledForward);
            if journal_written && !cleared {
                // The pass fully happens: rolled forward by the fresh lease holder.
                assert!(rolled, "{failpoint}");
                assert!(report.rolled_forward.is_some(), "{failpoint}");
                assert_eq!(parent_model.calls(), 0, "{failpoint}");
                assert_eq!(
                    report.skipped,
                    Some(dream_engine::SkipReason::NothingPending)
                );
            } else if cleared {
                assert!(!rolled, "{failpoint}");
                assert_eq!(parent_model.calls(), 0, "{failpoint}");
            } else {
                // The pass happens again.
                assert!(!rolled, "{failpoint}");
                assert_eq!(parent_model.calls(), 1, "{failpoint}");
                assert_eq!(report.created.len(), 3, "{failpoint}");
            }
        });
    }
}
