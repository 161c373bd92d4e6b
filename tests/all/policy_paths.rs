//! Path rules on the built-in file tools are about files, not argument strings: every spelling
//! of a denied file (`./`, `..`, absolute, doubled slashes, a symlink into the denied area) is
//! refused, listings and searches leave the file out, and lookalike names (case, Unicode) never
//! reach it. Tools of other sources compare argument values as given.

use std::path::PathBuf;

use codemode::builtins::BuiltinTools;
use codemode::pipeline::{ApprovalDecision, CallOutcome, CallRequest, approver_fn};
use codemode::policy::Policy;
use codemode::{Pipeline, ToolDefinition, ToolRegistry};
use serde_json::{Value, json};

/// The secret's content; no result may carry it.
const SECRET: &str = "hunter2";

const DENY_SECRET: &str = r#"
default = "allow"

[[rule]]
tools = ["read_file", "write_file", "edit_file"]
decision = "deny"
reason = "secrets stay secret"
args.path = { glob = "secret/**" }
"#;

struct Fixture {
    _dir: tempfile::TempDir,
    /// Canonical root.
    root: PathBuf,
    pipeline: Pipeline,
}

/// A root with `secret/key.txt`, a readable `public/notes.txt` that mentions the token, `src/`,
/// and `link -> secret`; the built-ins behind `policy`'s hook and the confinement guard.
fn fixture(policy: &str) -> Fixture {
    fixture_with(policy, |p| p)
}

fn fixture_with(
    policy: &str,
    extra: impl FnOnce(codemode::PipelineBuilder) -> codemode::PipelineBuilder,
) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("secret")).unwrap();
    std::fs::create_dir_all(root.join("public")).unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("secret/key.txt"), format!("TOKEN={SECRET}\n")).unwrap();
    std::fs::write(root.join("public/notes.txt"), "TOKEN is documented\n").unwrap();
    std::fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::os::unix::fs::symlink("secret", root.join("link")).unwrap();

    let policy = Policy::from_toml_str(policy, "p.toml").unwrap_or_else(|e| panic!("{e}"));
    let builtins = BuiltinTools::new(&root).unwrap();
    let mut registry = ToolRegistry::new();
    builtins.register(&mut registry).unwrap();
    policy.hide_denied_files(&registry);
    let builder = Pipeline::builder(registry)
        .pre_hook(policy.pre_hook())
        .guard(builtins.guard());
    Fixture {
        _dir: dir,
        root,
        pipeline: extra(builder).build(),
    }
}

impl Fixture {
    async fn call(&self, tool: &str, args: Value) -> CallOutcome {
        self.pipeline.call(CallRequest::new(tool, args)).await
    }

    fn secret_file(&self) -> String {
        std::fs::read_to_string(self.root.join("secret/key.txt")).unwrap()
    }

    /// `secret/key.txt` spelled every way that names the same file.
    fn spellings(&self) -> Vec<String> {
        vec![
            "secret/key.txt".into(),
            "./secret/key.txt".into(),
            "src/../secret/key.txt".into(),
            "secret/./key.txt".into(),
            "secret//key.txt".into(),
            ".//secret///key.txt".into(),
            format!("{}/secret/key.txt", self.root.display()),
            format!("{}//secret/key.txt", self.root.display()),
            "link/key.txt".into(),
            "./link/key.txt".into(),
            "link/../secret/key.txt".into(),
        ]
    }

    /// The `secret` directory spelled every way (for list_dir, glob and grep's `path`).
    fn dir_spellings(&self) -> Vec<String> {
        vec![
            "secret".into(),
            "secret/".into(),
            "./secret".into(),
            "secret//".into(),
            "src/../secret/".into(),
            format!("{}/secret", self.root.display()),
            format!("{}/secret/", self.root.display()),
            "link".into(),
            "link/".into(),
            "./link/".into(),
        ]
    }
}

/// Everything a result shows: the value, the content and the error.
fn shown(out: &CallOutcome) -> String {
    format!(
        "{}\n{}\n{:?}",
        out.result().map(Value::to_string).unwrap_or_default(),
        out.content,
        out.error
    )
}

fn assert_denied_by_policy(out: &CallOutcome, what: &str) {
    let err = out
        .error
        .as_ref()
        .unwrap_or_else(|| panic!("{what}: expected DENIED, got {}", shown(out)));
    assert_eq!(err.code().as_str(), "DENIED", "{what}: {}", shown(out));
    assert_eq!(err.details()["by"], "policy", "{what}: {}", shown(out));
    assert!(!shown(out).contains(SECRET), "{what}: {}", shown(out));
}

