//! Applying the sandbox in the child, between fork and exec. Everything the child
//! needs (paths, map lines, the Landlock ruleset, the seccomp programs, descriptors)
//! is prepared in the parent, so the child only makes system calls: no allocation and
//! no locks, as that moment requires.
//!
//! The order matters: a new session first (no controlling terminal); then the user,
//! mount (and network) namespace and its mounts, which need the capabilities the new
//! user namespace gives; then a PID namespace for the command's children, with a
//! reaper of ours as its init; then the working folder again (it may lie under a
//! folder the mounts covered); then `no_new_privs`, Landlock, dropping every
//! capability, and last seccomp, which refuses the mount calls made before it.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use seccompiler::BpfProgram;

use super::{SandboxError, c_path};

/// The Landlock ABI this kernel speaks; 0 or less when it has none.
pub(super) fn landlock_abi() -> i64 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: the documented version query: no ruleset, size 0.
    unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    }
}

/// The namespace part: what to mount where.
pub(crate) struct MountPlan {
    network: bool,
    uid_map: CString,
    gid_map: CString,
    /// The folder bound over `/tmp` (none when the workspace is `/tmp` itself).
    private_tmp: Option<CString>,
    /// The workspace again, when `/tmp` covers it: bound into its place inside the
    /// private folder (made by the parent) before that folder covers `/tmp`.
    rebind: Option<(CString, CString)>,
    /// Folders covered by an empty tmpfs: the user's runtime folder (agent sockets),
    /// scratchpad's data folder.
    cover_folders: Vec<CString>,
    /// Sockets covered by `/dev/null` (ssh-agent, tmux, docker) outside `/tmp`.
    cover_files: Vec<CString>,
    /// The folders between the workspace and a read-only place, each bound onto
    /// itself (shallowest first) so that none can be renamed.
    anchors: Vec<CString>,
    /// Folders (and `.git` files) bound read-only, with the flags their mount already
    /// has (a user namespace may not clear them).
    read_only: Vec<(CString, libc::c_ulong)>,
    /// The read end of scratchpad's lifeline, which the command's reaper watches.
    lifeline: libc::c_int,
}

/// A pipe whose write end only scratchpad holds, for as long as it runs: when it
/// ends, however it ends (a SIGKILL included), the kernel closes that end and every
/// command's reaper sees it. Both ends close on exec, so no command holds either.
fn lifeline() -> Result<libc::c_int, SandboxError> {
    static LIFELINE: OnceLock<Result<(OwnedFd, OwnedFd), std::sync::Arc<io::Error>>> = OnceLock::new();
    let ends = LIFELINE.get_or_init(|| {
        let mut fds = [0; 2];
        // SAFETY: pipe2 writes two descriptors into the array, which we then own.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(std::sync::Arc::new(io::Error::last_os_error()));
        }
        // SAFETY: both descriptors were just opened and are owned by nothing else.
        Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
    });
    ends.as_ref()
        .map(|(read, _)| read.as_raw_fd())
        .map_err(|error| SandboxError::Lifeline(error.clone()))
}

const TMP: &str = "/tmp";

