//! The built-in tool catalog through the real pipeline: shapes, renders, cards, confinement and
//! the shell's process-group handling.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use codemode::builtins::{BuiltinError, BuiltinTools, MAX_SHELL_OUTPUT_BYTES};
use codemode::pipeline::{CallOutcome, CallRequest, ErrorCode, GuardDecision, guard_fn};
use codemode::tool::{Card, SearchHit};
use codemode::{Pipeline, ToolRegistry};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

struct Workspace {
    _dir: tempfile::TempDir,
    /// Canonical root.
    root: PathBuf,
    /// A directory next to the root (outside it).
    outside: PathBuf,
    pipeline: Pipeline,
}

impl Workspace {
    fn new() -> Self {
        Self::build(true)
    }

    fn without_guard() -> Self {
        Self::build(false)
    }

    fn build(with_guard: bool) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let root = base.join("root");
        let outside = base.join("outside");
        std::fs::create_dir(&root).unwrap();
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("secret.txt"), "secret\n").unwrap();
        let builtins = BuiltinTools::new(&root).unwrap();
        let mut registry = ToolRegistry::new();
        builtins.register(&mut registry).unwrap();
        let mut builder = Pipeline::builder(registry);
        if with_guard {
            builder = builder.guard(builtins.guard());
        }
        Workspace {
            _dir: dir,
            root,
            outside,
            pipeline: builder.build(),
        }
    }

    fn write(&self, rel: &str, content: &str) {
        let path = self.root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    async fn call(&self, tool: &str, args: Value) -> CallOutcome {
        self.pipeline.call(CallRequest::new(tool, args)).await
    }

    async fn ok(&self, tool: &str, args: Value) -> (Value, CallOutcome) {
        let out = self.call(tool, args.clone()).await;
        let value = match out.result() {
            Ok(v) => v.clone(),
            Err(e) => panic!("{tool}({args}) failed: {e}"),
        };
        (value, out)
    }

    /// The error message of a failed body (`TOOL_ERROR`).
    async fn tool_error(&self, tool: &str, args: Value) -> String {
        let out = self.call(tool, args).await;
        let err = out.error.expect("the call fails");
        assert_eq!(err.code(), ErrorCode::ToolError, "{err}");
        err.message
    }

    /// The reason of a guard denial.
    async fn guard_denial(&self, tool: &str, args: Value) -> String {
        let out = self.call(tool, args).await;
        let err = out.error.expect("the call is denied");
        assert_eq!(err.code(), ErrorCode::Denied, "{err}");
        assert_eq!(err.details()["by"], "guard");
        err.details()["reason"].as_str().unwrap().to_owned()
    }
}

// ---------------------------------------------------------------------------------------------
// Construction and registration

#[test]
fn new_rejects_a_missing_root_and_a_file_root() {
    let err = BuiltinTools::new("/definitely/not/here").unwrap_err();
    assert!(matches!(err, BuiltinError::Root { .. }));
    assert!(err.to_string().contains("/definitely/not/here"), "{err}");

    let file = tempfile::NamedTempFile::new().unwrap();
    let err = BuiltinTools::new(file.path()).unwrap_err();
    assert!(matches!(err, BuiltinError::NotADirectory { .. }));
    assert!(err.to_string().contains("is not a directory"), "{err}");
}

#[test]
fn register_adds_all_seven_tools_with_output_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let builtins = BuiltinTools::new(dir.path()).unwrap();
    assert_eq!(builtins.root(), dir.path().canonicalize().unwrap());
    let mut registry = ToolRegistry::new();
    builtins.register(&mut registry).unwrap();
    let names: Vec<String> = registry.tools().into_iter().map(|t| t.path).collect();
    assert_eq!(
        names,
        [
            "edit_file",
            "glob",
            "grep",
            "list_dir",
            "read_file",
            "shell",
            "write_file"
        ]
    );
    for info in registry.tools() {
        assert!(
            info.output_schema.is_some(),
            "{} has an output schema",
            info.name
        );
        assert!(!info.description.is_empty());
    }
    // Registering twice collides.
    assert!(builtins.register(&mut registry).is_err());
}

