//! Hostile and damaged stores: planted symlinks, hard links and FIFOs, leftovers
//! of a crash, hand edits, foreign or unsafe roots. Each gets a typed error or
//! is handled safely, and nothing stored is lost.

use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use dream_core::{
    Bytes, Key, LockName, ManualClock, Namespace, RecordId, RecordStore, StoreError, Version, Write,
};
use dream_fs::{FsOptions, FsStore};

fn key(ns: &str, id: &str) -> Key {
    Key::new(Namespace::new(ns).unwrap(), RecordId::new(id).unwrap())
}

fn ns(name: &str) -> Namespace {
    Namespace::new(name).unwrap()
}

async fn fresh() -> (tempfile::TempDir, FsStore) {
    let tmp = tempfile::tempdir().unwrap();
    let store = FsStore::open(tmp.path().join(".dream")).await.unwrap();
    (tmp, store)
}

async fn reopen(path: &Path) -> Result<FsStore, StoreError> {
    FsStore::open_with(path, FsOptions::new().create(false)).await
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o7777
}

fn assert_corrupt_naming<T: std::fmt::Debug>(result: Result<T, StoreError>, id: &str, what: &str) {
    match result {
        Err(StoreError::Corrupt {
            key: Some(key),
            reason,
        }) => {
            assert_eq!(key.id.as_str(), id, "{what}: names the record ({reason})")
        }
        other => panic!("{what}: expected Corrupt naming {id}, got {other:?}"),
    }
}

fn assert_corrupt<T: std::fmt::Debug>(result: Result<T, StoreError>, what: &str) {
    assert!(
        matches!(result, Err(StoreError::Corrupt { .. })),
        "{what}: expected Corrupt, got {result:?}"
    );
}

fn assert_incompatible<T: std::fmt::Debug>(result: Result<T, StoreError>, needle: &str) {
    match result {
        Err(StoreError::Incompatible { reason }) => {
            assert!(
                reason.contains(needle),
                "reason {reason:?} mentions {needle:?}"
            )
        }
        other => panic!("expected Incompatible ({needle}), got {other:?}"),
    }
}

/// A directory outside the store with one file, and a snapshot to compare.
struct Outside {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
}

