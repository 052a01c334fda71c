//! One record on disk: its value file, its sidecar, and their temporary files.
//!
//! For the key `memories/abc` the files are, inside `memories/`:
//! - `abc.md` — the value, byte for byte and nothing else;
//! - `.abc.md.meta` — the sidecar: `dream-fs record 1`, `version <n>`,
//!   `sha256 <hex of the value>`;
//! - `.abc.md.tmp` — the value's temporary file while a write is in progress.
//!
//! Other namespaces use the bare id as the value file's name (`sessions/01H…`).
//! Ids never start with `.`, so no id can name a sidecar or a temporary file.

use std::fs::File;
use std::os::fd::BorrowedFd;

use dream_core::{Bytes, Key, Namespace, Record, RecordId, StoreError, Version};
use sha2::{Digest, Sha256};

use crate::error::{Context, corrupt};
use crate::io::{self, Opened};

/// The namespace whose values are Markdown files.
pub(crate) const MEMORIES: &str = "memories";
const MD: &str = ".md";
const SIDECAR_HEADER: &str = "dream-fs record 1";
/// Largest sidecar read; a real one is about 110 bytes.
const SIDECAR_MAX: usize = 512;

/// The names of one record's files inside its namespace directory.
pub(crate) struct Names {
    /// The value file.
    pub data: String,
    /// The sidecar.
    pub sidecar: String,
    /// The value's temporary file.
    pub data_tmp: String,
}

impl Names {
    /// The file names of `key`.
    pub fn of(key: &Key) -> Self {
        let data = if key.namespace.as_str() == MEMORIES {
            format!("{}{MD}", key.id)
        } else {
            key.id.as_str().to_owned()
        };
        Names {
            sidecar: format!(".{data}.meta"),
            data_tmp: format!(".{data}.tmp"),
            data,
        }
    }
}

/// The id whose value file is called `name` in `namespace`, if any.
pub(crate) fn id_of_file(namespace: &Namespace, name: &str) -> Option<RecordId> {
    let stem = if namespace.as_str() == MEMORIES {
        name.strip_suffix(MD)?
    } else {
        name
    };
    RecordId::new(stem).ok()
}

/// SHA-256 of a value.
pub(crate) fn sha256(value: &[u8]) -> [u8; 32] {
    Sha256::digest(value).into()
}

/// A sidecar's content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sidecar {
    /// The record's version.
    pub version: u64,
    /// SHA-256 of the value written at that version.
    pub sha256: [u8; 32],
}

impl Sidecar {
    /// The sidecar's bytes; always the same length (the version is padded),
    /// so an in-place overwrite replaces every byte.
    pub fn render(&self) -> String {
        format!(
            "{SIDECAR_HEADER}\nversion {:020}\nsha256 {}\n",
            self.version,
            hex::encode(self.sha256)
        )
    }

    /// Parses a sidecar; `None` if it is not exactly what `render` writes.
    pub fn parse(bytes: &[u8]) -> Option<Self> {
        let text = std::str::from_utf8(bytes).ok()?;
        let mut lines = text.strip_suffix('\n')?.split('\n');
        if lines.next()? != SIDECAR_HEADER {
            return None;
        }
        let version = lines.next()?.strip_prefix("version ")?.parse().ok()?;
        let hash = lines.next()?.strip_prefix("sha256 ")?;
        if lines.next().is_some() || hash.len() != 64 {
            return None;
        }
        let mut sha256 = [0u8; 32];
        hex::decode_to_slice(hash, &mut sha256).ok()?;
        Some(Sidecar { version, sha256 })
    }
}

/// What reading a record found.
pub(crate) enum Loaded {
    /// No value file.
    Absent,
    /// A value whose hash matches its sidecar.
    Consistent(Record),
    /// A value with no sidecar, an unreadable one, or one whose hash differs:
    /// an interrupted write or a hand edit. Repaired under the lock.
    Mismatch {
        /// The value file's bytes.
        value: Bytes,
        /// The open value file (to tighten its mode when adopted).
        file: File,
        /// The value file's mode bits.
        mode: rustix::fs::RawMode,
    },
}

/// Reads `key` from its namespace directory `ns`. Never follows a link: a
/// value file or sidecar that is a link, or not a plain file, is `Corrupt`.
pub(crate) fn load(ns: BorrowedFd<'_>, key: &Key, max: usize) -> Result<Loaded, StoreError> {
    let names = Names::of(key);
    let (file, stat) = match io::open_file(ns, &names.data).context(|| format!("open {key}"))? {
        Opened::Found(found) => found,
        Opened::Missing => return Ok(Loaded::Absent),
        Opened::Symlink => {
            return Err(corrupt(
                key,
                "its value file is a symbolic link, which the store never follows",
            ));
        }
        Opened::WrongKind(why) => return Err(corrupt(key, format!("its value file is {why}"))),
    };
    let size = u64::try_from(stat.st_size).unwrap_or(u64::MAX);
    if size > max as u64 {
        return Err(corrupt(
            key,
            "its value file is larger than the store's value limit",
        ));
    }
    let value = io::read_all(&file, size).context(|| format!("read {key}"))?;
    if value.len() > max {
        return Err(corrupt(
            key,
            "its value file is larger than the store's value limit",
        ));
    }
    let sidecar = match io::read_quick(ns, &names.sidecar, SIDECAR_MAX)
        .context(|| format!("read the sidecar of {key}"))?
    {
        Opened::Found(bytes) => Sidecar::parse(&bytes),
        Opened::Missing => None,
        Opened::Symlink => {
            return Err(corrupt(
                key,
                "its sidecar is a symbolic link, which the store never follows",
            ));
        }
        // An oversized sidecar is garbage, repaired like a malformed one.
        Opened::WrongKind("larger than expected") => None,
        Opened::WrongKind(why) => return Err(corrupt(key, format!("its sidecar is {why}"))),
    };
    match sidecar {
        Some(sidecar) if sidecar.sha256 == sha256(&value) => Ok(Loaded::Consistent(Record {
            value: Bytes::from(value),
            version: Version(sidecar.version),
        })),
        _ => Ok(Loaded::Mismatch {
            value: Bytes::from(value),
            file,
            mode: stat.st_mode,
        }),
    }
}

