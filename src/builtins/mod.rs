//! The built-in tool catalog: file reads and searches, writes and edits, and a shell, all rooted
//! at one directory.
//!
//! | tool | arguments | value | scheduling | card |
//! |---|---|---|---|---|
//! | `read_file` | `{path, offset?, limit?}` | `{path, content, start_line, end_line, total_lines}` | parallel | `read` |
//! | `list_dir` | `{path}` | `{entries: [{name, kind, size}], truncated}` | parallel | `generic` |
//! | `glob` | `{pattern, path?}` | `{paths, truncated}` | parallel | `search` |
//! | `grep` | `{pattern, path?, glob?, context?, max_results?}` | `{matches: [{path, line, text, before?, after?}], truncated}` | parallel | `search` |
//! | `write_file` | `{path, content}` | `{path, bytes_written}` | exclusive | `diff` |
//! | `edit_file` | `{path, old, new, replace_all?}` | `{path, replacements, diff}` | exclusive | `diff` |
//! | `shell` | `{command, timeout_ms?}` | `{exit_code, stdout, stderr, truncated}` | exclusive | `terminal` |
//!
//! Paths in values are relative to the root and `/`-separated; line numbers are 1-based.
//!
//! # Confinement
//! Every path argument of the file tools is resolved against the root after symlinks (see
//! [`paths`](self) internals: component by component, as the kernel does) and must stay inside it.
//! [`BuiltinTools::guard`] denies escapes before the body runs (`DENIED`, `details.by = "guard"`,
//! with a reason naming the path and the root); each body checks again, so a pipeline without the
//! guard still never touches a path outside the root. Walks (`glob`, `grep`) do not follow
//! symlinks. The check and the use are not atomic: a process that swaps a directory for a symlink
//! between them is outside this threat model.
//!
//! **`shell` is not confined**: it runs `sh -c` with the root as working directory, and the
//! command can reach anything the process can. Gate it with a hook, an Approver or a policy.
//!
//! # Example
//! ```
//! use codemode::pipeline::CallRequest;
//! use codemode::builtins::BuiltinTools;
//! use codemode::{Pipeline, ToolRegistry};
//! use serde_json::json;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(dir.path().join("a.txt"), "hello\n").unwrap();
//! let builtins = BuiltinTools::new(dir.path()).unwrap();
//! let mut registry = ToolRegistry::new();
//! builtins.register(&mut registry).unwrap();
//! let pipeline = Pipeline::builder(registry).guard(builtins.guard()).build();
//!
//! let out = pipeline.call(CallRequest::new("read_file", json!({"path": "a.txt"}))).await;
//! assert_eq!(out.result().unwrap()["content"], "hello\n");
//! assert_eq!(out.content, "     1\thello");
//!
//! let denied = pipeline.call(CallRequest::new("read_file", json!({"path": "../x"}))).await;
//! assert_eq!(denied.error.unwrap().code().as_str(), "DENIED");
//! # });
//! ```

mod fs_read;
mod fs_write;
mod guard;
mod paths;
mod search;
mod shell;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::pipeline::{Guard, ToolFailure};
use crate::tool::{RegistryError, ToolDefinition, ToolRegistry};

pub use shell::{DEFAULT_SHELL_TIMEOUT_MS, MAX_SHELL_OUTPUT_BYTES, MAX_SHELL_TIMEOUT_MS};

/// Lines `read_file` returns when no `limit` is given.
pub const DEFAULT_READ_LIMIT: u64 = 2000;
/// Most bytes of file content one `read_file` call returns (cut at a line boundary).
pub const MAX_READ_BYTES: usize = 256 * 1024;
/// Most paths one `glob` call returns.
pub const MAX_GLOB_RESULTS: usize = 1000;
/// Most entries one `list_dir` call returns.
pub const MAX_LIST_ENTRIES: usize = 2000;
/// Matches `grep` returns when no `max_results` is given.
pub const DEFAULT_GREP_RESULTS: u64 = 100;
/// Upper bound of `grep`'s `max_results`.
pub const MAX_GREP_RESULTS: u64 = 2000;
/// Characters of one line kept in a `grep` match or context line.
pub const MAX_GREP_LINE_CHARS: usize = 1000;

/// Why [`BuiltinTools::new`] refused a root.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuiltinError {
    #[error("builtin tools root `{}` cannot be used: {source}", path.display())]
    Root {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("builtin tools root `{}` is not a directory", path.display())]
    NotADirectory { path: PathBuf },
}

