//! A small TypeScript type AST and its printer.
//!
//! Schemas are first mapped to [`TsType`] and printed afterwards, so that simplification
//! (flattening unions, dropping `never`) and parenthesisation live in one place instead of
//! being re-derived from strings.

use super::jsdoc::Doc;
use super::naming::property_key;

const INDENT: &str = "  ";

/// A TypeScript type expression.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TsType {
    /// `string`, `number`, `boolean`, `null`, `undefined`, `unknown`, `never`.
    Keyword(&'static str),
    /// A literal type, already in TypeScript syntax (`"open"`, `42`, `true`).
    Literal(String),
    /// A reference to a declared type.
    Named(String),
    Array(Box<TsType>),
    Tuple(Tuple),
    Object(ObjectType),
    Union(Vec<TsType>),
    Intersection(Vec<TsType>),
    /// A type with an inline `/* ... */` note, for facts with no JSDoc slot (an item's format).
    Commented(String, Box<TsType>),
}

/// `[A, B?, ...C[]]`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Tuple {
    pub elements: Vec<TsType>,
    /// Elements from this index on are optional (`minItems`).
    pub required: usize,
    pub rest: Option<Box<TsType>>,
}

/// `{ a: T; b?: U; [key: string]: V }`.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct ObjectType {
    pub properties: Vec<Property>,
    pub index: Option<Box<TsType>>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Property {
    /// The raw name; quoted on output when it is not an identifier.
    pub name: String,
    pub optional: bool,
    pub ty: TsType,
    pub doc: Doc,
}

impl TsType {
    pub(crate) const UNKNOWN: TsType = TsType::Keyword("unknown");
    pub(crate) const NEVER: TsType = TsType::Keyword("never");
    pub(crate) const NULL: TsType = TsType::Keyword("null");

    /// A union, flattened; `never` members vanish, `unknown` absorbs everything, duplicates go.
    pub(crate) fn union(members: impl IntoIterator<Item = TsType>) -> TsType {
        let mut flat: Vec<TsType> = Vec::new();
        for member in members {
            match member {
                TsType::Union(inner) => flat.extend(inner),
                other => flat.push(other),
            }
        }
        if flat.contains(&TsType::UNKNOWN) {
            return TsType::UNKNOWN;
        }
        let mut out: Vec<TsType> = Vec::with_capacity(flat.len());
        for member in flat {
            if member != TsType::NEVER && !out.contains(&member) {
                out.push(member);
            }
        }
        match out.len() {
            0 => TsType::NEVER,
            1 => out.pop().expect("one member"),
            _ => TsType::Union(out),
        }
    }

    /// An intersection, flattened; `unknown` members vanish, `never` absorbs everything.
    pub(crate) fn intersection(members: impl IntoIterator<Item = TsType>) -> TsType {
        let mut out: Vec<TsType> = Vec::new();
        for member in members {
            let parts = match member {
                TsType::Intersection(inner) => inner,
                other => vec![other],
            };
            for part in parts {
                if part == TsType::NEVER {
                    return TsType::NEVER;
                }
                if part != TsType::UNKNOWN && !out.contains(&part) {
                    out.push(part);
                }
            }
        }
        match out.len() {
            0 => TsType::UNKNOWN,
            1 => out.pop().expect("one member"),
            _ => TsType::Intersection(out),
        }
    }

    /// The type as TypeScript text, with nested objects indented from `depth`.
    pub(crate) fn render(&self, depth: usize) -> String {
        let mut out = String::new();
        self.write(&mut out, depth);
        out
    }

    fn write(&self, out: &mut String, depth: usize) {
        match self {
            TsType::Keyword(keyword) => out.push_str(keyword),
            TsType::Literal(text) | TsType::Named(text) => out.push_str(text),
            TsType::Array(item) => {
                write_operand(item, out, depth, needs_parens_as_array_item(item));
                out.push_str("[]");
            }
            TsType::Tuple(tuple) => tuple.write(out, depth),
            TsType::Object(object) => object.write(out, depth),
            TsType::Union(members) => write_joined(members, " | ", out, depth, |m| {
                matches!(m, TsType::Commented(..))
            }),
            TsType::Intersection(members) => write_joined(members, " & ", out, depth, |m| {
                matches!(m, TsType::Union(_) | TsType::Commented(..))
            }),
            TsType::Commented(note, inner) => {
                out.push_str("/* ");
                out.push_str(&note.replace("*/", "*\\/"));
                out.push_str(" */ ");
                inner.write(out, depth);
            }
        }
    }
}

fn needs_parens_as_array_item(item: &TsType) -> bool {
    matches!(
        item,
        TsType::Union(_) | TsType::Intersection(_) | TsType::Commented(..)
    )
}

fn write_operand(ty: &TsType, out: &mut String, depth: usize, parens: bool) {
    if parens {
        out.push('(');
    }
    ty.write(out, depth);
    if parens {
        out.push(')');
    }
}