impl MountPlan {
    pub(super) fn new(
        private_tmp: &Path,
        workspace: &Path,
        read_only: &[PathBuf],
        hidden: &[PathBuf],
        network_namespace: bool,
    ) -> Result<Self, SandboxError> {
        // SAFETY: getuid and getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        // Digits and spaces: never a NUL byte.
        let line = |id: u32| CString::new(format!("{id} {id} 1\n")).unwrap_or_default();
        let relative = workspace.strip_prefix(TMP).ok();
        let rebind = match relative {
            Some(relative) if relative.as_os_str().is_empty() => None,
            Some(relative) => {
                let place = private_tmp.join(relative);
                std::fs::create_dir_all(&place).map_err(SandboxError::PrivateTmp)?;
                Some((c_path(workspace)?, c_path(&place)?))
            }
            None => None,
        };
        let covers_tmp = relative.is_none_or(|relative| !relative.as_os_str().is_empty());
        // The user's runtime folders (their agent sockets), covered whole.
        // Read where scratchpad keeps them: these variables were taken out of its own
        // environment at start (commands never get them), but the sockets they name
        // are still there to cover.
        let variable = crate::process::environment::user_variable;
        let runtime: Vec<PathBuf> = variable("XDG_RUNTIME_DIR")
            .map(PathBuf::from)
            .into_iter()
            .chain([PathBuf::from("/run/user")])
            .collect();
        // A folder holding the workspace is never covered: that would hide the work.
        let cover_folders = runtime
            .iter()
            .chain(hidden)
            .filter(|folder| folder.is_dir() && !folder.starts_with(TMP) && !workspace.starts_with(folder))
            .map(|folder| c_path(folder))
            .collect::<Result<Vec<_>, _>>()?;
        let tmux_socket = variable("TMUX").and_then(|value| value.split(',').next().map(PathBuf::from));
        let ssh_socket = variable("SSH_AUTH_SOCK").map(PathBuf::from);
        let mut sockets: Vec<PathBuf> = [ssh_socket, tmux_socket]
            .into_iter()
            .flatten()
            .chain(["/run/docker.sock", "/var/run/docker.sock"].map(PathBuf::from))
            .filter(|socket| !socket.is_dir() && socket.exists())
            .chain(bound_sockets())
            .filter(|socket| !socket.starts_with(TMP) && !socket.starts_with(workspace))
            .filter(|socket| !runtime.iter().any(|folder| socket.starts_with(folder)))
            .collect();
        sockets.sort();
        sockets.dedup();
        let cover_files = sockets
            .iter()
            .map(|socket| c_path(socket))
            .collect::<Result<Vec<_>, _>>()?;
        // Real folders and files only: a bind follows a link, wherever it leads.
        let read_only: Vec<&PathBuf> = read_only
            .iter()
            .filter(|place| std::fs::symlink_metadata(place).is_ok_and(|meta| meta.is_dir() || meta.is_file()))
            .collect();
        // Renaming a folder that holds a read-only place would carry the place away
        // and leave its path free to fill; a mount point cannot be renamed, so each
        // folder between the workspace and a place becomes one.
        let mut anchors: Vec<&Path> = read_only
            .iter()
            .filter_map(|place| place.strip_prefix(workspace).ok().map(|_| place.parent()))
            .flat_map(|parent| parent.into_iter().flat_map(Path::ancestors))
            .filter(|folder| folder.starts_with(workspace) && *folder != workspace)
            .collect();
        anchors.sort_by_key(|folder| (folder.components().count(), folder.to_path_buf()));
        anchors.dedup();
        let anchors = anchors.into_iter().map(c_path).collect::<Result<Vec<_>, _>>()?;
        let read_only = read_only
            .into_iter()
            .map(|place| Ok((c_path(place)?, mount_flags(place)?)))
            .collect::<Result<Vec<_>, SandboxError>>()?;
        Ok(MountPlan {
            network: network_namespace,
            uid_map: line(uid),
            gid_map: line(gid),
            private_tmp: covers_tmp.then(|| c_path(private_tmp)).transpose()?,
            rebind,
            cover_folders,
            cover_files,
            anchors,
            read_only,
            lifeline: lifeline()?,
        })
    }

    /// In the child: the namespaces, then the mounts.
    fn apply(&self) -> io::Result<()> {
        let mut flags = libc::CLONE_NEWUSER | libc::CLONE_NEWNS;
        if self.network {
            flags |= libc::CLONE_NEWNET;
        }
        // SAFETY: every pointer below is to a NUL-terminated string or buffer owned by
        // `self`, which outlives the calls.
        unsafe {
            check(libc::unshare(flags))?;
            // scratchpad is not dumpable (its memory and key stay its own), and a
            // child inherits that: its /proc/self files then belong to root, so only
            // root could write the maps. Dumpable for these three writes alone, and
            // never while any code but ours runs: the maps are ours to write.
            check(libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0))?;
            let maps = write_file(c"/proc/self/setgroups", c"deny")
                .and_then(|()| write_file(c"/proc/self/uid_map", &self.uid_map))
                .and_then(|()| write_file(c"/proc/self/gid_map", &self.gid_map));
            check(libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0))?;
            maps?;
            // Nothing mounted here may show in the parent's namespace.
            mount(None, c"/", None, libc::MS_REC | libc::MS_PRIVATE)?;
            // Read-only first, on the real paths: the workspace's own (`.git`, the
            // archive) are carried along when it is bound into the private /tmp.
            for folder in &self.anchors {
                mount(Some(folder), folder, None, libc::MS_BIND | libc::MS_REC)?;
            }
            for (folder, kept) in &self.read_only {
                mount(Some(folder), folder, None, libc::MS_BIND | libc::MS_REC)?;
                mount(
                    None,
                    folder,
                    None,
                    libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | kept,
                )?;
            }
            if let Some((workspace, place)) = &self.rebind {
                mount(Some(workspace), place, None, libc::MS_BIND | libc::MS_REC)?;
            }
            if let Some(private_tmp) = &self.private_tmp {
                mount(Some(private_tmp), c"/tmp", None, libc::MS_BIND | libc::MS_REC)?;
            }
            for folder in &self.cover_folders {
                mount(Some(c"tmpfs"), folder, Some(c"tmpfs"), libc::MS_NOSUID | libc::MS_NODEV)?;
            }
            for socket in &self.cover_files {
                // A socket removed since it was listed (its daemon stopped, a test
                // ended) has nothing left to reach: not a reason to run unconfined.
                match mount(Some(c"/dev/null"), socket, None, libc::MS_BIND) {
                    Err(error) if error.raw_os_error() == Some(libc::ENOENT) => {}
                    other => other?,
                }
            }
            start_reaper(self.lifeline)?;
        }
        Ok(())
    }
}

