//! Rules of leases and fences: exclusive, expiring, renewed, released, and a
//! write under a lost fence refused.

use std::sync::Arc;

use dream_core::{Bytes, Fence, RecordStore, Write};

use super::{
    EXPIRY_WAIT, LONG_TTL, SHORT_TTL, assert_held, assert_lock_lost, expired_and_taken_over,
    has_fences, has_leases, key, lock, take, value_of,
};

/// `try_lease` is exclusive: `None` while held; free again after release.
pub async fn lease_is_exclusive(store: Arc<dyn RecordStore>) {
    if !has_leases(&store).await {
        return;
    }
    let l = lock("dream");
    let first = take(&store, &l, LONG_TTL, "free lock").await;
    let racers: Vec<_> = (0..8)
        .map(|_| {
            let store = store.clone();
            let l = l.clone();
            tokio::spawn(async move { store.try_lease(&l, LONG_TTL).await })
        })
        .collect();
    for racer in racers {
        assert!(
            racer.await.expect("task").expect("try_lease").is_none(),
            "held lock is not granted again"
        );
    }
    let other = take(&store, &lock("other"), LONG_TTL, "locks are independent").await;
    assert!(store.release(other).await.expect("release"));
    assert!(
        store.release(first).await.expect("release"),
        "release of a held lease is true"
    );
    let again = store.try_lease(&l, LONG_TTL).await.expect("try_lease");
    assert!(again.is_some(), "released lock can be taken");
}

/// Fence tokens strictly increase per lock.
pub async fn fences_strictly_increase(store: Arc<dyn RecordStore>) {
    if !has_leases(&store).await {
        return;
    }
    let l = lock("dream");
    let mut last = 0;
    for _ in 0..5 {
        let lease = take(&store, &l, LONG_TTL, "free").await;
        assert!(lease.token() > last, "fence {} after {last}", lease.token());
        assert_eq!(
            lease.fence(),
            Fence {
                lock: l.clone(),
                token: lease.token()
            }
        );
        last = lease.token();
        assert!(store.release(lease).await.expect("release"));
    }
}

/// An expired lease is taken over, and the stale holder's fenced write is refused.
pub async fn expired_lease_is_taken_over_and_stale_fence_refused(store: Arc<dyn RecordStore>) {
    if !has_leases(&store).await || !has_fences(&store).await {
        return;
    }
    let l = lock("dream");
    let k = key("ns", "k");
    let stale = take(&store, &l, SHORT_TTL, "free").await;
    store
        .put(
            &k,
            Bytes::from_static(b"stale-ok"),
            Write::any().fenced(stale.fence()),
        )
        .await
        .expect("fenced put while held");
    tokio::time::sleep(EXPIRY_WAIT).await;
    let fresh = take(&store, &l, LONG_TTL, "expired lease is taken over").await;
    assert!(fresh.token() > stale.token());
    assert_lock_lost(
        store
            .put(
                &k,
                Bytes::from_static(b"stale"),
                Write::any().fenced(stale.fence()),
            )
            .await,
        "stale fenced put",
    );
    assert_eq!(
        value_of(&store, &k).await.as_deref(),
        Some(&b"stale-ok"[..]),
        "stale write changed nothing"
    );
    store
        .put(
            &k,
            Bytes::from_static(b"fresh"),
            Write::any().fenced(fresh.fence()),
        )
        .await
        .expect("fresh fenced put");
    assert_lock_lost(
        store.renew(&stale, LONG_TTL).await,
        "renew by the stale holder",
    );
    assert!(
        !store.release(stale).await.expect("release stale"),
        "stale release is false"
    );
    assert_held(&store, &l, "the stale release freed nothing").await;
    assert!(store.release(fresh).await.expect("release fresh"));
}