fn write_joined(
    members: &[TsType],
    separator: &str,
    out: &mut String,
    depth: usize,
    parens: impl Fn(&TsType) -> bool,
) {
    for (i, member) in members.iter().enumerate() {
        if i > 0 {
            out.push_str(separator);
        }
        write_operand(member, out, depth, parens(member));
    }
}

impl Tuple {
    fn write(&self, out: &mut String, depth: usize) {
        out.push('[');
        for (i, element) in self.elements.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            // `A | B?` would bind the `?` to B alone in a reader's eye; TS needs the parens.
            let optional = i >= self.required;
            let parens = optional && matches!(element, TsType::Union(_) | TsType::Intersection(_));
            write_operand(
                element,
                out,
                depth,
                parens || matches!(element, TsType::Commented(..)),
            );
            if optional {
                out.push('?');
            }
        }
        if let Some(rest) = &self.rest {
            if !self.elements.is_empty() {
                out.push_str(", ");
            }
            out.push_str("...");
            write_operand(rest, out, depth, needs_parens_as_array_item(rest));
            out.push_str("[]");
        }
        out.push(']');
    }
}

impl ObjectType {
    /// The body lines of an object type, shared by inline objects and `interface` bodies.
    pub(crate) fn write_members(&self, out: &mut String, depth: usize) {
        let indent = INDENT.repeat(depth);
        for property in &self.properties {
            property.doc.write(out, &indent);
            out.push_str(&indent);
            out.push_str(&property_key(&property.name));
            if property.optional {
                out.push('?');
            }
            out.push_str(": ");
            property.ty.write(out, depth);
            out.push_str(";\n");
        }
        if let Some(index) = &self.index {
            out.push_str(&indent);
            out.push_str("[key: string]: ");
            index.write(out, depth);
            out.push_str(";\n");
        }
    }

    fn write(&self, out: &mut String, depth: usize) {
        if self.properties.is_empty() && self.index.is_none() {
            out.push_str("{}");
            return;
        }
        out.push_str("{\n");
        self.write_members(out, depth + 1);
        out.push_str(&INDENT.repeat(depth));
        out.push('}');
    }

    /// Whether `{}` would satisfy this type, so the argument itself can be optional.
    pub(crate) fn accepts_empty(&self) -> bool {
        self.properties.iter().all(|property| property.optional)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kw(keyword: &'static str) -> TsType {
        TsType::Keyword(keyword)
    }

    #[test]
    fn union_flattens_dedups_and_drops_never() {
        let inner = TsType::union([kw("string"), kw("null")]);
        let ty = TsType::union([inner, kw("string"), TsType::NEVER, kw("number")]);
        assert_eq!(ty.render(0), "string | null | number");
    }

    #[test]
    fn union_with_unknown_is_unknown() {
        assert_eq!(
            TsType::union([kw("string"), TsType::UNKNOWN]),
            TsType::UNKNOWN
        );
        assert_eq!(TsType::union([]), TsType::NEVER);
    }

    #[test]
    fn intersection_drops_unknown_and_collapses_single_member() {
        let ty = TsType::intersection([TsType::UNKNOWN, TsType::Named("A".into())]);
        assert_eq!(ty.render(0), "A");
        assert_eq!(TsType::intersection([]), TsType::UNKNOWN);
    }

    #[test]
    fn array_of_union_is_parenthesised() {
        let ty = TsType::Array(Box::new(TsType::union([kw("string"), kw("number")])));
        assert_eq!(ty.render(0), "(string | number)[]");
    }

    #[test]
    fn intersection_parenthesises_union_members() {
        let ty = TsType::intersection([
            TsType::Named("A".into()),
            TsType::union([TsType::Named("B".into()), TsType::Named("C".into())]),
        ]);
        assert_eq!(ty.render(0), "A & (B | C)");
    }

    #[test]
    fn tuple_marks_elements_past_min_items_optional() {
        let ty = TsType::Tuple(Tuple {
            elements: vec![kw("string"), TsType::union([kw("number"), kw("null")])],
            required: 1,
            rest: Some(Box::new(kw("boolean"))),
        });
        assert_eq!(ty.render(0), "[string, (number | null)?, ...boolean[]]");
    }

    #[test]
    fn nested_objects_are_indented() {
        let inner = ObjectType {
            properties: vec![Property {
                name: "a-b".into(),
                optional: true,
                ty: kw("string"),
                doc: Doc::default(),
            }],
            index: None,
        };
        let outer = ObjectType {
            properties: vec![Property {
                name: "x".into(),
                optional: false,
                ty: TsType::Array(Box::new(TsType::Object(inner))),
                doc: Doc::default(),
            }],
            index: Some(Box::new(TsType::UNKNOWN)),
        };
        assert_eq!(
            TsType::Object(outer).render(0),
            "{\n  x: {\n    \"a-b\"?: string;\n  }[];\n  [key: string]: unknown;\n}"
        );
    }
}
