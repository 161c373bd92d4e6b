//! Identifiers in the generated TypeScript: type names, property keys, de-duplication.

use std::collections::HashSet;

// Reserved words count as identifiers: `tools.delete(...)` and `{ default: 1 }` are legal.
/// Whether `name` matches `^[A-Za-z_$][A-Za-z0-9_$]*$`.
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$' => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// A property key: bare when it is an identifier, otherwise a quoted string literal.
pub(crate) fn property_key(name: &str) -> String {
    if is_identifier(name) {
        name.to_owned()
    } else {
        string_literal(name)
    }
}

/// A TypeScript string literal; JSON's escaping is a subset of JS's, so it is always valid.
pub(crate) fn string_literal(value: &str) -> String {
    serde_json::Value::from(value).to_string()
}

/// `get_user` -> `GetUser`, `API-get-self` -> `APIGetSelf`, `2fa_verify` -> `_2faVerify`.
///
/// Every run of non-alphanumeric characters separates words; the first letter of each word
/// is upper-cased and the rest kept, so acronyms survive. A leading digit gets a `_` because
/// a type name cannot start with one.
pub(crate) fn pascal_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 1);
    for word in name.split(|c: char| !c.is_ascii_alphanumeric()) {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            out.push(first.to_ascii_uppercase());
            out.extend(chars);
        }
    }
    if out.is_empty() {
        out.push_str("Tool");
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

/// Global type names of TypeScript's standard and DOM libraries that a generated name could
/// hit (tool `event` + `$defs/Target` = `EventTarget`). Declaring one again would merge with
/// or clash against the library's, so generated names steer around them.
#[rustfmt::skip]
pub(crate) const LIB_GLOBAL_TYPES: &[&str] = &[
    "AbortController", "AbortSignal", "ArrayBuffer", "Awaited", "Blob", "Capitalize",
    "DataView", "Document", "Element", "Event", "EventTarget", "Exclude",
    "Extract", "File", "FileList", "FormData", "Headers", "InstanceType",
    "Iterator", "Lowercase", "NodeList", "NonNullable", "Omit", "Parameters",
    "Partial", "Pick", "PromiseLike", "PropertyKey", "ReadableStream", "Readonly",
    "Record", "Request", "Required", "Response", "ReturnType", "TextDecoder",
    "TextEncoder", "Uncapitalize", "Uppercase", "URL", "URLSearchParams", "WeakMap",
    "WeakRef", "WeakSet", "WritableStream",
];

/// Hands out global type names; a clash gets the lowest free numeric suffix (`Foo2`).
///
/// Deterministic because callers ask in a fixed order (tools sorted, schemas walked in order).
#[derive(Debug, Default)]
pub(crate) struct NameAllocator {
    taken: HashSet<String>,
}

impl NameAllocator {
    /// An allocator where `reserved` names are already taken.
    pub(crate) fn with_reserved<'a>(reserved: impl IntoIterator<Item = &'a str>) -> Self {
        Self {
            taken: reserved.into_iter().map(str::to_owned).collect(),
        }
    }

    /// `base` if free, else `base2`, `base3`, ...; the returned name is now taken.
    pub(crate) fn allocate(&mut self, base: &str) -> String {
        let mut candidate = base.to_owned();
        let mut n = 2;
        while self.taken.contains(&candidate) {
            candidate = format!("{base}{n}");
            n += 1;
        }
        self.taken.insert(candidate.clone());
        candidate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_include_reserved_words_but_not_dashes_or_digits_first() {
        assert!(is_identifier("delete"));
        assert!(is_identifier("$ref"));
        assert!(is_identifier("_2fa"));
        assert!(!is_identifier("get-user"));
        assert!(!is_identifier("2fa"));
        assert!(!is_identifier(""));
        assert!(!is_identifier("naïve"));
    }

    #[test]
    fn property_keys_are_quoted_only_when_needed() {
        assert_eq!(property_key("path"), "path");
        assert_eq!(property_key("content-type"), "\"content-type\"");
        assert_eq!(property_key("say \"hi\""), r#""say \"hi\"""#);
    }

    #[test]
    fn pascal_case_splits_on_separators_and_keeps_acronyms() {
        assert_eq!(pascal_case("get_user"), "GetUser");
        assert_eq!(pascal_case("API_get_self"), "APIGetSelf");
        assert_eq!(pascal_case("fs_read"), "FsRead");
        assert_eq!(pascal_case("delete"), "Delete");
        assert_eq!(pascal_case("createIssue"), "CreateIssue");
        assert_eq!(pascal_case("$weird$"), "Weird");
    }

    #[test]
    fn pascal_case_guards_leading_digits_and_empty_names() {
        assert_eq!(pascal_case("_2fa_verify"), "_2faVerify");
        assert_eq!(pascal_case("2fa_verify"), "_2faVerify");
        assert_eq!(pascal_case("__"), "Tool");
    }

    #[test]
    fn allocator_suffixes_clashes_in_request_order() {
        let mut names = NameAllocator::with_reserved(["ToolError"]);
        assert_eq!(names.allocate("ToolError"), "ToolError2");
        assert_eq!(names.allocate("GetUserInput"), "GetUserInput");
        assert_eq!(names.allocate("GetUserInput"), "GetUserInput2");
        assert_eq!(names.allocate("GetUserInput"), "GetUserInput3");
    }
}
