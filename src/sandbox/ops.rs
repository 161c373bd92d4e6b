//! The ops the glue may call (the reviewed allow-list is `OP_ALLOW_LIST` in
//! `runtime-js/00_primordials.js`, checked by a test). User code reaches none of them
//! directly: the glue captures them before `Deno` is removed.

use deno_core::{OpState, op2, v8};

use super::outcome::LogLevel;
use super::run_state::{FinishReport, RunState};
use super::tool_ops::{engine_utf8, op_codemode_tool_call, op_codemode_tool_call_full};

/// One console entry. deno_core's `#[string]` conversion costs the QuickJS facade three
/// whole-string transcodes (length, then a UTF-16 view, then bytes); this reads a kept text with
/// one UTF-8 write into a buffer sized from the UTF-16 length JS passes, and a dropped one (the
/// buffer is full) with one UTF-8 length, which feeds the truncation marker. Measured with the
/// `console_*` benches: ~5 us per kept 1 KB line, ~0.6 us per dropped one.
#[op2(fast)]
pub(crate) fn op_codemode_console(
    scope: &mut v8::PinScope<'_, '_>,
    state: &mut OpState,
    #[smi] level: u32,
    text: v8::Local<v8::String>,
    #[smi] utf16_units: u32,
) {
    let console = &mut state.borrow_mut::<RunState>().console;
    if console.is_full() {
        console.drop_bytes(text.utf8_length(scope));
        return;
    }
    // A UTF-16 unit is at most 3 UTF-8 bytes (a surrogate pair, 2 units, is 4): the length JS
    // passes bounds the buffer without a separate measuring pass.
    let mut buffer = vec![0u8; utf16_units as usize * 3];
    let written = text.write_utf8_v2(
        scope,
        &mut buffer,
        v8::WriteFlags::kReplaceInvalidUtf8,
        None,
    );
    buffer.truncate(written);
    console.push_owned(LogLevel::from_code(level), engine_utf8(buffer));
}

#[op2(fast)]
pub(crate) fn op_codemode_finish(
    state: &mut OpState,
    #[string] report: String,
    #[string] value: String,
    has_value: bool,
    replacing: bool,
) {
    let run = state.borrow_mut::<RunState>();
    // Written once, but for one case: an unhandled rejection dispatched in the turn in which
    // the program returned replaces the glue's own `ok` (never a report of the host's).
    let replaceable = match &run.finish {
        None => true,
        Some(FinishReport::Js { .. }) => replacing,
        Some(FinishReport::Host { .. }) => false,
    };
    if replaceable {
        run.finish = Some(FinishReport::Js {
            report_json: report,
            value_json: has_value.then_some(value),
        });
    }
}

/// Parse a URL with the WHATWG parser; "" when it is invalid.
#[op2]
#[string]
pub(crate) fn op_codemode_url_parse(
    #[string] href: &str,
    #[string] base: &str,
    has_base: bool,
) -> String {
    let parsed = if has_base {
        url::Url::parse(base).and_then(|base| base.join(href))
    } else {
        url::Url::parse(href)
    };
    parsed.map(|url| url_parts(&url)).unwrap_or_default()
}

/// Apply one WHATWG URL setter; "" when the value cannot be applied.
#[op2]
#[string]
pub(crate) fn op_codemode_url_set(
    #[string] href: &str,
    #[string] field: &str,
    #[string] value: &str,
) -> String {
    use url::quirks;
    let Ok(mut url) = url::Url::parse(href) else {
        return String::new();
    };
    let applied = match field {
        "href" => quirks::set_href(&mut url, value).is_ok(),
        "protocol" => quirks::set_protocol(&mut url, value).is_ok(),
        "username" => quirks::set_username(&mut url, value).is_ok(),
        "password" => quirks::set_password(&mut url, value).is_ok(),
        "host" => quirks::set_host(&mut url, value).is_ok(),
        "hostname" => quirks::set_hostname(&mut url, value).is_ok(),
        "port" => quirks::set_port(&mut url, value).is_ok(),
        "pathname" => {
            quirks::set_pathname(&mut url, value);
            true
        }
        "search" => {
            quirks::set_search(&mut url, value);
            true
        }
        "hash" => {
            quirks::set_hash(&mut url, value);
            true
        }
        _ => false,
    };
    if applied {
        url_parts(&url)
    } else {
        String::new()
    }
}

fn url_parts(url: &url::Url) -> String {
    use url::quirks;
    serde_json::json!({
        "href": quirks::href(url),
        "origin": quirks::origin(url),
        "protocol": quirks::protocol(url),
        "username": quirks::username(url),
        "password": quirks::password(url),
        "host": quirks::host(url),
        "hostname": quirks::hostname(url),
        "port": quirks::port(url),
        "pathname": quirks::pathname(url),
        "search": quirks::search(url),
        "hash": quirks::hash(url),
    })
    .to_string()
}

deno_core::extension!(
    codemode_sandbox,
    ops = [
        op_codemode_console,
        op_codemode_finish,
        op_codemode_tool_call,
        op_codemode_tool_call_full,
        op_codemode_url_parse,
        op_codemode_url_set,
    ],
    state = |state| {
        state.put(RunState::default());
    },
);
