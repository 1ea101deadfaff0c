/*
 * The root of ngzygote's jail, built once: bubblewrap's way (a tmpfs holding /oldroot, the
 * host's root where sources are read, and /newroot, the future root), then pivoted into
 * and made read-only. What each root operation of the first message does is in
 * emulators/zygote/spec.py (Root).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ngzygote.h"

struct stage stages[MAX_STAGES];
int nstages;

/* mkdir -p below the new root, each missing folder with `mode`. */
static int make_dirs(const char *path, mode_t mode, char *err)
{
    char buf[2048];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *c = buf + 1; ; c++) {
        if (*c != '/' && *c != '\0')
            continue;
        char saved = *c;
        *c = '\0';
        if (mkdir(buf, mode) != 0 && errno != EEXIST) {
            fmt(err, "mkdir %s", buf);
            return -1;
        }
        *c = saved;
        if (saved == '\0')
            return 0;
    }
}

/* An empty file or folder at `dst` (a bind target), its parents made 0755. */
static int make_target(const char *dst, int dir, char *err)
{
    char parent[2048];
    snprintf(parent, sizeof(parent), "%s", dst);
    char *slash = strrchr(parent, '/');
    if (slash != NULL && slash != parent) {
        *slash = '\0';
        if (make_dirs(parent, 0755, err) != 0)
            return -1;
    }
    if (dir) {
        if (mkdir(dst, 0755) != 0 && errno != EEXIST) {
            fmt(err, "mkdir %s", dst);
            return -1;
        }
        return 0;
    }
    int fd = open(dst, O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0);
    if (fd < 0) {
        fmt(err, "create %s", dst);
        return -1;
    }
    close(fd);
    return 0;
}

/* Bind `src` on `dst` (not recursively: mounts below `src` stay out), then set flags. */
int bind_remount(const char *src, const char *dst, unsigned long flags, char *err)
{
    if (mount(src, dst, NULL, MS_BIND, NULL) != 0) {
        fmt(err, "bind %s on %s", src, dst);
        return -1;
    }
    if (mount(NULL, dst, NULL, MS_BIND | MS_REMOUNT | flags, NULL) != 0) {
        fmt(err, "remount %s", dst);
        return -1;
    }
    return 0;
}

#define RO_FLAGS (MS_RDONLY | MS_NOSUID | MS_NODEV)

/* A read-only bind of host `src` (under /oldroot) at `dst` (under /newroot). */
static int root_bind(const char *src, const char *dst, int optional, char *err)
{
    char from[2048], to[2048];
    struct stat st;
    snprintf(from, sizeof(from), "/oldroot%s", src);
    snprintf(to, sizeof(to), "/newroot%s", dst);
    if (stat(from, &st) != 0) {
        if (optional && errno == ENOENT)
            return 0;
        fmt(err, "stat %s", src);
        return -1;
    }
    if (make_target(to, S_ISDIR(st.st_mode), err) != 0)
        return -1;
    return bind_remount(from, to, RO_FLAGS, err);
}

/* /dev as bubblewrap's --dev makes it, without a pty instance: nodes of the host's
 * harmless devices, the /proc/self/fd links, and /dev/shm that each command mounts. */
static int root_dev(char *err)
{
    static const char *nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};
    static const char *links[][2] = {
        {"/proc/self/fd", "fd"}, {"/proc/self/fd/0", "stdin"},
        {"/proc/self/fd/1", "stdout"}, {"/proc/self/fd/2", "stderr"},
    };
    char to[256], from[256];
    struct stat st;
    if (make_dirs("/newroot/dev", 0755, err) != 0)
        return -1;
    if (mount("tmpfs", "/newroot/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755") != 0) {
        fmt(err, "mount tmpfs on /dev");
        return -1;
    }
    for (size_t i = 0; i < sizeof(nodes) / sizeof(*nodes); i++) {
        snprintf(from, sizeof(from), "/oldroot/dev/%s", nodes[i]);
        snprintf(to, sizeof(to), "/newroot/dev/%s", nodes[i]);
        if (stat(from, &st) != 0 || !S_ISCHR(st.st_mode) ||
            mknod(to, S_IFCHR | 0666, st.st_rdev) != 0 || chmod(to, 0666) != 0) {
            fmt(err, "make /dev/%s", nodes[i]);
            return -1;
        }
    }
    for (size_t i = 0; i < sizeof(links) / sizeof(*links); i++) {
        snprintf(to, sizeof(to), "/newroot/dev/%s", links[i][1]);
        if (symlink(links[i][0], to) != 0) {
            fmt(err, "symlink %s", to);
            return -1;
        }
    }
    if (mkdir("/newroot/dev/shm", 0755) != 0) {
        fmt(err, "mkdir /dev/shm");
        return -1;
    }
    if (mount(NULL, "/newroot/dev", NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC,
              "mode=0755") != 0) {
        fmt(err, "remount /dev read-only");
        return -1;
    }
    return 0;
}