/// Put the command's children in a PID namespace whose init is a reaper of ours, so
/// that they all die together, with no way out (`setsid`, double forks): when the
/// reaper dies, the kernel kills every process in its namespace. The command itself
/// (this process, about to exec) stays outside it, so it is not init and its
/// background children outlive it as they would anywhere; the group kill at the end
/// of the command (the reaper is in the command's group) or scratchpad's own death
/// (its lifeline closes) ends the namespace.
///
/// # Safety
/// Between fork and exec: system calls only.
unsafe fn start_reaper(lifeline: libc::c_int) -> io::Result<()> {
    // SAFETY: plain system calls; the child never returns from `reap`.
    unsafe {
        check(libc::unshare(libc::CLONE_NEWPID))?;
        // Watched by the reaper to learn when the command exits; it closes on exec
        // here, so the command does not hold it. A kernel without pidfds leaves
        // the reaper to the group kill.
        let command = libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0) as libc::c_int;
        // A raw fork: the C library's fork runs handlers that may take locks.
        let reaper = libc::syscall(libc::SYS_clone, libc::SIGCHLD as libc::c_ulong, 0, 0, 0, 0);
        if reaper == 0 {
            reap(lifeline, command);
        }
        if command >= 0 {
            libc::close(command);
        }
        if reaper < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The reaper: init of the command's PID namespace. It holds nothing of the command's
/// (no output pipe, so the command's end is seen as soon as it comes), collects the
/// orphans the kernel hands it, and exits when scratchpad does or when the command
/// has exited and no child is left.
///
/// # Safety
/// In a child between fork and exec: system calls only.
unsafe fn reap(lifeline: libc::c_int, command: libc::c_int) -> ! {
    const POLL_MS: libc::c_int = 100;
    // SAFETY: plain system calls on this process's own descriptors and children.
    unsafe {
        let (low, high) = if command >= 0 && command < lifeline {
            (command, lifeline)
        } else {
            (lifeline, command.max(lifeline))
        };
        for (first, last) in [(0, low - 1), (low + 1, high - 1), (high + 1, libc::c_int::MAX)] {
            if first <= last {
                libc::syscall(libc::SYS_close_range, first as libc::c_uint, last as libc::c_uint, 0);
            }
        }
        let mut command_exited = command < 0;
        loop {
            let mut watched = [
                libc::pollfd {
                    fd: lifeline,
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: if command_exited { -1 } else { command },
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            libc::poll(watched.as_mut_ptr(), 2, POLL_MS);
            if watched[0].revents != 0 {
                libc::_exit(0);
            }
            command_exited |= watched[1].revents != 0;
            let mut reaped = libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG);
            while reaped > 0 {
                reaped = libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG);
            }
            let no_children = reaped < 0 && *libc::__errno_location() == libc::ECHILD;
            if command_exited && no_children {
                libc::_exit(0);
            }
        }
    }
}

/// Every pathname UNIX socket bound on this machine now that this user could connect
/// to (the kernel lists them in `/proc/net/unix`): daemons' sockets under `/run`,
/// `/var/lib` or a home folder. Landlock cannot stop a connection to one, so each is
/// covered. Sockets bound after a command starts are not.
fn bound_sockets() -> Vec<PathBuf> {
    use std::os::unix::fs::FileTypeExt;
    let Ok(table) = std::fs::read_to_string("/proc/net/unix") else {
        return Vec::new();
    };
    table
        .lines()
        .skip(1)
        .filter_map(|line| line.split_whitespace().nth(7))
        .filter(|path| path.starts_with('/'))
        .map(PathBuf::from)
        .filter(|path| {
            std::fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_socket())
                && c_path(path).is_ok_and(|c| {
                    // SAFETY: access reads a NUL-terminated path.
                    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
                })
        })
        .collect()
}

