//! The house rules of docs/ARCHITECTURE.md, checked over the sources' `use` lines and `crate::`
//! paths: no module imports a module above it, and no two files of the library import each
//! other (directly or round a longer circle). A module's `mod.rs` is its face: children may read
//! the items it re-exports, so it is left out of the file-level circle check.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What each top-level module may import, from the ground floor up. `lib.rs` may import
/// anything; the binary (`main.rs`, `cli/`) is not part of the library.
const ALLOWED: &[(&str, &[&str])] = &[
    ("alloc", &[]),
    ("call", &[]),
    ("schema", &["call"]),
    ("sdk", &["call", "schema"]),
    ("tool", &["call", "schema", "sdk"]),
    ("pipeline", &["call", "schema", "tool"]),
    ("sandbox", &["call"]),
    ("policy", &["call", "schema", "tool", "pipeline"]),
    ("builtins", &["call", "schema", "tool", "pipeline"]),
    ("learned", &["call", "schema", "tool", "pipeline"]),
    (
        "harness",
        &[
            "call", "schema", "sdk", "tool", "pipeline", "sandbox", "learned",
        ],
    ),
    (
        "mcp",
        &[
            "call", "schema", "sdk", "tool", "pipeline", "sandbox", "policy", "builtins",
            "learned", "harness",
        ],
    ),
    (
        "bench",
        &[
            "call", "schema", "sdk", "tool", "pipeline", "sandbox", "policy", "builtins",
            "learned", "harness", "mcp",
        ],
    ),
];

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The file's source without comments (doc examples and prose name paths that are not imports).
fn code_of(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| match line.find("//") {
            Some(i) if !line[..i].contains('"') => &line[..i],
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The code before its `#[cfg(test)]` module: unit tests may reach anywhere in the crate.
fn without_tests(code: &str) -> &str {
    match code.find("#[cfg(test)]") {
        Some(i) => &code[..i],
        None => code,
    }
}

/// Expands a use tree (`a::{b, c::{d, e}}`) into its paths.
fn expand(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let path = tree.split(" as ").next().unwrap().trim();
        return vec![path.to_string()];
    };
    let prefix = tree[..open].trim();
    let inner = &tree[open + 1..tree.rfind('}').unwrap()];
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|p| !p.trim().is_empty())
        .flat_map(expand)
        .map(|p| {
            if p == "self" {
                prefix.trim_end_matches("::").to_string()
            } else {
                format!("{prefix}{p}")
            }
        })
        .collect()
}

/// The paths a file names: its `use` trees, and `crate::`/`super::` paths in its code.
fn paths_named(code: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut rest = code;
    while let Some(i) = find_use(rest) {
        let statement = &rest[i + 4..];
        let end = statement.find(';').unwrap_or(statement.len());
        paths.extend(expand(&statement[..end].replace('\n', " ")));
        rest = &statement[end..];
    }
    for prefix in ["crate::", "super::"] {
        let mut at = 0;
        while let Some(i) = code[at..].find(prefix) {
            let start = at + i;
            let boundary = start == 0 || {
                let before = code.as_bytes()[start - 1];
                !(before.is_ascii_alphanumeric() || before == b'_' || before == b':')
            };
            let end = code[start..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .map_or(code.len(), |n| start + n);
            if boundary {
                paths.push(code[start..end].trim_end_matches(':').to_string());
            }
            at = end.max(start + prefix.len());
        }
    }
    paths
}

/// The start of the next `use ` statement (also `pub use`, `pub(crate) use`).
fn find_use(code: &str) -> Option<usize> {
    let mut at = 0;
    while let Some(i) = code[at..].find("use ") {
        let start = at + i;
        let line_start = code[..start].rfind('\n').map_or(0, |n| n + 1);
        let before = code[line_start..start].trim();
        if before.is_empty() || before.starts_with("pub") {
            return Some(start);
        }
        at = start + 4;
    }
    None
}

/// The module path of a source file (`src/pipeline/call.rs` → `["pipeline", "call"]`).
fn module_of(file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src_dir()).unwrap();
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// A named path as a path from the crate root, if it is one.
fn absolute(path: &str, module: &[String]) -> Option<Vec<String>> {
    let mut segments = path.split("::").map(str::to_string);
    match segments.next()?.as_str() {
        "crate" => Some(segments.collect()),
        "super" => {
            // `super` of a file `a/b.rs` is `a`; of `a/b/mod.rs` also `a`.
            let mut base = module.to_vec();
            base.pop();
            let mut rest: Vec<String> = segments.collect();
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest.remove(0);
            }
            base.extend(rest);
            Some(base)
        }
        _ => None,
    }
}

