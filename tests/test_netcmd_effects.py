"""What lab commands may change (emulators/netcmd/effects.py), read as the policy reads them:
every spelling of the same change is the same kind of state, every kind the policy allows
is held by the reset's state (emulators/state.py COVERS) and shown by a family of
tests/reset_families.py, and the families the kernel keeps apart (IPv4, IPv6) are kinds
of their own. The reset's flush is checked on a scratch namespace."""

from __future__ import annotations

import subprocess

import pytest

from emulators import state
from emulators.netcmd import effects
from emulators.netcmd.policy import check
from tests import reset_families
from tests.conftest import require_root


@pytest.mark.parametrize(
    ("command", "kinds"),
    [
        ("ip -6 rule add pref 100 prohibit", {("rule", "inet6")}),
        ("ip -6 ru a pref 100 prohibit", {("rule", "inet6")}),
        ("ip --family inet6 rule add pref 100 prohibit", {("rule", "inet6")}),
        ("ip rule add pref 100 to 2001:db8::/32 prohibit", {("rule", "inet6")}),
        ("ip -4 -6 rule add pref 100 prohibit", {("rule", "inet6")}),  # the last one wins
        ("ip rule add pref 100 prohibit", {("rule", "inet")}),
        ("ip r a unreachable 2001:db8::/32 table 77", {("route", "inet6")}),
        ("ip route flush table 77", {("route", "inet")}),
        ("route -6 add default dev r0-eth1", {("route", "inet6")}),
        ("route add -net 10.9.0.0 netmask 255.255.0.0 dev r0-eth1", {("route", "inet")}),
        ("ip n a proxy 2001:db8::1 dev r0-eth1", {("proxy neighbour", "inet6")}),
        ("ip neigh add proxy 10.0.1.9 dev r0-eth1", {("proxy neighbour", "inet")}),
        ("arp -i r0-eth1 -s 10.0.1.9 00:11:22:33:44:55 pub", {("proxy neighbour", "inet")}),
        ("arp -s 10.0.1.9 00:11:22:33:44:55", {("neighbour", "inet")}),
        (
            "ip -6 neigh add 2001:db8::1 lladdr 00:11:22:33:44:55 dev r0-eth1",
            {("neighbour", "inet6")},
        ),
        ("ip addr flush dev r0-eth1", {("address", "inet"), ("address", "inet6")}),
        ("ip -6 a a 2001:db8::1/64 dev r0-eth1", {("address", "inet6")}),
        ("ifconfig r0-eth1 10.0.1.1 netmask 255.255.255.0", {("address", "inet")}),
        ("ifconfig r0-eth1 mtu 1400", {("link", "")}),
        ("ip l s r0-eth1 down", {("link", "")}),
        ("iptables -tnat -A POSTROUTING -j MASQUERADE", {("iptables nat", "inet")}),
        ("iptables --table=raw -P PREROUTING DROP", {("iptables raw", "inet")}),
        ("iptables -F", {("iptables filter", "inet")}),
        ("tc q r dev r0-eth1 root pfifo", {("qdisc", "")}),
        ("tc filter del dev r0-eth1 parent 1: prio 1", {("tc filter", "")}),
        ("sysctl -w net.ipv6.conf.all.disable_ipv6=0", {("sysctl", "")}),
        ("sysctl net.ipv4.ip_forward", set()),
        ("ip -6 route show table all", set()),
        ("ip r g 10.0.1.2", set()),
        ("iptables -L -n -v", set()),
        ("iptables-save", set()),
        ("ping -c 1 10.0.1.2", set()),
        ("cat /proc/net/route", set()),
        ("tc -s qdisc show", set()),
        ("arp -n", set()),
    ],
)
def test_each_spelling_names_the_state_it_changes(command, kinds):
    checked = check(command)
    assert checked.allowed, checked.reason
    assert effects.changes(checked.argv, checked.writes) == kinds


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("ip -0 neigh add 1 dev r0-eth1", "-family link"),
        ("ip -f bridge neigh add 1.2.3.4 dev r0-eth1", "-family bridge"),
        ("ip -family mpls route add 100 dev r0-eth1", "-family mpls"),
        ("ip -M route add 100 dev r0-eth1", "(-M) is not allowed"),
        ("ip -B neigh del 33:33:00:00:00:01 dev r0-eth1", "(-B) is not allowed"),
        ("iptables -6 -A INPUT -j DROP", "IPv4 tables only"),
        ("iptables --ipv6 -A INPUT -j DROP", "IPv4 tables only"),
    ],
)
def test_only_ipv4_and_ipv6_state_may_be_changed(command, reason):
    checked = check(command)
    assert not checked.allowed and reason in (checked.reason or ""), checked.reason


def test_other_families_may_still_be_shown():
    assert check("ip -f link neigh show").allowed and check("ip -0 addr show").allowed


def test_every_kind_the_policy_allows_is_reset_and_shown_by_a_family():
    assert reset_families.covered() == []
    assert effects.allowed() <= state.COVERS.keys()
    # IPv6 is its own kind of state for every object that has a family
    for what in ("address", "route", "rule", "neighbour", "proxy neighbour"):
        assert {(what, "inet"), (what, "inet6")} <= effects.allowed()


def test_a_kind_no_family_shows_or_no_section_holds_fails_the_suite(monkeypatch):
    families = [f for f in reset_families.FAMILIES if "-6 r" not in f[1] and "rule" not in f[1]]
    monkeypatch.setattr(reset_families, "FAMILIES", families)
    assert "no family changes ('rule', 'inet6')" in reset_families.covered()
    monkeypatch.undo()
    covers = {k: v for k, v in state.COVERS.items() if k != ("rule", "inet6")}
    monkeypatch.setattr(state, "COVERS", covers)
    assert "no state section holds ('rule', 'inet6')" in reset_families.covered()


@pytest.mark.integration
def test_the_resets_flush_empties_permanent_and_noarp_neighbours_of_both_families():
    """`ip neigh flush all nud all` leaves noarp entries (iproute2 6.1): an agent's `nud
    noarp` entry with a wrong MAC outlived the reset whenever its link was left alone."""
    require_root("network namespaces need root")
    script = (
        "ip link add name nf0 type veth peer name nf1 && ip link set nf0 up && "
        "sysctl -qw net.ipv6.conf.nf0.disable_ipv6=0 && "
        "ip neigh add 10.9.0.1 lladdr 00:11:22:33:44:01 dev nf0 nud noarp && "
        "ip neigh add 10.9.0.2 lladdr 00:11:22:33:44:02 dev nf0 nud permanent && "
        "ip -6 neigh add 2001:db8::1 lladdr 00:11:22:33:44:03 dev nf0 nud noarp && "
        "ip -6 neigh add 2001:db8::2 lladdr 00:11:22:33:44:04 dev nf0 && "
        "ip neigh add proxy 10.9.0.3 dev nf0 && "
        f"{state.FLUSH_SCRIPT}; ip neigh show nud all dev nf0; echo @; ip neigh show proxy"
    )
    done = subprocess.run(
        ["unshare", "--net", "bash", "-c", script], capture_output=True, text=True, timeout=30
    )
    left, proxies = done.stdout.split("@")
    assert "00:11:22:33:44" not in left, left
    assert "10.9.0.3" in proxies  # proxy entries are state, restored from the dump