#[tokio::test]
async fn reads_and_searches_are_parallel_while_writes_and_shell_are_exclusive() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "a\n").unwrap();
    let builtins = BuiltinTools::new(dir.path()).unwrap();
    let mut registry = ToolRegistry::new();
    builtins.register(&mut registry).unwrap();
    let seen: Arc<Mutex<Vec<(String, bool)>>> = Arc::default();
    let spy = seen.clone();
    let pipeline = Pipeline::builder(registry)
        .guard(builtins.guard())
        .guard(guard_fn("spy", move |c| {
            spy.lock().unwrap().push((c.path.to_owned(), c.parallel));
            GuardDecision::Pass
        }))
        .build();
    let calls = [
        ("read_file", json!({"path": "a.txt"})),
        ("list_dir", json!({"path": "."})),
        ("glob", json!({"pattern": "*"})),
        ("grep", json!({"pattern": "a"})),
        ("write_file", json!({"path": "b.txt", "content": "b"})),
        (
            "edit_file",
            json!({"path": "a.txt", "old": "a", "new": "c"}),
        ),
        ("shell", json!({"command": "true"})),
    ];
    for (tool, args) in calls {
        let out = pipeline.call(CallRequest::new(tool, args)).await;
        assert!(out.is_ok(), "{tool}: {:?}", out.error);
    }
    let seen = seen.lock().unwrap().clone();
    let expect: Vec<(String, bool)> = [
        ("read_file", true),
        ("list_dir", true),
        ("glob", true),
        ("grep", true),
        ("write_file", false),
        ("edit_file", false),
        ("shell", false),
    ]
    .into_iter()
    .map(|(t, p)| (t.to_owned(), p))
    .collect();
    assert_eq!(seen, expect);
}

// ---------------------------------------------------------------------------------------------
// read_file

#[tokio::test]
async fn read_file_returns_raw_content_and_renders_numbered_lines() {
    let ws = Workspace::new();
    ws.write("src/a.txt", "alpha\nbeta\ngamma\n");
    let (value, out) = ws.ok("read_file", json!({"path": "src/a.txt"})).await;
    assert_eq!(
        value,
        json!({
            "path": "src/a.txt",
            "content": "alpha\nbeta\ngamma\n",
            "start_line": 1,
            "end_line": 3,
            "total_lines": 3
        })
    );
    assert_eq!(out.content, "     1\talpha\n     2\tbeta\n     3\tgamma");
    assert_eq!(
        out.call_card,
        Some(Card::Read {
            title: "Read src/a.txt".into(),
            path: "src/a.txt".into(),
            range: None,
            text: String::new(),
        })
    );
    assert_eq!(
        out.result_card,
        Some(Card::Read {
            title: "Read src/a.txt".into(),
            path: "src/a.txt".into(),
            range: Some([1, 3]),
            text: "alpha\nbeta\ngamma\n".into(),
        })
    );
}

#[tokio::test]
async fn read_file_offset_and_limit_select_lines_and_the_render_says_how_to_read_on() {
    let ws = Workspace::new();
    let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    ws.write("ten.txt", &text);
    let (value, out) = ws
        .ok(
            "read_file",
            json!({"path": "ten.txt", "offset": 3, "limit": 2}),
        )
        .await;
    assert_eq!(
        value,
        json!({
            "path": "ten.txt",
            "content": "line 3\nline 4\n",
            "start_line": 3,
            "end_line": 4,
            "total_lines": 10
        })
    );
    assert_eq!(
        out.content,
        "     3\tline 3\n     4\tline 4\n\n(lines 3-4 of 10; call read_file with offset 5 to read on)"
    );
    let Some(Card::Read { range, .. }) = out.result_card else {
        panic!("read card")
    };
    assert_eq!(range, Some([3, 4]));
}

#[tokio::test]
async fn read_file_defaults_to_2000_lines_and_handles_a_last_line_without_newline() {
    let ws = Workspace::new();
    let text: String = (1..=2500).map(|i| format!("{i}\n")).collect();
    ws.write("long.txt", &text);
    let (value, _) = ws.ok("read_file", json!({"path": "long.txt"})).await;
    assert_eq!(value["end_line"], 2000);
    assert_eq!(value["total_lines"], 2500);
    assert!(value["content"].as_str().unwrap().ends_with("\n2000\n"));

    ws.write("tail.txt", "a\r\nb");
    let (value, out) = ws.ok("read_file", json!({"path": "tail.txt"})).await;
    assert_eq!(value["content"], "a\r\nb");
    assert_eq!(value["total_lines"], 2);
    assert_eq!(out.content, "     1\ta\n     2\tb");

    ws.write("empty.txt", "");
    let (value, out) = ws.ok("read_file", json!({"path": "empty.txt"})).await;
    assert_eq!(
        value,
        json!({"path": "empty.txt", "content": "", "start_line": 1, "end_line": 0, "total_lines": 0})
    );
    assert_eq!(out.content, "(empty file)");
}

