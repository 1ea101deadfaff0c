/*
 * ngzygote: one persistent jail that forks each command from a prepared process.
 *
 * The design, and why the boundary equals the one-shot bubblewrap jail's, is in
 * emulators/zygote/__init__.py; the messages are written by emulators/zygote/spec.py.
 * Built by scripts/setup.d/61-zygote.sh with the system compiler.
 *
 *   ngzygote FD PARENT_PID
 *
 * FD is our end of a SOCK_SEQPACKET socketpair with PARENT_PID, the NetGauge process.
 * The first message describes the jail: the root (read-only binds, copied files, staged
 * sources, bind targets, /dev, host name) and what every command gets (/proc, tmpfs,
 * identity, environment). We build the root in new pid, mount, IPC, UTS and network
 * namespaces, pivot into it and answer "ready". Staged sources are detached mount trees
 * (open_tree), in no mount namespace: a command gets a clone of each one it binds.
 *
 * Then: "prepare" (with the next command's cgroup.procs files) forks the next command's
 * child, confined and waiting (turn.c); "run" hands it its command; we answer "exit" or
 * "signal" once the command, and with it its whole pid namespace, is gone, or "setup"
 * when its jail could not start it.
 * "kill" kills the running command. We exit on "stop", when the socket closes, when
 * PARENT_PID exits (a pidfd), or when our waiter (the process NetGauge started) dies
 * (PDEATHSIG); every child dies with our pid namespace.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
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

int proc_fd = -1;      /* a procfs of our own pid namespace (detached from any root) */
static int sock = -1;  /* the request channel */
static int parent_pidfd = -1;

/* -- messages ------------------------------------------------------------------------ */

int recv_msg(int fd, struct msg *m)
{
    struct iovec iov = {m->buf, MAX_MSG};
    union {
        char buf[CMSG_SPACE(sizeof(int) * MAX_FDS)];
        struct cmsghdr align;
    } control;
    struct msghdr h = {0};
    h.msg_iov = &iov;
    h.msg_iovlen = 1;
    h.msg_control = control.buf;
    h.msg_controllen = sizeof(control.buf);
    m->nfds = 0;
    m->ntok = 0;
    ssize_t n;
    do
        n = recvmsg(fd, &h, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n <= 0)
        return n == 0 ? 0 : -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&h); c != NULL; c = CMSG_NXTHDR(&h, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        int count = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        for (int i = 0; i < count && m->nfds < MAX_FDS; i++)
            memcpy(&m->fds[m->nfds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
    }
    if (h.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
        close_fds(m);
        return -2;
    }
    /* Tokens: NUL-terminated strings; the last byte must be a NUL. */
    m->len = (size_t)n;
    if (m->buf[m->len - 1] != '\0') {
        close_fds(m);
        return -2;
    }
    for (size_t i = 0; i < m->len; i += strlen(m->buf + i) + 1) {
        if (m->ntok == MAX_TOKENS) {
            close_fds(m);
            return -2;
        }
        m->tok[m->ntok++] = m->buf + i;
    }
    return 1;
}

void close_fds(struct msg *m)
{
    for (int i = 0; i < m->nfds; i++)
        if (m->fds[i] >= 0)
            close(m->fds[i]);
    m->nfds = 0;
}

/* A reply: "kind\0a\0b\0text\0". */
static void reply(const char *kind, long a, long b, const char *text)
{
    char out[4096];
    int n = snprintf(out, sizeof(out) - 1, "%s%c%ld%c%ld%c%.3000s", kind, 0, a, 0, b, 0, text);
    if (n < 0)
        return;
    out[n] = '\0';
    while (send(sock, out, (size_t)n + 1, MSG_NOSIGNAL) < 0 && errno == EINTR)
        ;
}

void fmt(char *err, const char *format, ...)
{
    int saved = errno;
    va_list ap;
    va_start(ap, format);
    int n = vsnprintf(err, ERR_LEN, format, ap);
    va_end(ap);
    if (n >= 0 && n < ERR_LEN - 40 && saved)
        snprintf(err + n, (size_t)(ERR_LEN - n), ": %s", strerror(saved));
}

/* An absolute, normalized path: no empty, "." or ".." component, no trailing slash. */
int path_ok(const char *p)
{
    size_t n = strlen(p);
    if (n < 2 || n >= 1024 || p[0] != '/' || p[n - 1] == '/')
        return 0;
    for (const char *c = p; *c; c++) {
        if (*c != '/')
            continue;
        const char *next = c + 1;
        size_t len = strcspn(next, "/");
        if (len == 0 || (len == 1 && next[0] == '.') || (len == 2 && !strncmp(next, "..", 2)))
            return 0;
    }
    return 1;
}

int name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 64)
        return 0;
    for (const char *c = s; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-' || *c == '_'))
            return 0;
    return 1;
}

/* -- serving ------------------------------------------------------------------------- */

static struct child cur, next;  /* the running command; the one prepared for next */

static void drop(struct child *c)
{
    if (c->state == PREPARED || c->state == RUNNING) {
        int status;
        kill_child(c);
        finish_child(c, &status);
    }
    release_child(c);
}

