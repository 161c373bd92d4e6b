//! Learned shapes by tool, in memory and in a cache file shared across runs and processes.
//!
//! The file holds shapes only (see [`Shape`]): field names and counts of results, never a
//! value. Writers merge: a save re-reads the file under an advisory lock, adds what this
//! process learned since its last save, and replaces the file atomically, so two servers
//! sharing one cache both keep what they learned.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::shape::Shape;
use crate::schema::schema_digest;
use crate::tool::ToolDefinition;

/// The `format` field of a cache file.
const FORMAT: &str = "codemode-types";
/// The layout version this build reads and writes.
const VERSION: u32 = 1;

/// Which tool a learned shape belongs to.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ToolKey {
    /// The namespace the tool is served under (an upstream's `NS`); empty at the top level.
    pub source: String,
    /// The tool's name in its source.
    pub tool: String,
    /// The first 16 hex digits of the SHA-256 of its input schema: a tool whose arguments
    /// changed is a new tool, and starts over.
    pub input_schema: String,
}

impl ToolKey {
    /// The key of the tool at `path` (`name` or `ns.name`) named `name` in its source, with
    /// input schema `parameters`.
    pub fn new(path: &str, name: &str, parameters: &Value) -> ToolKey {
        ToolKey::with_digest(path, name, schema_digest(parameters))
    }

    /// The key of `tool` at `path`, with the input-schema digest the tool keeps (hashed once
    /// per tool, not per call).
    pub fn of_tool(path: &str, tool: &ToolDefinition) -> ToolKey {
        ToolKey::with_digest(path, tool.name(), tool.parameters_digest().to_owned())
    }

    fn with_digest(path: &str, name: &str, input_schema: String) -> ToolKey {
        let source = path.split_once('.').map_or("", |(namespace, _)| namespace);
        ToolKey {
            source: source.to_owned(),
            tool: name.to_owned(),
            input_schema,
        }
    }

    /// `ns.name` or `name`, as programs call it (when the sandbox name is the source's).
    pub fn display_path(&self) -> String {
        if self.source.is_empty() {
            self.tool.clone()
        } else {
            format!("{}.{}", self.source, self.tool)
        }
    }
}

/// What is known about one tool's results.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Learned {
    /// How many successful results were folded in.
    pub results: u64,
    /// Their shape.
    pub shape: Shape,
}

impl Learned {
    fn merge(&mut self, other: &Learned) {
        self.results += other.results;
        self.shape.merge(&other.shape);
    }
}

/// One tool's entry in the cache file.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    #[serde(flatten)]
    key: ToolKey,
    results: u64,
    shape: Shape,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CacheFile {
    format: String,
    version: u32,
    tools: Vec<Entry>,
}

/// Why the cache file could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TypeStoreError {
    /// The file exists but could not be read.
    #[error("cannot read the types cache {}: {source}", path.display())]
    Read {
        /// The cache file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The file is not a cache this build understands.
    #[error("{} is not a codemode types cache this version can read ({reason}); move it away, or name another file with --types-cache", path.display())]
    Format {
        /// The cache file.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// The file (or its directory, or its lock) could not be written.
    #[error("cannot write the types cache {}: {source}", path.display())]
    Write {
        /// The cache file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
}

/// Learned output shapes by tool. Cheap to clone; clones share one store.
#[derive(Clone, Default)]
pub struct TypeStore {
    inner: Arc<Inner>,
    /// Tool paths whose results this handle does not record (see [`TypeStore::ignoring`]).
    ignored: Arc<std::collections::HashSet<String>>,
}

#[derive(Default)]
struct Inner {
    path: Option<PathBuf>,
    state: Mutex<State>,
    /// Held through a whole save (file I/O included), so saves of one process take turns and
    /// each leaves `saved` as the file it wrote. The hook never waits on it.
    saving: Mutex<()>,
}

#[derive(Default)]
struct State {
    /// What the file held at the last load or save.
    saved: BTreeMap<ToolKey, Learned>,
    /// What this process learned since (added to the file at the next save).
    pending: BTreeMap<ToolKey, Learned>,
}

impl std::fmt::Debug for TypeStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TypeStore")
            .field("path", &self.inner.path)
            .finish_non_exhaustive()
    }
}

