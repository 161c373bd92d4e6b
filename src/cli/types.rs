//! `codemode types` (the learned output types: `show`, `learn`) and `--types-cache`, the flag
//! of every command that learns or declares them (`run`, `mcp`, `sdk`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{Args, Subcommand};
use serde::Deserialize;
use serde_json::{Value, json};

use super::output;
use super::sdk::{load_sources, runtime};
use super::sources::SourceArgs;
use super::wiring::{self, Logs, run_limits};
use super::{EXIT_FAILED, EXIT_USAGE};
use codemode::learned::{TypeStore, learned_schema};
use codemode::pipeline::{Approver, CallRequest};
use codemode::policy::TerminalApprover;
use codemode::sdk::declare_type;

/// Names the cache in `CODEMODE_TYPES_CACHE` (a file, or `off`) when `--types-cache` does not.
const CACHE_ENV: &str = "CODEMODE_TYPES_CACHE";
/// The `--types-cache` value that turns learning off.
const OFF: &str = "off";

/// `--types-cache`.
#[derive(Args, Clone, Debug, Default)]
pub struct TypesCacheArgs {
    /// The learned output types: results of tools without an output schema are folded into
    /// shapes kept here (field names and counts, never values), and the SDK declares them.
    /// `off` learns nothing. Default: $CODEMODE_TYPES_CACHE, else
    /// $XDG_CACHE_HOME/codemode/types.json, else ~/.cache/codemode/types.json.
    #[arg(long, value_name = "FILE|off")]
    types_cache: Option<PathBuf>,
}

impl TypesCacheArgs {
    /// The store, or `None` when learning is off. A cache named by the flag or the environment
    /// that cannot be read is an input error (the message); the default one only a warning,
    /// after which nothing is learned (and the file is left alone).
    pub fn open(&self, command: &str) -> Result<Option<TypeStore>, String> {
        self.open_with(command, false)
    }

    /// [`TypesCacheArgs::open`]; with `strict`, a default cache that cannot be read is an
    /// error too.
    fn open_with(&self, command: &str, strict: bool) -> Result<Option<TypeStore>, String> {
        let chosen = self
            .types_cache
            .clone()
            .or_else(|| non_empty_env(CACHE_ENV).map(PathBuf::from));
        match chosen {
            Some(path) if path.as_os_str() == OFF => Ok(None),
            Some(path) => TypeStore::open(path)
                .map(Some)
                .map_err(|e| format!("--types-cache: {e}")),
            None => match default_cache() {
                None => Ok(None),
                Some(path) => match TypeStore::open(path) {
                    Ok(store) => Ok(Some(store)),
                    Err(e) if strict => Err(e.to_string()),
                    Err(e) => {
                        eprintln!(
                            "codemode {command}: warning: {e}; output types are not learned in this run"
                        );
                        Ok(None)
                    }
                },
            },
        }
    }
}

impl TypesCacheArgs {
    /// The store of a command that has nothing to do without one; `None` after printing why.
    fn open_required(&self, command: &str) -> Option<TypeStore> {
        match self.open_with(command, true) {
            Ok(Some(store)) => Some(store),
            Ok(None) => {
                eprintln!(
                    "codemode {command}: there is no types cache to use (--types-cache or {CACHE_ENV} is off, or there is no HOME for the default one); name a file with --types-cache"
                );
                None
            }
            Err(message) => {
                eprintln!("codemode {command}: {message}");
                None
            }
        }
    }
}

/// `$XDG_CACHE_HOME/codemode/types.json`, else `$HOME/.cache/codemode/types.json` (a
/// relative `XDG_CACHE_HOME` is ignored, as the XDG spec says).
fn default_cache() -> Option<PathBuf> {
    let base = non_empty_env("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .or_else(|| non_empty_env("HOME").map(|home| Path::new(&home).join(".cache")))?;
    Some(base.join("codemode").join("types.json"))
}

/// An environment variable, unless unset or empty.
fn non_empty_env(name: &str) -> Option<std::ffi::OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}

/// Saves what `types` learned; a failure is a warning (the learning is lost, not the work).
pub fn save_types(command: &str, types: Option<&TypeStore>) {
    if let Some(Err(e)) = types.map(TypeStore::save) {
        eprintln!("codemode {command}: warning: learned output types were not saved: {e}");
    }
}

#[derive(Args)]
pub struct TypesArgs {
    #[command(subcommand)]
    command: TypesCommand,
}

#[derive(Subcommand)]
enum TypesCommand {
    /// Print the learned output types, one TypeScript declaration per tool.
    Show(ShowArgs),
    /// Run sample calls through the pipeline and the policy, and learn their results' types.
    Learn(LearnArgs),
}

#[derive(Args)]
#[command(
    after_help = "Examples:\n  codemode types show\n  codemode types show --types-cache types.json --json"
)]
struct ShowArgs {
    #[command(flatten)]
    cache: TypesCacheArgs,
    /// One JSON object per tool: source, tool, input_schema, results, schema, typescript.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
#[command(
    after_help = "Examples:\n  codemode types learn --upstream 'everything=npx -y @modelcontextprotocol/server-everything' --calls calls.json\n\nFILE is a JSON list of calls, e.g. [{\"tool\": \"everything.get_sum\", \"args\": {\"a\": 1, \"b\": 2}}]. Each call goes\nthrough the policy like a program's call (asks are prompted on the terminal, refused without\none); the results of the calls that succeed are learned (for tools that declare no output\nschema: a declared one always wins). Exit code 1 when a call failed."
)]
struct LearnArgs {
    #[command(flatten)]
    sources: SourceArgs,
    #[command(flatten)]
    cache: TypesCacheArgs,
    /// The sample calls: a JSON list of {"tool": "ns.name", "args": {...}}.
    #[arg(long, value_name = "FILE")]
    calls: PathBuf,
}

