//! TypeScript/JavaScript front end: oxc parses the model's program (TypeScript is a superset of
//! what models write as JavaScript), strips types and lowers TS-only runtime constructs (`enum`,
//! `namespace`, parameter properties), and emits JavaScript plus a source map, so every position
//! the engine reports can be mapped back to the model's own line and column.
//!
//! Why oxc rather than swc/deno_ast: its parser accepts `return` outside a function
//! (`ParseOptions::allow_return_outside_function`) while still parsing as a module (so top-level
//! `await` and `namespace` are legal), which is exactly the "body of an async function" shape of
//! DESIGN.md §5, and it compiles markedly faster.

use std::path::Path;

use oxc::allocator::Allocator;
use oxc::ast::AstKind;
use oxc::ast::ast::Statement;
use oxc::ast_visit::Visit;
use oxc::codegen::{Codegen, CodegenOptions};
use oxc::parser::{ParseOptions, Parser};
use oxc::semantic::SemanticBuilder;
use oxc::span::{GetSpan, SourceType};
use oxc::transformer::{TransformOptions, Transformer};

/// JavaScript ready to be wrapped into the run's async function, with its way back to the source.
pub struct Transpiled {
    /// The emitted JavaScript, types stripped; positions map back through the source map.
    pub js: String,
    map: Option<oxc_sourcemap::SourceMap<'static>>,
}

/// A program the front end rejected; positions are 1-based in the model's source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    /// What the front end objected to (parser or transform diagnostic, or nesting too deep).
    pub message: String,
    /// 1-based line of the (first) error in the model's source.
    pub line: u32,
    /// 1-based column on `line`.
    pub column: u32,
}

impl std::fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (line {}, column {})",
            self.message, self.line, self.column
        )
    }
}

const SOURCE_NAME: &str = "program.ts";

/// The deepest syntax tree a program may have, in nodes from the program's root (a statement
/// inside a function inside a call is already a dozen). Deeper programs are refused before
/// anything but the parser has seen them. Real programs stay far below: the deepest in this
/// repository's examples and tests is under 60.
pub(crate) const MAX_NESTING: usize = 1000;

/// Stack the parser and the depth check may use per byte of source, at worst: every byte can
/// open a level (`!!!!...`, `[[[[...`). Measured on the shapes of the hostile corpus in a
/// debug build (dependencies at opt-level 1): at most 521 bytes (the depth check on `!!!!`),
/// then arrays and parentheses (~500), member chains (~320).
const STACK_PER_SOURCE_BYTE: usize = 1024;
/// Stack beyond the per-byte part. The later stages walk a tree at most [`MAX_NESTING`] deep
/// (so never deeper than the program is long): at most 1 MiB in the same measurement, about
/// 500 bytes per byte of source, which the per-byte part already covers. Keeping the total
/// small matters: a program that fits the calling thread's stack runs there, while a fresh
/// stack costs ~35 µs (mapping it and faulting its pages in).
const STACK_BASE: usize = 256 * 1024;

/// Transpile a model program (TypeScript or JavaScript) into plain JavaScript.
///
/// Runs on the calling thread when its stack has room for this program, else on a stack of
/// its own (allocated for the call, released after it), so any caller, a 2 MiB tokio worker
/// included, can pass any program.
///
/// # Errors
/// The first syntax or transform error, with the model's line and column; a program nested
/// deeper than 1000 levels of the syntax tree.
pub fn transpile(source: &str) -> Result<Transpiled, SyntaxError> {
    guarded(source, || transpile_unguarded(source))
}

/// Runs `front_end` over `source` on a stack sized for it, a panic turned into an error.
pub(crate) fn guarded<T>(
    source: &str,
    front_end: impl FnOnce() -> Result<T, SyntaxError>,
) -> Result<T, SyntaxError> {
    let needed = STACK_BASE + source.len().saturating_mul(STACK_PER_SOURCE_BYTE);
    stacker::maybe_grow(needed, needed, || {
        // The front end is third-party code fed hostile input: a panic in it must not take the
        // host down, so it becomes an error the model can read.
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(front_end)).unwrap_or_else(|_| {
            Err(SyntaxError {
                message: "the TypeScript front end could not process this program; simplify the construct it stopped at".to_string(),
                line: 1,
                column: 1,
            })
        })
    })
}