#[tokio::test]
async fn read_file_errors_name_the_path() {
    let ws = Workspace::new();
    let msg = ws
        .tool_error("read_file", json!({"path": "nope.txt"}))
        .await;
    assert!(msg.contains("not found: `nope.txt`"), "{msg}");
    assert!(msg.contains(&ws.root.display().to_string()), "{msg}");

    std::fs::write(ws.root.join("bin.dat"), b"PK\x03\x04\x00\x00binary").unwrap();
    let msg = ws.tool_error("read_file", json!({"path": "bin.dat"})).await;
    assert!(msg.contains("`bin.dat` is a binary file"), "{msg}");

    std::fs::create_dir(ws.root.join("d")).unwrap();
    let msg = ws.tool_error("read_file", json!({"path": "d"})).await;
    assert!(msg.contains("`d` is a directory"), "{msg}");

    ws.write("short.txt", "one\n");
    let msg = ws
        .tool_error("read_file", json!({"path": "short.txt", "offset": 5}))
        .await;
    assert!(
        msg.contains("offset 5 is past the end of `short.txt`"),
        "{msg}"
    );

    // A failed call gets a generic card carrying the message.
    let out = ws.call("read_file", json!({"path": "nope.txt"})).await;
    assert!(matches!(out.result_card, Some(Card::Generic { .. })));
}

#[tokio::test]
async fn read_file_caps_the_bytes_returned_at_a_line_boundary() {
    let ws = Workspace::new();
    let line = format!("{}\n", "x".repeat(999));
    ws.write("wide.txt", &line.repeat(400)); // 400 KB
    let (value, _) = ws.ok("read_file", json!({"path": "wide.txt"})).await;
    let content = value["content"].as_str().unwrap();
    assert!(content.len() <= codemode::builtins::MAX_READ_BYTES);
    assert_eq!(value["end_line"], 262);
    assert_eq!(content.len(), 262 * 1000);
    assert_eq!(value["total_lines"], 400);
}

// ---------------------------------------------------------------------------------------------
// list_dir

#[tokio::test]
async fn list_dir_sorts_entries_by_name_with_kind_and_size() {
    let ws = Workspace::new();
    ws.write("b.txt", "abc");
    ws.write("sub/inner.txt", "x");
    std::os::unix::fs::symlink("b.txt", ws.root.join("a-link")).unwrap();
    let (value, out) = ws.ok("list_dir", json!({"path": "."})).await;
    assert_eq!(
        value,
        json!({
            "entries": [
                {"name": "a-link", "kind": "symlink", "size": null},
                {"name": "b.txt", "kind": "file", "size": 3},
                {"name": "sub", "kind": "dir", "size": null}
            ],
            "truncated": false
        })
    );
    assert_eq!(out.content, "a-link@\nb.txt (3 bytes)\nsub/");
    assert_eq!(
        out.result_card,
        Some(Card::Generic {
            title: "List .".into(),
            body: Some("a-link@\nb.txt (3 bytes)\nsub/".into()),
        })
    );
    let (value, _) = ws.ok("list_dir", json!({"path": "sub"})).await;
    assert_eq!(value["entries"][0]["name"], "inner.txt");

    let msg = ws.tool_error("list_dir", json!({"path": "b.txt"})).await;
    assert!(msg.contains("`b.txt` is not a directory"), "{msg}");
}

// ---------------------------------------------------------------------------------------------
// glob

#[tokio::test]
async fn glob_matches_relative_to_its_path_sorted_and_respects_gitignore() {
    let ws = Workspace::new();
    ws.write(".gitignore", "target/\n*.log\n");
    for f in [
        "src/main.rs",
        "src/lib.rs",
        "src/nested/deep.rs",
        "target/debug/build.rs",
        "app.log",
        "README.md",
        "top.rs",
    ] {
        ws.write(f, "x\n");
    }
    let (value, out) = ws.ok("glob", json!({"pattern": "**/*.rs"})).await;
    assert_eq!(
        value,
        json!({
            "paths": ["src/lib.rs", "src/main.rs", "src/nested/deep.rs", "top.rs"],
            "truncated": false
        })
    );
    assert_eq!(
        out.content,
        "src/lib.rs\nsrc/main.rs\nsrc/nested/deep.rs\ntop.rs"
    );

    // `*` stays within one directory, relative to `path`; results stay root-relative.
    let (value, _) = ws
        .ok("glob", json!({"pattern": "*.rs", "path": "src"}))
        .await;
    assert_eq!(value["paths"], json!(["src/lib.rs", "src/main.rs"]));

    let (value, out) = ws.ok("glob", json!({"pattern": "*.log"})).await;
    assert_eq!(value["paths"], json!([]));
    assert_eq!(out.content, "(no files matched)");

    let (value, _) = ws.ok("glob", json!({"pattern": "*.{md,rs}"})).await;
    assert_eq!(value["paths"], json!(["README.md", "top.rs"]));

    let out = ws
        .call("glob", json!({"pattern": "*.rs", "path": "src"}))
        .await;
    assert_eq!(
        out.result_card,
        Some(Card::Search {
            title: "Glob *.rs in src".into(),
            query: "*.rs".into(),
            hits: vec![
                SearchHit {
                    path: "src/lib.rs".into(),
                    line: 0,
                    text: String::new()
                },
                SearchHit {
                    path: "src/main.rs".into(),
                    line: 0,
                    text: String::new()
                },
            ],
        })
    );
}

