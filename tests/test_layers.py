"""The direction of the house, checked as `make lint` checks it: import-linter's contracts
(pyproject.toml, [tool.importlinter]): pipeline/ is the floor and imports nothing above it,
apps reach pipeline/ only through pipeline/api.py, no room has an import circle (imports
inside functions count), apps do not import each other."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pipeline.config import ROOT


def test_every_import_contract_is_kept() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run(
        [str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "4 kept, 0 broken" in done.stdout