impl TypeStore {
    /// A store without a file: what it learns lasts as long as the process.
    pub fn in_memory() -> TypeStore {
        TypeStore::default()
    }

    /// A store backed by the cache file at `path`, read now when it exists (a missing file is
    /// an empty cache; it is created at the first [`TypeStore::save`]).
    ///
    /// # Errors
    /// The file exists and cannot be read, or is not a cache this version understands.
    pub fn open(path: impl Into<PathBuf>) -> Result<TypeStore, TypeStoreError> {
        let path = path.into();
        let saved = read_file(&path)?;
        Ok(TypeStore {
            inner: Arc::new(Inner {
                path: Some(path),
                state: Mutex::new(State {
                    saved,
                    pending: BTreeMap::new(),
                }),
                saving: Mutex::new(()),
            }),
            ignored: Arc::default(),
        })
    }

    /// A handle on the same store whose [`TypeStore::hook`] does not record the tools at
    /// `paths` (mock tools, say, whose answers say nothing about the real tool's).
    pub fn ignoring(&self, paths: impl IntoIterator<Item = String>) -> TypeStore {
        let mut ignored = (*self.ignored).clone();
        ignored.extend(paths);
        TypeStore {
            inner: Arc::clone(&self.inner),
            ignored: Arc::new(ignored),
        }
    }

    /// Whether the hook leaves the tool at `path` alone.
    pub(crate) fn ignores(&self, path: &str) -> bool {
        self.ignored.contains(path)
    }

    /// The cache file, when the store has one.
    pub fn path(&self) -> Option<&Path> {
        self.inner.path.as_deref()
    }

    /// Folds one successful result of the tool `key` into its shape. The value is read before
    /// the store is locked; only the (small) shape is merged under the lock.
    pub fn record(&self, key: ToolKey, value: &Value) {
        let shape = Shape::of(value);
        let mut state = self.state();
        let learned = state.pending.entry(key).or_default();
        learned.results += 1;
        learned.shape.merge(&shape);
    }

    /// What is known about the tool `key`: the file's and this process's results.
    pub fn learned(&self, key: &ToolKey) -> Option<Learned> {
        let state = self.state();
        let mut learned = state.saved.get(key).cloned();
        if let Some(pending) = state.pending.get(key) {
            learned.get_or_insert_with(Learned::default).merge(pending);
        }
        learned
    }

    /// Every tool with a learned shape, in key order.
    pub fn entries(&self) -> Vec<(ToolKey, Learned)> {
        let state = self.state();
        let mut all = state.saved.clone();
        for (key, learned) in &state.pending {
            all.entry(key.clone()).or_default().merge(learned);
        }
        all.into_iter().collect()
    }

    /// Whether something was learned since the last save (for a store with a file: a store
    /// without one never has anything to save).
    pub fn has_unsaved(&self) -> bool {
        self.inner.path.is_some() && !self.state().pending.is_empty()
    }

