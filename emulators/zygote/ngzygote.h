/* ngzygote: what its parts share: ngzygote.c (messages, serving), root.c (the root),
 * turn.c (a command, on the zygote's side), child.c (a command, in its child). */
#ifndef NGZYGOTE_H
#define NGZYGOTE_H

#include <sys/types.h>

#define MAX_MSG 65536
/* As many tokens and arguments as a message can hold (an empty one is a single NUL): an
 * argv is bounded by the message's size alone, never by its count, so that no argv an
 * agent may send (kubectl: a 16 KiB line, ~8000 arguments) fails here as a jail that could
 * not start (EnvironmentFailure) where bubblewrap runs it. */
#define MAX_TOKENS MAX_MSG
#define MAX_FDS 16
#define MAX_LIST 64  /* binds, tmpfs, writable sysctls, environment entries */
#define MAX_ARGS MAX_TOKENS
#define ERR_LEN 512
#define MAX_STAGES 64

struct msg {
    char buf[MAX_MSG + 1];
    size_t len;
    char *tok[MAX_TOKENS];
    int ntok;
    int fds[MAX_FDS];
    int nfds;
};

/* What every command of this zygote gets (from the root message). */
struct profile {
    int proc, user;
    unsigned long long caps;
    uid_t uid;
    gid_t gid;
    const char *tmpfs[MAX_LIST];
    int ntmpfs;
    char *env[MAX_LIST + 1];
    int nenv;
    const char *cwd;
};

enum child_state { NONE, PREPARED, RUNNING, FAILED };

/* A pre-forked child: confined and waiting for its command, then running it. */
struct child {
    enum child_state state;
    pid_t pid;   /* in our pid namespace */
    int pidfd;
    int errfd;   /* read end: why the jail could not start the tool, if it could not */
    int ctl;     /* where its command is sent */
    int mntns;   /* its mount namespace, held so that its teardown waits for our report */
    char err[ERR_LEN];
};

/* A source commands bind from: a detached mount tree, in no mount namespace at all. */
struct stage {
    char name[72];
    int fd;
};

extern int proc_fd;
extern struct stage stages[MAX_STAGES];
extern int nstages;
extern struct profile profile;

int recv_msg(int fd, struct msg *m);
void close_fds(struct msg *m);
void fmt(char *err, const char *format, ...) __attribute__((format(printf, 2, 3)));
int path_ok(const char *p);
int name_ok(const char *s);
int bind_remount(const char *src, const char *dst, unsigned long flags, char *err);

/* root.c */
int build_root(struct msg *m, char *err);

struct turn {
    int out, in, net;
    const char *sysctl[MAX_LIST], *bind_dst[MAX_LIST], *bind_rel[MAX_LIST];
    int bind_stage[MAX_LIST], bind_fd[MAX_LIST];
    int nsysctl, nbind, named;  /* named: descriptors the message's fd tokens name */
    const char *hostname, *exe;
    char *argv[MAX_ARGS + 1];
};

/* turn.c */
int parse(struct msg *m, struct turn *t, char *err);
int profile_op(char **tok, int left, char *err);
int prepare_child(struct msg *m, struct child *c, char *err);
int forward_turn(struct msg *m, struct child *c, char *err);
void finish_child(struct child *c, int *status);
void kill_child(struct child *c);
void release_child(struct child *c);

/* child.c */
extern int errw;
void child_main(int ctl, int *cg, int ncg);  /* never returns */

#endif
