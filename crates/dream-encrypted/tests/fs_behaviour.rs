//! `EncryptedStore` over a real dream-fs directory, looked at through its files:
//! nothing readable on disk, every tamper kind made by editing the files, and
//! the write counter across processes. (What every inner store must do,
//! restarts included, is the suite in `behaviour.rs`.)

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use dream_conformance::process::{ChildProcess, child_role};
use dream_core::{
    Bytes, Key, Memory, MemoryId, MemoryKind, Message, Namespace, RecordStore, Role, Scope,
    Session, SessionId, Write, render_memory,
};
use dream_encrypted::envelope::HEADER_LEN;
use dream_encrypted::{EncryptedStore, EncryptionError, EncryptionOptions, KeyId, KeyRing};
use dream_fs::FsStore;

mod common;
use common::{assert_corrupt, key, material, ring1, ring12};

async fn open(root: &Path, ring: KeyRing, options: EncryptionOptions) -> EncryptedStore<FsStore> {
    let inner = FsStore::open(root).await.expect("open dream-fs");
    EncryptedStore::with_options(inner, ring, options)
}

/// Every regular file under `dir`, recursively.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read_dir") {
            let entry = entry.expect("entry");
            let kind = entry.file_type().expect("file type");
            if kind.is_dir() {
                stack.push(entry.path());
            } else if kind.is_file() {
                out.push(entry.path());
            }
        }
    }
    out
}

/// The one file on disk holding exactly the bytes the inner store has for `k`.
async fn file_of(store: &EncryptedStore<FsStore>, root: &Path, k: &Key) -> PathBuf {
    let raw = store
        .inner()
        .get(k)
        .await
        .expect("inner get")
        .expect("present")
        .value;
    let found: Vec<PathBuf> = files(root)
        .into_iter()
        .filter(|p| std::fs::read(p).expect("read") == raw.as_ref())
        .collect();
    assert_eq!(found.len(), 1, "exactly one file holds {k}: {found:?}");
    found.into_iter().next().expect("one")
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_plaintext_reaches_the_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join(".dream");
    let store = open(&root, ring1(), EncryptionOptions::default()).await;
    let phrase = "the-launch-code-is-purple-otter-4471";
    let name = "zanzibar-deployment-ritual";
    let now = Utc::now();

    let mut memory = Memory::new(
        MemoryId::time_ordered(now),
        MemoryKind::Project,
        name,
        "how the team deploys on Fridays",
        format!("Before deploying, say {phrase} twice.\n"),
        now,
    );
    memory.tags.push("deploy-tag-quokka".to_owned());
    memory
        .metadata
        .insert("note".to_owned(), serde_json::json!({"hint": phrase}));
    let mk = Key::new(
        Namespace::new("memories").expect("ns"),
        memory.id.clone().into(),
    );
    let markdown = render_memory(&memory);
    assert!(markdown.contains(phrase) && markdown.contains(name));
    store
        .put(&mk, Bytes::from(markdown.clone()), Write::absent())
        .await
        .expect("put memory");

    let session = Session {
        id: SessionId::time_ordered(now),
        scope: Scope::default(),
        created_at: now,
        messages: vec![
            Message::new(Role::User, format!("remember {phrase} for {name}")),
            Message::new(Role::Assistant, "noted"),
        ],
    };
    let sk = Key::new(
        Namespace::new("sessions").expect("ns"),
        session.id.clone().into(),
    );
    store
        .put(
            &sk,
            Bytes::from(serde_json::to_vec(&session).expect("json")),
            Write::absent(),
        )
        .await
        .expect("put session");

    // Reads give the plaintext back.
    assert_eq!(
        store.get(&mk).await.expect("get").expect("present").value,
        Bytes::from(markdown)
    );

    // Every byte of every file in the directory: neither phrase nor name.
    let all = files(&root);
    assert!(
        all.len() >= 6,
        "value files, sidecars, marker, counter: {all:?}"
    );
    for path in &all {
        let bytes = std::fs::read(path).expect("read");
        for needle in [phrase, name, "deploy-tag-quokka", "Fridays", "purple-otter"] {
            assert!(
                !contains(&bytes, needle.as_bytes()),
                "{needle} found in {}",
                path.display()
            );
        }
    }
    // The value files are envelopes.
    let memory_file = file_of(&store, &root, &mk).await;
    assert!(memory_file.ends_with(format!("memories/{}.md", memory.id)));
    assert_eq!(&std::fs::read(&memory_file).expect("read")[..4], b"DRME");
}