#[tokio::test]
async fn glob_caps_its_results_and_says_so() {
    let ws = Workspace::new();
    for i in 0..1005 {
        std::fs::write(ws.root.join(format!("f{i:04}.txt")), "").unwrap();
    }
    let (value, out) = ws.ok("glob", json!({"pattern": "*.txt"})).await;
    assert_eq!(value["truncated"], true);
    let paths = value["paths"].as_array().unwrap();
    assert_eq!(paths.len(), codemode::builtins::MAX_GLOB_RESULTS);
    assert_eq!(paths[0], "f0000.txt");
    assert!(
        out.content
            .ends_with("(only the first 1000 paths are listed)")
    );
}

// ---------------------------------------------------------------------------------------------
// grep

fn grep_workspace() -> Workspace {
    let ws = Workspace::new();
    ws.write(
        "src/main.rs",
        "fn main() {\n    let x = 1;\n    todo!();\n    let y = 2;\n    let z = 3;\n    todo!();\n}\n",
    );
    ws.write("src/notes.md", "TODO: write docs\ntodo!() is a macro\n");
    ws.write("build/out.rs", "todo!();\n");
    ws.write(".gitignore", "build/\n");
    std::fs::write(ws.root.join("src/blob.bin"), b"todo!()\x00\x01\x02").unwrap();
    ws
}

#[tokio::test]
async fn grep_returns_matches_with_one_based_lines_and_skips_ignored_and_binary_files() {
    let ws = grep_workspace();
    let (value, out) = ws.ok("grep", json!({"pattern": "todo!"})).await;
    assert_eq!(
        value,
        json!({
            "matches": [
                {"path": "src/main.rs", "line": 3, "text": "    todo!();"},
                {"path": "src/main.rs", "line": 6, "text": "    todo!();"},
                {"path": "src/notes.md", "line": 2, "text": "todo!() is a macro"}
            ],
            "truncated": false
        })
    );
    assert_eq!(
        out.content,
        "src/main.rs:3:    todo!();\nsrc/main.rs:6:    todo!();\nsrc/notes.md:2:todo!() is a macro"
    );
    assert_eq!(
        out.result_card,
        Some(Card::Search {
            title: "Grep todo!".into(),
            query: "todo!".into(),
            hits: vec![
                SearchHit {
                    path: "src/main.rs".into(),
                    line: 3,
                    text: "    todo!();".into()
                },
                SearchHit {
                    path: "src/main.rs".into(),
                    line: 6,
                    text: "    todo!();".into()
                },
                SearchHit {
                    path: "src/notes.md".into(),
                    line: 2,
                    text: "todo!() is a macro".into()
                },
            ],
        })
    );
}

