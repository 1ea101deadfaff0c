/*
 * The commands of ngzygote: a child prepared ahead, confined, then given its command.
 *
 * prepare_child (on "prepare", or on a "run" that brings its own cgroup): the zygote
 * clones a child C into new pid, mount, IPC and UTS namespaces (pid 1 of its own pid
 * namespace, a copy of the read-only root). C joins the next command's cgroup through
 * the cgroup.procs files NetGauge opened (joining is the slow part: a full RCU grace
 * period when no task joined a cgroup lately; done here, while the agent thinks or the
 * previous command runs), a new cgroup namespace and session, mounts a /proc of its pid
 * namespace with /proc/sys read-only and fresh tmpfs folders, and waits for its command.
 *
 * forward_turn (on "run"): the zygote reads the command, clones each staged source it
 * binds as a detached mount tree, and hands C the command with the descriptors: C enters
 * the device's network namespace, binds the sysctl files the command may write, attaches
 * the trees, takes the jail's identity:
 *   caps CAPS:    uid 0 of the initial user namespace holding only CAPS, no_new_privs;
 *   user UID GID: uid UID in a user namespace two levels down, the first allowing no
 *                 more user namespaces (bubblewrap's --disable-userns), no capabilities,
 *                 no_new_privs;
 * closes every descriptor but its stdio and execs the tool, which is the namespace's
 * pid 1 (bubblewrap's --as-pid-1): when it exits the kernel kills whatever is left in
 * its pid namespace before the zygote sees the exit.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ngzygote.h"

/* Capabilities a root command may keep: a lab device's network, nothing of the host. */
#define ALLOWED_CAPS ((1ULL << CAP_NET_BIND_SERVICE) | (1ULL << CAP_NET_ADMIN) | \
                      (1ULL << CAP_NET_RAW))

struct profile profile = {.cwd = "/"};

/* One profile token of the root message (proc, tmpfs, caps, user, env, cwd); returns
 * how many tokens it used, 0 when tok[0] is not one, -1 on a bad one. */
int profile_op(char **tok, int left, char *err)
{
    const char *op = tok[0];
    int n = !strcmp(op, "proc") ? 1 : !strcmp(op, "user") ? 3
          : (!strcmp(op, "tmpfs") || !strcmp(op, "caps") || !strcmp(op, "env") ||
             !strcmp(op, "cwd")) ? 2 : 0;
    if (n == 0)
        return 0;
    if (left < n) {
        fmt(err, "%s needs %d values", op, n - 1);
        return -1;
    }
    char *end;
    if (!strcmp(op, "proc")) {
        profile.proc = 1;
    } else if (!strcmp(op, "tmpfs")) {
        if (!path_ok(tok[1]) || profile.ntmpfs == MAX_LIST) { fmt(err, "bad tmpfs"); return -1; }
        profile.tmpfs[profile.ntmpfs++] = tok[1];
    } else if (!strcmp(op, "caps")) {
        profile.caps = strtoull(tok[1], &end, 16);
        if (*end || (profile.caps & ~ALLOWED_CAPS)) { fmt(err, "caps %.20s not allowed", tok[1]); return -1; }
    } else if (!strcmp(op, "user")) {
        long uid = strtol(tok[1], &end, 10), gid = strtol(tok[2], &end, 10);
        if (uid <= 0 || gid <= 0 || uid > 0x7fffffff || gid > 0x7fffffff) { fmt(err, "bad uid or gid"); return -1; }
        profile.user = 1;
        profile.uid = (uid_t)uid;
        profile.gid = (gid_t)gid;
    } else if (!strcmp(op, "env")) {
        if (profile.nenv == MAX_LIST || strchr(tok[1], '=') == NULL) { fmt(err, "bad env"); return -1; }
        profile.env[profile.nenv++] = tok[1];
    } else {
        if (strcmp(tok[1], "/") && !path_ok(tok[1])) { fmt(err, "bad cwd"); return -1; }
        profile.cwd = tok[1];
    }
    return n;
}

/* -- a command ------------------------------------------------------------------------ */


/* `STAGE` or `STAGE/FILE`: the index of STAGE, FILE (or "") in `rel`; -1 if unknown. */
static int stage_of(const char *spec, const char **rel)
{
    size_t len = strcspn(spec, "/");
    if (spec[len] == '/' && !path_ok(spec + len))
        return -1;
    *rel = spec[len] == '/' ? spec + len + 1 : "";
    for (int i = 0; i < nstages; i++)
        if (strlen(stages[i].name) == len && !strncmp(stages[i].name, spec, len))
            return i;
    return -1;
}

