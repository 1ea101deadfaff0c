"""Only lasting state (issue 14): the command grammar refuses what would undo itself later
(emulators/netcmd/durable.py), and reads each word as the real tool reads it.

Before, `ip addr add 10.0.1.1/24 dev r0-eth1 valid_lft 8` was a fix that scored correct and
safe and failed 20 pairs ten seconds later. Every spelling here is also run through the real
`ip` in a throwaway namespace: a spelling is refused exactly when the address it makes has a
lifetime.
"""

from __future__ import annotations

import json
import shlex
import subprocess

import pytest

from emulators.netcmd.policy import check

REFUSED = [
    ("ip addr add 10.0.1.1/24 dev r0-eth1 valid_lft 8", "lifetime"),
    ("ip a a 10.0.1.1/24 dev r0-eth1 va 8 preferred_lft 4", "lifetime"),
    ("ip address replace 10.0.1.1/24 dev r0-eth1 v 100", "lifetime"),
    ("ip addr change 10.0.1.1/24 dev r0-eth1 preferr 5 v 10", "lifetime"),
    ("ip route add 10.9.0.0/16 dev r0-eth1 expires 10", "lifetime"),
    ("ip r replace 10.9.0.0/16 via 10.0.1.2 expires 1", "lifetime"),
    ("ip neigh add 10.0.1.9 lladdr 00:11:22:33:44:55 dev r0-eth1 nud reachable", "ages out"),
    ("ip n replace 10.0.1.9 lladdr 00:11:22:33:44:55 dev r0-eth1 nud stale", "ages out"),
    ("ip neigh add 10.0.1.9 dev r0-eth1 managed", "re-resolving"),
    ("arp -s 10.0.1.9 00:11:22:33:44:55 temp", "ages out"),
    ("iptables -I FORWARD -m limit --limit 1/hour --limit-burst 5000 -j ACCEPT", "lasting"),
    ("iptables -A INPUT -m recent --name x --rcheck --seconds 8 -j ACCEPT", "lasting"),
    ("tc qdisc replace dev r0-eth1 root tbf rate 8bit burst 100000 latency 1s", "meters"),
    ("tc qdisc add dev r0-eth1 root htb default 1", "meters"),
    ("tc filter add dev r0-eth1 parent ffff: matchall action drop", "lasting"),
    ("tc class add dev r0-eth1 parent 1: classid 1:1 htb rate 1mbit", "lasting"),
]
ALLOWED = [
    "ip addr add 10.0.1.1/24 dev r0-eth1",
    "ip addr add 10.0.1.1/24 brd + dev r0-eth1 valid_lft forever preferred_lft forever",
    "ip addr add 10.0.1.1/24 dev r0-eth1 preferred_lft 0",  # deprecated, for good
    "ip addr add 10.0.1.1/24 dev r0-eth1 pre 5",  # `pre` is `preference`: a metric
    "ip addr add 10.0.1.1/24 dev r0-eth1 prefer 5",  # still `preference`
    "ip addr add 10.0.1.1/24 dev r0-eth1 preferred_lft 30",  # valid forever: permanent
    "ip route add 10.9.0.0/16 via 10.0.1.2 metric 5",
    "ip neigh add 10.0.1.9 lladdr 00:11:22:33:44:55 dev r0-eth1",
    "ip neigh add 10.0.1.9 lladdr 00:11:22:33:44:55 dev r0-eth1 nud perm",
    "ip neigh add proxy 10.0.1.9 dev r0-eth1",
    "arp -s 10.0.1.9 00:11:22:33:44:55",
    "iptables -A FORWARD -p tcp --dport 80 -j DROP",
    "tc qdisc del dev r0-eth1 root",
    "tc qdisc add dev r0-eth1 root pfifo limit 100",
    "tc filter del dev r0-eth1 parent ffff:",
]


@pytest.mark.parametrize(("command", "needle"), REFUSED)
def test_state_that_undoes_itself_is_refused(command, needle):
    checked = check(command)
    assert not checked.allowed, command
    assert needle in checked.reason and "lasting" in checked.reason, checked.reason


@pytest.mark.parametrize("command", ALLOWED)
def test_lasting_state_is_allowed(command):
    assert check(command).allowed, check(command).reason


SPELLINGS = [
    "valid_lft 8 preferred_lft 8",
    "va 8 preferred_lft 4",
    "v 10 preferr 5",
    "v 10 pref 5",  # `pref` is a metric: preferred stays forever, above valid: ip refuses
    "preferr 5",
    "preferred_lft 5 valid_lft 10",
    "pre 5",
    "pref 5",
    "prefer 5",
    "prefere 5",
    "preferred_lft 0",
    "valid_lft forever preferred_lft forever",
    "valid_lft 4294967295 preferred_lft 10",
    "metric 5",
]


def _lifetimes(words: str) -> tuple[int, int] | None:
    """The lifetimes the real `ip` gives an address added with `words`, or None if it
    refused the command."""
    script = (
        "ip link add v0 type veth peer name v1 && "
        f"ip addr add 10.7.0.1/24 dev v0 {words} && ip -j -4 addr show dev v0"
    )
    done = subprocess.run(["unshare", "-n", "sh", "-c", script], capture_output=True, text=True)
    if done.returncode != 0:
        return None
    (info,) = json.loads(done.stdout)[0]["addr_info"]
    return info["valid_life_time"], info["preferred_life_time"]


@pytest.mark.integration
@pytest.mark.parametrize("words", SPELLINGS)
def test_a_spelling_is_refused_exactly_when_ip_gives_a_lifetime(words):
    from tests.conftest import require_root

    require_root("unshare -n needs root")
    real = _lifetimes(words)
    allowed = check(f"ip addr add 10.7.0.1/24 dev v0 {words}").allowed
    if real is None:  # ip itself refuses it: nothing would be made either way
        return
    assert allowed is (real[0] == 0xFFFFFFFF), (shlex.quote(words), real)
