"""The cluster path without a cluster: the local cluster's configs, the accounting reader,
the executor fix for cancelled jobs and its status-check wait on a local cluster, and the
plan the jobs of a cluster run reuse.
(tests/test_slurm.py runs a real cluster.)"""

from __future__ import annotations

import asyncio
import logging
import sys
import types
from pathlib import Path

import pytest

from pipeline import slurm_executor
from pipeline.cluster.accounting import JobRecord
from pipeline.cluster.layout import (
    CLIENT_TOOLS,
    Layout,
    Ports,
    Spec,
    private_state_dir,
    slurm_conf,
    slurmdbd_conf,
    write_files,
)
from pipeline.dag import PlanCache, Workflow
from pipeline.errors import ConfigError
from pipeline.plan import load_plan

PORTS = Ports(6001, 6002, 6003, {"ng1": 6011, "ng2": 6012})


def test_slurm_conf_is_private_and_names_every_node(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "state")
    text = slurm_conf(layout, Spec(nodes=2, cpus=3), PORTS)
    assert "SlurmctldPort=6001" in text and "AccountingStoragePort=6002" in text
    assert f"AuthInfo=socket={layout.munge_socket}" in text
    assert f"AccountingStoragePass={layout.munge_socket}" in text  # slurmctld -> slurmdbd
    for node, port in (("ng1", 6011), ("ng2", 6012)):
        assert f"NodeName={node} " in text and f"Port={port} CPUs=3 " in text
    assert "PartitionName=local Nodes=ng1,ng2 Default=YES" in text
    assert "ProctrackType=proctrack/linuxproc" in text and "TaskPlugin=task/none" in text
    # Every path it names is inside the state directory: nothing of /etc or /var/run.
    paths = [w.split("=")[-1] for w in text.split() if "=/" in w]
    assert paths and all(p.startswith(str(layout.root)) or p == "/bin/true" for p in paths)
    dbd = slurmdbd_conf(layout, PORTS, "secret")
    assert "DbdPort=6002" in dbd and "StoragePort=6003" in dbd and "StoragePass=secret" in dbd


def test_files_are_written_with_the_modes_munge_and_slurmdbd_demand(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "state")
    password = write_files(layout, Spec(nodes=2), PORTS)
    assert layout.munge_key.stat().st_mode & 0o777 == 0o400
    assert layout.munge_key.parent.stat().st_mode & 0o777 == 0o755
    assert layout.slurmdbd_conf.stat().st_mode & 0o777 == 0o600
    assert password in layout.slurmdbd_conf.read_text()
    assert sorted(p.name for p in layout.bin.iterdir()) == sorted(CLIENT_TOOLS)
    assert f'SLURM_CONF="{layout.slurm_conf}"' in (layout.bin / "srun").read_text()
    assert layout.spool("ng2").is_dir()
    layout.lock.write_text("")
    layout.wipe()
    assert sorted(p.name for p in layout.root.iterdir()) == ["lock"]


def test_client_env_puts_the_wrappers_first(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    env = layout.client_env({"PATH": "/usr/bin"})
    assert env == {
        "PATH": f"{layout.bin}:/usr/bin",
        "SLURM_CONF": str(layout.slurm_conf),
        slurm_executor.POLL_MAX_ENV: "2",
    }


def test_state_dirs_are_per_checkout_and_fit_a_socket_path() -> None:
    assert private_state_dir("test") == private_state_dir("test")
    assert private_state_dir("test").parent == Path("/var/lib/netgauge/slurm")
    with pytest.raises(ValueError, match=r"too long for the socket"):
        Layout(Path("/tmp") / ("x" * 100))


def test_job_records_give_back_the_rule() -> None:
    record = JobRecord("7", "uuid", "COMPLETED", "ng1", "rule_run_wildcards_k8s_none", "0:0", 3)
    assert (record.rule, record.wildcards) == ("run", "k8s_none")
    named = JobRecord("8", "uuid", "COMPLETED", "ng2", "rule_run_model_smollm2", "0:0", 3)
    assert named.rule == "run_model_smollm2"
    assert JobRecord("9", "wrap", "FAILED", "ng1", "", "1:0", 0).rule == ""


def test_cancelled_jobs_read_as_cancelled(monkeypatch: pytest.MonkeyPatch) -> None:
    """sacct says `CANCELLED by 0`; the plugin (2.8.0) only knows `CANCELLED`."""
    fake = types.ModuleType(slurm_executor.PLUGIN)

    async def query_job_status(command, logger):
        return {"1": "CANCELLED by 0", "2": "COMPLETED", "3": "FAILED"}, 0.01

    fake.query_job_status = query_job_status  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, slurm_executor.PLUGIN, fake)
    assert slurm_executor.patch_status_query() and slurm_executor.patch_status_query()
    statuses, _ = asyncio.run(fake.query_job_status("sacct", logging.getLogger()))
    assert statuses == {"1": "CANCELLED", "2": "COMPLETED", "3": "FAILED"}
    monkeypatch.delitem(sys.modules, slurm_executor.PLUGIN)
    assert not slurm_executor.patch_status_query()


