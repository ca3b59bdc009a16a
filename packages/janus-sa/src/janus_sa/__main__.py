"""`python -m janus_sa demo|reproduce` and the deployment commands `keygen|bundle|enroll|serve|client`.

The experiments are imported inside the commands, so that a base install can show ``--help`` and name
the ``fl`` extra (scikit-learn) that ``demo`` and ``reproduce`` need.
"""

from __future__ import annotations

from icml25_shared.cli import ExtraCommand, run_cli

PAPER = ("Pu, Gu, Lin & Huang (ICML 2025). Janus: Dual-Server Multi-Round Secure Aggregation with "
         "Verifiability for Federated Learning.")

DEPLOY_COMMANDS = {
    "keygen": "create one party's keys (--role s0|s1|client) and export its public bundle",
    "bundle": "assemble the public deployment file from both servers' bundles",
    "enroll": "sign the roster of client keys as S0 or S1",
    "serve": "run aggregation server S0 or S1 (--role) over gRPC",
    "client": "send this client's masked updates to both servers, round by round",
}


def _deploy(name: str) -> ExtraCommand:
    def run(argv: list[str]) -> int:
        from janus_sa.deploy import main as deploy_main

        return deploy_main([name, *argv])

    return ExtraCommand(DEPLOY_COMMANDS[name], run)


def main(argv: list[str] | None = None) -> int:
    """Run the ``janus_sa`` command line.

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default ``sys.argv[1:]``): ``demo``, ``reproduce``, ``keygen``, ``bundle``,
        ``enroll``, ``serve`` or ``client`` with their options.

    Returns
    -------
    int
        0 on success; 2 when the command needs an extra that is not installed.
    """
    extra = {name: _deploy(name) for name in DEPLOY_COMMANDS}
    return run_cli("janus_sa", demo="janus_sa.experiments:demo",
                   reproduce="janus_sa.experiments:reproduce", argv=argv, description=__doc__,
                   extra_commands=extra, paper=PAPER, requires={"demo": "fl", "reproduce": "fl"})


if __name__ == "__main__":
    raise SystemExit(main())