/// Stores two records, then for each tamper kind edits the files on disk and
/// checks the layer reports one `Corrupt` naming the record. dream-fs adopts a
/// hand-edited value file as a new version (its hash detects accidents, not
/// attackers), so the edited bytes reach the envelope check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tamper_kind_on_disk_is_one_corrupt_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join(".dream");
    let store = open(&root, ring12(), EncryptionOptions::default()).await;
    let a = key("memories", "alpha");
    let b = key("memories", "bravo");
    let s = key("sessions", "alpha");
    store
        .put(&a, Bytes::from_static(b"alpha secret body"), Write::any())
        .await
        .expect("put a");
    store
        .put(&b, Bytes::from_static(b"bravo secret body"), Write::any())
        .await
        .expect("put b");
    store
        .put(&s, Bytes::from_static(b"session secret"), Write::any())
        .await
        .expect("put s");
    let file_a = file_of(&store, &root, &a).await;
    let file_b = file_of(&store, &root, &b).await;
    let file_s = file_of(&store, &root, &s).await;
    let good_a = std::fs::read(&file_a).expect("read a");
    let good_b = std::fs::read(&file_b).expect("read b");
    let good_s = std::fs::read(&file_s).expect("read s");

    // Each case: (what, bytes written into a's file).
    let mut cases: Vec<(&str, Vec<u8>)> = Vec::new();
    let mut flip = good_a.clone();
    flip[HEADER_LEN + 4] ^= 0x08;
    cases.push(("bit flip in ciphertext", flip));
    let mut flip = good_a.clone();
    *flip.last_mut().expect("tag") ^= 0x80;
    cases.push(("bit flip in tag", flip));
    cases.push(("truncated by one byte", good_a[..good_a.len() - 1].to_vec()));
    cases.push(("truncated into the header", good_a[..10].to_vec()));
    cases.push(("truncated to nothing", Vec::new()));
    cases.push(("swapped with another record", good_b.clone()));
    cases.push(("copied from another namespace", good_s.clone()));
    let mut header = good_a.clone();
    header[8] = 1; // key id 2 → 1, a key the ring holds
    cases.push(("header key id edited", header));
    let mut header = good_a.clone();
    header[12] ^= 0x01; // a nonce byte
    cases.push(("header nonce edited", header));
    let mut header = good_a.clone();
    header[4] = 9;
    cases.push(("header format version edited", header));
    let mut unknown = good_a.clone();
    unknown[5..9].copy_from_slice(&1000u32.to_be_bytes());
    cases.push(("unknown key id", unknown));
    let mut magic = good_a.clone();
    magic[..4].copy_from_slice(b"PLN1");
    cases.push(("wrong magic", magic));
    cases.push((
        "plaintext written by hand",
        b"---\nname: hand-written\n---\nnot encrypted at all, long enough\n".to_vec(),
    ));

    for (what, bytes) in cases {
        std::fs::write(&file_a, &bytes).expect("edit file");
        assert_corrupt(store.get(&a).await, &a, what);
        assert_corrupt(store.list(&a.namespace, None, 10).await, &a, what);
        // The neighbour is untouched.
        assert_eq!(
            store
                .get(&b)
                .await
                .expect("get b")
                .expect("b")
                .value
                .as_ref(),
            b"bravo secret body",
            "{what}"
        );
        // Restoring the genuine bytes makes the record readable again.
        std::fs::write(&file_a, &good_a).expect("restore");
        assert_eq!(
            store
                .get(&a)
                .await
                .expect("get a")
                .expect("a")
                .value
                .as_ref(),
            b"alpha secret body",
            "{what}: restored"
        );
    }

    // A real swap: each file holds the other's envelope.
    std::fs::write(&file_a, &good_b).expect("swap");
    std::fs::write(&file_b, &good_a).expect("swap");
    assert_corrupt(store.get(&a).await, &a, "swap a");
    assert_corrupt(store.get(&b).await, &b, "swap b");
    std::fs::write(&file_a, &good_a).expect("restore");
    std::fs::write(&file_b, &good_b).expect("restore");

    // Wrong key: the same directory opened with other material under the same id.
    drop(store);
    let wrong = open(
        &root,
        KeyRing::new(KeyId::new(2), material(0x99)),
        EncryptionOptions::default(),
    )
    .await;
    assert_corrupt(wrong.get(&a).await, &a, "wrong key");
    assert_corrupt(wrong.get(&s).await, &s, "wrong key");
    drop(wrong);
    let right = open(&root, ring12(), EncryptionOptions::default()).await;
    assert_eq!(
        right.get(&s).await.expect("get").expect("s").value.as_ref(),
        b"session secret"
    );
}

