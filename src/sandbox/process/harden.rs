//! What a worker process does to itself before it runs any program (Linux). The host already
//! started it with an empty environment; the worker closed every inherited descriptor but the
//! standard three and its protocol pipe. Here, on the main thread before any other thread
//! exists (every later thread inherits it all):
//!
//! 1. `no_new_privs`, so nothing it could exec gains privileges (and seccomp may be installed
//!    without CAP_SYS_ADMIN);
//! 2. the address-space ceiling (`RLIMIT_AS`);
//! 3. Landlock, where the kernel has it: no filesystem access at all, and (ABI 4+) no TCP bind
//!    or connect;
//! 4. a seccomp filter that refuses, with `EPERM`, opening files, creating sockets, creating
//!    processes (fork, vfork, exec, a `clone` without `CLONE_THREAD`), ptrace and reading other
//!    processes' memory, and the administrative calls (mount, namespaces, modules, bpf, ...).
//!    `clone3` answers `ENOSYS` so the C library falls back to `clone`, whose flags a filter
//!    can read.
//!
//! The engine needs none of these after its start: the bytecode cache is off, and the time
//! zone is read before the filter (`tzset`).

use serde::{Deserialize, Serialize};

/// How a worker process set itself up: its confinement, what its probes met (tests read it),
/// and where its startup snapshot came from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerReport {
    /// The worker restores its isolates from its host's startup snapshot (it did not have to
    /// make its own, most of a fresh worker's start).
    pub snapshot_from_host: bool,
    /// The worker's engine and glue (its startup snapshot's fingerprint): the host hands it
    /// structured results in the engine's binary object format only when its own is the same
    /// (a worker program of another build reads them as JSON text).
    #[serde(default)]
    pub engine: String,
    /// `PR_SET_NO_NEW_PRIVS` is set.
    pub no_new_privs: bool,
    /// The seccomp filter is installed.
    pub seccomp: bool,
    /// Landlock: `fully enforced`, `partially enforced` (an older ABI), or why not (`not
    /// supported by this kernel`, an error).
    pub landlock: String,
    /// The address-space ceiling in bytes, if one is set.
    pub address_space_bytes: Option<u64>,
    /// What opening `/etc/passwd` for reading gave, from a thread started after setup.
    pub open: String,
    /// What creating a TCP socket gave.
    pub socket: String,
    /// What starting `/bin/sh` gave.
    pub exec: String,
}

/// Apply the worker's confinement. A layer that cannot be applied is reported on stderr and in
/// the [`WorkerReport`], and the worker goes on: each is a second layer behind the engine's own
/// sandbox, which holds no tools and no host objects.
pub(crate) fn apply(address_space_bytes: Option<u64>) -> WorkerReport {
    let mut confinement = WorkerReport {
        address_space_bytes,
        ..WorkerReport::default()
    };
    if let Some(bytes) = address_space_bytes {
        let limit = libc::rlimit {
            rlim_cur: bytes as libc::rlim_t,
            rlim_max: bytes as libc::rlim_t,
        };
        // SAFETY: setrlimit with a valid struct; it only lowers this process's own limit.
        if unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) } != 0 {
            complain("its address-space ceiling", std::io::Error::last_os_error());
            confinement.address_space_bytes = None;
        }
    }
    #[cfg(target_os = "linux")]
    linux::apply(&mut confinement);
    confinement
}

fn complain(what: &str, error: impl std::fmt::Display) {
    eprintln!("codemode sandbox worker: cannot set {what}: {error}");
}

/// Try what confinement must refuse, from a fresh thread (threads inherit the filters).
pub(crate) fn probe(confinement: &mut WorkerReport) {
    let (open, socket, exec) = std::thread::spawn(|| {
        let open = describe(std::fs::File::open("/etc/passwd").map(drop));
        // SAFETY: a plain socket(2) call; the descriptor, if any, is closed at once.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0) };
        let socket = if fd >= 0 {
            // SAFETY: closing the descriptor just created.
            unsafe { libc::close(fd) };
            "allowed".to_string()
        } else {
            format!("refused: {}", std::io::Error::last_os_error())
        };
        let exec = describe(
            std::process::Command::new("/bin/sh")
                .arg("-c")
                .arg("true")
                .status()
                .map(drop),
        );
        (open, socket, exec)
    })
    .join()
    .unwrap_or_default();
    confinement.open = open;
    confinement.socket = socket;
    confinement.exec = exec;
}

