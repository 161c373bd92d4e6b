//! Stack traces in the model's own coordinates: every `codemode:program:LINE:COL` the engine
//! reports is mapped through the front end's source map and shown as `program:LINE:COL`; frames
//! inside the glue or deno_core are dropped, and very deep stacks are cut.

use super::transpile::Transpiled;

/// Lines of the wrapper that precede the program in the executed script.
const PREFIX_LINES: u32 = 1;
const MAX_FRAMES: usize = 30;

pub(crate) struct ProgramPositions<'a> {
    program: &'a Transpiled,
    script_name: &'a str,
}

pub(crate) struct MappedStack {
    pub text: String,
    /// Position of the innermost program frame.
    pub line: Option<u32>,
    pub column: Option<u32>,
}

impl<'a> ProgramPositions<'a> {
    pub(crate) fn new(program: &'a Transpiled, script_name: &'a str) -> Self {
        ProgramPositions {
            program,
            script_name,
        }
    }

    /// Map a 1-based script position to a 1-based program position.
    fn map(&self, line: u32, column: u32) -> Option<(u32, u32)> {
        let js_line = line.checked_sub(PREFIX_LINES + 1)?;
        self.program
            .original_position(js_line, column.saturating_sub(1))
    }
}

pub(crate) fn rewrite(stack: &str, positions: &ProgramPositions<'_>) -> MappedStack {
    let mut out = Vec::new();
    let mut first = None;
    let mut omitted = 0usize;
    for line in stack.lines() {
        if is_internal_frame(line) {
            continue;
        }
        if out.len() >= MAX_FRAMES {
            omitted += 1;
            continue;
        }
        let (text, position) = rewrite_line(line, positions);
        if first.is_none() {
            first = position;
        }
        out.push(text);
    }
    if omitted > 0 {
        out.push(format!("    ... {omitted} more frames"));
    }
    MappedStack {
        text: out.join("\n"),
        line: first.map(|(l, _)| l),
        column: first.map(|(_, c)| c),
    }
}

/// A frame of the glue or of deno_core's own scripts (a failed tool call's error is built by
/// deno_core's error builder): not the model's code. Only frame lines qualify, so a message
/// that mentions these names stays.
fn is_internal_frame(line: &str) -> bool {
    line.trim_start().starts_with("at ")
        && (line.contains("codemode:glue/") || line.contains("ext:core/"))
}

fn rewrite_line(line: &str, positions: &ProgramPositions<'_>) -> (String, Option<(u32, u32)>) {
    let marker = format!("{}:", positions.script_name);
    let Some(start) = line.find(&marker) else {
        return (line.to_string(), None);
    };
    let rest = &line[start + marker.len()..];
    let (script_line, after_line) = take_number(rest);
    let Some(script_line) = script_line else {
        return (line.to_string(), None);
    };
    let (script_column, after_column) = match after_line.strip_prefix(':') {
        Some(tail) => take_number(tail),
        None => (None, after_line),
    };
    let mapped = positions.map(script_line, script_column.unwrap_or(1));
    let shown = match mapped {
        Some((l, c)) => format!("program:{l}:{c}"),
        None => "program".to_string(),
    };
    (
        format!("{}{}{}", &line[..start], shown, after_column),
        mapped,
    )
}

fn take_number(text: &str) -> (Option<u32>, &str) {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    (text[..digits].parse().ok(), &text[digits..])
}

#[cfg(test)]
mod tests {
    use super::is_internal_frame;

    #[test]
    fn only_frames_of_the_glue_and_deno_core_are_internal() {
        assert!(is_internal_frame(
            "    at call (codemode:glue/06_tools.js:92:12)"
        ));
        assert!(is_internal_frame(
            "    at buildCustomError (ext:core/00_infra.js:104:15)"
        ));
        assert!(!is_internal_frame("    at codemode:program:3:14"));
        // A message line that mentions the names is the model's text, not a frame.
        assert!(!is_internal_frame("Error: see codemode:glue/06_tools.js"));
    }
}
