"""Restoring a warm FRR lab (warm.py): its configuration by difference, or its daemons anew.

`restore_configs` is the first step of WarmLab.restore: each daemon's running configuration
is read over its vty socket and, where it differs from the healthy one, the difference
(confdiff.py) is applied and read back, up to three passes; the routers' configuration
folders are written back where a `write memory` changed them. `restart` is the cold path a
restore falls back to: the daemons killed, FRR's routes and nexthop objects flushed, the
kernel reset to its snapshot, the daemons started on their files, and the healthy state
reached and proven again.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from generators.lab.frr import confdiff
from generators.lab.frr.vty import CMD_WARNING
from pipeline.api import EnvironmentFailure

if TYPE_CHECKING:
    from generators.lab.frr.warm import WarmLab

FLUSH_FRR = "ip -4 route flush proto ospf; ip -4 route flush proto bgp; ip nexthop flush"
RESTORE_S = 15.0  # longest wait for a restored lab to reach its healthy routing state


def restore_configs(lab: WarmLab) -> None:
    """Step 1 of a restore: every daemon's running configuration and the routers'
    configuration folders made the healthy ones again, read back to be sure."""
    assert lab.vty is not None and lab.daemons is not None
    current = lab.running_config()
    for (router, daemon), text in current.items():
        wanted = lab.healthy_config[(router, daemon)]
        for _ in range(3):
            if confdiff.same(text, wanted):
                break
            _apply(lab, router, daemon, confdiff.diff(text, wanted))
            text = lab.vty.session(router, daemon).command("show running-config")[1]
        else:
            raise EnvironmentFailure(
                f"{router}/{daemon}: its configuration still differs from the healthy "
                f"one after three passes: {confdiff.diff(text, wanted)[:6]}"
            )
    for router in lab.spec.frr_routers:
        if lab.daemons.files_differ(router, lab.configs[router]):
            lab.daemons.write_files(router, lab.configs[router])


def _apply(lab: WarmLab, router: str, daemon: str, lines: Sequence[str]) -> None:
    """Configuration lines on one daemon; a `no` line the daemon refuses is tried
    again with fewer trailing words (`no description` takes no text; `no neighbor X
    description` none either), down to two, in the same context."""
    assert lab.vty is not None
    session = lab.vty.session(router, daemon)
    deadline = time.monotonic() + 10.0
    try:
        for line in ["configure terminal", *lines]:
            session.send(line)
            code, _ = session.receive(deadline)
            words = line.split()
            while code > CMD_WARNING and words[0] == "no" and len(words) > 2:
                words.pop()
                session.send(" ".join(words))
                code, _ = session.receive(deadline)
        session.send("end")
        session.receive(deadline)
    except BaseException:
        session.close()
        raise


def restart(lab: WarmLab) -> None:
    """The cold path: daemons killed, FRR's routes flushed, the kernel reset, the
    daemons started on their files and the healthy state reached again, proven."""
    assert lab.daemons is not None and lab.vty is not None
    lab.vty.close()
    lab.daemons.stop()
    routers = lab.spec.frr_routers
    lab.emu._shell({r: f"{FLUSH_FRR} 2>/dev/null; true" for r in routers})
    lab.emu.reset(also=routers)
    lab.daemons.write_configs(lab.configs)
    lab.daemons.start()
    lab.converge()
    now = lab.running_config()
    if any(not confdiff.same(now[key], text) for key, text in lab.healthy_config.items()):
        raise EnvironmentFailure(f"{lab.spec.name}: restarted with another configuration")
    if not lab.reach_target(RESTORE_S):
        raise EnvironmentFailure(
            f"{lab.spec.name}: restarted, its routing state is not the healthy one"
        )
