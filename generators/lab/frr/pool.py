"""`WarmPool`: warm FRR labs (warm.py) lent out one use at a time, shared within a process.

An owner (a query generator, an app's environment) leases the lab of a definition for one
use and gives it back; the next lease of the same definition, by this owner or another one
in the process, restores it (WarmLab.restore: by configuration difference, proven clean)
instead of building it again; with `restore="restart"` it takes the cold path instead
(WarmLab.restart: its daemons restarted, equally proven), for comparisons. So the query a
Gym environment generates first is played on the lab it was validated on, and a validity
run's generation and episodes share labs.

    with WarmPool(factory, key) as pool:       # factory(spec) -> an unentered WarmLab
        with pool.use(spec) as lab:            # restored if it was used; healthy, proven
            ...                                # a use that raises closes the lab

Idle labs wait on one shelf per process, by (the pool's key, the definition's name): the
key says what a lab depends on besides its definition (probe and command settings), so a
lab is only lent to pools that would have built the same one. At most MAX_IDLE labs wait
(the least recently given back is stopped first); a lab being used is never stopped by
another owner. The shelf lives while an owner does: when the last owner closes, every
idle lab is stopped. Owners may run in different threads (one per level in a bench);
each lab is used by one thread at a time.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Self

from generators.lab.frr.warm import FrrSpec, WarmLab

log = logging.getLogger(__name__)
MAX_IDLE = 8


class _Shelf:
    """The process's idle labs, and how many owners are open."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.idle: OrderedDict[int, tuple[tuple[str, str], WarmLab]] = OrderedDict()
        self.owners = 0

    def take(self, key: tuple[str, str]) -> WarmLab | None:
        with self.lock:
            for ident, (found, lab) in reversed(self.idle.items()):
                if found == key:
                    del self.idle[ident]
                    return lab
        return None

    def put(self, key: tuple[str, str], lab: WarmLab) -> None:
        with self.lock:
            self.idle[id(lab)] = (key, lab)
            evicted = []
            while len(self.idle) > MAX_IDLE:
                evicted.append(self.idle.popitem(last=False)[1][1])
        _close_all(evicted)

    def join(self) -> None:
        with self.lock:
            self.owners += 1

    def leave(self) -> None:
        with self.lock:
            self.owners -= 1
            evicted = [lab for _, lab in self.idle.values()] if self.owners == 0 else []
            if self.owners == 0:
                self.idle.clear()
        _close_all(evicted)


def _close_all(labs: list[WarmLab]) -> None:
    """Close each lab even when closing another raised; the first error raised after."""
    errors = []
    for lab in labs:
        try:
            lab.close()
        except Exception as err:  # raised below, after the others
            errors.append(err)
    if errors:
        raise errors[0]


SHELF = _Shelf()


class WarmPool:
    """See the module docstring."""

    def __init__(
        self, factory: Callable[[FrrSpec], WarmLab], key: str, restore: str = "diff"
    ) -> None:
        if restore not in ("diff", "restart"):
            raise ValueError(f"WarmPool restore must be 'diff' or 'restart', got {restore!r}")
        self._factory = factory
        self.key = key
        self.restore = restore
        self._leased: dict[int, WarmLab] = {}
        self._lock = threading.Lock()  # leases come from several threads (validators)
        self.builds = 0
        self._open = False

    def __enter__(self) -> Self:
        SHELF.join()
        self._open = True
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop the labs this owner still holds; leave the shelf (the last owner to leave
        stops the idle labs)."""
        if not self._open:
            return
        self._open = False
        with self._lock:
            leased, self._leased = list(self._leased.values()), {}
        try:
            _close_all(leased)
        finally:
            SHELF.leave()

    def lease(self, spec: FrrSpec) -> WarmLab:
        """A lab of `spec`, healthy and proven so: an idle one restored if it was used
        (one whose restore raised is stopped, and another built), else a new one."""
        if not self._open:
            raise RuntimeError("WarmPool.lease() outside its `with` block")
        key = (self.key, spec.name)
        lab = SHELF.take(key)
        if lab is not None and lab.used:
            try:
                lab.restart() if self.restore == "restart" else lab.restore()
            except BaseException as err:  # whatever the restore raised: never reused
                lab.close()
                if not isinstance(err, Exception):
                    raise
                log.warning("rebuilding %s: %s: %s", spec.name, type(err).__name__, err)
                lab = None
        if lab is None:
            lab = self._factory(spec).__enter__()
            self.builds += 1
        lab.used = True  # whatever the use does (an agent's commands too): restored next time
        with self._lock:
            self._leased[id(lab)] = lab
        return lab

    def give_back(self, lab: WarmLab) -> None:
        """Put a leased lab on the shelf for the next lease (restored then if used)."""
        with self._lock:
            mine = self._leased.pop(id(lab), None) is not None
        if mine:
            SHELF.put((self.key, lab.spec.name), lab)

    def discard(self, lab: WarmLab) -> None:
        """Stop a leased lab: it is never lent again."""
        with self._lock:
            self._leased.pop(id(lab), None)
        lab.close()

    @contextmanager
    def use(self, spec: FrrSpec) -> Iterator[WarmLab]:
        """`lease` for one use, given back after it; a use that raised anything closes
        the lab (it is in an unknown state) instead."""
        lab = self.lease(spec)
        try:
            yield lab
        except BaseException:
            self.discard(lab)
            raise
        self.give_back(lab)