/* A copy of the host's small file `src` (under /oldroot) at `dst` (under /newroot). */
static int root_copy(const char *src, const char *dst, char *err)
{
    char from[2048], to[2048], buf[65536];
    struct stat st;
    snprintf(from, sizeof(from), "/oldroot%s", src);
    snprintf(to, sizeof(to), "/newroot%s", dst);
    int in = open(from, O_RDONLY | O_CLOEXEC);
    if (in < 0) {
        if (errno == ENOENT)
            return 0;  /* copied only where it exists, as --ro-bind-try */
        fmt(err, "open %s", src);
        return -1;
    }
    if (fstat(in, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (4 << 20) ||
        make_target(to, 0, err) != 0) {
        if (!err[0])
            fmt(err, "%s is not a small file", src);
        close(in);
        return -1;
    }
    int out = open(to, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
    ssize_t n = 0;
    while (out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
        if (write(out, buf, (size_t)n) != n)
            n = -1;
    int ok = out >= 0 && n == 0 && fchmod(out, st.st_mode & 0755) == 0;
    close(in);
    if (out >= 0)
        close(out);
    if (!ok)
        fmt(err, "copy %s", src);
    return ok ? 0 : -1;
}

/* A staged source: a read-only (nosuid, nodev) detached clone of host `src`. */
static int root_stage(const char *src, const char *name, char *err)
{
    char from[2048];
    snprintf(from, sizeof(from), "/oldroot%s", src);
    if (nstages == MAX_STAGES) {
        fmt(err, "too many staged sources");
        return -1;
    }
    int fd = open_tree(AT_FDCWD, from, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    struct mount_attr attr = {0};
    attr.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    if (fd < 0 || mount_setattr(fd, "", AT_EMPTY_PATH, &attr, sizeof(attr)) != 0) {
        fmt(err, "stage %s", src);
        return -1;
    }
    snprintf(stages[nstages].name, sizeof(stages[0].name), "%s", name);
    stages[nstages++].fd = fd;
    return 0;
}

/* One root operation: tok[i] is its name; returns how many tokens it used, or -1. */
static int root_op(char **tok, int left, char *err)
{
    const char *op = tok[0];
    int used = profile_op(tok, left, err);
    if (used != 0)
        return used;
    char to[2048];
    int want = !strcmp(op, "dev") ? 1
             : (!strcmp(op, "ro-bind") || !strcmp(op, "ro-bind-try") || !strcmp(op, "stage") ||
                !strcmp(op, "target") || !strcmp(op, "symlink") || !strcmp(op, "dir") ||
                !strcmp(op, "copy-try")) ? 3
             : !strcmp(op, "hostname") ? 2 : 0;
    if (want == 0 || left < want) {
        fmt(err, "bad root operation %.40s", op);
        return -1;
    }
    if (!strcmp(op, "dev"))
        return root_dev(err) == 0 ? 1 : -1;
    if (!strcmp(op, "hostname")) {
        if (sethostname(tok[1], strlen(tok[1])) != 0) {
            fmt(err, "sethostname");
            return -1;
        }
        return 2;
    }
    if (!strcmp(op, "stage")) {  /* stage SRC NAME */
        if (!path_ok(tok[1]) || !name_ok(tok[2])) {
            fmt(err, "bad stage %.200s %.64s", tok[1], tok[2]);
            return -1;
        }
        return root_stage(tok[1], tok[2], err) == 0 ? 3 : -1;
    }
    if (!strcmp(op, "symlink")) {  /* symlink TARGET DST */
        if (!path_ok(tok[2]) || strlen(tok[1]) >= 1024) {
            fmt(err, "bad symlink %.200s", tok[2]);
            return -1;
        }
        snprintf(to, sizeof(to), "/newroot%s", tok[2]);
        if (symlink(tok[1], to) != 0) {
            fmt(err, "symlink %s", tok[2]);
            return -1;
        }
        return 3;
    }
    if (!path_ok(tok[2]) || (strcmp(op, "target") && strcmp(op, "dir") && !path_ok(tok[1]))) {
        fmt(err, "bad path in %s %.200s %.200s", op, tok[1], tok[2]);
        return -1;
    }
    snprintf(to, sizeof(to), "/newroot%s", tok[2]);
    if (!strcmp(op, "target"))  /* target f|d DST: an empty bind target */
        return make_target(to, tok[1][0] == 'd', err) == 0 ? 3 : -1;
    if (!strcmp(op, "dir")) {  /* dir MODE DST */
        mode_t mode = (mode_t)strtol(tok[1], NULL, 8) & 0777;
        if (make_dirs(to, mode, err) != 0 || chmod(to, mode) != 0) {
            fmt(err, "dir %s", tok[2]);
            return -1;
        }
        return 3;
    }
    if (!strcmp(op, "copy-try"))  /* copy-try SRC DST */
        return root_copy(tok[1], tok[2], err) == 0 ? 3 : -1;
    return root_bind(tok[1], tok[2], !strcmp(op, "ro-bind-try"), err) == 0 ? 3 : -1;
}

/* Build the root described by `m` and pivot into it, as bubblewrap does: a tmpfs holds
 * /oldroot (the host's root, where sources are read) and /newroot (the future root). */
int build_root(struct msg *m, char *err)
{
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
        fmt(err, "make / private");
        return -1;
    }
    if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0 ||
        chdir("/tmp") != 0 || mkdir("oldroot", 0755) != 0 || mkdir("newroot", 0755) != 0 ||
        mkdir("zproc", 0755) != 0) {
        fmt(err, "prepare the base tmpfs");
        return -1;
    }
    if (syscall(SYS_pivot_root, "/tmp", "/tmp/oldroot") != 0 || chdir("/") != 0) {
        fmt(err, "pivot_root to the base");
        return -1;
    }
    if (mount("tmpfs", "/newroot", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0) {
        fmt(err, "mount the new root");
        return -1;
    }
    /* Our own procfs (we are pid 1 of a new pid namespace): for the commands' uid maps. */
    if (mount("proc", "/zproc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0) {
        fmt(err, "mount proc");
        return -1;
    }
    proc_fd = open("/zproc", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (proc_fd < 0) {
        fmt(err, "open proc");
        return -1;
    }
    if (m->ntok < 1 || strcmp(m->tok[0], "root") != 0) {
        fmt(err, "the first message must describe the root");
        return -1;
    }
    for (int i = 1; i < m->ntok;) {
        int used = root_op(m->tok + i, m->ntok - i, err);
        if (used < 0)
            return -1;
        i += used;
    }
    if (mount(NULL, "/oldroot", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        umount2("/oldroot", MNT_DETACH) != 0) {
        fmt(err, "detach the host root");
        return -1;
    }
    int base = open("/", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
    if (base < 0 || chdir("/newroot") != 0 || syscall(SYS_pivot_root, ".", ".") != 0 ||
        fchdir(base) != 0 || umount2(".", MNT_DETACH) != 0 || chdir("/") != 0) {
        fmt(err, "pivot_root into the new root");
        return -1;
    }
    close(base);
    if (mount(NULL, "/", NULL, MS_BIND | MS_REMOUNT | RO_FLAGS, NULL) != 0) {
        fmt(err, "remount the root read-only");
        return -1;
    }
    return 0;
}

