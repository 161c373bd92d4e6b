//! The static plan of a program: the tool calls it can make, read from its source before it
//! runs (with the same oxc front end that transpiles it), and what the analysis cannot see.
//!
//! Only the global `tools` counts (a program's own variable named `tools` shadows it). Each use
//! is followed up its chain of member accesses: `tools.a.b(args)` is a call of `a.b` with its
//! arguments when they are constant; `tools.a.b` used any other way (`const f = tools.a.b`,
//! `xs.map(tools.a)`) is a reference, which may call any tool under that path. What leaves the
//! analysis blind makes the program "may call any tool": a computed name (`tools[name]`),
//! `tools` itself aliased, destructured or passed as a value, and dynamic code (`eval`,
//! `Function`, `globalThis`, `self`, `window`).

use serde_json::{Map, Number, Value};

use oxc::allocator::Allocator;
use oxc::ast::AstKind;
use oxc::ast::ast::{
    ArrayExpressionElement, AssignmentTarget, Expression, ObjectPropertyKind, PropertyKey,
    UnaryOperator,
};
use oxc::semantic::{AstNodes, SemanticBuilder};
use oxc::span::{GetSpan, Span};
use oxc::syntax::node::NodeId;

use super::transpile::{SyntaxError, guarded, line_column, parse};
use crate::call::{DynamicAccess, DynamicKind, PlannedCall, ProgramPlan};

/// Globals through which a program can reach `tools` (or run code) unseen.
const DYNAMIC_GLOBALS: [&str; 5] = ["eval", "Function", "globalThis", "self", "window"];

/// The plan of `source`, a program as `run_code` takes it.
///
/// # Errors
/// The program does not parse (the same error the run would end with).
pub fn plan(source: &str) -> Result<ProgramPlan, SyntaxError> {
    guarded(source, || {
        let allocator = Allocator::default();
        let program = parse(&allocator, source)?;
        let semantic = SemanticBuilder::new()
            .with_build_nodes(true)
            .build(&program)
            .semantic;
        let scoping = semantic.scoping();
        let nodes = semantic.nodes();
        let mut plan = ProgramPlan::default();
        let position = |span: Span| line_column(source, span.start);
        let mut uses: Vec<(&str, NodeId)> = Vec::new();
        for (name, references) in scoping.root_unresolved_references() {
            let name: &str = name.as_str();
            if name == "tools" || DYNAMIC_GLOBALS.contains(&name) {
                for &reference in references {
                    uses.push((
                        if name == "tools" { "tools" } else { "dynamic" },
                        scoping.get_reference(reference).node_id(),
                    ));
                }
            }
        }
        for (what, node) in uses {
            if what == "dynamic" {
                let (line, column) = position(nodes.kind(node).span());
                plan.dynamic.push(DynamicAccess {
                    kind: DynamicKind::DynamicCode,
                    prefix: None,
                    line,
                    column,
                });
                continue;
            }
            follow(nodes, node, &position, &mut plan);
        }
        plan.calls.sort_by_key(|c| (c.line, c.column));
        plan.dynamic.sort_by_key(|d| (d.line, d.column));
        Ok(plan)
    })
}

/// Follows one use of `tools` up its member chain and records what it comes to.
fn follow(
    nodes: &AstNodes<'_>,
    start: NodeId,
    position: &impl Fn(Span) -> (u32, u32),
    plan: &mut ProgramPlan,
) {
    let mut path: Vec<String> = Vec::new();
    let mut current = start;
    loop {
        let span = nodes.kind(current).span();
        let parent = nodes.parent_id(current);
        let (line, column) = position(span);
        let joined = || (!path.is_empty()).then(|| path.join("."));
        match nodes.kind(parent) {
            AstKind::StaticMemberExpression(m) if m.object.span() == span => {
                path.push(m.property.name.to_string());
            }
            AstKind::ComputedMemberExpression(m) if m.object.span() == span => {
                match string_constant(&m.expression) {
                    Some(name) => path.push(name),
                    None => {
                        plan.dynamic.push(DynamicAccess {
                            kind: DynamicKind::Computed,
                            prefix: joined(),
                            line,
                            column,
                        });
                        return;
                    }
                }
            }
            // Wrappers that do not change what the expression is.
            AstKind::ParenthesizedExpression(_)
            | AstKind::ChainExpression(_)
            | AstKind::TSNonNullExpression(_)
            | AstKind::TSAsExpression(_)
            | AstKind::TSSatisfiesExpression(_)
            | AstKind::TSTypeAssertion(_) => {}
            AstKind::CallExpression(c) if c.callee.span() == span && !path.is_empty() => {
                let (line, column) = position(c.span);
                // `tools.x.call(this, args)` and its kin call `x`, with arguments we do not read.
                let indirect = path.len() > 1
                    && matches!(
                        path.last().map(String::as_str),
                        Some("call" | "apply" | "bind")
                    );
                if indirect {
                    path.pop();
                }
                plan.calls.push(PlannedCall {
                    path: path.join("."),
                    line,
                    column,
                    called: true,
                    args: if indirect {
                        None
                    } else {
                        constant_arguments(c)
                    },
                });
                return;
            }
            other => {
                let kind = match other {
                    AstKind::VariableDeclarator(d) if d.id.get_binding_identifier().is_none() => {
                        DynamicKind::Destructured
                    }
                    AstKind::AssignmentExpression(a)
                        if matches!(
                            a.left,
                            AssignmentTarget::ObjectAssignmentTarget(_)
                                | AssignmentTarget::ArrayAssignmentTarget(_)
                        ) =>
                    {
                        DynamicKind::Destructured
                    }
                    AstKind::VariableDeclarator(_) | AstKind::AssignmentExpression(_) => {
                        DynamicKind::Aliased
                    }
                    _ => DynamicKind::Passed,
                };
                // A tool function (or namespace) used as a value still only reaches what is
                // under its path; `tools` itself, or a namespace taken apart, reaches anything.
                if path.is_empty() || kind == DynamicKind::Destructured {
                    plan.dynamic.push(DynamicAccess {
                        kind,
                        prefix: joined(),
                        line,
                        column,
                    });
                } else {
                    plan.calls.push(PlannedCall {
                        path: path.join("."),
                        line,
                        column,
                        called: false,
                        args: None,
                    });
                }
                return;
            }
        }
        current = parent;
    }
}

