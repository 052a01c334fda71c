//! Leases with a watchdog: a held lease is renewed every ttl/3 until released; when
//! a renewal fails for good the lease is marked lost and every later step of the
//! operation stops with `LockLost` (the store's fences stop any write that races).

use std::sync::Arc;
use std::time::Duration;

use dream_core::{Fence, Lease, LockName, RecordStore, StoreError};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::error::{DreamError, Result};

/// A lease held by this process, kept alive by a background renewal task.
#[derive(Debug)]
pub(crate) struct HeldLease {
    store: Arc<dyn RecordStore>,
    lease: Lease,
    lost: watch::Receiver<bool>,
    task: JoinHandle<()>,
    /// Set once [`HeldLease::release`] gave the lock up.
    released: bool,
}

impl HeldLease {
    /// Takes `lock` if free; `Ok(None)` while someone else holds it.
    pub async fn try_take(
        store: &Arc<dyn RecordStore>,
        lock: &LockName,
        ttl: Duration,
    ) -> Result<Option<Self>> {
        Ok(store
            .try_lease(lock, ttl)
            .await?
            .map(|lease| Self::watch(store.clone(), lease, ttl)))
    }

    /// Takes `lock`, waiting up to `wait` for its holder to release it or let it expire.
    pub async fn take(
        store: &Arc<dyn RecordStore>,
        lock: &LockName,
        ttl: Duration,
        wait: Duration,
    ) -> Result<Self> {
        let deadline = Instant::now() + wait;
        let mut pause = Duration::from_millis(20);
        loop {
            if let Some(held) = Self::try_take(store, lock, ttl).await? {
                return Ok(held);
            }
            if Instant::now() + pause > deadline {
                return Err(DreamError::Busy { lock: lock.clone() });
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(250));
        }
    }

    fn watch(store: Arc<dyn RecordStore>, lease: Lease, ttl: Duration) -> Self {
        let (tx, lost) = watch::channel(false);
        let task = tokio::spawn(renew_loop(store.clone(), lease.clone(), ttl, tx));
        HeldLease {
            store,
            lease,
            lost,
            task,
            released: false,
        }
    }

    /// The fence to put on every write made under this lease.
    pub fn fence(&self) -> Fence {
        self.lease.fence()
    }

    /// `LockLost` once the watchdog failed to renew.
    pub fn check(&self) -> Result<()> {
        if *self.lost.borrow() {
            Err(DreamError::LockLost {
                lock: self.lease.lock().clone(),
            })
        } else {
            Ok(())
        }
    }

    /// Resolves when the lease is lost (never, while it is held).
    pub async fn lost(&self) -> DreamError {
        let mut rx = self.lost.clone();
        // An error means the watchdog ended without losing the lease: wait forever.
        if rx.wait_for(|lost| *lost).await.is_err() {
            std::future::pending::<()>().await;
        }
        DreamError::LockLost {
            lock: self.lease.lock().clone(),
        }
    }

    /// Runs `work` unless the lease is lost first.
    pub async fn guard<T>(&self, work: impl Future<Output = Result<T>>) -> Result<T> {
        self.check()?;
        tokio::select! {
            result = work => result,
            lost = self.lost() => Err(lost),
        }
    }

    /// Stops renewing and gives the lock up; `false` when it had been lost.
    pub async fn release(mut self) -> bool {
        self.released = true;
        self.task.abort();
        let lease = self.lease.clone();
        match self.store.release(lease).await {
            Ok(held) => held,
            Err(e) => {
                tracing::warn!(lock = %self.lease.lock(), error = %e, "releasing a lease failed; it will expire");
                false
            }
        }
    }
}

impl Drop for HeldLease {
    /// A lease dropped unreleased (its operation's future was dropped: a
    /// cancelled call) is released by a task on the runtime, so the lock is
    /// free at once rather than after its ttl; a write of the dropped operation
    /// still in flight is refused by its fence. With no runtime it expires.
    fn drop(&mut self) {
        self.task.abort();
        if self.released {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let store = self.store.clone();
            let lease = self.lease.clone();
            runtime.spawn(async move {
                if let Err(e) = store.release(lease).await {
                    tracing::warn!(error = %e, "releasing a dropped lease failed; it will expire");
                }
            });
        }
    }
}