#[tokio::test]
async fn grep_context_attaches_surrounding_lines_to_each_match() {
    let ws = grep_workspace();
    let (value, out) = ws
        .ok(
            "grep",
            json!({"pattern": "todo!", "path": "src/main.rs", "context": 1}),
        )
        .await;
    assert_eq!(
        value,
        json!({
            "matches": [
                {"path": "src/main.rs", "line": 3, "text": "    todo!();",
                 "before": ["    let x = 1;"], "after": ["    let y = 2;"]},
                {"path": "src/main.rs", "line": 6, "text": "    todo!();",
                 "before": ["    let z = 3;"], "after": ["}"]}
            ],
            "truncated": false
        })
    );
    assert_eq!(
        out.content,
        "src/main.rs-2-    let x = 1;\nsrc/main.rs:3:    todo!();\nsrc/main.rs-4-    let y = 2;\n\
         src/main.rs-5-    let z = 3;\nsrc/main.rs:6:    todo!();\nsrc/main.rs-7-}"
    );
    // Groups that are not adjacent are separated by `--`.
    let (_, out) = ws
        .ok(
            "grep",
            json!({"pattern": "fn main|^}", "path": "src/main.rs", "context": 1}),
        )
        .await;
    assert_eq!(
        out.content,
        "src/main.rs:1:fn main() {\nsrc/main.rs-2-    let x = 1;\n--\n\
         src/main.rs-6-    todo!();\nsrc/main.rs:7:}"
    );

    // Overlapping windows: every match gets its full context, shared lines included.
    let (value, out) = ws
        .ok(
            "grep",
            json!({"pattern": "let (y|z)", "path": "src/main.rs", "context": 2}),
        )
        .await;
    assert_eq!(
        value["matches"],
        json!([
            {"path": "src/main.rs", "line": 4, "text": "    let y = 2;",
             "before": ["    let x = 1;", "    todo!();"], "after": ["    let z = 3;", "    todo!();"]},
            {"path": "src/main.rs", "line": 5, "text": "    let z = 3;",
             "before": ["    todo!();", "    let y = 2;"], "after": ["    todo!();", "}"]}
        ])
    );
    assert_eq!(
        out.content,
        "src/main.rs-2-    let x = 1;\nsrc/main.rs-3-    todo!();\nsrc/main.rs:4:    let y = 2;\n\
         src/main.rs:5:    let z = 3;\nsrc/main.rs-6-    todo!();\nsrc/main.rs-7-}"
    );
}

#[tokio::test]
async fn grep_glob_filter_limits_the_files_searched() {
    let ws = grep_workspace();
    let (value, _) = ws
        .ok("grep", json!({"pattern": "(?i)todo", "glob": "*.md"}))
        .await;
    assert_eq!(
        value["matches"],
        json!([
            {"path": "src/notes.md", "line": 1, "text": "TODO: write docs"},
            {"path": "src/notes.md", "line": 2, "text": "todo!() is a macro"}
        ])
    );
    // A glob with a `/` matches the path under `path`.
    let (value, _) = ws
        .ok("grep", json!({"pattern": "todo", "glob": "src/*.rs"}))
        .await;
    assert_eq!(value["matches"].as_array().unwrap().len(), 2);
    let (value, _) = ws
        .ok("grep", json!({"pattern": "todo", "glob": "*.py"}))
        .await;
    assert_eq!(value, json!({"matches": [], "truncated": false}));
}

#[tokio::test]
async fn grep_max_results_truncates_and_says_so() {
    let ws = grep_workspace();
    let (value, out) = ws
        .ok("grep", json!({"pattern": "todo!", "max_results": 2}))
        .await;
    assert_eq!(value["truncated"], true);
    assert_eq!(
        value["matches"],
        json!([
            {"path": "src/main.rs", "line": 3, "text": "    todo!();"},
            {"path": "src/main.rs", "line": 6, "text": "    todo!();"}
        ])
    );
    assert!(
        out.content
            .ends_with("(stopped after 2 matches; narrow the search or raise max_results)"),
        "{}",
        out.content
    );
    // Exactly as many matches as the cap is not truncated.
    let (value, _) = ws
        .ok("grep", json!({"pattern": "todo!", "max_results": 3}))
        .await;
    assert_eq!(value["truncated"], false);
}

#[tokio::test]
async fn grep_rejects_an_invalid_regex_clearly() {
    let ws = grep_workspace();
    let msg = ws.tool_error("grep", json!({"pattern": "("})).await;
    assert!(msg.contains("invalid regular expression `(`"), "{msg}");
}

// ---------------------------------------------------------------------------------------------
// write_file and edit_file

#[tokio::test]
async fn write_file_creates_parent_directories_and_presents_a_diff() {
    let ws = Workspace::new();
    let (value, out) = ws
        .ok(
            "write_file",
            json!({"path": "new/dir/f.txt", "content": "hello\nworld\n"}),
        )
        .await;
    assert_eq!(value, json!({"path": "new/dir/f.txt", "bytes_written": 12}));
    assert_eq!(out.content, "Wrote 12 bytes to new/dir/f.txt");
    assert_eq!(
        std::fs::read_to_string(ws.root.join("new/dir/f.txt")).unwrap(),
        "hello\nworld\n"
    );
    assert_eq!(
        out.result_card,
        Some(Card::Diff {
            title: "Write new/dir/f.txt".into(),
            path: "new/dir/f.txt".into(),
            unified: "--- /dev/null\n+++ b/new/dir/f.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n".into(),
        })
    );
    // Overwrites.
    let (value, _) = ws
        .ok(
            "write_file",
            json!({"path": "new/dir/f.txt", "content": "x"}),
        )
        .await;
    assert_eq!(value["bytes_written"], 1);
    assert_eq!(
        std::fs::read_to_string(ws.root.join("new/dir/f.txt")).unwrap(),
        "x"
    );
    let msg = ws
        .tool_error("write_file", json!({"path": "new", "content": "x"}))
        .await;
    assert!(msg.contains("`new` is a directory"), "{msg}");
}

