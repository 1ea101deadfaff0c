/*
 * A command's child, from its clone to the exec of its tool (see turn.c for the order and
 * why): joining the cgroup and the base mounts while it waits, then the device's network
 * namespace, the command's binds and the jail's identity.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ngzygote.h"

int errw = -1;  /* the pipe its errors go to: set by prepare_child, in the child */

static void fail(const char *err)
{
    ssize_t unused = write(errw, err, strlen(err));
    (void)unused;
    _exit(127);
}

#define TRY(cond, ...)                \
    do {                              \
        if (!(cond)) {                \
            char e_[ERR_LEN];         \
            fmt(e_, __VA_ARGS__);     \
            fail(e_);                 \
        }                             \
    } while (0)

static void write_at(const char *path, const char *text)
{
    int fd = openat(proc_fd, path, O_WRONLY | O_CLOEXEC);
    TRY(fd >= 0, "open /proc/%s", path);
    TRY(write(fd, text, strlen(text)) == (ssize_t)strlen(text), "write /proc/%s", path);
    close(fd);
}

static void keep_bounding(unsigned long long caps)
{
    for (int cap = 0; cap < 64; cap++) {
        if (caps & (1ULL << cap))
            continue;
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
            TRY(errno == EINVAL, "drop capability %d from the bounding set", cap);
            break;  /* past the last capability this kernel has */
        }
    }
}

/* Only `caps`, in every set: bounding, permitted, effective, inheritable; none ambient. */
static void keep_caps(unsigned long long caps)
{
    keep_bounding(caps);
    TRY(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) == 0, "clear ambient caps");
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    for (int k = 0; k < 2; k++)
        d[k].effective = d[k].permitted = d[k].inheritable = (uint32_t)(caps >> (32 * k));
    TRY(syscall(SYS_capset, &h, d) == 0, "capset");
}

/* A new user namespace mapping only uid and gid to themselves, written from inside. */
static void userns_level(uid_t uid, gid_t gid)
{
    char map[64];
    TRY(unshare(CLONE_NEWUSER) == 0, "unshare a user namespace");
    write_at("self/setgroups", "deny");
    snprintf(map, sizeof(map), "%u %u 1", uid, uid);
    write_at("self/uid_map", map);
    snprintf(map, sizeof(map), "%u %u 1", gid, gid);
    write_at("self/gid_map", map);
}

static void take_identity(void)
{
    TRY(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, "no_new_privs");
    if (!profile.user) {
        keep_caps(profile.caps);
        return;
    }
    keep_bounding(0);  /* while we may still change it */
    TRY(setgroups(0, NULL) == 0, "setgroups");
    TRY(setresgid(profile.gid, profile.gid, profile.gid) == 0, "setresgid");
    TRY(setresuid(profile.uid, profile.uid, profile.uid) == 0, "setresuid");
    /* Writing our own maps needs our /proc files to be ours (setresuid cleared it). */
    TRY(prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) == 0, "dumpable");
    userns_level(profile.uid, profile.gid);
    write_at("sys/user/max_user_namespaces", "1");
    userns_level(profile.uid, profile.gid);  /* now the first level is full: no more below it */
    TRY(unshare(CLONE_NEWUSER) != 0, "a nested user namespace could still be made");
    keep_caps(0);
}

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#else
#error "ngzygote: no seccomp architecture for this machine"
#endif

/* Kernel keyrings are namespaced by nothing a command gets: a root command's user and
 * user-session keyrings are uid 0's of the host (and a session keyring NetGauge was started
 * with is inherited by every command), so a key one command adds is read by the next, by
 * NetGauge, by the next episode. No lab tool, vtysh or kubectl uses them: add_key, keyctl and request_key fail
 * with EPERM (as in Docker's default profile); any other ABI (i386, x32) is killed. */
static void deny_keyrings(void)
{
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 4, 0),  /* x32 */
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_add_key, 4, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_keyctl, 3, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_request_key, 2, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
    };
    struct sock_fprog prog = {sizeof(filter) / sizeof(*filter), filter};
    TRY(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) == 0, "seccomp");
}

/* Every signal at its default and none blocked, as a command started from a fresh shell:
 * exec keeps what the zygote's starter ignored (a CI runner ignored signal 32), and glibc's
 * sigaction refuses its own signals (32, 33), so the kernel call is made directly. */
static void default_signals(void)
{
    struct {
        void *handler;
        unsigned long flags;
        void *restorer;
        unsigned long mask;
    } dfl = {SIG_DFL, 0, NULL, 0};
    for (int s = 1; s <= 64; s++)
        if (s != SIGKILL && s != SIGSTOP)
            TRY(syscall(SYS_rt_sigaction, s, &dfl, NULL, sizeof(dfl.mask)) == 0,
                "default disposition of signal %d", s);
    TRY(syscall(SYS_rt_sigprocmask, SIG_SETMASK, &dfl.mask, NULL, sizeof(dfl.mask)) == 0,
        "unblock every signal");
}

