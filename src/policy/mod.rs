//! Policy files (TOML): which tools a program sees, which calls run, ask or are denied, and limit
//! overrides. `examples/policy.toml` documents every key.
//!
//! ```toml
//! default = "ask"                  # tools no rule matches (this is the default of a policy file)
//! program_approval = "ask"         # approve a whole program once, before it runs (default "off")
//!
//! [[rule]]
//! tools = ["read_file", "list_dir", "glob", "grep"]
//! decision = "allow"
//!
//! [[rule]]
//! tools = ["write_file", "edit_file"]
//! decision = "deny"
//! reason = "secrets stay untouched"
//! args.path = { glob = "**/.env*" }
//!
//! [visible]
//! exclude = ["shell"]
//!
//! [limits]
//! timeout_ms = 10000
//! ```
//!
//! As a library:
//! ```
//! use codemode::pipeline::HookDecision;
//! use codemode::policy::Policy;
//! use serde_json::json;
//!
//! let policy = Policy::from_toml_str(
//!     "default = \"allow\"\n[[rule]]\ntools = [\"shell\"]\ndecision = \"deny\"\nreason = \"no shell\"\n",
//!     "inline.toml",
//! )
//! .unwrap();
//! assert_eq!(policy.decide("grep", &json!({})), HookDecision::Allow);
//! assert_eq!(
//!     policy.decide("shell", &json!({"command": "ls"})),
//!     HookDecision::Deny { reason: "no shell".into() }
//! );
//! // Register `policy.pre_hook()` on a pipeline built over `policy.visible_registry(&registry)`.
//!
//! let err = Policy::from_toml_str("default = \"maybe\"", "p.toml").unwrap_err();
//! assert!(err.to_string().starts_with("p.toml:1:11: unknown decision `maybe`"));
//! ```
//!
//! # Ordering
//! Among the rules that match a call, **deny beats ask beats allow**; the reasons of every rule at
//! the winning level are reported (`DENIED` with `details.by = "policy"`, or the approval
//! prompt). A call no rule matches gets the policy's `default` (`ask` unless the file says
//! otherwise). Hidden tools ([`Policy::is_visible`]) are not in the registry at all: they are
//! absent from the SDK and calling one is `UNKNOWN_TOOL`.
//!
//! # Paths of the built-in file tools
//! A path rule on the built-ins is about files, not argument strings: [`Policy::decide_call`]
//! (the hook) matches the normalised path, and [`Policy::hide_denied_files`] keeps denied files
//! out of `list_dir`, `glob` and `grep`. Tools of other sources (upstream MCP servers, tools
//! files) have their arguments compared as given: the policy cannot know what they mean.
//!
//! # Errors
//! [`PolicyError`] reads `FILE:LINE:COL: message` for syntax errors, unknown keys, wrong types,
//! bad globs or regexes, unknown decisions and out-of-range limits.

mod file;
mod files;
mod hook;
mod limits;
mod rules;
mod terminal;

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

pub use file::PolicyError;
pub use hook::PolicyHook;
pub use limits::PolicyLimits;
pub use rules::Decision;
pub use terminal::{NO_TERMINAL, Terminal, TerminalApprover};

use crate::pipeline::{HookDecision, ProgramApproval};
use crate::tool::{ToolDefinition, ToolRegistry};
use file::RawPolicy;
use rules::{ArgMatcher, Rule, Test, ToolGlob};

/// The built-in policy, used when no policy file is given: reads and searches are allowed,
/// `write_file`, `edit_file` and `shell` ask, every other tool is allowed.
pub const DEFAULT_POLICY: &str = r#"
default = "allow"

[[rule]]
tools = ["write_file", "edit_file"]
decision = "ask"
reason = "changes files"

[[rule]]
tools = ["shell"]
decision = "ask"
reason = "runs a shell command (not confined to the root)"
"#;

/// A compiled policy. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Policy {
    inner: Arc<Compiled>,
}