#[tokio::test]
async fn edit_file_replaces_a_unique_match_and_returns_a_unified_diff() {
    let ws = Workspace::new();
    ws.write("a.rs", "fn a() {\n    1\n}\n");
    let (value, out) = ws
        .ok(
            "edit_file",
            json!({"path": "a.rs", "old": "    1\n", "new": "    2\n"}),
        )
        .await;
    let diff = "--- a/a.rs\n+++ b/a.rs\n@@ -1,3 +1,3 @@\n fn a() {\n-    1\n+    2\n }\n";
    assert_eq!(
        value,
        json!({"path": "a.rs", "replacements": 1, "diff": diff})
    );
    assert_eq!(out.content, format!("Edited a.rs: 1 replacement\n{diff}"));
    assert_eq!(
        std::fs::read_to_string(ws.root.join("a.rs")).unwrap(),
        "fn a() {\n    2\n}\n"
    );
    assert_eq!(
        out.result_card,
        Some(Card::Diff {
            title: "Edit a.rs".into(),
            path: "a.rs".into(),
            unified: diff.into(),
        })
    );
    assert!(matches!(out.call_card, Some(Card::Diff { .. })));
}

#[tokio::test]
async fn edit_file_without_a_match_fails_and_leaves_the_file_alone() {
    let ws = Workspace::new();
    ws.write("a.txt", "one\ntwo\n");
    let msg = ws
        .tool_error(
            "edit_file",
            json!({"path": "a.txt", "old": "three", "new": "3"}),
        )
        .await;
    assert!(msg.contains("`old` was not found in `a.txt`"), "{msg}");
    assert_eq!(
        std::fs::read_to_string(ws.root.join("a.txt")).unwrap(),
        "one\ntwo\n"
    );
    let msg = ws
        .tool_error(
            "edit_file",
            json!({"path": "missing.txt", "old": "a", "new": "b"}),
        )
        .await;
    assert!(msg.contains("not found: `missing.txt`"), "{msg}");
}

#[tokio::test]
async fn edit_file_with_several_matches_needs_replace_all() {
    let ws = Workspace::new();
    ws.write("a.txt", "x = 1\nx = 1\nx = 1\n");
    let msg = ws
        .tool_error(
            "edit_file",
            json!({"path": "a.txt", "old": "x = 1", "new": "x = 2"}),
        )
        .await;
    assert!(msg.contains("`old` occurs 3 times in `a.txt`"), "{msg}");
    assert!(msg.contains("replace_all"), "{msg}");
    assert_eq!(
        std::fs::read_to_string(ws.root.join("a.txt")).unwrap(),
        "x = 1\nx = 1\nx = 1\n"
    );

    let (value, out) = ws
        .ok(
            "edit_file",
            json!({"path": "a.txt", "old": "x = 1", "new": "x = 2", "replace_all": true}),
        )
        .await;
    assert_eq!(value["replacements"], 3);
    assert!(out.content.starts_with("Edited a.txt: 3 replacements\n"));
    assert_eq!(
        std::fs::read_to_string(ws.root.join("a.txt")).unwrap(),
        "x = 2\nx = 2\nx = 2\n"
    );
}

// ---------------------------------------------------------------------------------------------
// Confinement

#[tokio::test]
async fn dotdot_escape_is_denied_by_the_guard_naming_path_and_root() {
    let ws = Workspace::new();
    let reason = ws
        .guard_denial("read_file", json!({"path": "../outside/secret.txt"}))
        .await;
    assert!(reason.contains("`../outside/secret.txt`"), "{reason}");
    assert!(
        reason.contains(&format!("outside the root `{}`", ws.root.display())),
        "{reason}"
    );
    // Sneakier forms too.
    ws.guard_denial("list_dir", json!({"path": "sub/../../outside"}))
        .await;
    ws.guard_denial("glob", json!({"pattern": "*", "path": ".."}))
        .await;
    ws.guard_denial("grep", json!({"pattern": "s", "path": "../outside"}))
        .await;
    ws.guard_denial(
        "write_file",
        json!({"path": "../outside/new.txt", "content": "x"}),
    )
    .await;
    ws.guard_denial(
        "edit_file",
        json!({"path": "../outside/secret.txt", "old": "secret", "new": "x"}),
    )
    .await;
    assert!(!ws.outside.join("new.txt").exists());
    assert_eq!(
        std::fs::read_to_string(ws.outside.join("secret.txt")).unwrap(),
        "secret\n"
    );
}

