"""`python -m janus_sa demo|reproduce` and the deployment commands `keygen|serve|client`."""

from __future__ import annotations

from icml25_shared.cli import ExtraCommand, run_cli

DEPLOY_COMMANDS = {
    "keygen": "create the two servers' keys and the public deployment file",
    "serve": "run aggregation server S0 or S1 (--role) over gRPC",
    "client": "send this client's masked updates to both servers, round by round",
}


def _deploy(name: str) -> ExtraCommand:
    def run(argv: list[str]) -> int:
        from janus_sa.deploy import main as deploy_main

        return deploy_main([name, *argv])

    return ExtraCommand(DEPLOY_COMMANDS[name], run)


def main(argv: list[str] | None = None) -> int:
    from janus_sa.experiments import demo, reproduce

    extra = {name: _deploy(name) for name in DEPLOY_COMMANDS}
    return run_cli("janus_sa", demo=demo, reproduce=reproduce, argv=argv, description=__doc__, extra_commands=extra)


if __name__ == "__main__":
    raise SystemExit(main())
