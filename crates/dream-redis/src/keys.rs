//! The key layout. Every key starts with `{<prefix>}:` — a Redis Cluster hash
//! tag, so one store lives in one slot. Namespaces, ids and lock names are
//! validated `[A-Za-z0-9_-]` (no `:`), so the layout is unambiguous.

use dream_core::{Key, LockName, Namespace};

#[derive(Debug, Clone)]
pub(crate) struct Keys {
    base: String,
}

impl Keys {
    /// `prefix` is already validated (`[A-Za-z0-9_-]`, no braces).
    pub(crate) fn new(prefix: &str) -> Self {
        Keys {
            base: format!("{{{prefix}}}:"),
        }
    }

    fn join(&self, parts: &[&str]) -> String {
        let mut out = self.base.clone();
        for (i, part) in parts.iter().enumerate() {
            if i > 0 {
                out.push(':');
            }
            out.push_str(part);
        }
        out
    }

    /// The store's random epoch (string).
    pub(crate) fn epoch(&self) -> String {
        self.join(&["epoch"])
    }

    /// The server persistence settings last warned about (string): the open-time
    /// warning is given once per store, again only when the settings change.
    pub(crate) fn persistence_noted(&self) -> String {
        self.join(&["persistence-noted"])
    }

    /// The pub/sub channel every write publishes on (the write scripts name it
    /// as the epoch key, `KEYS[1]`, followed by `:changes`).
    pub(crate) fn changes(&self) -> String {
        format!("{}:changes", self.epoch())
    }

    /// The store-wide version counter (integer).
    pub(crate) fn version(&self) -> String {
        self.join(&["version"])
    }

    /// The set of namespaces holding at least one record.
    pub(crate) fn namespaces(&self) -> String {
        self.join(&["namespaces"])
    }

    /// A namespace's index: sorted set, score 0, member = id.
    pub(crate) fn index(&self, namespace: &Namespace) -> String {
        self.join(&["idx", namespace.as_str()])
    }

    /// The prefix of a namespace's record keys (the id follows).
    pub(crate) fn record_prefix(&self, namespace: &Namespace) -> String {
        let mut out = self.join(&["rec", namespace.as_str()]);
        out.push(':');
        out
    }

    /// A record: hash with fields `n` (version) and `v` (value).
    pub(crate) fn record(&self, key: &Key) -> String {
        self.join(&["rec", key.namespace.as_str(), key.id.as_str()])
    }

    /// A lock's current lease: its random holder, with the lease's TTL.
    pub(crate) fn lease(&self, lock: &LockName) -> String {
        self.join(&["lease", lock.as_str()])
    }

    /// A lock's fence counter: the newest token issued (integer, no TTL).
    pub(crate) fn fence(&self, lock: &LockName) -> String {
        self.join(&["fence", lock.as_str()])
    }

    /// A `SCAN MATCH` pattern for every key of the store.
    pub(crate) fn pattern(&self) -> String {
        format!("{}*", self.base)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dream_core::RecordId;

    #[test]
    fn layout_is_hash_tagged_and_unambiguous() {
        let keys = Keys::new("team-1");
        let ns = Namespace::new("memories").unwrap();
        let key = Key::new(ns.clone(), RecordId::new("abc_D-9").unwrap());
        let lock = LockName::new("dream").unwrap();
        assert_eq!(keys.epoch(), "{team-1}:epoch");
        assert_eq!(keys.version(), "{team-1}:version");
        assert_eq!(keys.namespaces(), "{team-1}:namespaces");
        assert_eq!(keys.index(&ns), "{team-1}:idx:memories");
        assert_eq!(keys.record(&key), "{team-1}:rec:memories:abc_D-9");
        assert_eq!(
            format!("{}{}", keys.record_prefix(&ns), key.id),
            keys.record(&key)
        );
        assert_eq!(keys.lease(&lock), "{team-1}:lease:dream");
        assert_eq!(keys.fence(&lock), "{team-1}:fence:dream");
        assert_eq!(keys.pattern(), "{team-1}:*");
    }
}