#[tokio::test]
async fn absolute_path_outside_the_root_is_denied_and_inside_is_allowed() {
    let ws = Workspace::new();
    let secret = ws.outside.join("secret.txt");
    let reason = ws
        .guard_denial("read_file", json!({"path": secret.display().to_string()}))
        .await;
    assert!(reason.contains(&secret.display().to_string()), "{reason}");
    ws.guard_denial("read_file", json!({"path": "/etc/passwd"}))
        .await;

    ws.write("in.txt", "in\n");
    let inside = ws.root.join("in.txt").display().to_string();
    let (value, _) = ws.ok("read_file", json!({"path": inside})).await;
    assert_eq!(value["path"], "in.txt");
}

#[tokio::test]
async fn symlink_escaping_the_root_is_denied_by_the_guard() {
    let ws = Workspace::new();
    std::os::unix::fs::symlink(&ws.outside, ws.root.join("link")).unwrap();
    std::os::unix::fs::symlink(ws.outside.join("secret.txt"), ws.root.join("secret-link")).unwrap();
    std::os::unix::fs::symlink(ws.outside.join("planted.txt"), ws.root.join("dangling")).unwrap();

    let reason = ws
        .guard_denial("read_file", json!({"path": "link/secret.txt"}))
        .await;
    assert!(reason.contains("`link/secret.txt`"), "{reason}");
    assert!(
        reason.contains(&ws.outside.join("secret.txt").display().to_string()),
        "{reason}"
    );
    ws.guard_denial("read_file", json!({"path": "secret-link"}))
        .await;
    ws.guard_denial("list_dir", json!({"path": "link"})).await;
    ws.guard_denial("grep", json!({"pattern": "secret", "path": "link"}))
        .await;
    // A dangling link cannot be used to create a file outside either.
    ws.guard_denial("write_file", json!({"path": "dangling", "content": "x"}))
        .await;
    assert!(!ws.outside.join("planted.txt").exists());

    // Walks do not follow the link out of the root.
    let (value, _) = ws.ok("grep", json!({"pattern": "secret"})).await;
    assert_eq!(value["matches"], json!([]));
    let (value, _) = ws.ok("glob", json!({"pattern": "**/secret.txt"})).await;
    assert_eq!(value["paths"], json!([]));

    // A link that stays inside the root is fine.
    ws.write("real/file.txt", "ok\n");
    std::os::unix::fs::symlink(ws.root.join("real"), ws.root.join("alias")).unwrap();
    let (value, _) = ws.ok("read_file", json!({"path": "alias/file.txt"})).await;
    assert_eq!(value["path"], "real/file.txt");
}

#[tokio::test]
async fn bodies_stay_confined_even_without_the_guard() {
    let ws = Workspace::without_guard();
    std::os::unix::fs::symlink(&ws.outside, ws.root.join("link")).unwrap();
    for (tool, args) in [
        ("read_file", json!({"path": "../outside/secret.txt"})),
        ("read_file", json!({"path": "link/secret.txt"})),
        ("list_dir", json!({"path": "link"})),
        ("glob", json!({"pattern": "*", "path": "link"})),
        ("grep", json!({"pattern": "secret", "path": "link"})),
        (
            "write_file",
            json!({"path": "link/new.txt", "content": "x"}),
        ),
        (
            "edit_file",
            json!({"path": "link/secret.txt", "old": "secret", "new": "x"}),
        ),
    ] {
        let msg = ws.tool_error(tool, args).await;
        assert!(msg.contains("outside the root"), "{tool}: {msg}");
    }
    assert!(!ws.outside.join("new.txt").exists());
    assert_eq!(
        std::fs::read_to_string(ws.outside.join("secret.txt")).unwrap(),
        "secret\n"
    );
}

#[tokio::test]
async fn the_guard_ignores_other_tools_and_the_shell() {
    let ws = Workspace::new();
    // `shell` is not path-confined: its argument is a command, not a path.
    let (value, _) = ws
        .ok("shell", json!({"command": "cat ../outside/secret.txt"}))
        .await;
    assert_eq!(value["stdout"], "secret\n");
}

// ---------------------------------------------------------------------------------------------
// shell