/* Read a "run" message. `fds_in_msg`: descriptors named by its fd tokens; any after
 * them are the bind trees, in bind order (what forward_turn adds). */
int parse(struct msg *m, struct turn *t, char *err)
{
    static const struct { const char *name; int n; } ops[] = {
        {"fd", 2}, {"rw-sysctl", 2}, {"bind", 3}, {"hostname", 2}, {"exe", 2},
    };
    memset(t, 0, sizeof(*t));
    t->out = t->in = t->net = -1;
    errno = 0;  /* what fmt adds to a refusal here would be some earlier call's */
    int used = 0;
    if (m->ntok < 1 || strcmp(m->tok[0], "run") != 0) {
        fmt(err, "not a command: %.40s", m->ntok ? m->tok[0] : "");
        return -1;
    }
    int i = 1;
    while (i < m->ntok && strcmp(m->tok[i], "argv") != 0) {
        char **tok = m->tok + i;
        int n = 0;
        for (size_t k = 0; k < sizeof(ops) / sizeof(*ops); k++)
            if (!strcmp(tok[0], ops[k].name))
                n = ops[k].n;
        if (n == 0 || i + n > m->ntok) {
            fmt(err, "bad operation %.40s", tok[0]);
            return -1;
        }
        i += n;
        if (!strcmp(tok[0], "fd")) {
            if (used == m->nfds || strlen(tok[1]) != 1) { fmt(err, "fd %.8s without a descriptor", tok[1]); return -1; }
            int fd = m->fds[used++];
            switch (tok[1][0]) {
            case 'o': t->out = fd; break;
            case 'i': t->in = fd; break;
            case 'n': t->net = fd; break;
            default: fmt(err, "unknown fd role %.8s", tok[1]); return -1;
            }
        } else if (!strcmp(tok[0], "hostname")) {
            if (strlen(tok[1]) == 0 || strlen(tok[1]) > 64) { fmt(err, "bad hostname"); return -1; }
            t->hostname = tok[1];
        } else if (!strcmp(tok[0], "exe")) {
            if (!path_ok(tok[1])) { fmt(err, "bad exe"); return -1; }
            t->exe = tok[1];
        } else if (!strcmp(tok[0], "rw-sysctl")) {
            if (!path_ok(tok[1]) || strncmp(tok[1], "/proc/sys/net/", 14) != 0 || t->nsysctl == MAX_LIST) {
                fmt(err, "%.200s is not a net sysctl", tok[1]); return -1;
            }
            t->sysctl[t->nsysctl++] = tok[1];
        } else {
            if (!path_ok(tok[2]) || t->nbind == MAX_LIST) { fmt(err, "bad bind target %.200s", tok[2]); return -1; }
            t->bind_stage[t->nbind] = stage_of(tok[1], &t->bind_rel[t->nbind]);
            if (t->bind_stage[t->nbind] < 0) { fmt(err, "no staged source %.200s", tok[1]); return -1; }
            t->bind_fd[t->nbind] = -1;
            t->bind_dst[t->nbind++] = tok[2];
        }
    }
    long argc = i + 1 < m->ntok ? strtol(m->tok[i + 1], NULL, 10) : 0;
    if (argc < 1 || argc > MAX_ARGS || i + 2 + argc != m->ntok) { fmt(err, "bad argv"); return -1; }
    for (long a = 0; a < argc; a++)
        t->argv[a] = m->tok[i + 2 + a];
    if (t->exe == NULL)
        t->exe = t->argv[0];
    if (!path_ok(t->exe)) { fmt(err, "the program %.200s is not an absolute path", t->exe); return -1; }
    if (t->out < 0 || t->net < 0) { fmt(err, "a command needs its output and network fds"); return -1; }
    for (int b = 0; b < t->nbind && used + b < m->nfds; b++)
        t->bind_fd[b] = m->fds[used + b];
    t->named = used;
    return 0;
}

/* -- in the zygote ---------------------------------------------------------------------- */

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static void close_child(struct child *c)
{
    close_fd(&c->pidfd);
    close_fd(&c->errfd);
    close_fd(&c->ctl);
    close_fd(&c->mntns);
}

