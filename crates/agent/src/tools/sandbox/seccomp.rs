//! The seccomp layer: what Landlock cannot say. Compiled once per command in the
//! parent with `seccompiler` (rust-vmm's BPF compiler, the one the Codex CLI's Linux
//! sandbox uses), installed last in the child. Everything not named is allowed; the
//! calls named fail with `EPERM`, except `clone3`, which fails with `ENOSYS` so the C
//! library falls back to `clone`, whose flags a filter can read.

use std::collections::BTreeMap;

use super::SandboxError;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
};

/// `ioctl` requests that push input into a terminal or act on the console (their type
/// differs between targets, hence the casts).
#[allow(clippy::unnecessary_cast)]
const TERMINAL_INJECTION: [u64; 2] = [libc::TIOCSTI as u64, libc::TIOCLINUX as u64];

/// `clone` flags that make a new namespace.
const NEW_NAMESPACE: [i32; 7] = [
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWNS,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWCGROUP,
];

/// Calls refused whatever their arguments.
const REFUSED: &[libc::c_long] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_bpf,
    libc::SYS_userfaultfd,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
];

fn arch() -> Result<TargetArch, SandboxError> {
    std::env::consts::ARCH
        .try_into()
        .map_err(|_| SandboxError::Seccomp(format!("no filter for {}", std::env::consts::ARCH)))
}

fn condition(arg: u8, operator: SeccompCmpOp, value: u64) -> Result<SeccompCondition, SandboxError> {
    SeccompCondition::new(arg, SeccompCmpArgLen::Dword, operator, value)
        .map_err(|error| SandboxError::Seccomp(error.to_string()))
}

fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, SandboxError> {
    SeccompRule::new(conditions).map_err(|error| SandboxError::Seccomp(error.to_string()))
}

/// A rule per value: the call is refused when its argument `arg`, under `mask`,
/// equals any of them.
fn any_of(arg: u8, mask: u64, values: &[u64]) -> Result<Vec<SeccompRule>, SandboxError> {
    values
        .iter()
        .map(|value| rule(vec![condition(arg, SeccompCmpOp::MaskedEq(mask), *value)?]))
        .collect()
}

/// The two programs to install, in order.
pub(super) fn filters() -> Result<Vec<BpfProgram>, SandboxError> {
    let device_kinds = [libc::S_IFCHR as u64, libc::S_IFBLK as u64];
    let mut refused: BTreeMap<i64, Vec<SeccompRule>> = REFUSED.iter().map(|call| (*call, Vec::new())).collect();
    refused.insert(libc::SYS_ioctl, any_of(1, u64::from(u32::MAX), &TERMINAL_INJECTION)?);
    #[cfg(target_arch = "x86_64")]
    refused.insert(libc::SYS_mknod, any_of(1, libc::S_IFMT as u64, &device_kinds)?);
    refused.insert(libc::SYS_mknodat, any_of(2, libc::S_IFMT as u64, &device_kinds)?);
    let namespace_flags: Vec<u64> = NEW_NAMESPACE.iter().map(|flag| *flag as u64).collect();
    let clone_rules = namespace_flags
        .iter()
        .map(|flag| rule(vec![condition(0, SeccompCmpOp::MaskedEq(*flag), *flag)?]))
        .collect::<Result<Vec<_>, _>>()?;
    refused.insert(libc::SYS_clone, clone_rules);
    let compile = |rules, errno: i32| -> Result<BpfProgram, SandboxError> {
        let filter = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(errno as u32), arch()?)
            .map_err(|error| SandboxError::Seccomp(error.to_string()))?;
        filter
            .try_into()
            .map_err(|error: seccompiler::BackendError| SandboxError::Seccomp(error.to_string()))
    };
    let clone3: BTreeMap<i64, Vec<SeccompRule>> = [(libc::SYS_clone3, Vec::new())].into();
    Ok(vec![compile(refused, libc::EPERM)?, compile(clone3, libc::ENOSYS)?])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_programs_compile_for_this_machine() {
        let programs = filters().unwrap();
        assert_eq!(programs.len(), 2);
        assert!(programs.iter().all(|program| !program.is_empty()));
    }

    /// What `ioctl(request)` on `/dev/null` fails with in a child, with the filters
    /// installed or not. On `/dev/null` the kernel itself answers ENOTTY, so an EPERM
    /// can only be the filter's.
    fn ioctl_errno(request: u64, filtered: bool) -> String {
        use std::os::unix::process::CommandExt;
        let script = format!(
            "import fcntl, os\nfd = os.open('/dev/null', os.O_RDONLY)\ntry:\n    fcntl.ioctl(fd, {request}, b'x')\n    print('allowed')\nexcept OSError as error:\n    print(error.errno)"
        );
        let programs = filters().unwrap();
        let mut child = std::process::Command::new("python3");
        child.args(["-c", &script]);
        if filtered {
            // SAFETY: between fork and exec the closure only makes system calls on the
            // programs compiled before the fork.
            unsafe {
                child.pre_exec(move || {
                    if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    for program in &programs {
                        seccompiler::apply_filter(program).map_err(|_| std::io::Error::last_os_error())?;
                    }
                    Ok(())
                });
            }
        }
        let output = child.output().expect("python3 runs");
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    }

    /// The seccomp rule on its own, without the new session or any other layer: the
    /// ioctls that push input into a terminal are refused; another ioctl is not.
    #[test]
    fn terminal_injection_is_refused_by_the_filter_alone() {
        let enotty = libc::ENOTTY.to_string();
        let eperm = libc::EPERM.to_string();
        for request in TERMINAL_INJECTION {
            assert_eq!(ioctl_errno(request, false), enotty, "{request:#x} unfiltered");
            assert_eq!(ioctl_errno(request, true), eperm, "{request:#x} filtered");
        }
        let window_size: u64 = libc::TIOCGWINSZ;
        assert_eq!(ioctl_errno(window_size, true), enotty, "other ioctls pass the filter");
    }
}