#[tokio::test]
async fn every_spelling_of_a_denied_file_is_refused_for_reads_writes_and_edits() {
    let fx = fixture(DENY_SECRET);
    for path in fx.spellings() {
        let read = fx.call("read_file", json!({"path": path})).await;
        assert_denied_by_policy(&read, &format!("read_file {path}"));
        let write = fx
            .call("write_file", json!({"path": path, "content": "pwned"}))
            .await;
        assert_denied_by_policy(&write, &format!("write_file {path}"));
        let edit = fx
            .call(
                "edit_file",
                json!({"path": path, "old": SECRET, "new": "pwned"}),
            )
            .await;
        assert_denied_by_policy(&edit, &format!("edit_file {path}"));
    }
    assert_eq!(fx.secret_file(), format!("TOKEN={SECRET}\n"));
    // The same tools still work on files the rule does not cover.
    let ok = fx
        .call("read_file", json!({"path": "./public/notes.txt"}))
        .await;
    assert!(ok.content.contains("TOKEN is documented"), "{}", shown(&ok));
}

#[tokio::test]
async fn a_new_file_in_the_denied_area_cannot_be_created_by_any_spelling() {
    let fx = fixture(DENY_SECRET);
    for path in ["./secret/new.txt", "link/new.txt", "src/../secret/new.txt"] {
        let write = fx
            .call("write_file", json!({"path": path, "content": "x"}))
            .await;
        assert_denied_by_policy(&write, &format!("write_file {path}"));
    }
    assert!(!fx.root.join("secret/new.txt").exists());
}

/// Case and Unicode lookalikes name other (missing) files on a case-sensitive file system: they
/// are not the secret, so they are not refused, but nothing reaches the secret through them.
#[tokio::test]
async fn lookalike_names_never_reach_the_secret() {
    let fx = fixture(DENY_SECRET);
    // `ѕ` is CYRILLIC SMALL LETTER DZE; `ｓ` is FULLWIDTH LATIN SMALL LETTER S.
    for path in [
        "SECRET/key.txt",
        "Secret/key.txt",
        "secret/KEY.TXT",
        "\u{455}ecret/key.txt",
        "\u{ff53}ecret/key.txt",
        "secret\u{200b}/key.txt",
    ] {
        let read = fx.call("read_file", json!({"path": path})).await;
        assert!(read.error.is_some(), "read_file {path}: {}", shown(&read));
        assert!(!shown(&read).contains(SECRET), "read_file {path}");
        let edit = fx
            .call(
                "edit_file",
                json!({"path": path, "old": SECRET, "new": "pwned"}),
            )
            .await;
        assert!(!shown(&edit).contains(SECRET), "edit_file {path}");
        let _ = fx
            .call("write_file", json!({"path": path, "content": "pwned"}))
            .await;
        for dir in [path.split('/').next().unwrap()] {
            let list = fx.call("list_dir", json!({"path": dir})).await;
            assert!(!shown(&list).contains(SECRET), "list_dir {dir}");
        }
    }
    assert_eq!(fx.secret_file(), format!("TOKEN={SECRET}\n"));
}

#[tokio::test]
async fn grep_never_shows_a_denied_files_content() {
    let fx = fixture(DENY_SECRET);
    let all = fx.call("grep", json!({"pattern": "TOKEN"})).await;
    assert!(all.error.is_none(), "{}", shown(&all));
    // The search works: the readable file is found, the denied one is not.
    assert!(all.content.contains("public/notes.txt"), "{}", shown(&all));
    assert!(!shown(&all).contains(SECRET), "{}", shown(&all));
    assert!(!shown(&all).contains("key.txt"), "{}", shown(&all));
    let mut targets = fx.dir_spellings();
    targets.extend(fx.spellings());
    for path in targets {
        for args in [
            json!({"pattern": "TOKEN", "path": path}),
            json!({"pattern": SECRET, "path": path, "context": 3}),
            json!({"pattern": ".", "path": path, "glob": "*.txt"}),
        ] {
            let out = fx.call("grep", args.clone()).await;
            assert!(
                !shown(&out).contains(SECRET),
                "grep {args}: {}",
                shown(&out)
            );
            assert!(
                !shown(&out).contains("key.txt") || out.error.is_some(),
                "grep {args}: {}",
                shown(&out)
            );
        }
    }
    let ctx = fx
        .call("grep", json!({"pattern": "TOKEN", "context": 5}))
        .await;
    assert!(!shown(&ctx).contains(SECRET), "{}", shown(&ctx));
}