/* Clone a child into the cgroups whose cgroup.procs files are m's descriptors. */
int prepare_child(struct msg *m, struct child *c, char *err)
{
    int pipe_fds[2], ctl[2];
    memset(c, 0, sizeof(*c));
    c->pidfd = c->errfd = c->ctl = c->mntns = -1;
    if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
        fmt(err, "pipe");
        return -1;
    }
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ctl) != 0) {
        fmt(err, "socketpair");
        close(pipe_fds[0]);
        close(pipe_fds[1]);
        return -1;
    }
    struct clone_args args = {0};
    args.flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_PIDFD;
    args.pidfd = (uint64_t)(uintptr_t)&c->pidfd;
    args.exit_signal = SIGCHLD;
    pid_t pid = (pid_t)syscall(SYS_clone3, &args, sizeof(args));
    if (pid == 0) {
        close(pipe_fds[0]);
        close(ctl[0]);
        errw = pipe_fds[1];
        child_main(ctl[1], m->fds, m->nfds);
        _exit(127);
    }
    close(pipe_fds[1]);
    close(ctl[1]);
    c->errfd = pipe_fds[0];
    c->ctl = ctl[0];
    if (pid < 0) {
        fmt(err, "clone the command's namespaces");
        close_child(c);
        return -1;
    }
    fcntl(c->errfd, F_SETFL, O_NONBLOCK);
    c->pid = pid;
    c->state = PREPARED;
    char ns[64];
    snprintf(ns, sizeof(ns), "%d/ns/mnt", pid);
    c->mntns = openat(proc_fd, ns, O_RDONLY | O_CLOEXEC);  /* -1: its teardown is its own */
    return 0;
}

/* Check the command in `m`, clone the sources it binds, hand both to the child. */
int forward_turn(struct msg *m, struct child *c, char *err)
{
    static struct turn t;
    if (parse(m, &t, err) != 0)
        return -1;
    if (m->nfds != t.named) {  /* the bind trees are ours to add */
        fmt(err, "%d descriptors for %d named", m->nfds, t.named);
        return -1;
    }
    int fds[MAX_FDS], nfds = m->nfds, ok = 0;
    memcpy(fds, m->fds, sizeof(int) * (size_t)m->nfds);
    for (int i = 0; i < t.nbind; i++, nfds++) {
        const char *rel = t.bind_rel[i];
        unsigned flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW;
        if (nfds == MAX_FDS) {
            fmt(err, "too many binds");
            goto done;
        }
        fds[nfds] = open_tree(stages[t.bind_stage[i]].fd, rel, flags | (*rel ? 0 : AT_EMPTY_PATH));
        if (fds[nfds] < 0) {
            fmt(err, "clone the staged %s/%s", stages[t.bind_stage[i]].name, rel);
            goto done;
        }
    }
    struct iovec iov = {m->buf, m->len};
    union {
        char buf[CMSG_SPACE(sizeof(int) * MAX_FDS)];
        struct cmsghdr align;
    } control;
    struct msghdr h = {0};
    h.msg_iov = &iov;
    h.msg_iovlen = 1;
    h.msg_control = control.buf;
    h.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
    struct cmsghdr *cm = CMSG_FIRSTHDR(&h);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
    memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
    if (sendmsg(c->ctl, &h, MSG_NOSIGNAL) < 0) {
        fmt(err, "hand the command to its child");
        goto done;
    }
    ok = 1;
    c->state = RUNNING;
done:
    for (int i = m->nfds; i < nfds; i++)
        close(fds[i]);
    close_fd(&c->ctl);
    return ok ? 0 : -1;
}

/* Reap the child; c->err gets why its jail could not run the tool ("" when it could). */
void finish_child(struct child *c, int *status)
{
    *status = 0;
    while (waitpid(c->pid, status, 0) < 0 && errno == EINTR)
        ;
    ssize_t n = read(c->errfd, c->err, ERR_LEN - 1);
    c->err[n > 0 ? n : 0] = '\0';
    close_fd(&c->errfd);
    close_fd(&c->pidfd);
}

void kill_child(struct child *c)
{
    if (c->pidfd >= 0)
        syscall(SYS_pidfd_send_signal, c->pidfd, SIGKILL, NULL, 0);
}

void release_child(struct child *c)
{
    close_child(c);
    c->state = NONE;
}
