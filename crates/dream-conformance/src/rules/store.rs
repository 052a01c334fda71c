//! Rules of the store as a whole: what `info` says, `compact`, and the change
//! notice.

use std::sync::Arc;
use std::time::Duration;

use dream_core::{Bytes, Precondition, RecordStore, Write};

use super::key;

/// `info()` is stable and sane.
pub async fn info_is_consistent(store: Arc<dyn RecordStore>) {
    let info = store.info();
    assert!(!info.name.is_empty());
    assert_eq!(info, store.info());
    assert!(
        info.capabilities.max_value_size >= 1024 * 1024,
        "stores accept at least 1 MiB"
    );
    if info.capabilities.fenced_writes {
        assert!(info.capabilities.leases, "fences come from leases");
    }
    let _ = Precondition::Any;
}

/// `compact` keeps every live record with its value and version, and a deleted
/// or overwritten value stays gone; the store works as before afterwards.
pub async fn compact_keeps_live_records_and_drops_removed_ones(store: Arc<dyn RecordStore>) {
    store.compact().await.expect("compact an empty store");
    let kept = key("compact", "kept");
    let replaced = key("compact", "replaced");
    let removed = key("compact", "removed");
    store
        .put(&kept, Bytes::from_static(b"still here"), Write::any())
        .await
        .expect("put kept");
    store
        .put(&replaced, Bytes::from_static(b"old value"), Write::any())
        .await
        .expect("put replaced");
    store
        .put(&replaced, Bytes::from_static(b"new value"), Write::any())
        .await
        .expect("overwrite replaced");
    store
        .put(&removed, Bytes::from_static(b"forget me"), Write::any())
        .await
        .expect("put removed");
    assert!(
        store.delete(&removed, Write::any()).await.expect("delete"),
        "the record was there"
    );
    let before_kept = store.get(&kept).await.expect("get").expect("kept");
    let before_replaced = store.get(&replaced).await.expect("get").expect("replaced");
    store.compact().await.expect("compact");
    assert_eq!(
        store.get(&kept).await.expect("get"),
        Some(before_kept.clone()),
        "compact keeps a live record's value and version"
    );
    assert_eq!(
        store.get(&replaced).await.expect("get"),
        Some(before_replaced),
        "compact keeps the newest value of an overwritten record"
    );
    assert_eq!(
        store.get(&removed).await.expect("get"),
        None,
        "a deleted record stays deleted"
    );
    let next = store
        .put(
            &kept,
            Bytes::from_static(b"after"),
            Write::matches(before_kept.version),
        )
        .await
        .expect("a write after compact");
    assert!(next > before_kept.version, "versions keep increasing");
}

/// How long a store that notifies may take to hear a write.
pub const NOTICE_WAIT: Duration = Duration::from_secs(10);

/// `watch_changes` gives a notice exactly when `info` says the store notifies,
/// and then a put moves its counter within [`NOTICE_WAIT`].
pub async fn watch_changes_hears_writes(store: Arc<dyn RecordStore>) {
    let notifies = store.info().capabilities.notifies;
    let watch = store.watch_changes().await.expect("watch_changes");
    assert_eq!(
        watch.is_some(),
        notifies,
        "watch_changes gives a notice exactly when the store says it notifies"
    );
    let Some(mut changes) = watch else {
        return;
    };
    changes.borrow_and_update();
    store
        .put(&key("watch", "k"), Bytes::from_static(b"1"), Write::any())
        .await
        .expect("put");
    assert!(
        tokio::time::timeout(NOTICE_WAIT, changes.changed())
            .await
            .is_ok_and(|heard| heard.is_ok()),
        "a put moves the counter within {NOTICE_WAIT:?}"
    );
}