async fn renew_loop(
    store: Arc<dyn RecordStore>,
    lease: Lease,
    ttl: Duration,
    lost: watch::Sender<bool>,
) {
    let period = ttl / 3;
    let mut last_renewed = Instant::now();
    loop {
        tokio::time::sleep(period).await;
        match store.renew(&lease, ttl).await {
            Ok(_) => last_renewed = Instant::now(),
            Err(StoreError::LockLost { .. }) => {
                tracing::warn!(lock = %lease.lock(), "lease lost: renewal refused");
                let _ = lost.send(true);
                return;
            }
            Err(e) => {
                tracing::warn!(lock = %lease.lock(), error = %e, "lease renewal failed; retrying");
                if last_renewed.elapsed() >= ttl {
                    let _ = lost.send(true);
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dream_core::testing::MemoryStore;
    use dream_core::{Clock, ManualClock};

    fn lock() -> LockName {
        LockName::new("t").unwrap()
    }

    #[tokio::test]
    async fn watchdog_keeps_a_lease_alive_past_its_ttl() {
        let store: Arc<dyn RecordStore> = Arc::new(MemoryStore::new());
        let ttl = Duration::from_secs(1);
        let held = HeldLease::try_take(&store, &lock(), ttl)
            .await
            .unwrap()
            .unwrap();
        tokio::time::sleep(Duration::from_millis(3_200)).await;
        held.check().unwrap();
        assert!(store.try_lease(&lock(), ttl).await.unwrap().is_none());
        assert!(held.release().await);
        assert!(store.try_lease(&lock(), ttl).await.unwrap().is_some());
    }

    #[tokio::test]
    async fn watchdog_reports_a_lost_lease() {
        let clock = ManualClock::new(chrono::Utc::now());
        let store: Arc<dyn RecordStore> =
            Arc::new(MemoryStore::with_clock(Arc::new(clock.clone())));
        let ttl = Duration::from_secs(1);
        let held = HeldLease::try_take(&store, &lock(), ttl)
            .await
            .unwrap()
            .unwrap();
        // The lease expires on the store's clock and another holder takes the lock.
        clock.advance(chrono::Duration::seconds(5));
        let thief = store.try_lease(&lock(), ttl).await.unwrap();
        assert!(thief.is_some());
        let started = Instant::now();
        let err = held.guard(std::future::pending::<Result<()>>()).await;
        assert!(matches!(err, Err(DreamError::LockLost { .. })));
        assert!(started.elapsed() < Duration::from_secs(3));
        assert!(matches!(held.check(), Err(DreamError::LockLost { .. })));
        assert!(!held.release().await);
        let _ = clock.now();
    }

    #[tokio::test]
    async fn a_lease_dropped_unreleased_is_released_soon() {
        let store: Arc<dyn RecordStore> = Arc::new(MemoryStore::new());
        let ttl = Duration::from_secs(60);
        let held = HeldLease::try_take(&store, &lock(), ttl)
            .await
            .unwrap()
            .unwrap();
        // A cancelled operation: its future, and the lease in it, dropped.
        drop(held);
        let again = HeldLease::take(&store, &lock(), ttl, Duration::from_secs(5))
            .await
            .unwrap();
        assert!(again.release().await);
    }

    #[tokio::test]
    async fn take_waits_for_an_expiring_holder_and_gives_up_when_busy() {
        let store: Arc<dyn RecordStore> = Arc::new(MemoryStore::new());
        let ttl = Duration::from_secs(1);
        let _other = store.try_lease(&lock(), ttl).await.unwrap().unwrap();
        let busy = HeldLease::take(&store, &lock(), ttl, Duration::from_millis(200)).await;
        assert!(matches!(busy, Err(DreamError::Busy { .. })));
        // The other holder never renews: after its TTL the lock is ours.
        let held = HeldLease::take(&store, &lock(), ttl, Duration::from_secs(3))
            .await
            .unwrap();
        held.check().unwrap();
        held.release().await;
    }
}
