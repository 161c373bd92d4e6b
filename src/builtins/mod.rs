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
//! # Policies
//! Each file tool's definition declares its `path` argument and this root (a crate-internal
//! capability), so a policy matches the normalised path, whatever the spelling, and
//! `Policy::hide_denied_files` can keep denied files out of `list_dir`, `glob` and `grep`
//! (they are not listed, and `grep` never reads them).
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
mod glob;
mod grep;
mod guard;
mod paths;
mod shell;
mod walk;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::Deserialize;
use serde_json::Value;

use crate::pipeline::{Guard, ToolFailure};
use crate::tool::{FileFilter, PathArgs, PathScope, RegistryError, ToolDefinition, ToolRegistry};

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
    /// The root could not be resolved (missing, unreadable).
    #[error("builtin tools root `{}` cannot be used: {source}", path.display())]
    Root {
        /// The root as given.
        path: PathBuf,
        /// Why it could not be resolved.
        #[source]
        source: std::io::Error,
    },
    /// The root exists but is a file.
    #[error("builtin tools root `{}` is not a directory", path.display())]
    NotADirectory {
        /// The root as given.
        path: PathBuf,
    },
}

/// The path arguments of the file tools (all take their path as `path`; the guard checks these
/// and policies match them normalised).
const PATH_KEYS: &[&str] = &["path"];

/// The root every file tool is confined to, shared by the bodies and the guard.
#[derive(Debug)]
pub(crate) struct Root {
    pub(crate) path: PathBuf,
    /// How the tools' path arguments normalise, and the files a policy hides from listings.
    scope: Arc<PathScope>,
}

impl Root {
    fn new(path: PathBuf) -> Root {
        let resolve_in = path.clone();
        let scope =
            PathScope::new(move |input| paths::resolve(&resolve_in, input).ok().map(|r| r.rel));
        Root {
            path,
            scope: Arc::new(scope),
        }
    }

    /// The path capability of one of the file tools; `reveals` for those whose results show
    /// files (reads, listings, searches) rather than only change them.
    pub(crate) fn path_args(&self, reveals: bool) -> PathArgs {
        PathArgs {
            scope: self.scope.clone(),
            keys: PATH_KEYS,
            reveals,
        }
    }

    /// The files listings leave out now (a policy's deny path rules), read once per call.
    pub(crate) fn hidden(&self) -> Option<Arc<dyn FileFilter>> {
        self.scope.hidden()
    }

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
        let root = Arc::new(Root::new(path));
        let tools: Vec<ToolDefinition> = vec![
            fs_read::read_file(root.clone()),
            fs_read::list_dir(root.clone()),
            glob::glob(root.clone()),
            grep::grep(root.clone()),
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

/// The `parameters` schema of a tool, derived from its argument struct and trimmed to what the
/// model and the SDK generator use. The SDK turns schemas into TypeScript and JSDoc, so anything
/// left here shows up in `tools.d.ts`:
/// - `$schema` and `title` (the Rust struct's name) go; so does a top-level `description` (the
///   struct's rustdoc is for Rust readers; the tool's own description speaks to the model);
/// - an optional (`Option<T>`) property is absent rather than `null`: its `"null"` type member
///   goes, or it would read `number | null`;
/// - `format` goes (`uint64` is a Rust width, not a constraint; the bounds are `minimum`/`maximum`).
///
/// Argument structs are flat, so subschemas are inlined and no `$ref`/`$defs` appear.
pub(crate) fn args_schema<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.meta_schema = None;
            s.inline_subschemas = true;
        })
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    let Some(top) = schema.as_object_mut() else {
        return schema;
    };
    for key in ["$schema", "title", "description"] {
        top.remove(key);
    }
    let required: Vec<Value> = match top.get("required") {
        Some(Value::Array(names)) => names.clone(),
        _ => Vec::new(),
    };
    if let Some(Value::Object(properties)) = top.get_mut("properties") {
        for (name, property) in properties.iter_mut() {
            let Some(property) = property.as_object_mut() else {
                continue;
            };
            property.remove("format");
            if required.iter().any(|r| r.as_str() == Some(name)) {
                continue;
            }
            if let Some(Value::Array(types)) = property.get("type") {
                let mut types: Vec<Value> =
                    types.iter().filter(|t| *t != "null").cloned().collect();
                let ty = if types.len() == 1 {
                    types.remove(0)
                } else {
                    Value::Array(types)
                };
                property.insert("type".into(), ty);
            }
        }
    }
    schema
}

