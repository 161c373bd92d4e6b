//! Filling the skeletons in `sdk-templates/`.
//!
//! Templates hold only text and `{{name}}` placeholders; everything computed is computed in
//! Rust, so the skeletons can be read (and reviewed) as the output they produce.

/// Replaces each `{{name}}` in `template` by its value in `values`.
///
/// # Panics
///
/// On a placeholder without a value or a value without a placeholder: templates are compiled
/// in, so either is a programming error that every test run would hit.
pub(crate) fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let extra: usize = values.iter().map(|(_, value)| value.len()).sum();
    let mut out = String::with_capacity(template.len() + extra);
    let mut used = vec![false; values.len()];
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        let end = rest[start..]
            .find("}}")
            .map(|offset| start + offset)
            .unwrap_or_else(|| panic!("unclosed placeholder in template: {}", &rest[start..]));
        let name = &rest[start + 2..end];
        let index = values
            .iter()
            .position(|(key, _)| *key == name)
            .unwrap_or_else(|| panic!("template placeholder `{name}` has no value"));
        used[index] = true;
        out.push_str(&rest[..start]);
        out.push_str(values[index].1);
        rest = &rest[end + 2..];
    }
    out.push_str(rest);
    if let Some(unused) = used.iter().position(|used| !used) {
        panic!("template has no placeholder `{}`", values[unused].0);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_replaced_verbatim() {
        let out = fill("a {{x}} b {{y}} {{x}}", &[("x", "1"), ("y", "{{x}}")]);
        assert_eq!(out, "a 1 b {{x}} 1");
    }

    #[test]
    #[should_panic(expected = "placeholder `z` has no value")]
    fn missing_value_panics() {
        fill("{{z}}", &[]);
    }

    #[test]
    #[should_panic(expected = "no placeholder `x`")]
    fn unused_value_panics() {
        fill("text", &[("x", "1")]);
    }
}