/// The depth of a syntax tree, and where it is deepest.
#[derive(Default)]
struct Depth {
    current: usize,
    deepest: usize,
    /// Byte offset of the first node past [`MAX_NESTING`].
    past_limit_at: Option<u32>,
}

impl<'a> Visit<'a> for Depth {
    fn enter_node(&mut self, kind: AstKind<'a>) {
        self.current += 1;
        if self.current > self.deepest {
            self.deepest = self.current;
            if self.current > MAX_NESTING && self.past_limit_at.is_none() {
                self.past_limit_at = Some(kind.span().start);
            }
        }
    }

    fn leave_node(&mut self, _kind: AstKind<'a>) {
        self.current -= 1;
    }
}

fn too_deep(source: &str, depth: &Depth, offset: u32) -> SyntaxError {
    let (line, column) = line_column(source, offset);
    SyntaxError {
        message: format!(
            "the program nests {} levels deep (from line {line}, column {column}); the limit is {MAX_NESTING}: flatten the nesting (loops, arrays of values, early returns) instead",
            depth.deepest
        ),
        line,
        column,
    }
}

/// The program parsed as the body of an async function (TypeScript, module, `return` allowed),
/// refused when the parser objects or when it nests deeper than [`MAX_NESTING`].
pub(crate) fn parse<'a>(
    allocator: &'a Allocator,
    source: &'a str,
) -> Result<oxc::ast::ast::Program<'a>, SyntaxError> {
    let source_type = SourceType::ts().with_module(true);
    let options = ParseOptions {
        allow_return_outside_function: true,
        ..ParseOptions::default()
    };
    let parsed = Parser::new(allocator, source, source_type)
        .with_options(options)
        .parse();
    if let Some(diagnostic) = first_error(&parsed.diagnostics) {
        return Err(diagnostic_error(source, diagnostic));
    }
    let program = parsed.program;
    let mut depth = Depth::default();
    depth.visit_program(&program);
    if let Some(offset) = depth.past_limit_at {
        return Err(too_deep(source, &depth, offset));
    }
    Ok(program)
}

fn transpile_unguarded(source: &str) -> Result<Transpiled, SyntaxError> {
    let allocator = Allocator::default();
    let mut program = parse(&allocator, source)?;

    let semantic = SemanticBuilder::new()
        .with_excess_capacity(2.0)
        .with_enum_eval(true)
        .build(&program);
    let scoping = semantic.semantic.into_scoping();
    let transformed = Transformer::new(
        &allocator,
        Path::new(SOURCE_NAME),
        &TransformOptions::default(),
    )
    .build_with_scoping(scoping, &mut program);
    if let Some(diagnostic) = first_error(&transformed.diagnostics) {
        return Err(diagnostic_error(source, diagnostic));
    }

    // Removing type-only imports leaves an `export {}` marker to keep the module a module; the
    // program runs as a function body, so drop it.
    program.body.retain(|statement| !is_empty_export(statement));
    // Anything module-shaped that remains cannot run here.
    for statement in &program.body {
        let what = match statement {
            Statement::ImportDeclaration(_) => {
                "import declarations are not supported: every capability is reached through the global `tools` object"
            }
            _ if statement.is_module_declaration() => {
                "export declarations are not supported: use `return` to hand a value back"
            }
            _ => continue,
        };
        let span = statement_span(statement);
        let (line, column) = line_column(source, span);
        return Err(SyntaxError {
            message: what.to_string(),
            line,
            column,
        });
    }

    let generated = Codegen::new()
        .with_options(CodegenOptions {
            source_map_path: Some(SOURCE_NAME.into()),
            // No indentation: with it, the output of a program nested N levels grows with N²
            // (20,000 nested `if`s made 200 MB of tabs, which the engine then failed to take).
            indent_width: 0,
            ..CodegenOptions::default()
        })
        .build(&program);
    Ok(Transpiled {
        js: generated.code,
        map: generated.map.map(|map| map.into_owned()),
    })
}

impl std::fmt::Debug for Transpiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transpiled")
            .field("js", &self.js)
            .finish_non_exhaustive()
    }
}

impl Transpiled {
    /// Map a 0-based position in `js` back to a 1-based (line, column) of the source.
    pub fn original_position(&self, line: u32, column: u32) -> Option<(u32, u32)> {
        let map = self.map.as_ref()?;
        let table = map.generate_lookup_table();
        let token = map.lookup_token(&table, line, column)?;
        Some((token.get_src_line() + 1, token.get_src_col() + 1))
    }
}