/// `"name"` or `` `name` `` as a property name.
fn string_constant(expression: &Expression<'_>) -> Option<String> {
    match expression.without_parentheses() {
        Expression::StringLiteral(s) => Some(s.value.to_string()),
        Expression::TemplateLiteral(t) if t.expressions.is_empty() => {
            t.quasis.first()?.value.cooked.map(|c| c.to_string())
        }
        _ => None,
    }
}

/// The call's argument as a constant: `{}` for none, the value of a constant first argument,
/// `None` when it depends on anything at run time (or there is more than one).
fn constant_arguments(call: &oxc::ast::ast::CallExpression<'_>) -> Option<Value> {
    match call.arguments.as_slice() {
        [] => Some(Value::Object(Map::new())),
        [argument] => constant(argument.as_expression()?),
        _ => None,
    }
}

fn constant(expression: &Expression<'_>) -> Option<Value> {
    Some(match expression.without_parentheses() {
        Expression::NullLiteral(_) => Value::Null,
        Expression::BooleanLiteral(b) => Value::Bool(b.value),
        Expression::NumericLiteral(n) => number(n.value)?,
        Expression::StringLiteral(s) => Value::String(s.value.to_string()),
        Expression::TemplateLiteral(_) => Value::String(string_constant(expression)?),
        Expression::UnaryExpression(u) if u.operator == UnaryOperator::UnaryNegation => {
            match &u.argument {
                Expression::NumericLiteral(n) => number(-n.value)?,
                _ => return None,
            }
        }
        Expression::ArrayExpression(a) => Value::Array(
            a.elements
                .iter()
                .map(|e| match e {
                    ArrayExpressionElement::SpreadElement(_)
                    | ArrayExpressionElement::Elision(_) => None,
                    _ => constant(e.as_expression()?),
                })
                .collect::<Option<Vec<_>>>()?,
        ),
        Expression::ObjectExpression(o) => {
            let mut map = Map::new();
            for property in &o.properties {
                let ObjectPropertyKind::ObjectProperty(p) = property else {
                    return None;
                };
                if p.computed || p.method || p.shorthand {
                    return None;
                }
                let key = match &p.key {
                    PropertyKey::StaticIdentifier(id) => id.name.to_string(),
                    PropertyKey::StringLiteral(s) => s.value.to_string(),
                    PropertyKey::NumericLiteral(n) => number(n.value)?.to_string(),
                    _ => return None,
                };
                map.insert(key, constant(&p.value)?);
            }
            Value::Object(map)
        }
        _ => return None,
    })
}

