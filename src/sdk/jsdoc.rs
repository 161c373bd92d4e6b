//! JSDoc comments: what of a schema becomes documentation, and safe comment text.

use serde_json::{Map, Value};

/// Lines of one JSDoc comment; empty means no comment.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Doc {
    lines: Vec<String>,
}

/// Keywords worth showing the model because they reject arguments the type cannot (ranges,
/// lengths, patterns); listed in the order they are printed.
const CONSTRAINTS: &[&str] = &[
    "minimum",
    "exclusiveMinimum",
    "maximum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
];

impl Doc {
    /// Free text, split into lines (a blank line separates paragraphs).
    pub(crate) fn text(text: &str) -> Doc {
        let mut doc = Doc::default();
        doc.push_text(text);
        doc
    }

    /// The documentation a schema carries: description (or title), format, constraints,
    /// default, example, deprecation.
    pub(crate) fn of_schema(schema: &Value) -> Doc {
        let mut doc = Doc::default();
        let Some(map) = schema.as_object() else {
            return doc;
        };
        match (str_field(map, "description"), str_field(map, "title")) {
            (Some(description), _) => doc.push_text(description),
            (None, Some(title)) => doc.push_text(title),
            (None, None) => {}
        }
        if let Some(format) = str_field(map, "format") {
            doc.push_line(format!("format: {format}"));
        }
        let constraints: Vec<String> = CONSTRAINTS
            .iter()
            .filter_map(|key| Some(format!("{key}: {}", compact(map.get(*key)?))))
            .collect();
        if !constraints.is_empty() {
            doc.push_line(constraints.join(", "));
        }
        if let Some(default) = map.get("default") {
            doc.push_line(format!("@default {}", compact(default)));
        }
        if let Some(example) = map.get("examples").and_then(|e| e.as_array()?.first()) {
            doc.push_line(format!("@example {}", compact(example)));
        }
        if map.get("deprecated") == Some(&Value::Bool(true)) {
            doc.push_line("@deprecated".to_owned());
        }
        doc
    }

    /// Appends a paragraph, separated from earlier text by a blank line.
    pub(crate) fn push_paragraph(&mut self, text: &str) {
        if !self.lines.is_empty() && !text.trim().is_empty() {
            self.lines.push(String::new());
        }
        self.push_text(text);
    }

    fn push_text(&mut self, text: &str) {
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        self.lines
            .extend(text.lines().map(|line| line.trim_end().to_owned()));
    }

    fn push_line(&mut self, line: String) {
        self.lines.push(line);
    }

    /// Writes the comment, each line prefixed by `indent`; nothing when empty.
    ///
    /// `*/` inside the text would end the comment early and let description text be parsed as
    /// code, so it is written as `*\/`.
    pub(crate) fn write(&self, out: &mut String, indent: &str) {
        match self.lines.as_slice() {
            [] => {}
            [line] => {
                out.push_str(indent);
                out.push_str("/** ");
                out.push_str(&escape(line));
                out.push_str(" */\n");
            }
            lines => {
                out.push_str(indent);
                out.push_str("/**\n");
                for line in lines {
                    out.push_str(indent);
                    out.push_str(" *");
                    if !line.is_empty() {
                        out.push(' ');
                        out.push_str(&escape(line));
                    }
                    out.push('\n');
                }
                out.push_str(indent);
                out.push_str(" */\n");
            }
        }
    }
}

fn escape(line: &str) -> String {
    line.replace("*/", "*\\/")
}

fn str_field<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    map.get(key)?.as_str()
}

/// One-line JSON for values shown in docs.
fn compact(value: &Value) -> String {
    value.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn render(doc: &Doc) -> String {
        let mut out = String::new();
        doc.write(&mut out, "");
        out
    }

    #[test]
    fn single_line_doc_stays_on_one_line() {
        assert_eq!(render(&Doc::text("Read a file.")), "/** Read a file. */\n");
    }

    #[test]
    fn comment_terminator_in_text_is_escaped() {
        assert_eq!(
            render(&Doc::text("glob like src/**/*.rs")),
            "/** glob like src/**\\/*.rs */\n"
        );
    }

    #[test]
    fn schema_doc_collects_description_format_constraints_and_default() {
        let schema = json!({
            "type": "string", "description": "When it happened.", "format": "date-time",
            "minLength": 1, "maxLength": 40, "default": "now", "deprecated": true
        });
        assert_eq!(
            render(&Doc::of_schema(&schema)),
            "/**\n * When it happened.\n * format: date-time\n * minLength: 1, maxLength: 40\n * @default \"now\"\n * @deprecated\n */\n"
        );
    }

    #[test]
    fn title_is_used_only_without_description() {
        let doc = Doc::of_schema(&json!({"title": "Page", "description": "Page number."}));
        assert_eq!(render(&doc), "/** Page number. */\n");
        let doc = Doc::of_schema(&json!({"title": "Page"}));
        assert_eq!(render(&doc), "/** Page */\n");
    }

    #[test]
    fn paragraphs_are_separated_by_blank_comment_lines() {
        let mut doc = Doc::text("Line one.\nLine two.");
        doc.push_paragraph("Original name: `get-user`.");
        assert_eq!(
            render(&doc),
            "/**\n * Line one.\n * Line two.\n *\n * Original name: `get-user`.\n */\n"
        );
    }
}
