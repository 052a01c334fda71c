//! The Hugging Face hub's cache layout, read and written without the network.
//!
//! ```text
//! $HF_HUB_CACHE/                       (or $HF_HOME/hub, ~/.cache/huggingface/hub)
//!   models--ORG--NAME/
//!     refs/main                        the commit `main` points at
//!     snapshots/COMMIT/config.json     the files of that commit (plain files, or
//!     snapshots/COMMIT/…               links into blobs/ as huggingface_hub makes them)
//! ```
//!
//! A model is named `ORG/NAME` (a bare `NAME` is `sentence-transformers/NAME`, as
//! the sentence-transformers library reads it), optionally `@REVISION` (a branch,
//! a tag or a commit). Names are checked before they become paths: no `..`, no
//! separators beyond the one slash, nothing a path could escape with.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The organisation a bare model name belongs to.
pub const DEFAULT_ORG: &str = "sentence-transformers";
/// The revision used when a name has none.
pub const DEFAULT_REVISION: &str = "main";
/// Longest model name accepted (`ORG/NAME`).
pub const MAX_NAME_LEN: usize = 200;

/// Why a model name or cache could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HubError {
    /// The name is not `ORG/NAME[@REVISION]` of safe characters.
    #[error("invalid model name {0:?}: expected ORG/NAME or NAME, optionally @REVISION")]
    InvalidName(String),
    /// No cache directory could be found (no HF_HUB_CACHE, HF_HOME nor HOME).
    #[error("no Hugging Face cache directory: set HF_HUB_CACHE or HF_HOME")]
    NoCache,
    /// The model or revision is not in the cache.
    #[error(
        "model {repo}@{revision} is not in the Hugging Face cache at {cache}; fetch it with `dream model fetch {repo}`"
    )]
    NotCached {
        /// `ORG/NAME`.
        repo: String,
        /// The revision asked for.
        revision: String,
        /// The cache directory searched.
        cache: String,
    },
    /// The cache holds something unusable (a ref that is not a commit).
    #[error("the Hugging Face cache entry {0} is corrupt")]
    Corrupt(String),
    /// Reading or writing the cache failed.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> HubError + '_ {
    move |source| HubError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// A model of the hub: `ORG/NAME` at a revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelName {
    org: String,
    name: String,
    revision: String,
}

fn safe_part(part: &str) -> bool {
    !part.is_empty()
        && part.len() <= 96
        && part != "."
        && part != ".."
        && !part.starts_with('.')
        && part
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && !part.contains("..")
        && !part.contains("--")
}

impl ModelName {
    /// Parses `ORG/NAME[@REVISION]` or `NAME[@REVISION]`.
    pub fn parse(text: &str) -> Result<Self, HubError> {
        let bad = || HubError::InvalidName(text.chars().take(MAX_NAME_LEN).collect());
        if text.len() > MAX_NAME_LEN {
            return Err(bad());
        }
        let (repo, revision) = match text.split_once('@') {
            Some((repo, revision)) => (repo, revision),
            None => (text, DEFAULT_REVISION),
        };
        let (org, name) = match repo.split_once('/') {
            Some((org, name)) => (org, name),
            None => (DEFAULT_ORG, repo),
        };
        if !safe_part(org) || !safe_part(name) || !safe_part(revision) {
            return Err(bad());
        }
        Ok(ModelName {
            org: org.to_owned(),
            name: name.to_owned(),
            revision: revision.to_owned(),
        })
    }

    /// `ORG/NAME`.
    pub fn repo(&self) -> String {
        format!("{}/{}", self.org, self.name)
    }

    /// The revision: a branch, a tag or a commit.
    pub fn revision(&self) -> &str {
        &self.revision
    }

    /// The model's folder in the cache: `models--ORG--NAME`.
    pub fn folder(&self) -> String {
        format!("models--{}--{}", self.org, self.name)
    }
}

impl std::fmt::Display for ModelName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}@{}", self.org, self.name, self.revision)
    }
}