const DIR_ENV: &str = "DREAM_ENCRYPTED_TEST_DIR";

/// Two processes writing through their own `EncryptedStore` on one directory
/// until the key is exhausted: together they encrypt exactly the ceiling.
#[test]
fn write_counter_holds_across_processes() {
    if let Some(role) = child_role() {
        let root = PathBuf::from(std::env::var(DIR_ENV).expect("dir"));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let wrote = runtime.block_on(async {
            let options = EncryptionOptions::default()
                .write_ceiling(60)
                .counter_block(4);
            let store = Arc::new(open(&root, ring1(), options).await);
            let mut tasks = Vec::new();
            for t in 0..4 {
                let store = store.clone();
                let role = role.clone();
                tasks.push(tokio::spawn(async move {
                    let mut ok = 0u64;
                    loop {
                        let k = key("race", &format!("{role}-{t}-{ok}"));
                        match store
                            .put(&k, Bytes::from_static(b"v"), Write::absent())
                            .await
                        {
                            Ok(_) => ok += 1,
                            Err(err) => {
                                assert!(
                                    matches!(
                                        EncryptionError::from_store_error(&err),
                                        Some(EncryptionError::KeyExhausted { .. })
                                    ),
                                    "{err:?}"
                                );
                                return ok;
                            }
                        }
                    }
                }));
            }
            let mut total = 0;
            for task in tasks {
                total += task.await.expect("task");
            }
            total
        });
        println!("WROTE {wrote}");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join(".dream");
    let path = root.to_str().expect("utf8 path").to_owned();
    // Create the store first so the children only open it.
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        FsStore::open(&root).await.expect("create");
    });
    let mut children: Vec<ChildProcess> = ["p1", "p2"]
        .iter()
        .map(|role| {
            ChildProcess::spawn(
                "write_counter_holds_across_processes",
                role,
                &[(DIR_ENV, path.as_str())],
            )
            .expect("spawn")
        })
        .collect();
    let mut total = 0u64;
    for child in &mut children {
        let line = child
            .wait_for_line("WROTE", Duration::from_secs(120))
            .expect("child reports");
        let n: u64 = line
            .rsplit(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .expect("count");
        total += n;
        assert!(child.wait(Duration::from_secs(60)).expect("exit").success());
    }
    assert_eq!(total, 60, "every count used once, the ceiling never passed");
    runtime.block_on(async {
        let store = open(&root, ring1(), EncryptionOptions::default()).await;
        assert_eq!(
            store
                .key_usage(KeyId::new(1))
                .await
                .expect("usage")
                .reserved,
            60
        );
        let page = store
            .list(&Namespace::new("race").expect("ns"), None, 1000)
            .await
            .expect("list");
        assert_eq!(page.entries.len(), 60);
    });
}