/// The flags of the mount holding `folder` that a bind inside a user namespace must
/// keep (`statfs`'s `ST_*` bits, as `MS_*`).
fn mount_flags(folder: &Path) -> Result<libc::c_ulong, SandboxError> {
    let path = c_path(folder)?;
    // SAFETY: statvfs writes into the zeroed struct; the path is NUL-terminated.
    let mut stats: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(path.as_ptr(), &mut stats) } != 0 {
        return Err(SandboxError::MountFlags {
            path: folder.to_path_buf(),
            source: io::Error::last_os_error(),
        });
    }
    let have = stats.f_flag as libc::c_ulong;
    let pairs: [(libc::c_ulong, libc::c_ulong); 6] = [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ];
    Ok(pairs
        .iter()
        .filter(|(st, _)| have & st != 0)
        .fold(0, |flags, (_, ms)| flags | ms))
}

/// Everything one command's child applies to itself.
pub(crate) struct Confinement {
    ruleset: OwnedFd,
    mounts: Option<MountPlan>,
    filters: Vec<BpfProgram>,
    cwd: CString,
    /// Our pid, to tell whether we died before the parent-death signal was set.
    parent: libc::pid_t,
}

impl Confinement {
    pub(super) fn new(ruleset: OwnedFd, mounts: Option<MountPlan>, filters: Vec<BpfProgram>, cwd: CString) -> Self {
        Confinement {
            ruleset,
            mounts,
            filters,
            cwd,
            // SAFETY: getpid cannot fail.
            parent: unsafe { libc::getpid() },
        }
    }

    /// The closure to run between fork and exec (`pre_exec`).
    pub(crate) fn into_pre_exec(self) -> impl FnMut() -> io::Result<()> + Send + Sync + 'static {
        move || self.apply()
    }

    fn apply(&self) -> io::Result<()> {
        own_session(self.parent)?;
        if let Some(mounts) = &self.mounts {
            mounts.apply()?;
        }
        // SAFETY: as above; the ruleset descriptor stays open for the call.
        unsafe {
            check(libc::chdir(self.cwd.as_ptr()))?;
            check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))?;
            if libc::syscall(libc::SYS_landlock_restrict_self, self.ruleset.as_raw_fd(), 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            drop_capabilities()?;
        }
        for filter in &self.filters {
            seccompiler::apply_filter(filter).map_err(|_| io::Error::last_os_error())?;
        }
        Ok(())
    }
}

/// The first step in every command's child, sandboxed or not: a session of its own
/// (its own process group, which is killed as one, and no controlling terminal, so
/// nothing can be pushed into the user's input), killed if `parent` dies.
/// Between fork and exec: system calls only.
pub(crate) fn own_session(parent: libc::pid_t) -> io::Result<()> {
    // SAFETY: plain system calls.
    unsafe {
        check(libc::setsid())?;
        check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0))?;
        if libc::getppid() != parent {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
    }
    Ok(())
}

