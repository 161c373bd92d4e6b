//! Call ids and timestamps, cheap enough for the hot path.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

static COUNTER: AtomicU64 = AtomicU64::new(0);
static PREFIX: OnceLock<String> = OnceLock::new();

/// `c_<process start, base 36>_<counter>`: unique within a process, ordered by issue within it,
/// and distinct across restarts that append to the same session log.
pub(crate) fn next_call_id() -> Arc<str> {
    let prefix = PREFIX.get_or_init(|| {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        format!("c_{}", base36(nanos as u64 ^ u64::from(std::process::id())))
    });
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    // Assembled on the stack so the id costs one allocation (the `Arc<str>` itself).
    let mut buf = [0u8; 64];
    let p = prefix.as_bytes();
    buf[..p.len()].copy_from_slice(p);
    buf[p.len()] = b'_';
    let len = p.len() + 1 + write_decimal(&mut buf[p.len() + 1..], n);
    Arc::from(std::str::from_utf8(&buf[..len]).expect("ascii id"))
}

fn write_decimal(out: &mut [u8], mut n: u64) -> usize {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let len = digits.len() - i;
    out[..len].copy_from_slice(&digits[i..]);
    len
}

fn base36(mut n: u64) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).expect("ascii")
}

/// Now, as RFC 3339 UTC with microseconds (`2026-12-02T11:37:48.123456Z`).
pub(crate) fn now_rfc3339() -> String {
    rfc3339(SystemTime::now())
}

/// Formats a time as RFC 3339 UTC with microseconds. Hand-written because it runs on every call
/// and a general formatter costs several times more.
pub(crate) fn rfc3339(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, day) = civil_from_days(days as i64);
    let (hh, mm, ss) = (rem / 3600, rem % 3600 / 60, rem % 60);
    let mut b = *b"0000-00-00T00:00:00.000000Z";
    put(&mut b[0..4], y as u64);
    put(&mut b[5..7], m);
    put(&mut b[8..10], day);
    put(&mut b[11..13], hh);
    put(&mut b[14..16], mm);
    put(&mut b[17..19], ss);
    put(&mut b[20..26], u64::from(d.subsec_micros()));
    String::from_utf8(b.to_vec()).expect("ascii timestamp")
}

/// Writes `n` zero-padded into all of `out`.
fn put(out: &mut [u8], mut n: u64) {
    for slot in out.iter_mut().rev() {
        *slot = b'0' + (n % 10) as u8;
        n /= 10;
    }
}

/// Days since 1970-01-01 to (year, month, day); Howard Hinnant's `civil_from_days`.
fn civil_from_days(z: i64) -> (i64, u64, u64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u64;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u64;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn rfc3339_formats_known_instants() {
        let at = |s: u64, us: u64| {
            rfc3339(UNIX_EPOCH + Duration::from_secs(s) + Duration::from_micros(us))
        };
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(at(951_782_400, 5), "2000-02-29T00:00:00.000005Z");
        assert_eq!(at(1_796_211_468, 123_456), "2026-12-02T11:37:48.123456Z");
        assert_eq!(at(4_102_444_799, 999_999), "2099-12-31T23:59:59.999999Z");
    }

    #[test]
    fn call_ids_are_unique_and_prefixed() {
        let a = next_call_id();
        let b = next_call_id();
        assert!(a.starts_with("c_") && a != b);
    }
}
