//! What a worker process does to itself before it runs any program (Linux). The host already
//! started it with an empty environment and only the three standard descriptors piped.

use super::frame::WorkerSetup;

/// Apply the worker's confinement. Failures are reported on stderr and the worker goes on:
/// every step is a second layer behind the engine's own sandbox.
pub(crate) fn apply(setup: &WorkerSetup) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl with constant arguments; it only affects this process and its children.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            eprintln!(
                "codemode sandbox worker: cannot set no_new_privs: {}",
                std::io::Error::last_os_error()
            );
        }
    }
    if let Some(bytes) = setup.address_space_bytes {
        let limit = libc::rlimit {
            rlim_cur: bytes as libc::rlim_t,
            rlim_max: bytes as libc::rlim_t,
        };
        // SAFETY: setrlimit with a valid struct; it only lowers this process's own limit.
        if unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) } != 0 {
            eprintln!(
                "codemode sandbox worker: cannot set its address-space ceiling: {}",
                std::io::Error::last_os_error()
            );
        }
    }
}