/* The running command ended: report it; its mounts go now, after the report. */
static void report(void)
{
    int status;
    finish_child(&cur, &status);
    if (cur.err[0])
        reply("setup", status, 0, cur.err);
    else if (WIFSIGNALED(status))
        reply("signal", WTERMSIG(status), 0, "");
    else
        reply("exit", WEXITSTATUS(status), 0, "");
    release_child(&cur);
}

/* One message from NetGauge; returns -1 to exit. */
static int handle(struct msg *m)
{
    char err[ERR_LEN] = "";
    const char *op = m->ntok >= 1 ? m->tok[0] : "";
    if (!strcmp(op, "stop"))
        return -1;
    if (!strcmp(op, "kill")) {
        if (cur.state == RUNNING)
            kill_child(&cur);  /* the report follows through its pidfd */
        return 0;
    }
    if (!strcmp(op, "prepare")) {
        drop(&next);
        if (prepare_child(m, &next, err) != 0) {
            next.state = FAILED;
            snprintf(next.err, sizeof(next.err), "%s", err);
        }
        return 0;
    }
    if (strcmp(op, "run") != 0) {
        reply("refused", 0, 0, "unknown request");
        return 0;
    }
    if (cur.state != NONE) {
        reply("busy", 0, 0, "a command is still running");
        return 0;
    }
    if (next.state == FAILED || next.state == NONE) {
        reply("setup", 0, 0, next.state == FAILED ? next.err : "no child was prepared");
        release_child(&next);
        return 0;
    }
    if (forward_turn(m, &next, err) != 0) {
        drop(&next);
        reply("setup", 0, 0, err);
        return 0;
    }
    cur = next;
    memset(&next, 0, sizeof(next));
    next.pidfd = next.errfd = next.ctl = next.mntns = -1;
    return 0;
}

static int serve(void)
{
    static struct msg m;
    cur.pidfd = cur.errfd = cur.ctl = cur.mntns = -1;
    next.pidfd = next.errfd = next.ctl = next.mntns = -1;
    for (;;) {
        struct pollfd p[4] = {
            {sock, POLLIN, 0}, {parent_pidfd, POLLIN, 0},
            {cur.state == RUNNING ? cur.pidfd : -1, POLLIN, 0},
            {next.state == PREPARED ? next.pidfd : -1, POLLIN, 0},
        };
        if (poll(p, 4, -1) < 0) {
            if (errno == EINTR)
                continue;
            return 1;
        }
        if (p[1].revents)
            return 0;
        if (p[2].revents)
            report();
        if (p[3].revents) {  /* died while waiting for its command: why is its error */
            int status;
            finish_child(&next, &status);
            if (!next.err[0])
                snprintf(next.err, sizeof(next.err), "the prepared child died (status %d)", status);
            release_child(&next);
            next.state = FAILED;
        }
        if (!p[0].revents)
            continue;
        int got = recv_msg(sock, &m);
        if (got == 0)
            return 0;
        if (got < 0) {
            reply("refused", 0, 0, "unreadable request");
            continue;
        }
        int done = handle(&m);
        close_fds(&m);
        if (done != 0)
            return 0;
    }
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    sock = atoi(argv[1]);
    pid_t parent = (pid_t)atoi(argv[2]);
    if (sock < 3 || parent <= 1 || getppid() != parent)
        return 2;
    parent_pidfd = (int)syscall(SYS_pidfd_open, parent, 0);
    if (parent_pidfd < 0 || fcntl(sock, F_SETFD, FD_CLOEXEC) != 0 ||
        fcntl(parent_pidfd, F_SETFD, FD_CLOEXEC) != 0)
        return 2;
    int flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET;
    if (unshare(flags) != 0) {
        reply("error", 0, 0, "unshare: cannot make the zygote's namespaces");
        return 1;
    }
    /* Held by the zygote too: PDEATHSIG cannot tell it apart from a waiter already gone. */
    int waiter_pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
    if (waiter_pidfd < 0)
        return 1;
    pid_t zygote = fork();
    if (zygote < 0)
        return 1;
    if (zygote > 0) {
        /* The waiter: what NetGauge started and may kill; the zygote dies with it. */
        close(sock);
        close(parent_pidfd);
        close(waiter_pidfd);
        int status;
        while (waitpid(zygote, &status, 0) < 0)
            if (errno != EINTR)
                return 1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    struct pollfd gone = {waiter_pidfd, POLLIN, 0};
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || poll(&gone, 1, 0) != 0)
        _exit(1);
    close(waiter_pidfd);
    prctl(PR_SET_DUMPABLE, 0);  /* no /proc/<zygote>/mem, fd, environ for anyone */
    static struct msg root;
    char err[ERR_LEN] = "";
    int got = recv_msg(sock, &root);
    if (got <= 0) {
        reply("error", 0, 0, "no root description");
        _exit(1);
    }
    int built = build_root(&root, err);
    close_fds(&root);
    if (built != 0) {
        reply("error", 0, 0, err);
        _exit(1);
    }
    reply("ready", 0, 0, "");
    _exit(serve());
}