/* Before the command: what every command of this zygote gets. */
static void prepare(int *cg, int ncg)
{
    for (int i = 0; i < ncg; i++) {  /* first: all that follows is bounded */
        TRY(write(cg[i], "0", 1) == 1, "join the command's cgroup");
        close(cg[i]);
    }
    if (unshare(CLONE_NEWCGROUP) != 0)
        TRY(errno == EINVAL, "unshare the cgroup namespace");  /* no cgroup namespaces */
    TRY(setsid() >= 0, "setsid");
    TRY(prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == 0, "PDEATHSIG");
    if (profile.proc) {
        /* As bubblewrap: /proc/sys read-only (but the keys a command may write), and the
         * old corners where root could act on the host (sysrq, IRQ affinities, buses). */
        static const char *covered[] = {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"};
        char err[ERR_LEN];
        struct stat st;
        TRY(mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == 0,
            "mount proc");
        for (size_t i = 0; i < sizeof(covered) / sizeof(*covered); i++) {
            if (stat(covered[i], &st) != 0 && errno == ENOENT)
                continue;
            if (bind_remount(covered[i], covered[i], MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                             err) != 0)
                fail(err);
        }
    }
    char options[64] = "mode=0755";  /* the command's own, as bubblewrap's unprivileged mount */
    if (profile.user)
        snprintf(options, sizeof(options), "mode=0755,uid=%u,gid=%u", profile.uid, profile.gid);
    for (int i = 0; i < profile.ntmpfs; i++)
        TRY(mount("tmpfs", profile.tmpfs[i], "tmpfs", MS_NOSUID | MS_NODEV, options) == 0,
            "mount tmpfs on %s", profile.tmpfs[i]);
}

/* The command, on top of `prepare`. */
static void run(struct turn *t)
{
    struct stat st;
    char err[ERR_LEN];
    TRY(setns(t->net, CLONE_NEWNET) == 0, "enter the device's network namespace");
    for (int i = 0; i < t->nsysctl; i++) {  /* after setns: the device's own keys */
        if (stat(t->sysctl[i], &st) != 0 && errno == ENOENT)
            continue;  /* as bubblewrap's --bind-try */
        if (bind_remount(t->sysctl[i], t->sysctl[i], MS_NOSUID | MS_NODEV | MS_NOEXEC, err) != 0)
            fail(err);
    }
    for (int i = 0; i < t->nbind; i++)  /* read-only, nosuid, nodev as their stage */
        TRY(t->bind_fd[i] >= 0 &&
            move_mount(t->bind_fd[i], "", AT_FDCWD, t->bind_dst[i], MOVE_MOUNT_F_EMPTY_PATH) == 0,
            "attach %s", t->bind_dst[i]);
    if (t->hostname)
        TRY(sethostname(t->hostname, strlen(t->hostname)) == 0, "sethostname");
    int in = t->in >= 0 ? t->in : open("/dev/null", O_RDONLY | O_CLOEXEC);
    TRY(in >= 0 && dup2(in, 0) == 0 && dup2(t->out, 1) == 1 && dup2(t->out, 2) == 2,
        "set up stdin and stdout");
    TRY(chdir(profile.cwd) == 0, "chdir %s", profile.cwd);
    take_identity();
    TRY(prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == 0, "PDEATHSIG");  /* reset by setresuid */
    deny_keyrings();  /* after no_new_privs (take_identity), which it needs */
    default_signals();
    /* Nothing of the zygote's stays open: its socket, pidfds, procfs, stages, requests. */
    if (errw > 3)
        syscall(SYS_close_range, 3, errw - 1, 0);
    syscall(SYS_close_range, errw + 1, ~0U, 0);
    profile.env[profile.nenv] = NULL;
    execve(t->exe, t->argv, profile.env);
    TRY(0, "exec %s", t->exe);
}

/* Close every descriptor above 2 but those in `keep` (n of them, sorted here). */
static void keep_only(int *keep, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
            int x = keep[j];
            keep[j] = keep[j - 1];
            keep[j - 1] = x;
        }
    unsigned from = 3;
    for (int i = 0; i < n; i++) {
        if (keep[i] < (int)from)
            continue;
        if ((unsigned)keep[i] > from)
            syscall(SYS_close_range, from, keep[i] - 1, 0);
        from = (unsigned)keep[i] + 1;
    }
    syscall(SYS_close_range, from, ~0U, 0);
}

void child_main(int ctl, int *cg, int ncg)
{
    static struct msg m;
    static struct turn t;
    char err[ERR_LEN];
    int keep[MAX_FDS + 3] = {ctl, errw, proc_fd};
    memcpy(keep + 3, cg, sizeof(int) * (size_t)ncg);
    keep_only(keep, ncg + 3);  /* nothing of the zygote's, or of the command before */
    prepare(cg, ncg);
    if (recv_msg(ctl, &m) <= 0)
        _exit(0);  /* not wanted after all */
    if (parse(&m, &t, err) != 0)
        fail(err);
    run(&t);
}

