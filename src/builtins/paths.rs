//! Path confinement: every path argument of the file tools is resolved against the root the way
//! the kernel would resolve it (component by component, following symlinks, `..` taken after the
//! symlink on its left is followed), and the result must lie inside the root.
//!
//! A component that does not exist yet (a file `write_file` is about to create) is appended as
//! is, so the check also covers paths that are created later. Dangling symlinks are followed
//! lexically through their target, so a link to a missing file outside the root cannot be used
//! to create that file.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// Symlink hops allowed while resolving one path (the kernel's `MAXSYMLINKS`).
const MAX_SYMLINK_HOPS: usize = 40;

/// A path resolved inside the root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Resolved {
    /// Absolute, symlink-free path inside the root.
    pub(crate) abs: PathBuf,
    /// The same path relative to the root (`.` for the root itself), `/`-separated.
    pub(crate) rel: String,
}

/// Why a path argument cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PathError {
    /// The path resolves outside the root.
    Escapes {
        path: String,
        resolved: PathBuf,
        root: PathBuf,
    },
    /// Too many symlinks (a loop).
    SymlinkLoop { path: String },
    /// The argument is not a usable path (e.g. contains a NUL byte).
    Invalid { path: String, why: &'static str },
}

impl std::fmt::Display for PathError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PathError::Escapes {
                path,
                resolved,
                root,
            } => write!(
                f,
                "path `{path}` resolves to `{}`, which is outside the root `{}`",
                resolved.display(),
                root.display()
            ),
            PathError::SymlinkLoop { path } => {
                write!(f, "path `{path}`: too many levels of symbolic links")
            }
            PathError::Invalid { path, why } => write!(f, "path `{path}` is invalid: {why}"),
        }
    }
}

/// Resolves `input` (relative to `root`, or absolute) after symlinks; `root` must be canonical.
pub(crate) fn resolve(root: &Path, input: &str) -> Result<Resolved, PathError> {
    if input.contains('\0') {
        return Err(PathError::Invalid {
            path: input.to_owned(),
            why: "it contains a NUL byte",
        });
    }
    let input_path = Path::new(input);
    let mut cur = if input_path.is_absolute() {
        PathBuf::from("/")
    } else {
        root.to_path_buf()
    };
    let mut queue: VecDeque<OsString> = VecDeque::new();
    push_front(&mut queue, &mut cur, input_path);
    let mut hops = 0usize;
    while let Some(part) = queue.pop_front() {
        if part == ".." {
            cur.pop();
            continue;
        }
        let next = cur.join(&part);
        match std::fs::symlink_metadata(&next) {
            Ok(meta) if meta.file_type().is_symlink() => {
                hops += 1;
                if hops > MAX_SYMLINK_HOPS {
                    return Err(PathError::SymlinkLoop {
                        path: input.to_owned(),
                    });
                }
                let target = std::fs::read_link(&next).map_err(|_| PathError::Invalid {
                    path: input.to_owned(),
                    why: "a symbolic link in it cannot be read",
                })?;
                // The link's target is resolved from the directory holding the link.
                push_front(&mut queue, &mut cur, &target);
            }
            // Existing entries, and missing ones (created later) or unreadable ones (the kernel
            // cannot traverse them either), are taken as they are.
            _ => cur = next,
        }
    }
    if !cur.starts_with(root) {
        return Err(PathError::Escapes {
            path: input.to_owned(),
            resolved: cur,
            root: root.to_path_buf(),
        });
    }
    let rel = relative(root, &cur);
    Ok(Resolved { abs: cur, rel })
}

/// Queues the components of `path` before what is left; an absolute path restarts at `/`.
fn push_front(queue: &mut VecDeque<OsString>, cur: &mut PathBuf, path: &Path) {
    let mut parts = Vec::new();
    for c in path.components() {
        match c {
            Component::RootDir | Component::Prefix(_) => {
                *cur = PathBuf::from("/");
                parts.clear();
            }
            Component::CurDir => {}
            Component::ParentDir => parts.push(OsString::from("..")),
            Component::Normal(name) => parts.push(name.to_owned()),
        }
    }
    for part in parts.into_iter().rev() {
        queue.push_front(part);
    }
}

/// `abs` relative to `root`, `/`-separated; `.` for the root itself.
pub(crate) fn relative(root: &Path, abs: &Path) -> String {
    match abs.strip_prefix(root) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
        Ok(rel) => rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/"),
        Err(_) => abs.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        (dir, root)
    }

    #[test]
    fn plain_and_missing_paths_resolve_inside() {
        let (_d, root) = root();
        std::fs::create_dir(root.join("a")).unwrap();
        let r = resolve(&root, "a/./b/../c.txt").unwrap();
        assert_eq!(r.abs, root.join("a/c.txt"));
        assert_eq!(r.rel, "a/c.txt");
        assert_eq!(resolve(&root, "").unwrap().rel, ".");
        assert_eq!(resolve(&root, ".").unwrap().rel, ".");
        let abs = root.join("a").display().to_string();
        assert_eq!(resolve(&root, &abs).unwrap().rel, "a");
    }

    #[test]
    fn escapes_are_rejected() {
        let (_d, root) = root();
        assert!(matches!(
            resolve(&root, "../x"),
            Err(PathError::Escapes { .. })
        ));
        assert!(matches!(
            resolve(&root, "/etc/passwd"),
            Err(PathError::Escapes { .. })
        ));
        std::os::unix::fs::symlink("/etc", root.join("etc")).unwrap();
        assert!(matches!(
            resolve(&root, "etc/passwd"),
            Err(PathError::Escapes { .. })
        ));
        // A dangling link to a missing file outside the root.
        std::os::unix::fs::symlink("/nonexistent-dir/f", root.join("dangling")).unwrap();
        assert!(matches!(
            resolve(&root, "dangling"),
            Err(PathError::Escapes { .. })
        ));
    }

    #[test]
    fn symlink_dotdot_follows_the_link_first() {
        let (_d, root) = root();
        std::fs::create_dir_all(root.join("deep/inner")).unwrap();
        std::os::unix::fs::symlink(root.join("deep/inner"), root.join("l")).unwrap();
        // `l/..` is `deep`, not the root.
        assert_eq!(resolve(&root, "l/../x").unwrap().rel, "deep/x");
        std::os::unix::fs::symlink("loop", root.join("loop")).unwrap();
        assert!(matches!(
            resolve(&root, "loop/x"),
            Err(PathError::SymlinkLoop { .. })
        ));
    }
}
