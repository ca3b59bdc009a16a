"""`python -m janus_sa demo|reproduce` and the deployment commands `keygen|serve|client`."""

from __future__ import annotations

import sys

from icml25_shared.cli import run_cli


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("keygen", "serve", "client"):
        from janus_sa.deploy import main as deploy_main

        return deploy_main(argv)
    from janus_sa.experiments import demo, reproduce

    return run_cli("janus_sa", demo=demo, reproduce=reproduce, argv=argv, description=__doc__)


if __name__ == "__main__":
    raise SystemExit(main())