fn first_error(
    diagnostics: &[oxc::diagnostics::OxcDiagnostic],
) -> Option<&oxc::diagnostics::OxcDiagnostic> {
    diagnostics
        .iter()
        .find(|d| d.severity == oxc::diagnostics::Severity::Error)
}

fn is_empty_export(statement: &Statement<'_>) -> bool {
    matches!(statement, Statement::ExportNamedDeclaration(export)
        if export.specifiers.is_empty())
}

fn statement_span(statement: &Statement<'_>) -> u32 {
    use oxc::span::GetSpan;
    statement.span().start
}

fn diagnostic_error(source: &str, diagnostic: &oxc::diagnostics::OxcDiagnostic) -> SyntaxError {
    let offset = diagnostic
        .labels
        .first()
        .map(|label| label.offset())
        .unwrap_or(0);
    let (line, column) = line_column(source, offset);
    let mut message = diagnostic.message.to_string();
    if let Some(help) = &diagnostic.help {
        message.push_str(&format!(" ({help})"));
    }
    SyntaxError {
        message,
        line,
        column,
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub(crate) fn line_column(source: &str, offset: u32) -> (u32, u32) {
    let offset = (offset as usize).min(source.len());
    let before = &source[..floor_char_boundary(source, offset)];
    let line = before.matches('\n').count() as u32 + 1;
    let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
    let column = before[line_start..].chars().count() as u32 + 1;
    (line, column)
}

fn floor_char_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_types_and_keeps_runtime_constructs() {
        let out = transpile(
            "enum Color { Red, Green }\nnamespace N { export const x = 1; }\nclass P { constructor(private a: number) {} }\nconst v: number = 1 as number;\nreturn Color.Green + N.x + v;",
        )
        .unwrap();
        assert!(out.js.contains("Color"), "{}", out.js);
        assert!(!out.js.contains(": number"), "{}", out.js);
        assert!(out.js.contains("this.a = a"), "{}", out.js);
    }

    #[test]
    fn syntax_error_points_at_model_line() {
        let err = transpile("const a = 1;\nconst b = ;\n").unwrap_err();
        assert_eq!(err.line, 2, "{err}");
    }

    #[test]
    fn value_imports_are_rejected_but_type_imports_vanish() {
        assert!(transpile("import type { X } from 'x';\nreturn 1;").is_ok());
        let err = transpile("\nimport fs from 'fs';\nfs.readFileSync('x');").unwrap_err();
        assert_eq!(err.line, 2);
    }

    /// Runs `transpile` on a thread with a small stack, as a tokio worker's or smaller.
    fn on_small_stack(source: String) -> Result<Transpiled, SyntaxError> {
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || transpile(&source))
            .unwrap()
            .join()
            .expect("the front end never overflows its caller's stack")
    }

    #[test]
    fn deep_programs_are_refused_whatever_the_callers_stack() {
        let shapes = [
            format!("return {}1{};", "[".repeat(20_000), "]".repeat(20_000)),
            format!("return {}1;", "!".repeat(100_000)),
            format!("{}return 1;", "if (1) ".repeat(30_000)),
            format!("return 0{};", "+1".repeat(50_000)),
        ];
        for source in shapes {
            let err = on_small_stack(source).unwrap_err();
            assert!(
                err.message.contains("nests") && err.message.contains("the limit is 1000"),
                "{err}"
            );
        }
    }

    #[test]
    fn nesting_under_the_bound_compiles_on_a_small_stack() {
        let out = on_small_stack(format!("return {}1{};", "[".repeat(300), "]".repeat(300)));
        assert!(out.is_ok(), "{out:?}");
    }

    #[test]
    fn output_grows_linearly_with_nesting() {
        // Indented output grew with the square of the depth (20,000 `if`s: 200 MB of tabs).
        let source = format!("{}return 1;", "if (1) ".repeat(900));
        let out = transpile(&source).unwrap();
        assert!(out.js.len() < 4 * source.len(), "{} bytes", out.js.len());
    }

    #[test]
    fn positions_map_back_through_type_annotations() {
        let out = transpile("type T = { a: string };\ninterface I { b: number }\nconst x: T = { a: 'a' };\nthrow new Error(x.a);").unwrap();
        let throw_line = out.js.lines().position(|l| l.contains("throw")).unwrap() as u32;
        let (line, _) = out.original_position(throw_line, 0).unwrap();
        assert_eq!(line, 4);
    }
}