impl Outside {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_owned();
        std::fs::write(path.join("secret"), b"outside secret").unwrap();
        std::fs::write(path.join("x"), b"outside x").unwrap();
        Outside { _dir: dir, path }
    }

    fn snapshot(&self) -> Vec<(String, Vec<u8>, i64)> {
        let mut out: Vec<_> = std::fs::read_dir(&self.path)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let meta = e.metadata().unwrap();
                (
                    e.file_name().into_string().unwrap(),
                    std::fs::read(e.path()).unwrap(),
                    meta.mtime_nsec() + meta.mtime() * 1_000_000_000,
                )
            })
            .collect();
        out.sort();
        out
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn layout_is_plain_files_with_tight_permissions() {
    let (tmp, store) = fresh().await;
    let root = tmp.path().join(".dream");
    let body = "---\nname: Coffee\n---\nThe user drinks tea.\n";
    let v = store
        .put(
            &key("memories", "coffee"),
            Bytes::from(body),
            Write::absent(),
        )
        .await
        .unwrap();
    store
        .put(
            &key("sessions", "s1"),
            Bytes::from_static(b"{}"),
            Write::any(),
        )
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(root.join("memories/coffee.md")).unwrap(),
        body,
        "the Markdown file holds only the memory"
    );
    assert_eq!(std::fs::read(root.join("sessions/s1")).unwrap(), b"{}");
    let sidecar = std::fs::read_to_string(root.join("memories/.coffee.md.meta")).unwrap();
    assert!(
        sidecar.contains(&format!("version {:020}\n", v.0)),
        "{sidecar}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join(".gitignore")).unwrap(),
        "*\n"
    );
    assert_eq!(
        std::fs::read_to_string(root.join(".dream-store")).unwrap(),
        "dream-fs 1\n"
    );
    for dir in [
        &root,
        &root.join("memories"),
        &root.join("sessions"),
        &root.join(".leases"),
    ] {
        assert_eq!(mode(dir), 0o700, "{}", dir.display());
    }
    for file in [
        "memories/coffee.md",
        "memories/.coffee.md.meta",
        "sessions/s1",
        ".dream-store",
        ".gitignore",
        ".lock",
        ".version",
        ".version-reserved",
    ] {
        assert_eq!(mode(&root.join(file)), 0o600, "{file}");
    }
    let lease = store
        .try_lease(&LockName::new("dream").unwrap(), Duration::from_secs(60))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(mode(&root.join(".leases/dream")), 0o600);
    assert!(store.release(lease).await.unwrap());
    // Nothing but the store's own files and the namespaces.
    let mut names: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            ".dream-store",
            ".gitignore",
            ".leases",
            ".lock",
            ".version",
            ".version-reserved",
            "memories",
            "sessions"
        ]
    );
    assert_eq!(store.path(), root.as_path());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn root_without_marker_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    std::fs::set_permissions(&empty, std::fs::Permissions::from_mode(0o700)).unwrap();
    assert_incompatible(FsStore::open(&empty).await, "no marker");
    assert!(
        std::fs::read_dir(&empty).unwrap().next().is_none(),
        "nothing written into a foreign directory"
    );
    let project = tmp.path().join("project");
    std::fs::create_dir(&project).unwrap();
    std::fs::set_permissions(&project, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(project.join("notes.md"), b"mine").unwrap();
    assert_incompatible(FsStore::open(&project).await, "no marker");
    // A marker of another format version is refused too.
    let (tmp2, store) = fresh().await;
    drop(store);
    let root = tmp2.path().join(".dream");
    std::fs::write(root.join(".dream-store"), b"dream-fs 2\n").unwrap();
    assert_incompatible(reopen(&root).await, "another version");
    // Without `create`, a missing path is an error, and nothing is created.
    let missing = tmp.path().join("missing");
    assert_incompatible(reopen(&missing).await, "no store");
    assert!(!missing.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn root_writable_by_group_or_others_is_refused() {
    let (tmp, store) = fresh().await;
    drop(store);
    let root = tmp.path().join(".dream");
    for bad in [0o770, 0o702, 0o777] {
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(bad)).unwrap();
        assert_incompatible(reopen(&root).await, "writable by group or others");
    }
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o750)).unwrap();
    reopen(&root).await.expect("readable by group is fine");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn root_owned_by_another_user_is_refused() {
    let (tmp, store) = fresh().await;
    drop(store);
    let root = tmp.path().join(".dream");
    if rustix::process::geteuid().is_root() {
        // As root, hand the store to `nobody` and expect a refusal.
        let nobody = rustix::process::Uid::from_raw(65534);
        rustix::fs::chown(&root, Some(nobody), None).unwrap();
        assert_incompatible(reopen(&root).await, "owned by another user");
        rustix::fs::chown(&root, Some(rustix::process::geteuid()), None).unwrap();
        reopen(&root).await.expect("owned again");
    } else {
        // Not root: `/` belongs to root, not to us.
        assert_incompatible(reopen(Path::new("/")).await, "");
        assert_incompatible(reopen(Path::new("/etc")).await, "owned by another user");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn root_that_is_a_symlink_is_refused() {
    let (tmp, store) = fresh().await;
    drop(store);
    let link = tmp.path().join("link");
    symlink(tmp.path().join(".dream"), &link).unwrap();
    assert_incompatible(reopen(&link).await, "symbolic link");
    assert_incompatible(FsStore::open(&link).await, "symbolic link");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planted_symlink_for_a_value_file_is_refused() {
    let (tmp, store) = fresh().await;
    let root = tmp.path().join(".dream");
    let outside = Outside::new();
    let before = outside.snapshot();
    let good = key("memories", "good");
    let v = store
        .put(&good, Bytes::from_static(b"good"), Write::any())
        .await
        .unwrap();
    symlink(outside.path.join("secret"), root.join("memories/evil.md")).unwrap();
    let evil = key("memories", "evil");
    assert_corrupt_naming(store.get(&evil).await, "evil", "get");
    assert_corrupt_naming(
        store
            .put(&evil, Bytes::from_static(b"x"), Write::any())
            .await,
        "evil",
        "put",
    );
    assert_corrupt_naming(store.delete(&evil, Write::any()).await, "evil", "delete");
    assert_corrupt_naming(store.list(&ns("memories"), None, 100).await, "evil", "list");
    // The error says what is wrong without showing any value.
    let shown = store.get(&evil).await.unwrap_err().to_string();
    assert!(
        shown.contains("symbolic link") && !shown.contains("outside secret"),
        "{shown}"
    );
    // The link is still there (never replaced), the outside untouched, the rest fine.
    assert!(
        std::fs::symlink_metadata(root.join("memories/evil.md"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        outside.snapshot(),
        before,
        "nothing outside read into or written"
    );
    assert_eq!(store.get(&good).await.unwrap().unwrap().version, v);

    // A symlink in place of a sidecar is refused the same way.
    std::fs::remove_file(root.join("memories/.good.md.meta")).unwrap();
    symlink(outside.path.join("x"), root.join("memories/.good.md.meta")).unwrap();
    assert_corrupt_naming(store.get(&good).await, "good", "get with linked sidecar");
    assert_corrupt_naming(
        store
            .put(&good, Bytes::from_static(b"y"), Write::any())
            .await,
        "good",
        "put with linked sidecar",
    );
    assert_eq!(outside.snapshot(), before);
    // Once a person removes the link, the value is adopted under a new version.
    std::fs::remove_file(root.join("memories/.good.md.meta")).unwrap();
    let record = store.get(&good).await.unwrap().unwrap();
    assert_eq!(record.value.as_ref(), b"good");
    assert!(record.version > v);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planted_symlink_at_a_temporary_name_is_removed_not_followed() {
    let (tmp, store) = fresh().await;
    let root = tmp.path().join(".dream");
    let outside = Outside::new();
    let before = outside.snapshot();
    let k = key("memories", "a");
    store
        .put(&k, Bytes::from_static(b"one"), Write::any())
        .await
        .unwrap();
    symlink(outside.path.join("secret"), root.join("memories/.a.md.tmp")).unwrap();
    symlink(outside.path.join("x"), root.join("memories/.a.md.meta.tmp")).unwrap();
    store
        .put(&k, Bytes::from_static(b"two"), Write::any())
        .await
        .unwrap();
    assert_eq!(store.get(&k).await.unwrap().unwrap().value.as_ref(), b"two");
    assert_eq!(
        outside.snapshot(),
        before,
        "the links were removed, not written through"
    );
    assert!(!root.join("memories/.a.md.tmp").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planted_symlink_for_a_namespace_directory_is_refused() {
    let (tmp, store) = fresh().await;
    let root = tmp.path().join(".dream");
    let outside = Outside::new();
    let before = outside.snapshot();
    store
        .put(
            &key("memories", "m"),
            Bytes::from_static(b"m"),
            Write::any(),
        )
        .await
        .unwrap();
    symlink(&outside.path, root.join("sessions")).unwrap();
    let k = key("sessions", "x");
    assert_corrupt(store.get(&k).await, "get");
    assert_corrupt(
        store
            .put(
                &key("sessions", "new"),
                Bytes::from_static(b"n"),
                Write::any(),
            )
            .await,
        "put",
    );
    assert_corrupt(store.delete(&k, Write::any()).await, "delete");
    assert_corrupt(store.list(&ns("sessions"), None, 10).await, "list");
    assert_corrupt(store.namespaces().await, "namespaces");
    let shown = store.get(&k).await.unwrap_err().to_string();
    assert!(
        shown.contains("sessions") && shown.contains("symbolic link"),
        "{shown}"
    );
    assert_eq!(
        outside.snapshot(),
        before,
        "nothing outside read into or written"
    );
    // Other namespaces keep working.
    assert!(store.get(&key("memories", "m")).await.unwrap().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hard_links_fifos_and_directories_are_refused() {
    let (tmp, store) = fresh().await;
    let root = tmp.path().join(".dream");
    // Same filesystem as the store, so a hard link is possible.
    let outside = tmp.path().join("outside-secret");
    std::fs::write(&outside, b"outside secret").unwrap();
    store
        .put(
            &key("memories", "m"),
            Bytes::from_static(b"m"),
            Write::any(),
        )
        .await
        .unwrap();
    std::fs::hard_link(&outside, root.join("memories/linked.md")).unwrap();
    assert_corrupt_naming(
        store.get(&key("memories", "linked")).await,
        "linked",
        "hard link",
    );
    rustix::fs::mknodat(
        rustix::fs::CWD,
        root.join("memories/fifo.md"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    // Must not block on the FIFO.
    let fifo = tokio::time::timeout(Duration::from_secs(10), store.get(&key("memories", "fifo")))
        .await
        .expect("does not hang on a FIFO");
    assert_corrupt_naming(fifo, "fifo", "FIFO");
    std::fs::create_dir(root.join("memories/dir.md")).unwrap();
    assert_corrupt_naming(store.get(&key("memories", "dir")).await, "dir", "directory");
    // A sidecar hard-linked to a file outside is refused, never written through.
    let m_sidecar = root.join("memories/.m.md.meta");
    std::fs::remove_file(&m_sidecar).unwrap();
    std::fs::hard_link(&outside, &m_sidecar).unwrap();
    assert_corrupt_naming(
        store
            .put(
                &key("memories", "m"),
                Bytes::from_static(b"m2"),
                Write::any(),
            )
            .await,
        "m",
        "put with a hard-linked sidecar",
    );
    assert_corrupt_naming(store.get(&key("memories", "m")).await, "m", "get");
    assert_eq!(std::fs::read(&outside).unwrap(), b"outside secret");
    assert_eq!(std::fs::read(root.join("memories/m.md")).unwrap(), b"m");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truncated_temp_files_left_by_a_crash_are_ignored_then_replaced() {
    let (tmp, store) = fresh().await;
    let root = tmp.path().join(".dream");
    let k = key("memories", "a");
    let full = Bytes::from(vec![b'v'; 10_000]);
    let v1 = store.put(&k, full.clone(), Write::any()).await.unwrap();
    // A crash mid-write leaves truncated temporaries behind.
    std::fs::write(root.join("memories/.a.md.tmp"), &full[..3000]).unwrap();
    std::fs::write(
        root.join("memories/.a.md.meta.tmp"),
        b"dream-fs record 1\nvers",
    )
    .unwrap();
    std::fs::write(root.join("memories/.b.md.tmp"), b"half of a new rec").unwrap();
    let record = store.get(&k).await.unwrap().unwrap();
    assert_eq!((record.value, record.version), (full.clone(), v1));
    let page = store.list(&ns("memories"), None, 100).await.unwrap();
    assert_eq!(page.entries.len(), 1, "temporaries are not records");
    assert_eq!(store.namespaces().await.unwrap(), vec![ns("memories")]);
    assert_eq!(store.get(&key("memories", "b")).await.unwrap(), None);
    let v2 = store
        .put(&k, Bytes::from_static(b"next"), Write::matches(v1))
        .await
        .unwrap();
    assert!(v2 > v1);
    assert_eq!(
        store.get(&k).await.unwrap().unwrap().value.as_ref(),
        b"next"
    );
    assert!(
        !root.join("memories/.a.md.tmp").exists(),
        "reused, then renamed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hand_edited_markdown_is_adopted_under_a_new_version() {
    let (tmp, store) = fresh().await;
    let root = tmp.path().join(".dream");
    let k = key("memories", "coffee");
    let v1 = store
        .put(
            &k,
            Bytes::from("---\nname: Coffee\n---\nold\n"),
            Write::any(),
        )
        .await
        .unwrap();
    let other = store
        .put(
            &key("memories", "other"),
            Bytes::from_static(b"o"),
            Write::any(),
        )
        .await
        .unwrap();
    // A person edits the file in place with a permissive editor.
    let file = root.join("memories/coffee.md");
    let edited = "---\nname: Coffee\n---\nThe user now prefers tea.\n";
    std::fs::write(&file, edited).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let record = store.get(&k).await.unwrap().unwrap();
    assert_eq!(record.value.as_ref(), edited.as_bytes(), "the edit is kept");
    assert!(
        record.version > v1 && record.version > other,
        "a fresh version"
    );
    let v2 = record.version;
    // Stable: reading again does not adopt again.
    assert_eq!(store.get(&k).await.unwrap().unwrap().version, v2);
    assert_eq!(mode(&file), 0o600, "permissions tightened on adoption");
    // A writer holding the pre-edit version cannot overwrite the edit unseen.
    match store
        .put(&k, Bytes::from_static(b"clobber"), Write::matches(v1))
        .await
    {
        Err(StoreError::Conflict { current, .. }) => assert_eq!(current, Some(v2)),
        other => panic!("expected Conflict, got {other:?}"),
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), edited);
    // An editor that replaces the file (new inode, no sidecar match) is the same.
    std::fs::remove_file(&file).unwrap();
    std::fs::write(&file, "replaced\n").unwrap();
    let record = store.get(&k).await.unwrap().unwrap();
    assert_eq!(record.value.as_ref(), b"replaced\n");
    assert!(record.version > v2);
    // A file dropped in by hand, with no sidecar at all, becomes a record.
    std::fs::write(root.join("memories/dropped.md"), "by hand\n").unwrap();
    let page = store.list(&ns("memories"), None, 100).await.unwrap();
    let ids: Vec<&str> = page.entries.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["coffee", "dropped", "other"]);
    // Files that are not records (wrong extension, invalid id) are ignored.
    std::fs::write(root.join("memories/notes.txt"), "x").unwrap();
    std::fs::write(root.join("memories/bad name.md"), "x").unwrap();
    assert_eq!(
        store
            .list(&ns("memories"), None, 100)
            .await
            .unwrap()
            .entries
            .len(),
        3
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_sidecars_are_repaired_without_losing_the_value() {
    let (tmp, store) = fresh().await;
    let root = tmp.path().join(".dream");
    let mut newest = Version(0);
    for (i, garbage) in [
        &b""[..],
        b"dream-fs record 1\nversion 3\n",
        b"\0\0\0\0\0\0\0\0",
        &[b'x'; 4096][..],
    ]
    .into_iter()
    .enumerate()
    {
        let k = key("memories", &format!("r{i}"));
        let v = store
            .put(&k, Bytes::from(format!("value {i}")), Write::any())
            .await
            .unwrap();
        newest = newest.max(v);
        std::fs::write(root.join(format!("memories/.r{i}.md.meta")), garbage).unwrap();
        let record = store.get(&k).await.unwrap().unwrap();
        assert_eq!(record.value.as_ref(), format!("value {i}").as_bytes());
        assert!(record.version > newest, "repair never reissues a version");
        newest = record.version;
    }
    // A sidecar whose hash describes other content (a lagging sidecar).
    let k = key("sessions", "s");
    let v1 = store
        .put(&k, Bytes::from_static(b"first"), Write::any())
        .await
        .unwrap();
    let sidecar_v1 = std::fs::read(root.join("sessions/.s.meta")).unwrap();
    let v2 = store
        .put(&k, Bytes::from_static(b"second"), Write::any())
        .await
        .unwrap();
    std::fs::write(root.join("sessions/.s.meta"), &sidecar_v1).unwrap();
    let record = store.get(&k).await.unwrap().unwrap();
    assert_eq!(record.value.as_ref(), b"second", "the value file wins");
    assert!(record.version > v2 && record.version != v1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_value_file_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(".dream");
    let store = FsStore::open_with(&path, FsOptions::new().max_value_size(1024))
        .await
        .unwrap();
    assert_eq!(store.info().capabilities.max_value_size, 1024);
    std::fs::create_dir(path.join("memories")).unwrap();
    std::fs::write(path.join("memories/big.md"), vec![b'x'; 2048]).unwrap();
    assert_corrupt_naming(
        store.get(&key("memories", "big")).await,
        "big",
        "oversized file",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versions_are_never_reused_across_reopen_and_damage() {
    let (tmp, store) = fresh().await;
    let root = tmp.path().join(".dream");
    let k = key("ns", "k");
    let v1 = store
        .put(&k, Bytes::from_static(b"1"), Write::any())
        .await
        .unwrap();
    assert!(store.delete(&k, Write::any()).await.unwrap());
    drop(store);
    let store = reopen(&root).await.unwrap();
    let v2 = store
        .put(&k, Bytes::from_static(b"2"), Write::absent())
        .await
        .unwrap();
    assert!(v2 > v1);
    // A torn or lost hint (as after a power cut) falls back to the durable mark.
    for hint in [&b"garbage"[..], b"", b"00000000000000000001\n"] {
        std::fs::write(root.join(".version"), hint).unwrap();
        let store = reopen(&root).await.unwrap();
        let v = store
            .put(&k, Bytes::from_static(b"n"), Write::any())
            .await
            .unwrap();
        assert!(v > v2, "hint {hint:?}: {v} after {v2}");
    }
    let store = reopen(&root).await.unwrap();
    let before = store
        .put(&k, Bytes::from_static(b"x"), Write::any())
        .await
        .unwrap();
    // The hint is damaged while the store is open: still no reuse.
    std::fs::write(root.join(".version"), b"zzz").unwrap();
    let after = store
        .put(&k, Bytes::from_static(b"y"), Write::any())
        .await
        .unwrap();
    assert!(after > before);
    drop(store);
    // Without the durable mark, reuse could not be ruled out: refused.
    std::fs::remove_file(root.join(".version-reserved")).unwrap();
    assert_corrupt(reopen(&root).await, "missing counter");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_and_fences_persist_and_expire_by_the_clock() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(".dream");
    let clock = ManualClock::new(chrono::DateTime::from_timestamp(1_700_000_000, 0).unwrap());
    let open = || FsStore::open_with(&path, FsOptions::new().clock(Arc::new(clock.clone())));
    let store = open().await.unwrap();
    let lock = LockName::new("dream").unwrap();
    let ttl = Duration::from_secs(5);
    let first = store.try_lease(&lock, ttl).await.unwrap().unwrap();
    assert_eq!(first.token(), 1);
    // Another process (a second open of the same directory) sees it held.
    let other = open().await.unwrap();
    assert!(other.try_lease(&lock, ttl).await.unwrap().is_none());
    clock.advance(chrono::Duration::seconds(4));
    let first = store.renew(&first, ttl).await.unwrap();
    clock.advance(chrono::Duration::seconds(4));
    assert!(
        other.try_lease(&lock, ttl).await.unwrap().is_none(),
        "renewed"
    );
    clock.advance(chrono::Duration::seconds(2));
    // Expired: renew fails even though nobody took the lock.
    assert!(matches!(
        store.renew(&first, ttl).await,
        Err(StoreError::LockLost { .. })
    ));
    assert!(!store.release(first.clone()).await.unwrap());
    drop(store);
    drop(other);
    // Fences survive reopening: the next lease gets the next token.
    let store = open().await.unwrap();
    let second = store.try_lease(&lock, ttl).await.unwrap().unwrap();
    assert_eq!(second.token(), 2);
    let k = key("ns", "k");
    assert!(matches!(
        store
            .put(
                &k,
                Bytes::from_static(b"x"),
                Write::any().fenced(first.fence())
            )
            .await,
        Err(StoreError::LockLost { .. })
    ));
    store
        .put(
            &k,
            Bytes::from_static(b"x"),
            Write::any().fenced(second.fence()),
        )
        .await
        .unwrap();
    // A planted link in place of a lease record is refused, not followed.
    drop(store);
    let outside = tmp.path().join("outside");
    std::fs::write(&outside, b"outside").unwrap();
    symlink(&outside, path.join(".leases/other")).unwrap();
    let store = open().await.unwrap();
    assert_corrupt(
        store.try_lease(&LockName::new("other").unwrap(), ttl).await,
        "linked lease record",
    );
    assert_eq!(std::fs::read(&outside).unwrap(), b"outside");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_insensitive_handling_refuses_ids_differing_only_in_case() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(".dream");
    #[cfg(target_os = "linux")]
    {
        let probe = FsStore::open(&path).await.unwrap();
        assert!(
            !probe.is_case_insensitive(),
            "ext4/tmpfs are case-sensitive"
        );
    }
    let store = FsStore::open_with(&path, FsOptions::new().assume_case_insensitive(true))
        .await
        .unwrap();
    assert!(store.is_case_insensitive());
    let lower = key("memories", "abc");
    store
        .put(&lower, Bytes::from_static(b"lower"), Write::absent())
        .await
        .unwrap();
    match store
        .put(
            &key("memories", "ABC"),
            Bytes::from_static(b"upper"),
            Write::any(),
        )
        .await
    {
        Err(StoreError::InvalidKey { key, reason }) => {
            assert_eq!(key.id.as_str(), "ABC");
            assert!(reason.contains("case"), "{reason}");
        }
        other => panic!("expected InvalidKey, got {other:?}"),
    }
    assert!(matches!(
        store
            .put(
                &key("Memories", "x"),
                Bytes::from_static(b"x"),
                Write::any()
            )
            .await,
        Err(StoreError::InvalidKey { .. })
    ));
    assert_eq!(store.get(&key("memories", "ABC")).await.unwrap(), None);
    assert_eq!(store.get(&key("MEMORIES", "abc")).await.unwrap(), None);
    assert!(
        !store
            .delete(&key("memories", "Abc"), Write::any())
            .await
            .unwrap()
    );
    assert_eq!(
        store.get(&lower).await.unwrap().unwrap().value.as_ref(),
        b"lower"
    );
    assert!(
        store
            .list(&ns("MEMORIES"), None, 10)
            .await
            .unwrap()
            .entries
            .is_empty()
    );
    assert_eq!(
        store
            .list(&ns("memories"), None, 10)
            .await
            .unwrap()
            .entries
            .len(),
        1
    );
}

/// On a case-insensitive filesystem a batch refuses two keys differing only in
/// case, and a key differing in case from an existing record; nothing is written.
#[tokio::test]
async fn batch_refuses_keys_differing_only_in_case_when_case_insensitive() {
    use dream_core::{BatchOp, Precondition};
    let dir = tempfile::tempdir().unwrap();
    let store = FsStore::open_with(
        dir.path().join(".dream"),
        FsOptions::new().assume_case_insensitive(true),
    )
    .await
    .unwrap();
    let k = |id: &str| Key::new(Namespace::new("ns").unwrap(), RecordId::new(id).unwrap());
    let ops = [
        BatchOp::put(k("abc"), &b"1"[..], Precondition::Any),
        BatchOp::put(k("ABC"), &b"2"[..], Precondition::Any),
    ];
    assert!(matches!(
        store.write_batch(&ops, None).await,
        Err(StoreError::InvalidKey { .. })
    ));
    assert_eq!(store.get(&k("abc")).await.unwrap(), None);
    store
        .write_batch(&ops[..1], None)
        .await
        .expect("one key is fine");
    let ops = [
        BatchOp::put(k("other"), &b"3"[..], Precondition::Any),
        BatchOp::put(k("ABC"), &b"2"[..], Precondition::Any),
    ];
    assert!(matches!(
        store.write_batch(&ops, None).await,
        Err(StoreError::InvalidKey { .. })
    ));
    assert_eq!(store.get(&k("other")).await.unwrap(), None);
    assert_eq!(
        store.get(&k("abc")).await.unwrap().unwrap().value.as_ref(),
        b"1"
    );
}

/// `list_versions` reads sidecars, but a hand-edited value file (newer than its
/// sidecar) or a garbage sidecar is loaded and adopted as by `get`.
#[tokio::test]
async fn list_versions_adopts_hand_edits_and_broken_sidecars() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".dream");
    let store = FsStore::open(&path).await.unwrap();
    let ns = Namespace::new("sessions").unwrap();
    let k = |id: &str| Key::new(ns.clone(), RecordId::new(id).unwrap());
    let v1 = store
        .put(&k("a"), Bytes::from_static(b"one"), Write::any())
        .await
        .unwrap();
    let v2 = store
        .put(&k("b"), Bytes::from_static(b"two"), Write::any())
        .await
        .unwrap();
    let page = store.list_versions(&ns, None, 10).await.unwrap();
    let got: Vec<_> = page.entries.iter().map(|e| e.version).collect();
    assert_eq!(got, vec![v1, v2]);
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(path.join("sessions/a"), b"edited").unwrap();
    std::fs::write(path.join("sessions/.b.meta"), b"garbage").unwrap();
    let page = store.list_versions(&ns, None, 10).await.unwrap();
    let a = store.get(&k("a")).await.unwrap().unwrap();
    let b = store.get(&k("b")).await.unwrap().unwrap();
    assert_eq!(a.value.as_ref(), b"edited");
    assert!(a.version > v2 && b.version > v2, "both adopted anew");
    let got: Vec<_> = page.entries.iter().map(|e| e.version).collect();
    assert_eq!(got, vec![a.version, b.version], "listed as adopted");
}
