"""Lab commands: each way issue 11 bent the command sandbox, as a test.

Written against the sandbox's public surface only (policy.check, a live routing episode),
so the same file runs on the code before the fix, where every test here fails, and after.
The host-wide sysctl is tested by writing its current value: a no-op if it got through.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emulators.netcmd.policy import check
from generators.routing.config import RoutingConfig
from generators.routing.environment import RoutingEnvironment
from generators.routing.topology import RoutingTopology
from pipeline.core import StepStatus
from tests.conftest import require_emulator
from tests.test_routing_netcmd import _query

LWT = Path("/proc/sys/net/netfilter/nf_hooks_lwtunnel")
ISSUE_HASHLIMIT = "iptables -A INPUT " + " ".join(
    f"-m hashlimit --hashlimit-above 1/sec --hashlimit-name h{i} --hashlimit-htable-size 1048576"
    for i in range(10)
) + " -j DROP"  # fmt: skip


@pytest.mark.parametrize("value", ["1", "0"])
def test_a_host_wide_sysctl_is_refused(value):
    assert not check(f"sysctl -w net.netfilter.nf_hooks_lwtunnel={value}").allowed


@pytest.mark.integration
def test_a_host_wide_sysctl_write_never_runs_in_a_lab():
    require_emulator("mininet")
    current = LWT.read_text().strip()
    command = f"sysctl -w net.netfilter.nf_hooks_lwtunnel={current}"
    env = RoutingEnvironment(RoutingConfig())
    with env, env.episode(_query(RoutingTopology(2, 1))) as episode:
        step = episode.step(json.dumps({"machine": "r0", "command": command}))
    assert step.status is not StepStatus.OK, step.output
    assert LWT.read_text().strip() == current


@pytest.mark.parametrize(
    "command",
    [
        "ip link s r0-eth1 name evil",  # iproute2 reads `s` as `set`
        "ip l s r0-eth1 ali evil",  # alias is allowed spelled in full only
        "iptables --mo=/bin/sh -L",  # getopt_long reads --mo as --modprobe
        "iptables --modp /bin/sh -L",
        "iptables -tbroute -L",
        "iptables --table=broute -L",
        "iptables -M/bin/sh -L",
        ISSUE_HASHLIMIT,
    ],
)
def test_spellings_the_tools_accept_are_read_as_the_tools_read_them(command):
    assert not check(command).allowed, command


@pytest.mark.integration
def test_the_issues_hashlimit_rule_holds_no_kernel_memory():
    """Through a live lab: the 985-character rule from the issue is refused (it held 110 MB
    of vmalloc until the next reset)."""
    require_emulator("mininet")
    before = _vmalloc_kb()
    env = RoutingEnvironment(RoutingConfig())
    with env, env.episode(_query(RoutingTopology(2, 1))) as episode:
        step = episode.step(json.dumps({"machine": "r0", "command": ISSUE_HASHLIMIT}))
        held = _vmalloc_kb() - before
    assert step.status is StepStatus.BLOCKED, step.output
    assert held < 50_000, f"{held} kB of vmalloc held"


def _vmalloc_kb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("VmallocUsed:"):
            return int(line.split()[1])
    return 0