pub fn types(args: TypesArgs) -> i32 {
    match args.command {
        TypesCommand::Show(args) => show(args),
        TypesCommand::Learn(args) => learn(args),
    }
}

fn show(args: ShowArgs) -> i32 {
    let Some(store) = args.cache.open_required("types show") else {
        return EXIT_USAGE;
    };
    let mut text = String::new();
    let entries = store.entries();
    for (key, learned) in &entries {
        let schema = learned_schema(&learned.shape, learned.results);
        let name = format!("{} output", key.display_path());
        let typescript = declare_type(&name, &schema);
        if args.json {
            let line = json!({
                "source": key.source,
                "tool": key.tool,
                "input_schema": key.input_schema,
                "results": learned.results,
                "schema": schema,
                "typescript": typescript,
            });
            text.push_str(&format!("{line}\n"));
        } else {
            text.push_str(&format!(
                "// {} (input schema {}): {} result{}\n{typescript}\n",
                key.display_path(),
                key.input_schema,
                learned.results,
                if learned.results == 1 { "" } else { "s" },
            ));
        }
    }
    if entries.is_empty() && !args.json {
        let path = store.path().map(|p| p.display().to_string());
        text = format!(
            "// no learned output types yet in {}\n",
            path.unwrap_or_default()
        );
    }
    match output::emit("types show", &text) {
        Ok(()) => 0,
        Err(code) => code,
    }
}

/// One entry of `--calls`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SampleCall {
    tool: String,
    #[serde(default = "empty_args")]
    args: Value,
}

fn empty_args() -> Value {
    json!({})
}

fn read_calls(path: &Path) -> Result<Vec<SampleCall>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("--calls: cannot read {}: {e}", path.display()))?;
    let items: Vec<Value> = serde_json::from_str(&text).map_err(|e| {
        format!(
            "--calls: {} is not a JSON list of calls: {e}",
            path.display()
        )
    })?;
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            serde_json::from_value(item).map_err(|e| {
                format!(
                    "--calls: {} item {i}: {e}; each call is {{\"tool\": \"ns.name\", \"args\": {{...}}}}",
                    path.display()
                )
            })
        })
        .collect()
}

fn learn(args: LearnArgs) -> i32 {
    let calls = match read_calls(&args.calls) {
        Ok(calls) => calls,
        Err(message) => {
            eprintln!("codemode types learn: {message}");
            return EXIT_USAGE;
        }
    };
    let Some(store) = args.cache.open_required("types learn") else {
        return EXIT_USAGE;
    };
    let Some(runtime) = runtime("types learn") else {
        return EXIT_FAILED;
    };
    let Some(sources) = load_sources("types learn", &args.sources, &runtime) else {
        return EXIT_USAGE;
    };
    let limits = run_limits(sources.policy.limits(), None, None);
    let visible = sources.visible();
    for call in &calls {
        if visible.get(&call.tool).is_none() {
            let suggestions = visible.suggestions(&call.tool);
            let hint = if suggestions.is_empty() {
                String::new()
            } else {
                format!(" (did you mean {}?)", suggestions.join(", "))
            };
            eprintln!(
                "codemode types learn: --calls names `{}`, which is not a visible tool{hint}; `codemode tools` lists them",
                call.tool
            );
            return EXIT_USAGE;
        }
    }
    let failed = runtime.block_on(async {
        let approver: Arc<dyn Approver> = Arc::new(TerminalApprover::new());
        let harness = wiring::harness(&sources, limits, Logs::default(), None, Some(store.clone()))
            .workers(1)
            .inner(move |pipeline| pipeline.shared_approver(Arc::clone(&approver)))
            .build(visible)
            .map_err(|e| e.to_string())?;
        let mut failed = 0usize;
        for call in &calls {
            let outcome = harness
                .inner()
                .call(CallRequest::new(call.tool.as_str(), call.args.clone()))
                .await;
            match outcome.result() {
                Ok(_) => eprintln!("ok     {}", call.tool),
                Err(error) => {
                    failed += 1;
                    eprintln!("failed {}: {}: {}", call.tool, error.code(), error.message);
                }
            }
        }
        Ok::<usize, String>(failed)
    });
    runtime.shutdown_background();
    let failed = match failed {
        Ok(failed) => failed,
        Err(message) => {
            eprintln!("codemode types learn: {message}");
            return EXIT_FAILED;
        }
    };
    if let Err(e) = store.save() {
        eprintln!("codemode types learn: {e}");
        return EXIT_FAILED;
    }
    let path = store
        .path()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    eprintln!(
        "{} of {} calls succeeded; the types of those whose tools declare no output schema are in {path} (codemode types show)",
        calls.len() - failed,
        calls.len()
    );
    if failed > 0 { EXIT_FAILED } else { 0 }
}
