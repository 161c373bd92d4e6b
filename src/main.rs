mod cli;

fn main() {
    // A sandbox worker process of `--isolation process` is this binary with a marker argument.
    codemode::sandbox::serve_worker_if_requested();
    keep_programs_off_disk();
    leave_out_webassembly();
    std::process::exit(cli::main());
}

/// Programs never see `WebAssembly` (the sandbox's bootstrap removes it), so the engine facade
/// need not install it in every isolate it makes: 3% of each isolate's build, and the facade's
/// WebAssembly runtime out of any program's reach. Worker processes follow their host.
fn leave_out_webassembly() {
    // SAFETY: the start of `main`, before any other thread exists to read the environment.
    unsafe { std::env::set_var("QJS_NO_WASM", "1") };
}

/// The QuickJS engine facade caches the bytecode of every script it runs under
/// `~/.cache/v8x/quickjs-bytecode`: one file per distinct source, never pruned. With a model
/// writing a new program for every call, that directory grows without bound (and each run pays a
/// file write), so the cache is off for this process unless the user configured it
/// (`V82JSC_NO_BC_CACHE`, `V82JSC_BC_CACHE_DIR`). Costs ~15 ms of cold start: the bootstrap
/// scripts are compiled instead of read back.
fn keep_programs_off_disk() {
    if std::env::var_os("V82JSC_NO_BC_CACHE").is_none()
        && std::env::var_os("V82JSC_BC_CACHE_DIR").is_none()
    {
        // SAFETY: the first statement of `main`: no other thread exists yet to read the
        // environment concurrently.
        unsafe { std::env::set_var("V82JSC_NO_BC_CACHE", "1") };
    }
}
