"""One persistent jail per lab: commands forked from a prepared, already-confined process.

A one-shot jail (emulators/jail.py: bubblewrap) builds a fresh root for every command:
a dozen mounts, namespaces and three execs (sh, mnexec, bwrap) before the tool starts,
most of a lab command's cost. Here the root is built once per lab (per kind of command)
by ngzygote (ngzygote.c, turn.c; built by scripts/setup.d/61-zygote.sh), which then forks
each command from itself, as the MALT sandbox's zygote forks code runs.

What a command gets, and why it is the one-shot jail's boundary:
  - the zygote's root is bubblewrap's: a tmpfs holding only read-only (nosuid, nodev)
    binds, built in new pid, mount, IPC, UTS and network namespaces and pivoted into, the
    host's root detached; it is read-only for good before the first command;
  - per command, the zygote clones a child into new pid, mount, IPC and UTS namespaces (a
    copy of the read-only root), which joins the command's own memory and pids cgroup
    (made by NetGauge; its cgroup.procs files come as descriptors), enters the device's
    network namespace (a descriptor of it) and a new cgroup namespace, starts a new
    session, mounts a /proc of its own pid namespace (/proc/sys read-only except the keys
    the checked command writes), fresh tmpfs on /tmp, /run and /dev/shm, binds its tool
    from the staged sources, covers the staged sources with an empty read-only tmpfs
    (/.ng), and takes the command's identity (spec.Turn: uid 0 holding only the named
    capabilities, or a uid in a user namespace that may create no more, as bubblewrap's
    --disable-userns), no_new_privs, no descriptor of the zygote's, and a seccomp filter
    denying the kernel keyrings (add_key, keyctl, request_key: in no namespace, they are
    the host's; bubblewrap's jail leaves them open);
  - the tool is the pid namespace's pid 1 (bubblewrap's --as-pid-1: no init of ours
    between, one process fewer to schedule); when it exits the kernel kills everything
    left in its pid namespace, and the zygote reports the exit only then, so nothing a
    command starts outlives its turn, and no file it wrote, no IPC object, environment or
    descriptor reaches the next command;
  - the zygote itself is out of reach: it is in no command's pid namespace (nothing to
    signal or ptrace by pid, /proc shows only the command's processes), is not dumpable,
    its socket is an unnamed socketpair no command holds, its root is read-only;
  - its lifetime is its owner's: it exits when its socket closes, when the NetGauge
    process exits (a pidfd) or when the waiter NetGauge started is killed (PDEATHSIG),
    and its commands die with its pid namespace. A dead zygote is restarted between
    commands and is an EnvironmentFailure during one (client.py); nothing waits without
    a deadline;
  - no command runs on a stale source: a zygote whose host file or folder (a bound
    binary or library, a copied file, a staged folder) was replaced since it started
    restarts before its next command (client.py).

Modules: spec (Root, Turn: what ngzygote is told), client (Zygote: start, run, stop).
"""