#[tokio::test]
async fn glob_and_list_dir_never_list_a_denied_file() {
    let fx = fixture(DENY_SECRET);
    for pattern in ["**", "**/*", "**/key.txt", "secret/*", "*/key.txt"] {
        let out = fx.call("glob", json!({"pattern": pattern})).await;
        assert!(out.error.is_none(), "glob {pattern}: {}", shown(&out));
        assert!(
            !shown(&out).contains("key.txt"),
            "glob {pattern}: {}",
            shown(&out)
        );
        for path in fx.dir_spellings() {
            let args = json!({"pattern": pattern, "path": path});
            let out = fx.call("glob", args.clone()).await;
            assert!(
                !shown(&out).contains("key.txt"),
                "glob {args}: {}",
                shown(&out)
            );
        }
    }
    let everything = fx.call("glob", json!({"pattern": "**"})).await;
    assert!(
        everything.content.contains("public/notes.txt"),
        "{}",
        shown(&everything)
    );
    for path in fx.dir_spellings() {
        let out = fx.call("list_dir", json!({"path": path})).await;
        assert!(out.error.is_none(), "list_dir {path}: {}", shown(&out));
        assert_eq!(
            out.result().unwrap()["entries"],
            json!([]),
            "list_dir {path}"
        );
    }
    let public = fx.call("list_dir", json!({"path": "./public/"})).await;
    assert!(public.content.contains("notes.txt"), "{}", shown(&public));
}