/// A JSON number for `value`, as JavaScript would write it (integers without a fraction).
fn number(value: f64) -> Option<Value> {
    if value.fract() == 0.0 && value.abs() < 9_007_199_254_740_992.0 {
        Some(Value::Number(Number::from(value as i64)))
    } else {
        Number::from_f64(value).map(Value::Number)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn calls(source: &str) -> Vec<(String, bool, Option<Value>)> {
        plan(source)
            .unwrap()
            .calls
            .into_iter()
            .map(|c| (c.path, c.called, c.args))
            .collect()
    }

    fn blind_spots(source: &str) -> Vec<DynamicKind> {
        let plan = plan(source).unwrap();
        assert_eq!(plan.may_call_any(), !plan.dynamic.is_empty());
        plan.dynamic.into_iter().map(|d| d.kind).collect()
    }

    #[test]
    fn calls_are_listed_with_path_line_and_constant_arguments() {
        let source = "const n = 3;\nconst a = await tools.grep({pattern: 'TODO', max: -2, deep: [1, 'x', null, true]});\nawait Promise.all([1, 2].map(i => tools.github.get_issue({number: i})));\nawait (tools.memory).search_nodes();\nawait tools['read_file']({path: `a.txt`});\nreturn tools.list_dir?.({path: n});";
        let plan = plan(source).unwrap();
        assert!(!plan.may_call_any(), "{:?}", plan.dynamic);
        let got: Vec<_> = plan
            .calls
            .iter()
            .map(|c| (c.path.as_str(), c.line, c.args.clone()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "grep",
                    2,
                    Some(json!({"pattern": "TODO", "max": -2, "deep": [1, "x", null, true]}))
                ),
                ("github.get_issue", 3, None),
                ("memory.search_nodes", 4, Some(json!({}))),
                ("read_file", 5, Some(json!({"path": "a.txt"}))),
                ("list_dir", 6, None),
            ]
        );
        assert_eq!(plan.calls[0].column, 17);
        assert!(plan.covers("grep") && plan.covers("github.get_issue"));
        assert!(!plan.covers("github") && !plan.covers("write_file"));
    }

    #[test]
    fn every_blind_spot_is_marked() {
        assert_eq!(
            blind_spots("const name = 'grep'; await tools[name]({});"),
            [DynamicKind::Computed]
        );
        assert_eq!(
            blind_spots("await tools.github[x]({});"),
            [DynamicKind::Computed]
        );
        assert_eq!(
            plan("await tools.github[x]({});").unwrap().dynamic[0]
                .prefix
                .as_deref(),
            Some("github")
        );
        assert_eq!(
            blind_spots("const t = tools; await t.grep({});"),
            [DynamicKind::Aliased]
        );
        assert_eq!(blind_spots("let t; t = tools;"), [DynamicKind::Aliased]);
        assert_eq!(
            blind_spots("const { grep } = tools; await grep({});"),
            [DynamicKind::Destructured]
        );
        assert_eq!(
            blind_spots("const { get_issue } = tools.github;"),
            [DynamicKind::Destructured]
        );
        assert_eq!(
            blind_spots("let g; ({ grep: g } = tools);"),
            [DynamicKind::Destructured]
        );
        assert_eq!(
            blind_spots("async function f(t) { return t.grep({}); } await f(tools);"),
            [DynamicKind::Passed]
        );
        assert_eq!(
            blind_spots("const all = {...tools};"),
            [DynamicKind::Passed]
        );
        assert_eq!(blind_spots("Object.keys(tools);"), [DynamicKind::Passed]);
        assert_eq!(
            blind_spots("eval('tools.grep({})');"),
            [DynamicKind::DynamicCode]
        );
        assert_eq!(
            blind_spots("new Function('return tools')();"),
            [DynamicKind::DynamicCode]
        );
        assert_eq!(
            blind_spots("await globalThis.tools.grep({});"),
            [DynamicKind::DynamicCode]
        );
        assert_eq!(
            blind_spots("await globalThis['to' + 'ols'].grep({});"),
            [DynamicKind::DynamicCode]
        );
    }

    #[test]
    fn references_cover_what_is_under_them_and_shadowing_is_respected() {
        let plan = plan("const ns = tools.github; await ns.get_issue({}); const f = tools.grep; await f({}); await tools.read_file.call(null, {path: 'a'});").unwrap();
        assert!(!plan.may_call_any());
        let got: Vec<_> = plan
            .calls
            .iter()
            .map(|c| (c.path.as_str(), c.called))
            .collect();
        assert_eq!(
            got,
            [("github", false), ("grep", false), ("read_file", true)]
        );
        assert!(plan.covers("github.get_issue") && plan.covers("grep") && plan.covers("read_file"));
        assert!(!plan.covers("githubx.y"));
        // A program's own `tools` is not the global one.
        assert!(calls("const tools = { grep: async () => 1 }; await tools.grep();").is_empty());
        assert_eq!(
            calls("function f() { const tools = 1; return tools; } await tools.grep({});").len(),
            1
        );
    }

    #[test]
    fn a_program_that_does_not_parse_is_the_runs_syntax_error() {
        let error = plan("await tools.grep({);").unwrap_err();
        assert_eq!(error.line, 1);
        assert!(
            plan("let x: number = 1; return x;")
                .unwrap()
                .calls
                .is_empty()
        );
        // Hostile nesting is the front end's error, not a crash (the run would refuse it too).
        let deep = format!("return {}1{};", "[".repeat(5000), "]".repeat(5000));
        assert!(plan(&deep).unwrap_err().message.contains("nests"));
    }
}