/// Renew after expiry is `LockLost`, even if nobody took the lock.
pub async fn renew_after_expiry_is_lock_lost(store: Arc<dyn RecordStore>) {
    if !has_leases(&store).await {
        return;
    }
    let l = lock("dream");
    let lease = take(&store, &l, SHORT_TTL, "free").await;
    tokio::time::sleep(EXPIRY_WAIT).await;
    assert_lock_lost(store.renew(&lease, LONG_TTL).await, "renew after expiry");
    take(&store, &l, LONG_TTL, "an expired lock is free").await;
}

/// Renew keeps the fence and pushes the expiry out.
pub async fn renew_keeps_the_fence_and_extends(store: Arc<dyn RecordStore>) {
    if !has_leases(&store).await {
        return;
    }
    let l = lock("dream");
    let lease = take(&store, &l, SHORT_TTL, "free").await;
    let renewed = store.renew(&lease, LONG_TTL).await.expect("renew");
    assert_eq!(renewed.token(), lease.token(), "renew keeps the fence");
    tokio::time::sleep(EXPIRY_WAIT).await;
    assert_held(&store, &l, "renewed lease still held").await;
    if store.info().capabilities.fenced_writes {
        store
            .put(
                &key("ns", "k"),
                Bytes::from_static(b"x"),
                Write::any().fenced(renewed.fence()),
            )
            .await
            .expect("fenced put");
    }
    let again = store.renew(&renewed, LONG_TTL).await.expect("renew again");
    assert!(store.release(again).await.expect("release"));
}

/// `release` is true while held, false once lost (expired, or taken by another).
pub async fn release_reports_whether_still_held(store: Arc<dyn RecordStore>) {
    if !has_leases(&store).await {
        return;
    }
    let l = lock("dream");
    let expired = take(&store, &l, SHORT_TTL, "free").await;
    tokio::time::sleep(EXPIRY_WAIT).await;
    assert!(
        !store.release(expired).await.expect("release expired"),
        "expired lease: release is false"
    );
    let (first, second) = expired_and_taken_over(&store, &l).await;
    assert!(
        !store.release(first).await.expect("release lost"),
        "taken-over lease: release is false"
    );
    assert_held(&store, &l, "second still holds it").await;
    assert!(store.release(second).await.expect("release"));
}

/// A fenced delete by a stale holder is `LockLost` and deletes nothing.
pub async fn fenced_delete_is_checked(store: Arc<dyn RecordStore>) {
    if !has_leases(&store).await || !has_fences(&store).await {
        return;
    }
    let l = lock("dream");
    let k = key("ns", "k");
    store
        .put(&k, Bytes::from_static(b"x"), Write::any())
        .await
        .expect("put");
    let (stale, fresh) = expired_and_taken_over(&store, &l).await;
    assert_lock_lost(
        store.delete(&k, Write::any().fenced(stale.fence())).await,
        "stale fenced delete",
    );
    assert!(value_of(&store, &k).await.is_some(), "nothing deleted");
    assert!(
        store
            .delete(&k, Write::any().fenced(fresh.fence()))
            .await
            .expect("fresh fenced delete")
    );
}

/// A fence for a lock never leased, or with a made-up token, is refused.
pub async fn fence_for_unknown_lock_is_refused(store: Arc<dyn RecordStore>) {
    if !has_fences(&store).await {
        return;
    }
    let k = key("ns", "k");
    let made_up = Fence {
        lock: lock("never-leased"),
        token: 1,
    };
    assert_lock_lost(
        store
            .put(&k, Bytes::from_static(b"x"), Write::any().fenced(made_up))
            .await,
        "fence of unknown lock",
    );
    assert_eq!(store.get(&k).await.expect("get"), None);
    if store.info().capabilities.leases {
        let lease = take(&store, &lock("real"), LONG_TTL, "free").await;
        let future = Fence {
            lock: lease.lock().clone(),
            token: lease.token() + 1,
        };
        assert_lock_lost(
            store
                .put(&k, Bytes::from_static(b"x"), Write::absent().fenced(future))
                .await,
            "future token",
        );
        assert_eq!(store.get(&k).await.expect("get"), None);
        assert!(store.release(lease).await.expect("release"));
    }
}