/// Whether `text` is a commit id (40 hex digits).
pub fn is_commit(text: &str) -> bool {
    text.len() == 40 && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A Hugging Face hub cache directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubCache {
    root: PathBuf,
}

impl HubCache {
    /// The cache at `root` (the `hub` directory itself).
    pub fn at(root: impl Into<PathBuf>) -> Self {
        HubCache { root: root.into() }
    }

    /// The cache huggingface_hub uses: `HF_HUB_CACHE`, then the older
    /// `HUGGINGFACE_HUB_CACHE`, then `HF_HOME/hub`, then
    /// `$XDG_CACHE_HOME/huggingface/hub`, then `~/.cache/huggingface/hub`.
    pub fn from_env() -> Result<Self, HubError> {
        Self::from_vars(|name| std::env::var_os(name).filter(|v| !v.is_empty()))
    }

    /// [`HubCache::from_env`] over any source of variables (for tests).
    pub fn from_vars(var: impl Fn(&str) -> Option<OsString>) -> Result<Self, HubError> {
        if let Some(dir) = var("HF_HUB_CACHE").or_else(|| var("HUGGINGFACE_HUB_CACHE")) {
            return Ok(Self::at(dir));
        }
        if let Some(home) = var("HF_HOME") {
            return Ok(Self::at(Path::new(&home).join("hub")));
        }
        if let Some(xdg) = var("XDG_CACHE_HOME") {
            return Ok(Self::at(Path::new(&xdg).join("huggingface").join("hub")));
        }
        let home = var("HOME").ok_or(HubError::NoCache)?;
        Ok(Self::at(
            Path::new(&home)
                .join(".cache")
                .join("huggingface")
                .join("hub"),
        ))
    }

    /// The cache directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The snapshot directory of `model`: its revision's commit through
    /// `refs/REVISION`, or the commit itself when the revision is one.
    pub fn resolve(&self, model: &ModelName) -> Result<PathBuf, HubError> {
        let folder = self.root.join(model.folder());
        let not_cached = || HubError::NotCached {
            repo: model.repo(),
            revision: model.revision.clone(),
            cache: self.root.display().to_string(),
        };
        let ref_path = folder.join("refs").join(&model.revision);
        let commit = match std::fs::read_to_string(&ref_path) {
            Ok(text) => {
                let commit = text.trim();
                if !is_commit(commit) {
                    return Err(HubError::Corrupt(ref_path.display().to_string()));
                }
                commit.to_owned()
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if is_commit(&model.revision) {
                    model.revision.clone()
                } else {
                    return Err(not_cached());
                }
            }
            Err(e) => return Err(io(&ref_path)(e)),
        };
        let snapshot = folder.join("snapshots").join(commit);
        if snapshot.is_dir() {
            Ok(snapshot)
        } else {
            Err(not_cached())
        }
    }

    /// Stores one downloaded file of `model` at `commit` (written to a temporary
    /// file, then renamed: a reader never sees half a file). `file` is a relative
    /// path of safe parts (`1_Pooling/config.json`).
    pub fn store_file(
        &self,
        model: &ModelName,
        commit: &str,
        file: &str,
        bytes: &[u8],
    ) -> Result<PathBuf, HubError> {
        if !is_commit(commit) {
            return Err(HubError::Corrupt(format!("commit {commit:?}")));
        }
        if file.split('/').any(|part| !safe_part(part)) {
            return Err(HubError::InvalidName(file.to_owned()));
        }
        let snapshot = self
            .root
            .join(model.folder())
            .join("snapshots")
            .join(commit);
        let path = snapshot.join(file);
        let dir = path.parent().unwrap_or(&snapshot);
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let tmp = dir.join(format!(
            ".{}.part",
            path.file_name().unwrap_or_default().to_string_lossy()
        ));
        std::fs::write(&tmp, bytes).map_err(io(&tmp))?;
        std::fs::rename(&tmp, &path).map_err(io(&path))?;
        Ok(path)
    }

    /// Points `refs/REVISION` of `model` at `commit` (nothing to do when the
    /// revision is the commit).
    pub fn store_ref(&self, model: &ModelName, commit: &str) -> Result<(), HubError> {
        if !is_commit(commit) {
            return Err(HubError::Corrupt(format!("commit {commit:?}")));
        }
        if model.revision == commit {
            return Ok(());
        }
        let refs = self.root.join(model.folder()).join("refs");
        std::fs::create_dir_all(&refs).map_err(io(&refs))?;
        let path = refs.join(&model.revision);
        let tmp = refs.join(format!(".{}.part", model.revision));
        std::fs::write(&tmp, commit).map_err(io(&tmp))?;
        std::fs::rename(&tmp, &path).map_err(io(&path))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_unsafe_ones_are_refused() {
        let m = ModelName::parse("sentence-transformers/all-MiniLM-L6-v2").unwrap();
        assert_eq!(m.repo(), "sentence-transformers/all-MiniLM-L6-v2");
        assert_eq!(m.revision(), "main");
        assert_eq!(
            m.folder(),
            "models--sentence-transformers--all-MiniLM-L6-v2"
        );
        assert_eq!(ModelName::parse("all-MiniLM-L6-v2").unwrap(), m);
        let pinned = ModelName::parse("BAAI/bge-small-en-v1.5@v1").unwrap();
        assert_eq!(pinned.revision(), "v1");
        for bad in [
            "",
            "a/b/c",
            "../x",
            "a/..",
            "a/.hidden",
            "a/b@../../x",
            "a/b@",
            "a b/c",
            "/etc/passwd",
            "a--b/c",
            "a\\b",
        ] {
            assert!(ModelName::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn the_cache_directory_follows_huggingface_hub() {
        let vars = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| OsString::from(v))
            }
        };
        let at = |pairs| HubCache::from_vars(vars(pairs)).unwrap().root;
        assert_eq!(
            at(&[("HOME", "/h")]),
            Path::new("/h/.cache/huggingface/hub")
        );
        assert_eq!(
            at(&[("HOME", "/h"), ("XDG_CACHE_HOME", "/x")]),
            Path::new("/x/huggingface/hub")
        );
        assert_eq!(
            at(&[("HOME", "/h"), ("HF_HOME", "/hf")]),
            Path::new("/hf/hub")
        );
        assert_eq!(
            at(&[("HF_HOME", "/hf"), ("HF_HUB_CACHE", "/c")]),
            Path::new("/c")
        );
        assert!(HubCache::from_vars(|_| None).is_err());
    }

    #[test]
    fn stored_files_resolve_through_the_ref() {
        let dir = tempfile::tempdir().unwrap();
        let cache = HubCache::at(dir.path());
        let model = ModelName::parse("org/model").unwrap();
        assert!(matches!(
            cache.resolve(&model),
            Err(HubError::NotCached { .. })
        ));
        let commit = "0123456789abcdef0123456789abcdef01234567";
        cache
            .store_file(&model, commit, "1_Pooling/config.json", b"{}")
            .unwrap();
        cache
            .store_file(&model, commit, "config.json", b"{}")
            .unwrap();
        assert!(cache.store_file(&model, commit, "../x", b"").is_err());
        assert!(cache.store_file(&model, "main", "x", b"").is_err());
        cache.store_ref(&model, commit).unwrap();
        let snapshot = cache.resolve(&model).unwrap();
        assert_eq!(
            snapshot,
            dir.path().join("models--org--model/snapshots").join(commit)
        );
        assert!(snapshot.join("1_Pooling/config.json").is_file());
        let by_commit = ModelName::parse(&format!("org/model@{commit}")).unwrap();
        assert_eq!(cache.resolve(&by_commit).unwrap(), snapshot);
        std::fs::write(dir.path().join("models--org--model/refs/main"), "junk").unwrap();
        assert!(matches!(cache.resolve(&model), Err(HubError::Corrupt(_))));
    }
}