#[derive(Debug)]
struct Compiled {
    origin: String,
    default: Decision,
    program_approval: ProgramApproval,
    rules: Vec<Rule>,
    include: Vec<ToolGlob>,
    exclude: Vec<ToolGlob>,
    limits: PolicyLimits,
}

impl Policy {
    /// Reads and compiles a policy file.
    ///
    /// # Errors
    /// The file cannot be read, or any error of [`Policy::from_toml_str`].
    pub fn load(path: &Path) -> Result<Policy, PolicyError> {
        let text = std::fs::read_to_string(path).map_err(|source| PolicyError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Policy::from_toml_str(&text, &path.display().to_string())
    }

    /// Compiles policy text; `origin` names it in errors and reasons (usually the file path).
    ///
    /// # Errors
    /// `FILE:LINE:COL: message` for syntax errors, unknown keys, wrong types, bad globs or
    /// regexes, unknown decisions, matchers with no or several tests, and out-of-range limits.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Policy, PolicyError> {
        let raw = file::parse(text, origin)?;
        compile(raw, text, origin).map(|c| Policy { inner: Arc::new(c) })
    }

    /// The built-in policy ([`DEFAULT_POLICY`]).
    pub fn default_policy() -> Policy {
        Policy::from_toml_str(DEFAULT_POLICY, "<default policy>")
            .expect("the built-in policy compiles")
    }

    /// Where the policy came from (a path or `<default policy>`).
    pub fn origin(&self) -> &str {
        &self.inner.origin
    }

    /// Whether a program is put to the approver once, before it runs (`program_approval`,
    /// `"ask"` or `"off"`; default `"off"`).
    pub fn program_approval(&self) -> ProgramApproval {
        self.inner.program_approval
    }

    /// The decision for tools no rule matches.
    pub fn default_decision(&self) -> Decision {
        self.inner.default
    }

    /// The decision for one call: the strongest matching rule (deny > ask > allow) with the
    /// reasons of every rule at that level joined by `; `, else the default. Argument matchers
    /// compare `args` as given; [`decide_call`](Self::decide_call) is what the hook uses.
    pub fn decide(&self, path: &str, args: &Value) -> HookDecision {
        let (decision, reason) = match rules::strongest(&self.inner.rules, path, args) {
            Some((decision, reasons)) => (decision, reasons.join("; ")),
            None => (
                self.inner.default,
                format!(
                    "no rule of {} matches `{path}`; its default is {}",
                    self.inner.origin,
                    self.inner.default.as_str()
                ),
            ),
        };
        match decision {
            Decision::Allow => HookDecision::Allow,
            Decision::Ask => HookDecision::Ask { reason },
            Decision::Deny => HookDecision::Deny { reason },
        }
    }

    /// The decision for a call of `tool` at `path`. For the built-in file tools (recognised by
    /// their definition, not their name: a tool of another source called `read_file` is not
    /// one) the path arguments are first resolved against the root, symlinks followed, and the
    /// rules match the normalised path (relative to the root, `/`-separated): `./secret/x`,
    /// `src/../secret/x`, `/root/secret/x` and `link/x` (`link -> secret`) are all `secret/x`.
    /// When a path changed, an ask or deny reason ends with both forms: `path "./secret/x"
    /// (normalised: secret/x)`. A path that does not resolve inside the root is matched as
    /// given (the confinement guard refuses the call). Other tools: as [`decide`](Self::decide).
    pub fn decide_call(&self, tool: &ToolDefinition, path: &str, args: &Value) -> HookDecision {
        let Some((normalised, changed)) = tool.path_args().and_then(|p| p.normalise(args)) else {
            return self.decide(path, args);
        };
        let note = files::describe(&changed);
        match self.decide(path, &normalised) {
            HookDecision::Allow => HookDecision::Allow,
            HookDecision::Ask { reason } => HookDecision::Ask {
                reason: format!("{reason}; {note}"),
            },
            HookDecision::Deny { reason } => HookDecision::Deny {
                reason: format!("{reason}; {note}"),
            },
        }
    }

