//! Which store a command uses, and why: the one rule every entry point (the
//! commands, the hooks, `dream mcp`) calls, as git finds its repository.
//!
//! 1. `--store URL`.
//! 2. `DREAM_STORE`: one store for a user who wants the same store everywhere
//!    (an absolute path: the variable is read from any directory).
//! 3. The project: the nearest directory, from the working directory up, that
//!    holds `.dream` or `dream.toml`, looking no higher than the first directory
//!    that holds `.git` (that one included). Its `dream.toml` may name the store
//!    (a relative path is taken from that directory); otherwise it is the
//!    `.dream` there.
//! 4. None found: `.dream` at the top of the repository (the directory holding
//!    `.git`), or in the working directory outside a repository. Only a command
//!    that stores something creates it; a read says there is none.
//!
//! `dream.toml` is read from the project directory found in step 3, whichever
//! step chose the store.

use std::fmt;
use std::path::{Path, PathBuf};

use dream::core::store_url::{Place, StoreUrl};

use super::CliError;
use super::config::FileConfig;
use super::streams::escape;

/// The environment variable naming a default store.
pub const STORE_ENV: &str = "DREAM_STORE";
/// A project's store directory.
pub const STORE_DIR: &str = ".dream";
/// A project's config file.
pub const CONFIG_FILE: &str = "dream.toml";
/// What marks the top of a repository: the search goes no higher.
const REPOSITORY_MARK: &str = ".git";

/// The store a command uses, why, and the project's `dream.toml`.
#[derive(Debug, Clone)]
pub struct Located {
    /// The store's URL (`fs:` and `sqlite:` paths absolute unless given relative
    /// with `--store`).
    pub url: String,
    /// Why this store.
    pub why: Why,
    /// The project's `dream.toml` (empty when there is none).
    pub config: FileConfig,
    /// The `dream.toml` read, if any.
    pub config_file: Option<PathBuf>,
}

/// Why a store was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// `--store` named it.
    Flag,
    /// `DREAM_STORE` named it.
    Env,
    /// The project's `dream.toml` names it.
    Config(PathBuf),
    /// The nearest `.dream` from the working directory up.
    Found(PathBuf),
    /// No store yet: searched from `from` up to `top`; a write creates it at `top`.
    NotFound {
        /// The working directory.
        from: PathBuf,
        /// Where a write creates the store: the repository's top, or `from`
        /// outside a repository.
        top: PathBuf,
        /// Whether `top` holds `.git`.
        repository: bool,
    },
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = |p: &Path| escape(&p.display().to_string()).into_owned();
        match self {
            Why::Flag => f.write_str("named by --store"),
            Why::Env => write!(f, "named by {STORE_ENV}"),
            Why::Config(file) => write!(f, "named by `store` in {}", shown(file)),
            Why::Found(dir) => write!(
                f,
                "the nearest {STORE_DIR} above the working directory, in {}",
                shown(dir)
            ),
            Why::NotFound {
                from,
                top,
                repository: true,
            } => write!(
                f,
                "no {STORE_DIR} in {} or its parents up to {} (the repository's top)",
                shown(from),
                shown(top)
            ),
            Why::NotFound { from, .. } => write!(
                f,
                "no {STORE_DIR} in {} or any directory above it",
                shown(from)
            ),
        }
    }
}

impl Located {
    /// Whether the store is there (see [`made`]).
    pub fn exists(&self) -> bool {
        made(&self.url)
    }

    /// For a command that only reads: an error saying there is no store yet,
    /// where one was looked for and which commands make it.
    pub fn require_existing(&self) -> Result<(), CliError> {
        if self.exists() {
            return Ok(());
        }
        let path = local_path(&self.url).unwrap_or_default();
        let whence = match &self.why {
            Why::NotFound { .. } => format!("{}: ", self.why),
            _ => String::new(),
        };
        Err(CliError::usage(format!(
            "no store at {}: {whence}nothing has been stored there yet \
             (`dream log`, `dream remember` or `dream import` create it)",
            escape(&path.display().to_string())
        )))
    }
}

/// Whether the store a URL names is there: a directory or SQLite store that
/// does not exist is not (a network store is, as far as finding it goes).
pub fn made(url: &str) -> bool {
    local_path(url).is_none_or(|path| path.exists())
}

/// The path of a directory or SQLite store's URL (of a backend this binary
/// has: another is one clear "built without" error when opened).
fn local_path(url: &str) -> Option<PathBuf> {
    let url = StoreUrl::parse(url).ok()?;
    match url.place() {
        #[cfg(feature = "fs")]
        Place::Fs(path) => Some(path.clone()),
        #[cfg(feature = "sqlite")]
        Place::Sqlite(path) => Some(path.clone()),
        _ => None,
    }
}

/// Finds the store for `flag` (the `--store` option) from the working
/// directory, by the rule in the module docs.
pub fn locate(flag: Option<&str>) -> Result<Located, CliError> {
    let cwd = std::env::current_dir()
        .map_err(|e| CliError::usage(format!("cannot read the working directory: {e}")))?;
    let env = std::env::var(STORE_ENV).ok().filter(|v| !v.is_empty());
    locate_from(&cwd, flag, env.as_deref())
}

