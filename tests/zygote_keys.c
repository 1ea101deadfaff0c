/* tests/test_zygote_attacks.py: put, get or del (invalidate) a key "ngattack-leak" in the
 * user or session keyring: what a command leaves for the next one, or the host, to read. */
#include <linux/keyctl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    int ring = !strcmp(argv[2], "user") ? KEY_SPEC_USER_KEYRING : KEY_SPEC_SESSION_KEYRING;
    if (!strcmp(argv[1], "put")) {
        long k = syscall(SYS_add_key, "user", "ngattack-leak", "left-by-a-command", 17, ring);
        if (k >= 0)
            syscall(SYS_keyctl, KEYCTL_SET_TIMEOUT, k, 120);
        printf("put %s\n", k >= 0 ? "ok" : "refused");
        return 0;
    }
    long k = syscall(SYS_keyctl, KEYCTL_SEARCH, ring, "user", "ngattack-leak", 0);
    if (k < 0) {
        printf("none\n");
        return 0;
    }
    if (!strcmp(argv[1], "del")) {
        syscall(SYS_keyctl, KEYCTL_INVALIDATE, k);
        printf("deleted\n");
        return 0;
    }
    char buf[64] = {0};
    syscall(SYS_keyctl, KEYCTL_READ, k, buf, sizeof(buf) - 1);
    printf("found %s\n", buf);
    return 0;
}