    /// Adds what was learned since the last save to the cache file (re-read under a lock, so
    /// other writers' results are kept) and replaces it atomically. Returns whether the file
    /// was written: not when nothing new was learned, nor for a store without a file.
    ///
    /// The store is not locked while the file is: results recorded meanwhile wait for the
    /// next save.
    ///
    /// # Errors
    /// The file could not be read, locked (within [`LOCK_WAIT`]) or written; what was learned
    /// stays pending.
    pub fn save(&self) -> Result<bool, TypeStoreError> {
        let Some(path) = self.inner.path.as_deref() else {
            return Ok(false);
        };
        let _turn = self.inner.saving.lock().unwrap_or_else(|e| e.into_inner());
        let pending = std::mem::take(&mut self.state().pending);
        if pending.is_empty() {
            return Ok(false);
        }
        match merge_into_file(path, &pending) {
            Ok(merged) => {
                self.state().saved = merged;
                Ok(true)
            }
            Err(error) => {
                let mut state = self.state();
                for (key, learned) in pending {
                    state.pending.entry(key).or_default().merge(&learned);
                }
                Err(error)
            }
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while folding leaves at worst a partly folded shape: still a valid shape.
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// How long a save waits for another process's save before giving up (it is retried later).
pub const LOCK_WAIT: Duration = Duration::from_secs(5);

/// Under the file's lock: the file as it is now, plus `pending`, written back. Returns what
/// was written.
fn merge_into_file(
    path: &Path,
    pending: &BTreeMap<ToolKey, Learned>,
) -> Result<BTreeMap<ToolKey, Learned>, TypeStoreError> {
    let write_error = |source| TypeStoreError::Write {
        path: path.to_owned(),
        source,
    };
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    fs::create_dir_all(dir).map_err(write_error)?;
    let _lock = FileLock::acquire(&lock_path(path), LOCK_WAIT).map_err(write_error)?;
    let mut merged = read_file(path)?;
    for (key, learned) in pending {
        merged.entry(key.clone()).or_default().merge(learned);
    }
    write_file(dir, path, &merged).map_err(write_error)?;
    Ok(merged)
}

fn read_file(path: &Path) -> Result<BTreeMap<ToolKey, Learned>, TypeStoreError> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(source) => {
            return Err(TypeStoreError::Read {
                path: path.to_owned(),
                source,
            });
        }
    };
    let format_error = |reason: String| TypeStoreError::Format {
        path: path.to_owned(),
        reason,
    };
    let file: CacheFile = serde_json::from_str(&text).map_err(|e| format_error(e.to_string()))?;
    if file.format != FORMAT || file.version != VERSION {
        return Err(format_error(format!(
            "it says format `{}` version {}; this build reads `{FORMAT}` version {VERSION}",
            file.format, file.version
        )));
    }
    let mut tools = BTreeMap::new();
    for entry in file.tools {
        tools.insert(
            entry.key,
            Learned {
                results: entry.results,
                shape: entry.shape,
            },
        );
    }
    Ok(tools)
}

/// Writes a temporary file beside `path`, flushes it to disk, and renames it over `path`: a
/// reader (or a crash) sees the old file or the new one, never a part.
fn write_file(dir: &Path, path: &Path, tools: &BTreeMap<ToolKey, Learned>) -> io::Result<()> {
    let file = CacheFile {
        format: FORMAT.into(),
        version: VERSION,
        tools: tools
            .iter()
            .map(|(key, learned)| Entry {
                key: key.clone(),
                results: learned.results,
                shape: learned.shape.clone(),
            })
            .collect(),
    };
    let mut text = serde_json::to_string_pretty(&file).map_err(io::Error::other)?;
    text.push('\n');
    // Removed on drop if anything below fails.
    let mut temporary = tempfile::NamedTempFile::new_in(dir)?;
    temporary.write_all(text.as_bytes())?;
    temporary.as_file().sync_all()?;
    temporary.persist(path).map_err(|e| e.error)?;
    Ok(())
}

fn lock_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    path.with_file_name(name)
}

/// An exclusive advisory lock (`flock`) on a file, released on drop.
struct FileLock(File);

impl FileLock {
    /// Waits at most `wait` for the lock.
    fn acquire(path: &Path, wait: Duration) -> io::Result<FileLock> {
        use std::os::fd::AsRawFd;
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)?;
        let deadline = Instant::now() + wait;
        loop {
            // SAFETY: flock on a descriptor this function owns; no memory is passed.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                return Ok(FileLock(file));
            }
            let error = io::Error::last_os_error();
            if error.kind() != io::ErrorKind::WouldBlock {
                return Err(error);
            }
            if Instant::now() >= deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "{} is held by another process's save for more than {} s",
                        path.display(),
                        wait.as_secs()
                    ),
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        use std::os::fd::AsRawFd;
        // SAFETY: as in `acquire`.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}
