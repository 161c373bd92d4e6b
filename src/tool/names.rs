//! Sandbox names (DESIGN.md section 2): identifiers are kept, anything else is mapped
//! deterministically so `tools.get_user(..)` works for an upstream tool called `get-user`.

pub use crate::sdk::is_identifier;

/// Maps a source name to its sandbox name: each run of characters outside `[A-Za-z0-9_$]`
/// becomes one `_`, and a leading digit gets a `_` prefix.
pub fn sandbox_name(name: &str) -> String {
    if is_identifier(name) {
        return name.to_owned();
    }
    let mut out = String::with_capacity(name.len() + 1);
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        out.push('_');
    }
    let mut in_run = false;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '$' {
            out.push(c);
            in_run = false;
        } else if !in_run {
            out.push('_');
            in_run = true;
        }
    }
    if out.is_empty() {
        out.push('_');
    }
    out
}
