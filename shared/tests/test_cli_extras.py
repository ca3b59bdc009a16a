"""run_cli: --help shows the summary and the paper, a missing extra is one line and exit 2, console-script names."""

import sys

import icml25_shared.cli as cli
import pytest
from icml25_shared.cli import ExtraCommand, missing_extra, run_cli

PAPER = "J. Doe, R. Roe (ICML 2025). A toy paper."


def toy_main(argv, calls, **kwargs):
    return run_cli("toy", demo=lambda ctx: calls.append("demo"), reproduce=lambda ctx: calls.append("reproduce"),
                   argv=argv, paper=PAPER, **kwargs)


@pytest.fixture()
def installed(monkeypatch):
    """Pretend import package 'toy' comes from the installed distribution icml25-shared."""
    monkeypatch.setattr(cli, "distribution_of", lambda package: "icml25-shared")


def test_missing_extra_is_one_stderr_line_naming_pip_install_and_exit_2(installed, monkeypatch, capsys, tmp_path):
    asked = []
    monkeypatch.setattr(cli, "missing_extra", lambda dist, extra: asked.append((dist, extra)) or ["somepkg"])
    calls = []
    assert toy_main(["demo", "--out", str(tmp_path)], calls, requires={"demo": "cli"}) == 2
    assert calls == [] and asked == [("icml25-shared", "cli")]
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and captured.out == ""
    assert "needs the 'cli' extra (somepkg not installed)" in lines[0]
    assert 'pip install "icml25-shared[cli]"' in lines[0] and 'pip install "./shared[cli]"' in lines[0]
    # the command without a requirement still runs
    assert toy_main(["reproduce", "--out", str(tmp_path)], calls, requires={"demo": "cli"}) == 0
    assert calls == ["reproduce"]


def test_extra_commands_are_checked_too(installed, monkeypatch, capsys):
    monkeypatch.setattr(cli, "missing_extra", lambda dist, extra: ["somepkg"])
    audit = ExtraCommand("audit", lambda argv: 0)
    assert toy_main(["audit"], [], extra_commands={"audit": audit}, requires={"audit": "peers"}) == 2
    assert "needs the 'peers' extra" in capsys.readouterr().err
    with pytest.raises(ValueError, match="unknown commands"):
        toy_main(["demo"], [], requires={"train": "peers"})


def test_check_extras_only_stops_before_running(installed, monkeypatch, tmp_path):
    calls = []
    monkeypatch.setenv("ICML25_CHECK_EXTRAS_ONLY", "1")
    assert toy_main(["demo", "--out", str(tmp_path)], calls, requires={"demo": "test"}) == 0 and calls == []
    monkeypatch.setattr(cli, "missing_extra", lambda dist, extra: ["somepkg"])
    assert toy_main(["demo", "--out", str(tmp_path)], calls, requires={"demo": "test"}) == 2
    monkeypatch.setenv("ICML25_CHECK_EXTRAS_ONLY", "0")
    assert toy_main(["reproduce", "--out", str(tmp_path)], calls) == 0 and calls == ["reproduce"]


def test_missing_extra_reads_the_installed_metadata():
    assert missing_extra("icml25-shared", "test") == []  # pytest, scipy, threadpoolctl are installed here
    assert missing_extra("icml25-shared", "no-such-extra") == []


def test_help_shows_the_summary_and_the_paper(installed, capsys):
    with pytest.raises(SystemExit):
        toy_main(["--help"], [])
    out = capsys.readouterr().out
    assert "Thin shared layer of the icml25 monorepo" in out and f"Paper: {PAPER}" in out
    assert out.index("Thin shared layer") < out.index("Paper:")


def test_help_from_a_source_tree_uses_the_description_and_the_paper(monkeypatch, capsys):
    monkeypatch.setattr(cli, "distribution_of", lambda package: None)
    with pytest.raises(SystemExit):
        toy_main(["--help"], [], description="Toy command line.")
    out = capsys.readouterr().out
    assert "Toy command line." in out and f"Paper: {PAPER}" in out


@pytest.mark.parametrize(("argv0", "prog"), [("/venv/bin/toy-method", "toy-method"),
                                             ("/src/toy/__main__.py", "python -m toy"),
                                             ("-c", "python -m toy")])
def test_usage_names_the_console_script(monkeypatch, capsys, argv0, prog):
    monkeypatch.setattr(sys, "argv", [argv0])
    with pytest.raises(SystemExit):
        toy_main(["--help"], [])
    assert capsys.readouterr().out.startswith(f"usage: {prog} ")


def test_distribution_of_finds_console_script_and_plain_packages():
    assert cli.distribution_of("pytest") == "pytest"  # through its console script
    assert cli.distribution_of("yaml").lower() == "pyyaml"  # no console script: the RECORD files
    assert cli.distribution_of("no_such_package_here") is None