/// The root every file tool is confined to, shared by the bodies and the guard.
#[derive(Debug)]
pub(crate) struct Root {
    pub(crate) path: PathBuf,
}

impl Root {
    /// Resolves a path argument inside the root, or fails with the confinement message.
    pub(crate) fn resolve(&self, input: &str) -> Result<paths::Resolved, ToolFailure> {
        paths::resolve(&self.path, input).map_err(|e| ToolFailure::new(e.to_string()))
    }

    pub(crate) fn relative(&self, abs: &Path) -> String {
        paths::relative(&self.path, abs)
    }

    /// `` `rel` (under the root `/abs/root`) `` for error messages.
    pub(crate) fn describe(&self, rel: &str) -> String {
        format!("`{rel}` (under the root `{}`)", self.path.display())
    }
}

/// The built-in tools over one root directory. Cheap to clone.
#[derive(Clone, Debug)]
pub struct BuiltinTools {
    root: Arc<Root>,
    tools: Arc<[ToolDefinition]>,
}

impl BuiltinTools {
    /// Tools confined to `root` (canonicalized here, so later symlink swaps of the root itself do
    /// not move it).
    ///
    /// # Errors
    /// The root does not exist, cannot be read, or is not a directory.
    pub fn new(root: impl AsRef<Path>) -> Result<BuiltinTools, BuiltinError> {
        let given = root.as_ref();
        let path = given.canonicalize().map_err(|source| BuiltinError::Root {
            path: given.to_path_buf(),
            source,
        })?;
        if !path.is_dir() {
            return Err(BuiltinError::NotADirectory {
                path: given.to_path_buf(),
            });
        }
        let root = Arc::new(Root { path });
        let tools: Vec<ToolDefinition> = vec![
            fs_read::read_file(root.clone()),
            fs_read::list_dir(root.clone()),
            search::glob(root.clone()),
            search::grep(root.clone()),
            fs_write::write_file(root.clone()),
            fs_write::edit_file(root.clone()),
            shell::shell(root.clone()),
        ];
        Ok(BuiltinTools {
            root,
            tools: tools.into(),
        })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root.path
    }

    /// The seven definitions (`read_file`, `list_dir`, `glob`, `grep`, `write_file`,
    /// `edit_file`, `shell`), e.g. to register some of them or under a namespace.
    pub fn definitions(&self) -> &[ToolDefinition] {
        &self.tools
    }

    /// Registers all seven tools at the top level (`tools.read_file(..)`, ...).
    ///
    /// # Errors
    /// A name collision with a tool already in the registry.
    pub fn register(&self, registry: &mut ToolRegistry) -> Result<(), RegistryError> {
        for tool in self.tools.iter() {
            registry.register(tool.clone())?;
        }
        Ok(())
    }

    /// The path-confinement guard, for `PipelineBuilder::guard`. It checks the path arguments of
    /// this catalog's file tools (recognised by identity, wherever they are registered) and
    /// denies any that resolves outside the root; other tools pass. `shell` is not checked.
    pub fn guard(&self) -> impl Guard + use<> {
        guard::PathGuard::new(self.root.clone(), &self.tools)
    }
}

/// Which arguments of a file tool are paths (the guard checks these).
pub(crate) fn path_args(tool: &str) -> &'static [&'static str] {
    match tool {
        "read_file" | "list_dir" | "glob" | "grep" | "write_file" | "edit_file" => &["path"],
        _ => &[],
    }
}

/// An optional string argument; `None` when absent or null.
pub(crate) fn opt_str<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

/// An optional unsigned argument.
pub(crate) fn opt_u64(args: &Value, key: &str) -> Option<u64> {
    args.get(key).and_then(Value::as_u64)
}

/// Runs blocking file-system work off the async threads.
pub(crate) async fn blocking<T, F>(f: F) -> Result<T, ToolFailure>
where
    F: FnOnce() -> Result<T, ToolFailure> + Send + 'static,
    T: Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r,
        Err(e) => Err(ToolFailure::new(format!("the tool's worker failed: {e}"))),
    }
}

/// Cuts `s` to at most `max` bytes on a char boundary.
pub(crate) fn truncate_str(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// A short one-line form of `s` for card titles.
pub(crate) fn short(s: &str, max_chars: usize) -> String {
    let line = s.lines().next().unwrap_or("");
    let mut out: String = line.chars().take(max_chars).collect();
    if out.len() < line.len() || line.len() < s.trim_end().len() {
        out.push('…');
    }
    out
}