fn locate_from(cwd: &Path, flag: Option<&str>, env: Option<&str>) -> Result<Located, CliError> {
    let search = search(cwd);
    let (config, config_file) = match &search.project {
        Some(dir) => {
            let file = dir.join(CONFIG_FILE);
            let config = FileConfig::load(&file)?;
            (config, file.is_file().then_some(file))
        }
        None => (FileConfig::default(), None),
    };
    let (url, why) = if let Some(url) = flag {
        (url.to_owned(), Why::Flag)
    } else if let Some(url) = env {
        if local_path(url).is_some_and(|p| p.is_relative()) {
            return Err(CliError::usage(format!(
                "{STORE_ENV}={}: give an absolute path (it is read from every directory)",
                escape(url)
            )));
        }
        (url.to_owned(), Why::Env)
    } else if let (Some(url), Some(file), Some(dir)) =
        (&config.store, &config_file, &search.project)
    {
        (relative_to(url, dir), Why::Config(file.clone()))
    } else if let Some(dir) = &search.project {
        (store_url_in(dir), Why::Found(dir.clone()))
    } else {
        (
            store_url_in(&search.top),
            Why::NotFound {
                from: cwd.to_owned(),
                top: search.top.clone(),
                repository: search.repository,
            },
        )
    };
    Ok(Located {
        url,
        why,
        config,
        config_file,
    })
}

/// `fs:DIR/.dream`.
fn store_url_in(dir: &Path) -> String {
    format!("fs:{}", dir.join(STORE_DIR).display())
}

/// A `fs:` or `sqlite:` URL with a relative path, taken from `dir`; any other as it is.
fn relative_to(url: &str, dir: &Path) -> String {
    match StoreUrl::parse(url) {
        Ok(parsed) => match parsed.path() {
            Some(path) if path.is_relative() => parsed.moved_to(dir.join(path)).to_string(),
            _ => url.to_owned(),
        },
        Err(_) => url.to_owned(),
    }
}

/// What the walk up from the working directory found.
struct Search {
    /// The nearest directory holding `.dream` or `dream.toml`.
    project: Option<PathBuf>,
    /// The highest directory looked at.
    top: PathBuf,
    /// Whether `top` holds `.git`.
    repository: bool,
}

fn search(cwd: &Path) -> Search {
    for dir in cwd.ancestors() {
        if dir.join(STORE_DIR).exists() || dir.join(CONFIG_FILE).is_file() {
            return Search {
                project: Some(dir.to_owned()),
                top: dir.to_owned(),
                repository: dir.join(REPOSITORY_MARK).exists(),
            };
        }
        if dir.join(REPOSITORY_MARK).exists() {
            return Search {
                project: None,
                top: dir.to_owned(),
                repository: true,
            };
        }
    }
    Search {
        project: None,
        top: cwd.to_owned(),
        repository: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> (tempfile::TempDir, PathBuf) {
        let root = tempfile::tempdir().unwrap();
        let deep = root.path().join("proj/services/billing");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::create_dir(root.path().join("proj/.git")).unwrap();
        (root, deep)
    }

    #[test]
    fn finds_the_nearest_store_up_to_the_repository_top() {
        let (root, deep) = tree();
        let proj = root.path().join("proj");
        // Above the repository's top: never looked at.
        std::fs::create_dir(root.path().join(STORE_DIR)).unwrap();
        let none = locate_from(&deep, None, None).unwrap();
        assert_eq!(none.url, format!("fs:{}/.dream", proj.display()));
        assert!(matches!(
            none.why,
            Why::NotFound {
                repository: true,
                ..
            }
        ));
        std::fs::create_dir(proj.join(STORE_DIR)).unwrap();
        let found = locate_from(&deep, None, None).unwrap();
        assert_eq!(found.url, format!("fs:{}/.dream", proj.display()));
        assert_eq!(found.why, Why::Found(proj.clone()));
        std::fs::create_dir(deep.join(STORE_DIR)).unwrap();
        assert_eq!(
            locate_from(&deep, None, None).unwrap().why,
            Why::Found(deep.clone())
        );
    }

    #[test]
    fn the_flag_then_the_environment_then_the_project() {
        let (root, deep) = tree();
        let proj = root.path().join("proj");
        std::fs::write(
            proj.join(CONFIG_FILE),
            "store = \"sqlite:mem.db\"\nscope = \"web\"\n",
        )
        .unwrap();
        let by_file = locate_from(&deep, None, None).unwrap();
        assert_eq!(by_file.url, format!("sqlite:{}/mem.db", proj.display()));
        assert_eq!(by_file.config.scope.as_deref(), Some("web"));
        let by_env = locate_from(&deep, None, Some("fs:/srv/dream")).unwrap();
        assert_eq!(
            (by_env.url.as_str(), &by_env.why),
            ("fs:/srv/dream", &Why::Env)
        );
        assert_eq!(by_env.config.scope.as_deref(), Some("web"));
        let by_flag = locate_from(&deep, Some("fs:x"), Some("fs:/srv/dream")).unwrap();
        assert_eq!((by_flag.url.as_str(), &by_flag.why), ("fs:x", &Why::Flag));
        assert!(locate_from(&deep, None, Some("fs:rel/dream")).is_err());
    }
}