/// Leave no capability behind, in any set, so not even root keeps one across exec.
///
/// # Safety
/// Between fork and exec: system calls only.
unsafe fn drop_capabilities() -> io::Result<()> {
    const LAST_CAP: libc::c_ulong = 63;
    for cap in 0..=LAST_CAP {
        // Fails for numbers the kernel does not know (EINVAL), and without
        // CAP_SETPCAP (not root and no namespace): there is nothing to drop then.
        // SAFETY: a prctl on this process.
        unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) };
    }
    // SAFETY: as above.
    unsafe {
        libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    }
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    let header = Header {
        version: VERSION_3,
        pid: 0,
    };
    let none = [Data {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: capset reads the two structs, which live for the call.
    check(unsafe { libc::syscall(libc::SYS_capset, &header, none.as_ptr()) } as libc::c_int)?;
    Ok(())
}

fn check(result: libc::c_int) -> io::Result<()> {
    if result < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// # Safety
/// Between fork and exec: system calls only.
unsafe fn write_file(path: &std::ffi::CStr, text: &std::ffi::CStr) -> io::Result<()> {
    // SAFETY: NUL-terminated path and a buffer of the given length.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        check(fd)?;
        let bytes = text.to_bytes();
        let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        libc::close(fd);
        if written != bytes.len() as isize {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// # Safety
/// Between fork and exec: system calls only.
unsafe fn mount(
    source: Option<&std::ffi::CStr>,
    target: &std::ffi::CStr,
    kind: Option<&std::ffi::CStr>,
    flags: libc::c_ulong,
) -> io::Result<()> {
    let pointer = |text: Option<&std::ffi::CStr>| text.map_or(std::ptr::null(), std::ffi::CStr::as_ptr);
    // SAFETY: NUL-terminated strings or null, as mount(2) takes them.
    check(unsafe { libc::mount(pointer(source), target.as_ptr(), pointer(kind), flags, std::ptr::null()) })
}

/// A path's bytes, for the tests' messages.
#[cfg(test)]
fn shown(path: &CString) -> String {
    String::from_utf8_lossy(path.as_bytes()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workspace_under_tmp_is_bound_back_into_the_private_tmp() {
        let workspace = tempfile::Builder::new().tempdir_in("/tmp").unwrap();
        let private = tempfile::tempdir().unwrap();
        let plan = MountPlan::new(private.path(), workspace.path(), &[], &[], false).unwrap();
        let (source, place) = plan.rebind.as_ref().expect("rebound");
        assert_eq!(shown(source), workspace.path().display().to_string());
        let relative = workspace.path().strip_prefix(TMP).unwrap();
        assert_eq!(shown(place), private.path().join(relative).display().to_string());
        assert!(private.path().join(relative).is_dir(), "made by the parent");
        // Somewhere not under /tmp (the checkout itself may be).
        let elsewhere = ["/var/tmp", "/dev/shm", env!("CARGO_MANIFEST_DIR")]
            .into_iter()
            .filter(|dir| !Path::new(dir).starts_with(TMP))
            .find_map(|dir| tempfile::tempdir_in(dir).ok())
            .expect("a writable folder outside /tmp");
        let plan = MountPlan::new(private.path(), elsewhere.path(), &[], &[], false).unwrap();
        assert!(plan.rebind.is_none(), "{}", elsewhere.path().display());
    }

    #[test]
    fn read_only_folders_keep_their_mount_flags_and_missing_ones_are_skipped() {
        let workspace = tempfile::tempdir().unwrap();
        let private = tempfile::tempdir().unwrap();
        let git = workspace.path().join(".git");
        std::fs::create_dir(&git).unwrap();
        let plan = MountPlan::new(
            private.path(),
            workspace.path(),
            &[git.clone(), workspace.path().join("missing")],
            &[],
            false,
        )
        .unwrap();
        assert_eq!(plan.read_only.len(), 1);
        assert_eq!(shown(&plan.read_only[0].0), git.display().to_string());
        assert_eq!(plan.read_only[0].1 & libc::MS_RDONLY, 0, "read-only is added, not kept");
        assert!(plan.anchors.is_empty(), "a place at the top needs no anchor");
    }

    #[test]
    fn every_folder_between_the_workspace_and_a_deeper_place_is_anchored_once() {
        let workspace = tempfile::tempdir().unwrap();
        let private = tempfile::tempdir().unwrap();
        let root = workspace.path();
        std::fs::create_dir_all(root.join("a/b/.git")).unwrap();
        std::fs::write(root.join("a/srv.py"), "").unwrap();
        let plan = MountPlan::new(
            private.path(),
            root,
            &[root.join("a/b/.git"), root.join("a/srv.py")],
            &[],
            false,
        )
        .unwrap();
        let anchors: Vec<String> = plan.anchors.iter().map(shown).collect();
        assert_eq!(
            anchors,
            [root.join("a"), root.join("a/b")].map(|p| p.display().to_string()),
            "shallowest first"
        );
    }

    /// The data folder is covered, unless it holds the workspace (covering it would
    /// hide the work) or is missing.
    #[test]
    fn a_hidden_folder_is_covered_unless_it_holds_the_workspace() {
        let outside = ["/var/tmp", "/dev/shm", env!("CARGO_MANIFEST_DIR")]
            .into_iter()
            .filter(|dir| !Path::new(dir).starts_with(TMP))
            .find_map(|dir| tempfile::tempdir_in(dir).ok())
            .expect("a writable folder outside /tmp");
        let data = outside.path().join("data");
        let workspace = outside.path().join("work");
        std::fs::create_dir_all(&data).unwrap();
        std::fs::create_dir_all(&workspace).unwrap();
        let private = tempfile::tempdir().unwrap();
        let covered = |hidden: &[PathBuf], workspace: &Path| {
            MountPlan::new(private.path(), workspace, &[], hidden, false)
                .unwrap()
                .cover_folders
                .iter()
                .map(shown)
                .collect::<Vec<_>>()
        };
        assert!(covered(std::slice::from_ref(&data), &workspace).contains(&data.display().to_string()));
        let inside = data.join("project");
        std::fs::create_dir_all(&inside).unwrap();
        assert!(!covered(std::slice::from_ref(&data), &inside).contains(&data.display().to_string()));
        assert!(
            !covered(&[outside.path().join("missing")], &workspace)
                .iter()
                .any(|f| f.ends_with("missing"))
        );
    }
}
