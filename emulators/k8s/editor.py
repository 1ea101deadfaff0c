"""`KUBE_EDITOR` for agents: `kubectl edit` opens the object in this "editor", which replaces
the file with the text the agent sent along with its command ($NGK_EDIT_SOURCE), or
leaves it unchanged when none was sent (kubectl then reports the edit as cancelled).

Usage (set by emulators.k8s.kubectl): python editor.py FILE
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: editor.py FILE", file=sys.stderr)
        return 2
    source = os.environ.get("NGK_EDIT_SOURCE", "")
    if source and Path(source).is_file():
        Path(argv[1]).write_text(Path(source).read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