/// The library's file for an absolute path: the longest prefix that is a file other than a
/// `mod.rs`.
fn file_of(path: &[String]) -> Option<PathBuf> {
    for len in (1..=path.len()).rev() {
        let mut file = src_dir();
        for segment in &path[..len] {
            file.push(segment);
        }
        let as_file = file.with_extension("rs");
        if as_file.is_file() {
            return Some(as_file);
        }
        if file.join("mod.rs").is_file() {
            return None;
        }
    }
    None
}

struct Source {
    file: PathBuf,
    module: Vec<String>,
    /// Absolute paths named outside the file's unit tests.
    named: Vec<Vec<String>>,
}

fn library_sources() -> Vec<Source> {
    let mut files = Vec::new();
    rust_files(&src_dir(), &mut files);
    files.sort();
    files
        .into_iter()
        .filter(|f| {
            let module = module_of(f);
            !module.is_empty() && module[0] != "main" && module[0] != "cli"
        })
        .map(|file| {
            let module = module_of(&file);
            let code = code_of(&file);
            let named = paths_named(without_tests(&code))
                .iter()
                .filter_map(|p| absolute(p, &module))
                .filter(|p| !p.is_empty())
                .collect();
            Source {
                file,
                module,
                named,
            }
        })
        .collect()
}

#[test]
fn no_module_imports_a_module_above_it() {
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut violations = Vec::new();
    for source in library_sources() {
        let from = source.module[0].as_str();
        let Some(may) = allowed.get(from) else {
            violations.push(format!(
                "{}: the module `{from}` has no place in the layering (add it to ALLOWED and docs/ARCHITECTURE.md)",
                source.file.display()
            ));
            continue;
        };
        for path in &source.named {
            let to = path[0].as_str();
            if to != from && allowed.contains_key(to) && !may.contains(&to) {
                violations.push(format!(
                    "{}: `{from}` imports `{}`, which is not below it",
                    source.file.display(),
                    path.join("::")
                ));
            }
        }
    }
    let violations: BTreeSet<_> = violations.into_iter().collect();
    assert!(
        violations.is_empty(),
        "upward imports:\n{}",
        violations.into_iter().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn no_two_files_import_each_other() {
    let sources = library_sources();
    let mut edges: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    for source in &sources {
        if source.file.ends_with("mod.rs") || source.file.ends_with("lib.rs") {
            continue;
        }
        let targets = edges.entry(source.file.clone()).or_default();
        for path in &source.named {
            if let Some(target) = file_of(path)
                && target != source.file
            {
                targets.insert(target);
            }
        }
    }
    // A depth-first search for a circle, reported with its files.
    fn visit(
        file: &PathBuf,
        edges: &BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        stack: &mut Vec<PathBuf>,
        done: &mut BTreeSet<PathBuf>,
        circles: &mut Vec<String>,
    ) {
        if done.contains(file) {
            return;
        }
        if let Some(at) = stack.iter().position(|f| f == file) {
            let names: Vec<String> = stack[at..]
                .iter()
                .chain(std::iter::once(file))
                .map(|f| f.strip_prefix(src_dir()).unwrap().display().to_string())
                .collect();
            circles.push(names.join(" -> "));
            return;
        }
        stack.push(file.clone());
        for next in edges.get(file).into_iter().flatten() {
            visit(next, edges, stack, done, circles);
        }
        stack.pop();
        done.insert(file.clone());
    }
    let mut circles = Vec::new();
    let mut done = BTreeSet::new();
    for file in edges.keys() {
        visit(file, &edges, &mut Vec::new(), &mut done, &mut circles);
    }
    assert!(
        circles.is_empty(),
        "files that import each other:\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_checker_sees_imports_in_every_form() {
    assert_eq!(
        expand("crate::pipeline::{CallRequest, hooks::{CallInfo, self}}"),
        vec![
            "crate::pipeline::CallRequest",
            "crate::pipeline::hooks::CallInfo",
            "crate::pipeline::hooks",
        ]
    );
    let code = "use super::approval::Approver;\npub(crate) use crate::call::{Caller as C};\nfn f() { crate::sdk::generate_sdk(&[]); }";
    let named = paths_named(code);
    assert!(named.contains(&"super::approval::Approver".to_string()));
    assert!(named.contains(&"crate::call::Caller".to_string()));
    assert!(named.contains(&"crate::sdk::generate_sdk".to_string()));
    let module = vec!["pipeline".to_string(), "hooks".to_string()];
    assert_eq!(
        absolute("super::approval::Approver", &module).unwrap(),
        vec!["pipeline", "approval", "Approver"]
    );
    assert_eq!(
        file_of(&["pipeline".into(), "approval".into(), "Approver".into()]).unwrap(),
        src_dir().join("pipeline/approval.rs")
    );
}
