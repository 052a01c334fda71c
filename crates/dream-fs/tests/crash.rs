//! A child process is killed (SIGKILL) at a named step of a write; the parent
//! reopens the store and checks that every committed record is intact, the
//! interrupted one is wholly old or wholly new, and no version is reused.

#![cfg(feature = "failpoints")]

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::time::Duration;

use dream_conformance::process::{ChildProcess, child_role};
use dream_core::failpoint::FAILPOINT_ENV;
use dream_core::{Bytes, Key, Namespace, RecordId, RecordStore, Version, Write};
use dream_fs::{FsOptions, FsStore};

const WAIT: Duration = Duration::from_secs(120);
const IDS: [&str; 4] = ["a", "b", "c", "d"];

fn key(id: &str) -> Key {
    Key::new(
        Namespace::new("memories").unwrap(),
        RecordId::new(id).unwrap(),
    )
}

fn old_value(id: &str) -> Bytes {
    Bytes::from(format!("---\nname: {id}\n---\ncommitted body of {id}\n"))
}

fn new_value() -> Bytes {
    Bytes::from(vec![b'N'; 64 * 1024])
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// What the child does to the record `a` after committing `a`..`d`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Crash {
    Put,
    Delete,
}

/// The child: start the write that the selected failpoint kills.
fn child(crash: Crash) {
    let dir = PathBuf::from(std::env::var("DREAM_TEST_DIR").unwrap());
    let failpoint = std::env::var(FAILPOINT_ENV).unwrap();
    let rt = runtime();
    rt.block_on(async {
        let store = FsStore::open_with(&dir, FsOptions::new().create(false))
            .await
            .unwrap();
        match crash {
            Crash::Put => {
                let _ = store.put(&key("a"), new_value(), Write::any()).await;
            }
            Crash::Delete => {
                let _ = store.delete(&key("a"), Write::any()).await;
            }
        }
    });
    println!("SURVIVED {failpoint}");
}

/// Commits `a`..`d`, then runs the child to its crash; returns the store's
/// path and the committed versions.
fn crash_child(test: &str, failpoint: &str) -> (tempfile::TempDir, PathBuf, BTreeMap<String, u64>) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(".dream");
    let committed = runtime().block_on(async {
        let store = FsStore::open(&path).await.unwrap();
        let mut committed = BTreeMap::new();
        for id in IDS {
            let version = store
                .put(&key(id), old_value(id), Write::any())
                .await
                .unwrap();
            committed.insert(id.to_owned(), version.0);
        }
        committed
    });
    let mut child = ChildProcess::spawn(
        test,
        "crash",
        &[
            ("DREAM_TEST_DIR", path.to_str().unwrap()),
            (FAILPOINT_ENV, failpoint),
        ],
    )
    .unwrap();
    let status = child.wait(WAIT).unwrap();
    let survived = child.drain_lines();
    assert_eq!(
        status.signal(),
        Some(9),
        "the child was killed at {failpoint} (status {status:?}, output {survived:?})"
    );
    (tmp, path, committed)
}

/// Reopens the store and checks it; `a_after` says what `a` may be.
fn check_after_crash(path: &PathBuf, committed: &BTreeMap<String, u64>, a_after: AAfter) {
    let rt = runtime();
    rt.block_on(async {
        let store = FsStore::open_with(path, FsOptions::new().create(false))
            .await
            .expect("reopen after the crash");
        let newest_committed = *committed.values().max().unwrap();
        for id in ["b", "c", "d"] {
            let record = store
                .get(&key(id))
                .await
                .unwrap()
                .expect("committed record");
            assert_eq!(record.value, old_value(id), "{id} intact");
            assert_eq!(
                record.version,
                Version(committed[id]),
                "{id} keeps its version"
            );
        }
        let a = store.get(&key("a")).await.unwrap();
        let mut seen = committed.values().copied().collect::<Vec<_>>();
        match (a_after, &a) {
            (AAfter::Old, Some(record)) => {
                assert_eq!(record.value, old_value("a"));
                assert_eq!(record.version, Version(committed["a"]));
            }
            (AAfter::New, Some(record)) => {
                assert_eq!(record.value, new_value(), "the new value, whole");
                assert!(record.version.0 > newest_committed, "a fresh version");
                seen.push(record.version.0);
            }
            (AAfter::Absent, None) => {}
            (expected, got) => panic!("a: expected {expected:?}, got {got:?}"),
        }
        // The listing shows exactly the records, nothing half-written.
        let page = store
            .list(&Namespace::new("memories").unwrap(), None, 100)
            .await
            .unwrap();
        let listed: Vec<&str> = page.entries.iter().map(|e| e.id.as_str()).collect();
        let want: Vec<&str> = if a.is_some() {
            IDS.to_vec()
        } else {
            vec!["b", "c", "d"]
        };
        assert_eq!(listed, want);
        // No version is issued twice: new writes are above everything seen.
        let newest_seen = *seen.iter().max().unwrap();
        for id in ["a", "e"] {
            let v = store
                .put(&key(id), Bytes::from_static(b"after"), Write::any())
                .await
                .unwrap();
            assert!(
                v.0 > newest_seen,
                "version {v} after the crash is new (seen up to {newest_seen})"
            );
        }
    });
}

#[derive(Clone, Copy, Debug)]
enum AAfter {
    Old,
    New,
    Absent,
}

#[test]
fn crash_after_temp_write_keeps_the_old_value() {
    if child_role().is_some() {
        return child(Crash::Put);
    }
    let (_tmp, path, committed) = crash_child(
        "crash_after_temp_write_keeps_the_old_value",
        "fs.put.after_temp_write",
    );
    // The temporary files were left behind by the crash.
    assert!(path.join("memories/.a.md.tmp").exists());
    check_after_crash(&path, &committed, AAfter::Old);
}

#[test]
fn crash_after_data_rename_lagging_sidecar_is_repaired() {
    if child_role().is_some() {
        return child(Crash::Put);
    }
    let (_tmp, path, committed) = crash_child(
        "crash_after_data_rename_lagging_sidecar_is_repaired",
        "fs.put.after_data_rename",
    );
    // The sidecar still describes the old value: it lags the data.
    let sidecar = std::fs::read_to_string(path.join("memories/.a.md.meta")).unwrap();
    assert!(
        sidecar.contains(&format!("version {:020}\n", committed["a"])),
        "{sidecar}"
    );
    check_after_crash(&path, &committed, AAfter::New);
}

#[test]
fn crash_after_sidecar_write_keeps_the_new_value() {
    if child_role().is_some() {
        return child(Crash::Put);
    }
    let (_tmp, path, committed) = crash_child(
        "crash_after_sidecar_write_keeps_the_new_value",
        "fs.put.after_sidecar_write",
    );
    check_after_crash(&path, &committed, AAfter::New);
}

#[test]
fn crash_in_delete_leaves_the_record_absent() {
    if child_role().is_some() {
        return child(Crash::Delete);
    }
    let (_tmp, path, committed) = crash_child(
        "crash_in_delete_leaves_the_record_absent",
        "fs.delete.after_data_unlink",
    );
    // The sidecar outlived its value file.
    assert!(path.join("memories/.a.md.meta").exists());
    assert!(!path.join("memories/a.md").exists());
    check_after_crash(&path, &committed, AAfter::Absent);
}