/// The validated arguments of a `tool` call as its argument struct. Strings are borrowed from
/// `args` (a `write_file` content can be large, and cards parse the arguments again). The pipeline validates against [`args_schema`] before the body runs, so a failure
/// here means the struct and its schema disagree; it still fails the call with serde's reason.
pub(crate) fn parse_args<'a, T: Deserialize<'a>>(
    tool: &str,
    args: &'a Value,
) -> Result<T, ToolFailure> {
    T::deserialize(args).map_err(|e| ToolFailure::new(format!("invalid arguments for {tool}: {e}")))
}

/// The arguments as a card shows them. Cards are also drawn for calls whose arguments failed
/// validation (the result card of an `INVALID_ARGS` call): those fall back to empty fields.
pub(crate) fn card_args<'a, T: Deserialize<'a> + Default>(args: &'a Value) -> T {
    T::deserialize(args).unwrap_or_default()
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The derived schemas carry nothing the SDK would print that the model was not shown
    /// before: no generator metadata, references, Rust formats, nullable or defaulted fields.
    #[test]
    fn derived_schemas_are_plain_and_cover_the_guarded_paths() {
        let dir = tempfile::tempdir().unwrap();
        let builtins = BuiltinTools::new(dir.path()).unwrap();
        for tool in builtins.definitions() {
            let schema = tool.parameters();
            let text = schema.to_string();
            for banned in [
                "$schema",
                "$ref",
                "$defs",
                "\"title\"",
                "\"format\"",
                "\"null\"",
                "\"default\"",
            ] {
                assert!(
                    !text.contains(banned),
                    "{}: {banned} in {text}",
                    tool.name()
                );
            }
            assert_eq!(schema["type"], "object");
            assert_eq!(schema["additionalProperties"], false, "{}", tool.name());
            // A renamed field would silently leave the guard and the policy checking nothing.
            let keys = tool.path_args().map_or(&[][..], |a| a.keys);
            assert_eq!(keys.is_empty(), tool.name() == "shell", "{}", tool.name());
            for key in keys {
                assert_eq!(
                    schema["properties"][key]["type"],
                    "string",
                    "{}",
                    tool.name()
                );
            }
        }
    }

    #[derive(Debug, Default, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Probe<'a> {
        /// A name.
        name: &'a str,
        #[schemars(range(min = 1, max = 9))]
        count: Option<u64>,
    }

    #[test]
    fn optional_integers_are_optional_not_nullable() {
        let schema = args_schema::<Probe>();
        assert_eq!(
            schema,
            serde_json::json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "A name."},
                    "count": {"type": "integer", "minimum": 1, "maximum": 9}
                },
                "required": ["name"],
                "additionalProperties": false
            })
        );
    }

    #[test]
    fn bad_arguments_fail_the_body_clearly_and_blank_the_card() {
        let args = serde_json::json!({"name": "x", "extra": 1});
        let err = parse_args::<Probe>("probe", &args).unwrap_err();
        assert!(
            err.message
                .contains("invalid arguments for probe: unknown field `extra`")
        );
        assert_eq!(card_args::<Probe>(&args).name, "");
        let ok = serde_json::json!({"name": "x", "count": 3});
        let probe: Probe = card_args(&ok);
        assert_eq!((probe.name, probe.count), ("x", Some(3)));
    }
}
