//! How much native stack the TypeScript front end needs per nesting shape: the numbers behind
//! `STACK_PER_SOURCE_BYTE` and `STACK_BASE` in `src/sandbox/transpile.rs`. Re-run it after an
//! oxc upgrade, in both profiles:
//!
//! ```sh
//! cargo run --example stack_probe -- array 20000        # the parser alone
//! cargo run --example stack_probe -- array 990 full     # the whole front end (under the bound)
//! ```
//!
//! It parses on a thread with a 2 GiB stack and counts the stack pages the run touched
//! (`mincore`), so the figure is the high-water mark.
use oxc::allocator::Allocator;
use oxc::parser::{ParseOptions, Parser};
use oxc::span::SourceType;

/// Resident pages of the calling thread's stack, in bytes.
fn resident_stack_bytes() -> usize {
    // SAFETY: plain libc queries about the calling thread's own stack mapping.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        libc::pthread_getattr_np(libc::pthread_self(), &mut attr);
        let mut addr = std::ptr::null_mut();
        let mut size = 0usize;
        libc::pthread_attr_getstack(&attr, &mut addr, &mut size);
        let pages = size / 4096;
        let mut vec = vec![0u8; pages];
        libc::mincore(addr, size, vec.as_mut_ptr());
        vec.iter().filter(|b| **b & 1 == 1).count() * 4096
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let shape = args[1].clone();
    let n: usize = args[2].parse().unwrap();
    let full = args.get(3).map(|s| s == "full").unwrap_or(false);
    let src = match shape.as_str() {
        "array" => format!("return {}1{};", "[".repeat(n), "]".repeat(n)),
        "paren" => format!("return {}1{};", "(".repeat(n), ")".repeat(n)),
        "object" => format!("return {}1{};", "{a:".repeat(n), "}".repeat(n)),
        "arrow" => format!("return {}1;", "x => ".repeat(n)),
        "ternary" => format!("return {}1;", "x ? 1 : ".repeat(n)),
        "generic" => format!("let v: {}number{} = 1;", "Array<".repeat(n), ">".repeat(n)),
        "if" => format!("{}return 1;", "if (1) ".repeat(n)),
        "unary" => format!("return {}1;", "!".repeat(n)),
        "template" => format!("return {}1{};", "`${".repeat(n), "}`".repeat(n)),
        "sum" => format!("return 0{};", "+1".repeat(n)),
        "member" => format!("return a{};", ".a".repeat(n)),
        "call" => format!("return f{};", "()".repeat(n)),
        "neg" => format!("return {}1;", "- ".repeat(n)),
        "new" => format!("return {}X;", "new ".repeat(n)),
        "assign" => format!("{}1;", "a = ".repeat(n)),
        "block" => format!("{}{}", "{".repeat(n), "}".repeat(n)),
        "typeof" => format!("return {}1;", "typeof ".repeat(n)),
        "await" => format!("return {}1;", "await ".repeat(n)),
        "union" => format!("let v: {}number{} = 1;", "(".repeat(n), ")".repeat(n)),
        "cond_type" => format!("type T = {}1;", "number extends 1 ? 1 : ".repeat(n)),
        "else_if" => format!("if (0) {{}}{} return 1;", " else if (0) {}".repeat(n)),
        "func" => format!("{}{}", "function f() {".repeat(n), "}".repeat(n)),
        "spread" => format!("return [{}1{}];", "...[".repeat(n), "]".repeat(n)),
        other => panic!("unknown shape {other}"),
    };
    let len = src.len();
    let h = std::thread::Builder::new()
        .stack_size(2 << 30)
        .spawn(move || {
            let before = resident_stack_bytes();
            if full {
                let r = codemode::sandbox::transpile(&src);
                println!(
                    "{}",
                    match &r {
                        Ok(t) => format!("ok {}", t.js.len()),
                        Err(e) => format!("err {}", e.message),
                    }
                );
            } else {
                let allocator = Allocator::default();
                let options = ParseOptions {
                    allow_return_outside_function: true,
                    ..ParseOptions::default()
                };
                let parsed = Parser::new(&allocator, &src, SourceType::ts().with_module(true))
                    .with_options(options)
                    .parse();
                std::hint::black_box(&parsed.program);
            }
            resident_stack_bytes() - before
        })
        .unwrap();
    let used = h.join().unwrap();
    println!(
        "{shape} n={n} len={len} stack={} KiB per_level={} B per_byte={:.0} B",
        used / 1024,
        used / n.max(1),
        used as f64 / len as f64
    );
}