#[tokio::test]
async fn the_denial_names_the_path_as_given_and_as_normalised() {
    let fx = fixture(DENY_SECRET);
    let out = fx
        .call("read_file", json!({"path": "./secret/key.txt"}))
        .await;
    let err = out.error.expect("denied");
    let reason = err.details()["reason"].as_str().unwrap().to_owned();
    assert!(reason.contains("secrets stay secret"), "{reason}");
    assert!(
        reason.contains(r#"path "./secret/key.txt" (normalised: secret/key.txt)"#),
        "{reason}"
    );
    let abs = format!("{}/secret/key.txt", fx.root.display());
    let out = fx
        .call("write_file", json!({"path": abs, "content": "x"}))
        .await;
    let reason = out.error.expect("denied").details()["reason"].to_string();
    assert!(reason.contains("(normalised: secret/key.txt)"), "{reason}");
    assert!(reason.contains(&abs), "{reason}");
    let linked = fx.call("read_file", json!({"path": "link/key.txt"})).await;
    let reason = linked.error.expect("denied").details()["reason"].to_string();
    assert!(
        reason.contains(r#"path \"link/key.txt\" (normalised: secret/key.txt)"#),
        "{reason}"
    );
}

/// `ask` rules gate calls, not visibility: the files stay listed (and searchable); reading one
/// asks, and the approver sees the normalised path.
#[tokio::test]
async fn ask_rules_keep_files_listed_and_show_the_approver_the_normalised_path() {
    let policy = r#"
        default = "allow"
        [[rule]]
        tools = ["read_file"]
        decision = "ask"
        reason = "secrets need a human"
        args.path = { glob = "secret/**" }
    "#;
    let fx = fixture_with(policy, |p| {
        p.approver(approver_fn(|req| ApprovalDecision::Refuse {
            reason: format!("saw: {}", req.reasons.join("|")),
        }))
    });
    let list = fx.call("list_dir", json!({"path": "secret"})).await;
    assert!(list.content.contains("key.txt"), "{}", shown(&list));
    let read = fx
        .call("read_file", json!({"path": "./secret/key.txt"}))
        .await;
    let err = read.error.expect("refused");
    assert_eq!(err.details()["by"], "approver");
    let reason = err.details()["reason"].to_string();
    assert!(reason.contains("secrets need a human"), "{reason}");
    assert!(reason.contains("(normalised: secret/key.txt)"), "{reason}");
}

/// Which deny rules hide files: those that apply to a tool that reveals files (read_file,
/// list_dir, glob, grep). A rule that only denies changes leaves the file visible and readable.
#[tokio::test]
async fn a_deny_rule_on_writes_only_does_not_hide_the_file() {
    let policy = r#"
        default = "allow"
        [[rule]]
        tools = ["write_file", "edit_file"]
        decision = "deny"
        args.path = { glob = "secret/**" }
    "#;
    let fx = fixture(policy);
    let list = fx.call("list_dir", json!({"path": "secret"})).await;
    assert!(list.content.contains("key.txt"), "{}", shown(&list));
    let write = fx
        .call(
            "write_file",
            json!({"path": "link/key.txt", "content": "x"}),
        )
        .await;
    assert_denied_by_policy(&write, "write_file link/key.txt");
}

/// A deny on read_file alone also hides the file from grep, glob and list_dir: otherwise grep
/// would print what read_file refuses.
#[tokio::test]
async fn a_deny_rule_on_read_file_alone_hides_the_file_from_searches() {
    let policy = r#"
        default = "allow"
        [[rule]]
        tools = ["read_file"]
        decision = "deny"
        args.path = { glob = "secret/**" }
    "#;
    let fx = fixture(policy);
    let grep = fx.call("grep", json!({"pattern": "TOKEN"})).await;
    assert!(!shown(&grep).contains(SECRET), "{}", shown(&grep));
    let glob = fx.call("glob", json!({"pattern": "**"})).await;
    assert!(!shown(&glob).contains("key.txt"), "{}", shown(&glob));
    let list = fx.call("list_dir", json!({"path": "link"})).await;
    assert!(!shown(&list).contains("key.txt"), "{}", shown(&list));
}

/// A tool of another source that happens to be called `read_file` is not a built-in: its
/// arguments are compared as given (the policy cannot know what its paths mean).
#[tokio::test]
async fn other_tools_named_like_a_builtin_compare_arguments_as_given() {
    let policy = Policy::from_toml_str(DENY_SECRET, "p.toml").unwrap();
    let tool = ToolDefinition::builder("read_file")
        .parameters(json!({
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"]
        }))
        .execute(|args, _| async move { Ok(args) })
        .build()
        .unwrap();
    let mut registry = ToolRegistry::new();
    registry.register(tool).unwrap();
    let pipeline = Pipeline::builder(registry)
        .pre_hook(policy.pre_hook())
        .build();
    let plain = pipeline
        .call(CallRequest::new(
            "read_file",
            json!({"path": "secret/key.txt"}),
        ))
        .await;
    assert_eq!(plain.error.unwrap().code().as_str(), "DENIED");
    let dotted = pipeline
        .call(CallRequest::new(
            "read_file",
            json!({"path": "./secret/key.txt"}),
        ))
        .await;
    assert!(dotted.error.is_none(), "{:?}", dotted.error);
}

/// The CLI installs the hiding for `--root` with `--policy`: a program sees neither the file in
/// listings nor its content in a search, and reading it through a symlink is refused.
#[test]
fn the_cli_hides_denied_files_and_normalises_paths() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("secret")).unwrap();
    std::fs::write(root.join("secret/key.txt"), format!("TOKEN={SECRET}\n")).unwrap();
    std::fs::write(root.join("notes.txt"), "TOKEN is documented\n").unwrap();
    std::os::unix::fs::symlink("secret", root.join("link")).unwrap();
    let policy = dir.path().join("p.toml");
    std::fs::write(&policy, DENY_SECRET).unwrap();
    let program = b"const g = await tools.grep({pattern: 'TOKEN'}); \
        const l = await tools.glob({pattern: '**'}); \
        const d = await tools.list_dir({path: 'link/'}); \
        let e; try { await tools.read_file({path: 'link/key.txt'}); } catch (err) { e = [err.code, err.details.reason]; } \
        return {grep: g.matches.map(m => m.path), glob: l.paths, list: d.entries, e};";
    let (code, stdout, stderr) = crate::cli::run_stdin(
        &[
            "run",
            "-",
            "--json",
            "--root",
            root.to_str().unwrap(),
            "--policy",
            policy.to_str().unwrap(),
        ],
        program,
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(!stdout.contains(SECRET), "{stdout}");
    let value = &serde_json::from_str::<Value>(&stdout).unwrap()["value"];
    assert_eq!(value["grep"], json!(["notes.txt"]), "{stdout}");
    assert_eq!(value["glob"], json!(["link", "notes.txt"]), "{stdout}");
    assert_eq!(value["list"], json!([]), "{stdout}");
    assert_eq!(value["e"][0], "DENIED", "{stdout}");
    let reason = value["e"][1].as_str().unwrap();
    assert!(
        reason.contains(r#"path "link/key.txt" (normalised: secret/key.txt)"#),
        "{reason}"
    );
}