#[tokio::test]
async fn shell_runs_in_the_root_and_reports_exit_code_and_both_streams() {
    let ws = Workspace::new();
    let (value, out) = ws
        .ok(
            "shell",
            json!({"command": "echo out; echo err >&2; pwd; exit 3"}),
        )
        .await;
    let stdout = format!("out\n{}\n", ws.root.display());
    assert_eq!(
        value,
        json!({"exit_code": 3, "stdout": stdout, "stderr": "err\n", "truncated": false})
    );
    assert_eq!(
        out.content,
        format!("out\n{}\n[stderr]\nerr\n[exit code 3]", ws.root.display())
    );
    assert_eq!(
        out.result_card,
        Some(Card::Terminal {
            title: "$ echo out; echo err >&2; pwd; exit 3".into(),
            command: "echo out; echo err >&2; pwd; exit 3".into(),
            output: format!("{stdout}err\n"),
            exit_code: Some(3),
        })
    );
    assert!(matches!(
        out.call_card,
        Some(Card::Terminal {
            exit_code: None,
            ..
        })
    ));

    let (value, out) = ws.ok("shell", json!({"command": "kill -9 $$"})).await;
    assert_eq!(value["exit_code"], 128 + 9);
    assert_eq!(out.content, "[exit code 137]");
}

/// Whether `pid` is still a live process (a zombie waiting to be reaped counts as gone).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
        Err(_) => false,
    }
}

async fn wait_gone(pid: i32) -> bool {
    for _ in 0..100 {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

fn read_pid(path: &Path) -> i32 {
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn shell_timeout_kills_the_whole_process_group() {
    let ws = Workspace::new();
    let started = Instant::now();
    let out = ws
        .call(
            "shell",
            json!({"command": "echo started; sleep 30 & echo $! > bg.pid; sleep 30; wait", "timeout_ms": 300}),
        )
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let err = out.error.expect("times out");
    // The shell's own `timeout_ms` is a timeout like any other (not a tool failure).
    assert_eq!(err.code(), ErrorCode::Timeout);
    assert_eq!(err.details(), json!({"after_ms": 300}));
    assert!(
        err.message.contains("timed out after 300 ms"),
        "{}",
        err.message
    );
    assert!(err.message.contains("started"), "{}", err.message);
    assert!(matches!(out.result_card, Some(Card::Terminal { .. })));
    let pid = read_pid(&ws.root.join("bg.pid"));
    assert!(wait_gone(pid).await, "background child {pid} survived");
}

#[tokio::test]
async fn shell_kills_background_jobs_when_the_command_ends() {
    let ws = Workspace::new();
    let started = Instant::now();
    let (value, _) = ws
        .ok(
            "shell",
            json!({"command": "sleep 30 >/dev/null 2>&1 & echo $! > bg.pid; echo done"}),
        )
        .await;
    assert_eq!(value["stdout"], "done\n");
    assert!(started.elapsed() < Duration::from_secs(5));
    let pid = read_pid(&ws.root.join("bg.pid"));
    assert!(wait_gone(pid).await, "background job {pid} survived");
}

#[tokio::test]
async fn cancelling_a_shell_call_kills_its_process_group() {
    let ws = Workspace::new();
    let cancel = CancellationToken::new();
    let call = ws.pipeline.call(
        CallRequest::new(
            "shell",
            json!({"command": "sleep 30 & echo $! > bg.pid; sleep 30"}),
        )
        .cancel_token(cancel.clone()),
    );
    let task = tokio::spawn(call);
    let pid_file = ws.root.join("bg.pid");
    for _ in 0..250 {
        if std::fs::read_to_string(&pid_file).is_ok_and(|s| s.ends_with('\n')) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pid = read_pid(&pid_file);
    assert!(alive(pid));
    cancel.cancel();
    let out = tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("the cancelled call ends")
        .unwrap();
    assert_eq!(out.error.unwrap().code(), ErrorCode::Cancelled);
    assert!(wait_gone(pid).await, "background child {pid} survived");
}

#[tokio::test]
async fn shell_output_is_capped_per_stream() {
    let ws = Workspace::new();
    let (value, out) = ws
        .ok(
            "shell",
            json!({"command": "head -c 300000 /dev/zero | tr '\\0' a; echo tail >&2"}),
        )
        .await;
    assert_eq!(value["truncated"], true);
    assert_eq!(value["exit_code"], 0);
    assert_eq!(
        value["stdout"].as_str().unwrap().len(),
        MAX_SHELL_OUTPUT_BYTES
    );
    assert_eq!(value["stderr"], "tail\n");
    assert!(
        out.content
            .ends_with("[output truncated: only the first 100 KiB of each stream are kept]")
    );
}
