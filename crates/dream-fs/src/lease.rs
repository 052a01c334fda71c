//! Persisted leases and fences: one small file per lock in `.leases/`, holding
//! the lock's newest fence token, the current holder (if any) and its expiry in
//! wall-clock milliseconds. Every change is written durably (temporary file,
//! fsync, rename, directory fsync) under the store lock, so a fence token is
//! never issued twice, not even across a crash, and a fence check made under
//! the same lock as a write is atomic with it.

use std::os::fd::BorrowedFd;

use dream_core::{LockName, StoreError};

use crate::error::{Context, corrupt_store};
use crate::io::{self, Opened};

/// Directory of the lease files.
pub(crate) const LEASES: &str = ".leases";

/// One lock's persisted state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LeaseRecord {
    /// The lock's name as written (differs from the file name only on a
    /// case-insensitive filesystem, where two names can share a file).
    pub lock: String,
    /// The newest fence token issued for this lock.
    pub fence: u64,
    /// The current holder's random identity, if any.
    pub holder: Option<String>,
    /// When the current lease expires, in milliseconds since the Unix epoch.
    pub expires_ms: i64,
}

impl LeaseRecord {
    /// A lock never leased.
    pub fn new(lock: &LockName) -> Self {
        LeaseRecord {
            lock: lock.as_str().to_owned(),
            fence: 0,
            holder: None,
            expires_ms: 0,
        }
    }

    /// Whether `holder` holds the lease with `token` at `now_ms`.
    pub fn is_held_by(&self, holder: &str, token: u64, now_ms: i64) -> bool {
        self.holder.as_deref() == Some(holder) && self.fence == token && self.expires_ms > now_ms
    }

    /// Whether anyone holds the lease at `now_ms`.
    pub fn is_held(&self, now_ms: i64) -> bool {
        self.holder.is_some() && self.expires_ms > now_ms
    }

    fn render(&self) -> String {
        format!(
            "dream-fs lease 1\nlock {}\nfence {}\nholder {}\nexpires {}\n",
            self.lock,
            self.fence,
            self.holder.as_deref().unwrap_or("-"),
            self.expires_ms
        )
    }

    fn parse(text: &str) -> Option<Self> {
        let mut lines = text.lines();
        if lines.next()? != "dream-fs lease 1" {
            return None;
        }
        let lock = lines.next()?.strip_prefix("lock ")?.to_owned();
        let fence = lines.next()?.strip_prefix("fence ")?.parse().ok()?;
        let holder = match lines.next()?.strip_prefix("holder ")? {
            "-" => None,
            h if !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()) => Some(h.to_owned()),
            _ => return None,
        };
        let expires_ms = lines.next()?.strip_prefix("expires ")?.parse().ok()?;
        if lines.next().is_some() || !text.ends_with('\n') {
            return None;
        }
        Some(LeaseRecord {
            lock,
            fence,
            holder,
            expires_ms,
        })
    }
}

/// Reads a lock's record; `None` if the lock was never leased.
pub(crate) fn read(
    leases: BorrowedFd<'_>,
    lock: &LockName,
) -> Result<Option<LeaseRecord>, StoreError> {
    let what = || format!("read the lease record of lock {lock}");
    match io::read_small(leases, lock.as_str(), 1024).context(what)? {
        Opened::Found(bytes) => std::str::from_utf8(&bytes)
            .ok()
            .and_then(LeaseRecord::parse)
            .map(Some)
            .ok_or_else(|| corrupt_store(format!("the lease record of lock {lock} is malformed"))),
        Opened::Missing => Ok(None),
        Opened::Symlink => Err(corrupt_store(format!(
            "the lease record of lock {lock} is a symbolic link; it is not followed"
        ))),
        Opened::WrongKind(why) => Err(corrupt_store(format!(
            "the lease record of lock {lock} is {why}"
        ))),
    }
}

/// Writes a lock's record durably.
pub(crate) fn write(
    leases: BorrowedFd<'_>,
    lock: &LockName,
    record: &LeaseRecord,
) -> Result<(), StoreError> {
    let tmp = format!(".{lock}.tmp");
    io::write_durable(leases, &tmp, lock.as_str(), record.render().as_bytes())
        .context(|| format!("persist the lease record of lock {lock}"))
}

/// A fresh random holder identity (128 bits, hex).
pub(crate) fn new_holder() -> String {
    format!("{:032x}", rand::random::<u128>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_reject_garbage() {
        let record = LeaseRecord {
            lock: "dream".into(),
            fence: 7,
            holder: Some(new_holder()),
            expires_ms: 1_700_000_000_000,
        };
        assert_eq!(LeaseRecord::parse(&record.render()), Some(record.clone()));
        let free = LeaseRecord::new(&LockName::new("x").unwrap());
        assert_eq!(LeaseRecord::parse(&free.render()), Some(free));
        let text = record.render();
        assert_eq!(
            LeaseRecord::parse(&text[..text.len() - 1]),
            None,
            "truncated"
        );
        assert_eq!(
            LeaseRecord::parse(&text.replace("fence 7", "fence x")),
            None
        );
        assert_eq!(LeaseRecord::parse(&format!("{text}extra\n")), None);
        assert_eq!(LeaseRecord::parse(""), None);
    }

    #[test]
    fn held_means_same_holder_same_token_not_expired() {
        let record = LeaseRecord {
            lock: "l".into(),
            fence: 3,
            holder: Some("ab".into()),
            expires_ms: 100,
        };
        assert!(record.is_held_by("ab", 3, 99));
        assert!(!record.is_held_by("ab", 3, 100), "expired");
        assert!(!record.is_held_by("ab", 2, 99), "old token");
        assert!(!record.is_held_by("cd", 3, 99), "other holder");
        assert!(record.is_held(99));
        assert!(!record.is_held(100));
    }
}
