//! Identifier newtypes. Every id is validated at construction against
//! `^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`, so no id can ever name a path, a glob or
//! anything but itself. None is ever derived from body text.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Longest id accepted, in bytes.
pub const MAX_ID_LEN: usize = 128;

/// An id that failed validation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {kind} {shown}: {reason}")]
pub struct InvalidId {
    /// Which kind of id was being built (`memory id`, `namespace`, …).
    pub kind: &'static str,
    /// The rejected input, escaped and shortened for display.
    pub shown: String,
    /// Why it was rejected.
    pub reason: &'static str,
}

/// Checks `s` against the id rule; `kind` names the id in the error.
pub fn validate_id(s: &str, kind: &'static str) -> Result<(), InvalidId> {
    let fail = |reason| {
        let mut shown: String = s.chars().take(40).collect();
        if shown.len() < s.len() {
            shown.push('…');
        }
        Err(InvalidId {
            kind,
            shown: format!("{shown:?}"),
            reason,
        })
    };
    let bytes = s.as_bytes();
    match bytes.first() {
        None => return fail("is empty"),
        Some(b) if !b.is_ascii_alphanumeric() => return fail("must start with A-Z, a-z or 0-9"),
        _ => {}
    }
    if bytes.len() > MAX_ID_LEN {
        return fail("is longer than 128 bytes");
    }
    if !bytes
        .iter()
        .all(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-')
    {
        return fail("may contain only A-Z, a-z, 0-9, '_' and '-'");
    }
    Ok(())
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $kind:literal) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// Validates `s` and wraps it.
            pub fn new(s: impl Into<String>) -> Result<Self, InvalidId> {
                let s = s.into();
                validate_id(&s, $kind)?;
                Ok(Self(s))
            }

            /// A fresh time-ordered id (ULID): listing such ids by bytes lists them by time.
            pub fn time_ordered(at: DateTime<Utc>) -> Self {
                Self(ulid::Ulid::from_datetime(at.into()).to_string())
            }

            /// The id as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl TryFrom<String> for $name {
            type Error = InvalidId;
            fn try_from(s: String) -> Result<Self, InvalidId> {
                Self::new(s)
            }
        }

        impl TryFrom<&str> for $name {
            type Error = InvalidId;
            fn try_from(s: &str) -> Result<Self, InvalidId> {
                Self::new(s)
            }
        }

        impl FromStr for $name {
            type Err = InvalidId;
            fn from_str(s: &str) -> Result<Self, InvalidId> {
                Self::new(s)
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($name), "({})"), self.0)
            }
        }
    };
}

id_type!(
    /// Identifies a memory.
    MemoryId,
    "memory id"
);
id_type!(
    /// Identifies a logged session.
    SessionId,
    "session id"
);
id_type!(
    /// Identifies a record inside a namespace of a store.
    RecordId,
    "record id"
);
id_type!(
    /// A store namespace (`memories`, `sessions`, …).
    Namespace,
    "namespace"
);
id_type!(
    /// Names a lease (a lock) in a store.
    LockName,
    "lock name"
);
id_type!(
    /// A scope: the project or context a memory belongs to.
    Scope,
    "scope"
);

impl From<MemoryId> for RecordId {
    fn from(id: MemoryId) -> Self {
        RecordId(id.0)
    }
}

impl From<SessionId> for RecordId {
    fn from(id: SessionId) -> Self {
        RecordId(id.0)
    }
}

impl Default for Scope {
    fn default() -> Self {
        Scope("default".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_id_rule() {
        for ok in ["a", "A", "0", "a-b_c", "01HZX3", &"x".repeat(128)] {
            assert!(MemoryId::new(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn rejects_everything_else() {
        let long = "x".repeat(129);
        for bad in [
            "",
            "/",
            "\\",
            ".",
            "..",
            "../../etc/passwd",
            "a/b",
            "a\\b",
            "a.b",
            "*",
            "-a",
            "_a",
            "é",
            "a\0b",
            "a b",
            "a\n",
            &long,
            "ａ",
        ] {
            let err = MemoryId::new(bad).unwrap_err();
            assert_eq!(err.kind, "memory id");
        }
    }

    #[test]
    fn serde_validates() {
        assert!(serde_json::from_str::<Namespace>("\"../x\"").is_err());
        let n: Namespace = serde_json::from_str("\"memories\"").unwrap();
        assert_eq!(serde_json::to_string(&n).unwrap(), "\"memories\"");
    }

    #[test]
    fn time_ordered_ids_are_valid_and_sort_by_time() {
        let a = SessionId::time_ordered(DateTime::from_timestamp(1_000, 0).unwrap());
        let b = SessionId::time_ordered(DateTime::from_timestamp(2_000, 0).unwrap());
        assert!(a < b);
        assert!(SessionId::new(a.as_str()).is_ok());
    }
}