    /// Hides the files this policy's deny path rules cover from the built-in listings
    /// (`list_dir`, `glob`, `grep`) of the catalogs registered in `registry`: such files are
    /// not listed, `grep` never reads them, and a directory a `DIR/**` glob covers is not
    /// entered. Call it once the built-ins are registered (their registry paths decide which
    /// rules apply); it replaces what an earlier call installed for those tools.
    ///
    /// A rule counts when it denies, its tool globs match a built-in that shows files
    /// (`read_file`, `list_dir`, `glob`, `grep`), and it has argument matchers, all on `path`.
    /// Rules only on `write_file`/`edit_file` (the file stays readable) and `ask` rules (they
    /// gate calls; the files stay listed and searched) hide nothing.
    pub fn hide_denied_files(&self, registry: &ToolRegistry) {
        files::install(&self.inner.rules, registry);
    }

    /// Whether a program may see the tool at `path` (`[visible]`: matched by `include`, which
    /// defaults to every tool, and by no `exclude`).
    pub fn is_visible(&self, path: &str) -> bool {
        let c = &self.inner;
        c.include.iter().any(|g| g.is_match(path)) && !c.exclude.iter().any(|g| g.is_match(path))
    }

    /// The registry without the hidden tools: build the pipeline (and the SDK) from this, so a
    /// hidden tool is absent from `tools.d.ts` and calling it is `UNKNOWN_TOOL`.
    pub fn visible_registry(&self, registry: &ToolRegistry) -> ToolRegistry {
        registry.filtered(|t| self.is_visible(&t.path))
    }

    /// Limit overrides of `[limits]`.
    pub fn limits(&self) -> &PolicyLimits {
        &self.inner.limits
    }

    /// The pre-execute hook enforcing this policy (`details.by = "policy"` on deny).
    pub fn pre_hook(&self) -> PolicyHook {
        PolicyHook {
            policy: self.clone(),
        }
    }

    /// Warnings for tool globs of rules and `[visible]` that match no tool of `registry` (a typo,
    /// or a source that is not loaded). Not errors: one policy may serve several tool sets.
    pub fn lint(&self, registry: &ToolRegistry) -> Vec<String> {
        let paths: Vec<String> = registry.tools().into_iter().map(|t| t.path).collect();
        let unused = |g: &ToolGlob| !paths.iter().any(|p| g.is_match(p));
        let mut out = Vec::new();
        for rule in &self.inner.rules {
            for g in rule.tools.iter().filter(|g| unused(g)) {
                out.push(format!(
                    "{}:{}: rule tool glob `{}` matches no tool",
                    self.inner.origin, rule.line, g.text
                ));
            }
        }
        let c = &self.inner;
        for g in c.include.iter().chain(&c.exclude).filter(|g| unused(g)) {
            out.push(format!(
                "{}: [visible] glob `{}` matches no tool",
                c.origin, g.text
            ));
        }
        out
    }
}