/// A record's version from its sidecar alone, for `list_versions`: `Some(None)`
/// when the value file is absent, `Some(Some(v))` when the sidecar parses and
/// is at least as new (by mtime) as a plain, singly linked value file, and
/// `None` when the record must be loaded in full (hash check and repair).
pub(crate) fn quick_version(ns: BorrowedFd<'_>, key: &Key) -> Option<Option<Version>> {
    use rustix::fs::{AtFlags, FileType, statat};
    let names = Names::of(key);
    let data = match statat(ns, names.data.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => stat,
        Err(rustix::io::Errno::NOENT) => return Some(None),
        Err(_) => return None,
    };
    if FileType::from_raw_mode(data.st_mode) != FileType::RegularFile || data.st_nlink != 1 {
        return None;
    }
    let side = statat(ns, names.sidecar.as_str(), AtFlags::SYMLINK_NOFOLLOW).ok()?;
    if FileType::from_raw_mode(side.st_mode) != FileType::RegularFile || side.st_nlink != 1 {
        return None;
    }
    if (data.st_mtime, data.st_mtime_nsec) > (side.st_mtime, side.st_mtime_nsec) {
        return None;
    }
    match io::read_quick(ns, &names.sidecar, SIDECAR_MAX).ok()? {
        Opened::Found(bytes) => Sidecar::parse(&bytes).map(|s| Some(Version(s.version))),
        _ => None,
    }
}

/// Overwrites a record's sidecar in place. The write path passes
/// `durable = false`: a sidecar lost or torn by a power cut fails the hash
/// check and is repaired. Repair passes `true` (fsync of the sidecar and the
/// directory) and also removes a value's temporary file left by a crash.
pub(crate) fn write_sidecar(
    ns: BorrowedFd<'_>,
    key: &Key,
    sidecar: &Sidecar,
    durable: bool,
) -> Result<(), StoreError> {
    let names = Names::of(key);
    match io::overwrite_in_place(ns, &names.sidecar, sidecar.render().as_bytes(), durable)
        .context(|| format!("write the sidecar of {key}"))?
    {
        Opened::Found(()) => {}
        Opened::Symlink => {
            return Err(corrupt(
                key,
                "its sidecar is a symbolic link, which the store never follows",
            ));
        }
        Opened::WrongKind(why) => return Err(corrupt(key, format!("its sidecar is {why}"))),
        Opened::Missing => return Err(corrupt(key, "its sidecar vanished while being written")),
    }
    if durable {
        io::remove_if_present(ns, &names.data_tmp)
            .context(|| format!("remove a temporary file of {key}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(ns: &str, id: &str) -> Key {
        Key::new(Namespace::new(ns).unwrap(), RecordId::new(id).unwrap())
    }

    #[test]
    fn memories_are_markdown_files_and_others_bare_ids() {
        let names = Names::of(&key("memories", "abc"));
        assert_eq!(names.data, "abc.md");
        assert_eq!(names.sidecar, ".abc.md.meta");
        assert_eq!(names.data_tmp, ".abc.md.tmp");
        assert_eq!(Names::of(&key("sessions", "s1")).data, "s1");
        let memories = Namespace::new("memories").unwrap();
        let sessions = Namespace::new("sessions").unwrap();
        assert_eq!(id_of_file(&memories, "abc.md").unwrap().as_str(), "abc");
        assert!(id_of_file(&memories, "abc").is_none());
        assert!(id_of_file(&memories, ".abc.md.meta").is_none());
        assert!(id_of_file(&memories, "notes.txt").is_none());
        assert_eq!(id_of_file(&sessions, "s1").unwrap().as_str(), "s1");
        assert!(id_of_file(&sessions, ".s1.meta").is_none());
        assert!(id_of_file(&sessions, "a b").is_none());
    }

    #[test]
    fn sidecars_round_trip_and_reject_garbage() {
        let sidecar = Sidecar {
            version: 42,
            sha256: sha256(b"hello"),
        };
        let text = sidecar.render();
        assert_eq!(Sidecar::parse(text.as_bytes()), Some(sidecar));
        assert_eq!(Sidecar::parse(&text.as_bytes()[..text.len() - 1]), None);
        assert_eq!(Sidecar::parse(&text.as_bytes()[..20]), None);
        assert_eq!(Sidecar::parse(b""), None);
        assert_eq!(
            text.len(),
            Sidecar {
                version: u64::MAX,
                sha256: [0; 32]
            }
            .render()
            .len()
        );
        assert!(text.contains("version 00000000000000000042\n"), "{text}");
        assert_eq!(
            Sidecar::parse(text.replace("00042", "000-1").as_bytes()),
            None
        );
        assert_eq!(Sidecar::parse(format!("{text}x\n").as_bytes()), None);
        assert_eq!(
            Sidecar::parse(text.replace("sha256 2c", "sha256 zz").as_bytes()),
            None
        );
    }
}