fn describe(result: std::io::Result<()>) -> String {
    match result {
        Ok(()) => "allowed".into(),
        Err(e) => format!("refused: {e}"),
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::BTreeMap;

    use landlock::{ABI, Access, AccessFs, AccessNet, Ruleset, RulesetAttr, RulesetStatus};
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };

    use super::{WorkerReport, complain};

    pub(super) fn apply(confinement: &mut WorkerReport) {
        // SAFETY: prctl with constant arguments; it only affects this process and its children.
        confinement.no_new_privs =
            unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } == 0;
        if !confinement.no_new_privs {
            complain("no_new_privs", std::io::Error::last_os_error());
        }
        // Read the time zone while files can still be opened (glibc caches it).
        // SAFETY: tzset has no preconditions.
        unsafe { tzset() };
        confinement.landlock = match landlock() {
            Ok(status) => status.into(),
            Err(e) => {
                complain("Landlock", &e);
                format!("not enforced: {e}")
            }
        };
        confinement.seccomp = match seccomp() {
            Ok(()) => true,
            Err(e) => {
                complain("its seccomp filter", e);
                false
            }
        };
    }

    unsafe extern "C" {
        fn tzset();
    }

    fn landlock() -> Result<&'static str, String> {
        let abi = ABI::V5;
        let status = Ruleset::default()
            .handle_access(AccessFs::from_all(abi))
            .and_then(|ruleset| ruleset.handle_access(AccessNet::from_all(abi)))
            .and_then(|ruleset| ruleset.create())
            .and_then(|ruleset| ruleset.restrict_self())
            .map_err(|e| e.to_string())?;
        Ok(match status.ruleset {
            RulesetStatus::FullyEnforced => "fully enforced",
            RulesetStatus::PartiallyEnforced => "partially enforced (an older Landlock ABI)",
            RulesetStatus::NotEnforced => "not supported by this kernel",
        })
    }

    fn target_arch() -> Result<TargetArch, String> {
        std::env::consts::ARCH
            .try_into()
            .map_err(|e| format!("no seccomp support for this architecture: {e:?}"))
    }

    /// Calls refused with `EPERM` whatever their arguments.
    const REFUSED: &[i64] = &[
        // Files.
        #[cfg(target_arch = "x86_64")]
        libc::SYS_open,
        #[cfg(target_arch = "x86_64")]
        libc::SYS_creat,
        libc::SYS_openat,
        libc::SYS_openat2,
        libc::SYS_open_by_handle_at,
        // Network.
        libc::SYS_socket,
        libc::SYS_connect,
        libc::SYS_bind,
        libc::SYS_listen,
        libc::SYS_accept,
        libc::SYS_accept4,
        // Processes.
        #[cfg(target_arch = "x86_64")]
        libc::SYS_fork,
        #[cfg(target_arch = "x86_64")]
        libc::SYS_vfork,
        libc::SYS_execve,
        libc::SYS_execveat,
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_pidfd_open,
        libc::SYS_pidfd_getfd,
        // Administration.
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_chroot,
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_kexec_load,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_userfaultfd,
        libc::SYS_io_uring_setup,
    ];

    fn seccomp() -> Result<(), String> {
        let arch = target_arch()?;
        let mut refused: BTreeMap<i64, Vec<SeccompRule>> =
            REFUSED.iter().map(|&call| (call, Vec::new())).collect();
        // A clone without CLONE_THREAD makes a process; threads stay allowed.
        let new_process = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Qword,
            SeccompCmpOp::MaskedEq(libc::CLONE_THREAD as u64),
            0,
        )
        .and_then(|condition| SeccompRule::new(vec![condition]))
        .map_err(|e| e.to_string())?;
        refused.insert(libc::SYS_clone, vec![new_process]);
        let eperm = SeccompFilter::new(
            refused,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EPERM as u32),
            arch,
        )
        .map_err(|e| e.to_string())?;
        // clone3 passes its flags in memory, out of a filter's sight: say it doesn't exist,
        // and the C library uses clone.
        let enosys = SeccompFilter::new(
            BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
            SeccompAction::Allow,
            SeccompAction::Errno(libc::ENOSYS as u32),
            arch,
        )
        .map_err(|e| e.to_string())?;
        for filter in [eperm, enosys] {
            let program: seccompiler::BpfProgram = filter
                .try_into()
                .map_err(|e: seccompiler::BackendError| e.to_string())?;
            seccompiler::apply_filter_all_threads(&program).map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}