fn compile(raw: RawPolicy, text: &str, origin: &str) -> Result<Compiled, PolicyError> {
    let err = |at: usize, msg: String| PolicyError::at(origin, text, at, msg);
    let decision = |s: &toml::Spanned<String>| {
        Decision::parse(s.get_ref()).ok_or_else(|| {
            err(
                s.span().start,
                format!(
                    "unknown decision `{}`; use \"allow\", \"ask\" or \"deny\"",
                    s.get_ref()
                ),
            )
        })
    };
    let globs = |list: &[toml::Spanned<String>]| -> Result<Vec<ToolGlob>, PolicyError> {
        list.iter()
            .map(|g| ToolGlob::new(g.get_ref()).map_err(|m| err(g.span().start, m)))
            .collect()
    };
    let default = match &raw.default {
        Some(d) => decision(d)?,
        None => Decision::Ask,
    };
    let program_approval = match &raw.program_approval {
        Some(mode) => mode
            .get_ref()
            .parse::<ProgramApproval>()
            .map_err(|m| err(mode.span().start, m))?,
        None => ProgramApproval::Off,
    };
    let mut rules = Vec::with_capacity(raw.rules.len());
    for (i, spanned) in raw.rules.iter().enumerate() {
        let rule_at = spanned.span().start;
        let r = spanned.get_ref();
        if r.tools.get_ref().is_empty() {
            return Err(err(
                r.tools.span().start,
                "`tools` is empty; list at least one tool glob (`**` is every tool)".into(),
            ));
        }
        let mut args = Vec::with_capacity(r.args.len());
        for (key, matcher) in &r.args {
            args.push(arg_matcher(key, matcher, &err)?);
        }
        let line = text[..rule_at.min(text.len())].matches('\n').count() + 1;
        let tools = globs(r.tools.get_ref())?;
        let reason = r.reason.clone().unwrap_or_else(|| {
            let names: Vec<&str> = tools.iter().map(|g| g.text.as_str()).collect();
            format!(
                "rule #{} of {origin} ({} {})",
                i + 1,
                r.decision.get_ref(),
                names.join(", ")
            )
        });
        rules.push(Rule {
            decision: decision(&r.decision)?,
            tools,
            reason,
            args,
            line,
        });
    }
    let (include, exclude) = match &raw.visible {
        Some(v) => (
            match &v.include {
                Some(list) => globs(list)?,
                None => vec![ToolGlob::new("**").expect("valid")],
            },
            globs(&v.exclude)?,
        ),
        None => (vec![ToolGlob::new("**").expect("valid")], Vec::new()),
    };
    let limits = match raw.limits {
        Some(l) => PolicyLimits::compile(l, origin, text)?,
        None => PolicyLimits::default(),
    };
    Ok(Compiled {
        origin: origin.to_string(),
        default,
        program_approval,
        rules,
        include,
        exclude,
        limits,
    })
}

fn arg_matcher(
    key: &toml::Spanned<String>,
    matcher: &toml::Spanned<file::RawMatcher>,
    err: &impl Fn(usize, String) -> PolicyError,
) -> Result<ArgMatcher, PolicyError> {
    let name = key.get_ref();
    if name.is_empty() {
        return Err(err(
            key.span().start,
            "empty argument key; name a top-level key (`path`) or a JSON pointer (`/a/b`)".into(),
        ));
    }
    let m = matcher.get_ref();
    let count = usize::from(m.glob.is_some())
        + usize::from(m.regex.is_some())
        + usize::from(m.equals.is_some());
    if count != 1 {
        return Err(err(
            matcher.span().start,
            format!(
                "argument matcher `{name}` needs exactly one of `glob`, `regex` or `equals` (found {count})"
            ),
        ));
    }
    let test = if let Some(g) = &m.glob {
        Test::Glob(ArgMatcher::arg_glob(g.get_ref()).map_err(|e| err(g.span().start, e))?)
    } else if let Some(r) = &m.regex {
        Test::Regex(regex::Regex::new(r.get_ref()).map_err(|e| {
            let first = e.to_string().lines().last().unwrap_or_default().to_string();
            err(
                r.span().start,
                format!("bad regex `{}`: {first}", r.get_ref()),
            )
        })?)
    } else {
        Test::Equals(toml_to_json(m.equals.as_ref().expect("counted")))
    };
    Ok(ArgMatcher {
        key: name.clone(),
        test,
    })
}

fn toml_to_json(v: &toml::Value) -> Value {
    match v {
        toml::Value::String(s) => Value::String(s.clone()),
        toml::Value::Integer(i) => Value::from(*i),
        toml::Value::Float(f) => {
            serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number)
        }
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::Datetime(d) => Value::String(d.to_string()),
        toml::Value::Array(a) => Value::Array(a.iter().map(toml_to_json).collect()),
        toml::Value::Table(t) => Value::Object(
            t.iter()
                .map(|(k, v)| (k.clone(), toml_to_json(v)))
                .collect(),
        ),
    }
}
