//! Type-checks the generated SDK and example programs with the real TypeScript compiler.
//!
//! tsc comes from `CODEMODE_TSC`, else from `target/tsc` (installed there on first use by
//! `scripts/install-tsc.sh`). Only when it cannot be installed (no npm registry) do these tests
//! pass without checking, and they say so loudly.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use codemode::sdk::generate_sdk;

use super::corpus::{corpus, fixtures_dir};

/// The tsc binary, or `None` (after saying loudly why) when it cannot be had.
pub(crate) fn tsc(test: &str) -> Option<&'static Path> {
    static TSC: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    // One lookup per process: concurrent tests must not run two npm installs into one dir.
    match TSC.get_or_init(find_or_install_tsc) {
        Ok(path) => Some(path),
        Err(reason) => {
            // Straight to the stream: the test harness captures `eprintln!` of passing tests,
            // and a skipped type-check must not go unnoticed.
            let banner = "!".repeat(72);
            let _ = writeln!(
                std::io::stderr(),
                "\n{banner}\nSKIPPED: {test}: no TypeScript compiler: {reason}\n{banner}"
            );
            None
        }
    }
}

fn find_or_install_tsc() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("CODEMODE_TSC") {
        let path = PathBuf::from(path);
        // An explicit choice that does not work is a broken setup, not a reason to skip.
        assert!(
            path.exists(),
            "CODEMODE_TSC={} does not exist",
            path.display()
        );
        return Ok(path);
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let local = root.join("target/tsc/node_modules/.bin/tsc");
    if local.exists() {
        return Ok(local);
    }
    let script = root.join("scripts/install-tsc.sh");
    let out = Command::new("bash")
        .arg(&script)
        .output()
        .map_err(|err| format!("cannot run {}: {err}", script.display()))?;
    if out.status.success() && local.exists() {
        Ok(local)
    } else {
        Err(format!(
            "{} failed: {}",
            script.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// The result of one tsc run.
pub(crate) struct Checked {
    pub(crate) success: bool,
    pub(crate) output: String,
    pub(crate) dir: PathBuf,
}

/// Writes `tools.d.ts` and each program (wrapped as the runtime wraps model code) into a
/// fresh directory named `case`, and runs `tsc --strict --noEmit` on them.
pub(crate) fn check(tsc: &Path, case: &str, sdk: &str, programs: &[(String, String)]) -> Checked {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("sdk-tsc")
        .join(case);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create tsc work dir");
    std::fs::write(dir.join("tools.d.ts"), sdk).expect("write tools.d.ts");
    let mut files = vec!["tools.d.ts".to_owned()];
    for (name, source) in programs {
        // The model's code is an async function body; `export {}` makes each file a module so
        // every program can have its own `__main` while still seeing the global `tools`.
        let wrapped = format!("async function __main() {{\n{source}\n}}\nexport {{}};\n");
        std::fs::write(dir.join(name), wrapped).expect("write program");
        files.push(name.clone());
    }
    let out = Command::new(tsc)
        .current_dir(&dir)
        .args(["--strict", "--noEmit", "--pretty", "false"])
        // ES2022 for async/await and modern built-ins; DOM only for `console`, timers, `URL`
        // and friends, which the sandbox provides too.
        .args(["--target", "es2022", "--lib", "es2022,dom"])
        .args(&files)
        .output()
        .expect("run tsc");
    Checked {
        success: out.status.success(),
        output: format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
        dir,
    }
}

/// `(file name, source)` of every `.ts` file directly in `dir`, sorted.
fn programs_in(dir: &Path) -> Vec<(String, String)> {
    let mut programs: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap_or_else(|err| panic!("{}: {err}", dir.display()))
        .map(|entry| entry.expect("readable dir entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "ts"))
        .map(|path| {
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .expect("utf-8 name")
                .to_owned();
            let source = std::fs::read_to_string(&path).expect("readable program");
            (name, source)
        })
        .collect();
    programs.sort();
    programs
}

#[test]
fn corpus_sdk_and_example_programs_pass_tsc_strict() {
    let Some(tsc) = tsc("corpus_sdk_and_example_programs_pass_tsc_strict") else {
        return;
    };
    let programs = programs_in(&fixtures_dir().join("programs"));
    assert!(
        programs.len() >= 5,
        "only {} example programs",
        programs.len()
    );
    let checked = check(tsc, "corpus", &generate_sdk(&corpus()), &programs);
    assert!(
        checked.success,
        "tsc rejected the SDK or an example program (files in {}):\n{}",
        checked.dir.display(),
        checked.output
    );
}

#[test]
fn empty_sdk_passes_tsc_strict() {
    let Some(tsc) = tsc("empty_sdk_passes_tsc_strict") else {
        return;
    };
    let checked = check(tsc, "empty", &generate_sdk(&[]), &[]);
    assert!(checked.success, "{}", checked.output);
}

/// Each program in `programs/invalid/` starts with `// expect-error: TSxxxx`; tsc must fail
/// with that code in that file, and must not blame the SDK itself.
#[test]
fn wrongly_typed_programs_fail_tsc_with_the_expected_error() {
    let Some(tsc) = tsc("wrongly_typed_programs_fail_tsc_with_the_expected_error") else {
        return;
    };
    let programs = programs_in(&fixtures_dir().join("programs/invalid"));
    assert!(
        programs.len() >= 3,
        "only {} invalid programs",
        programs.len()
    );
    let checked = check(tsc, "invalid", &generate_sdk(&corpus()), &programs);
    assert!(
        !checked.success,
        "tsc accepted wrongly typed programs:\n{}",
        checked.output
    );
    assert!(
        !checked.output.contains("tools.d.ts("),
        "the SDK itself has errors:\n{}",
        checked.output
    );
    for (name, source) in &programs {
        let expected = source
            .lines()
            .next()
            .and_then(|line| line.strip_prefix("// expect-error: "))
            .unwrap_or_else(|| panic!("{name} must start with `// expect-error: TSxxxx`"))
            .trim();
        let reported = checked.output.lines().any(|line| {
            line.starts_with(&format!("{name}(")) && line.contains(&format!("error {expected}:"))
        });
        assert!(
            reported,
            "{name}: expected {expected}, tsc said:\n{}",
            checked.output
        );
    }
}
