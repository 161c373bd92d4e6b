mod cli;

fn main() {
    // A sandbox worker process of `--isolation process` is this binary with a marker argument.
    codemode::sandbox::serve_worker_if_requested();
    keep_programs_off_disk();
    std::process::exit(cli::main());
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
