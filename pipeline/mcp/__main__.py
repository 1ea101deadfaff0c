"""`python -m pipeline.mcp`: serve one episode to a person, or be the stdio bridge.

python -m pipeline.mcp app=k8s level=1 seed=0 [index=0 | query=<id>]
    [turn_timeout_s=1800] [episode_timeout_s=14400] [other Hydra overrides]
python -m pipeline.mcp stdio --connect <the episode's URL>
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    # The stdio bridge is started by a person's MCP client for each session: it imports its
    # relay alone, not the pipeline an episode's server needs (composing, generating, labs).
    if args[:1] == ["stdio"]:
        import anyio

        from pipeline.mcp.bridge import relay

        parser = argparse.ArgumentParser(prog="python -m pipeline.mcp stdio")
        parser.add_argument("--connect", required=True, help="the episode's MCP URL")
        anyio.run(relay, parser.parse_args(args[1:]).connect)
        return 0
    from pipeline.errors import NetGaugeError
    from pipeline.mcp.serve import serve

    try:
        serve(args)
    except NetGaugeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