class _Remote:
    """The interval property as snakemake_interface_executor_plugins' RemoteExecutor has it."""

    def __init__(self) -> None:
        self._next: float | None = None

    @property
    def next_seconds_between_status_checks(self) -> float | None:
        return self._next

    @next_seconds_between_status_checks.setter
    def next_seconds_between_status_checks(self, value: float | None) -> None:
        self._next = value


def test_a_local_clusters_status_checks_stay_within_its_cap(monkeypatch) -> None:
    """The plugin adds 10 s to its wait after each check that saw no job end; a client of
    the local cluster (its environment names the cap) waits 2 s at most."""
    fake = types.ModuleType(slurm_executor.PLUGIN)
    fake.Executor = type("Executor", (_Remote,), {})  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, slurm_executor.PLUGIN, fake)
    monkeypatch.delenv(slurm_executor.POLL_MAX_ENV, raising=False)
    assert not slurm_executor.cap_status_interval()  # a real site's client: unchanged
    executor = fake.Executor()
    executor.next_seconds_between_status_checks = 42
    assert executor.next_seconds_between_status_checks == 42
    env = Layout(Path("/var/lib/netgauge/slurm/t")).client_env({"PATH": "/bin"})
    monkeypatch.setenv(slurm_executor.POLL_MAX_ENV, env[slurm_executor.POLL_MAX_ENV])
    assert slurm_executor.cap_status_interval() and slurm_executor.cap_status_interval()
    for asked, kept in ((12, 2.0), (1, 1), (180, 2.0), (None, None)):
        executor.next_seconds_between_status_checks = asked
        assert executor.next_seconds_between_status_checks == kept
    assert _Remote().next_seconds_between_status_checks is None  # the base class untouched
    monkeypatch.setenv(slurm_executor.POLL_MAX_ENV, "5")  # a new cap replaces the old one
    assert slurm_executor.cap_status_interval()
    executor.next_seconds_between_status_checks = 12
    assert executor.next_seconds_between_status_checks == 5
    for bad in ("0", "-1", "soon", "181"):
        monkeypatch.setenv(slurm_executor.POLL_MAX_ENV, bad)
        with pytest.raises(ConfigError, match="NETGAUGE_SLURM_POLL_MAX_S"):
            slurm_executor.cap_status_interval()


@pytest.mark.slow
def test_cluster_jobs_reuse_the_checked_plan(tmp_path: Path) -> None:
    config = {"grid": "smoke", "data_dir": str(tmp_path), "apps": ["malt"]}
    cache = PlanCache("smoke", str(tmp_path), {"apps": ["malt"]})
    assert cache.load() is None
    main = Workflow.from_config(config)
    assert cache.load() == main.plan == load_plan("smoke", tmp_path, {"apps": ["malt"]})
    assert Workflow.from_config(config, main=False).plan == main.plan
    # Another grid or other axes are other entries; a job without an entry plans itself.
    assert PlanCache("smoke", str(tmp_path), {"apps": ["k8s"]}).path != cache.path
    cache.path.unlink()
    assert Workflow.from_config(config, main=False).plan == main.plan
    assert cache.load() is None  # only the main process writes entries
