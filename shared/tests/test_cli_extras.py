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
    assert toy_main(["demo", "--out", str(tmp_path)], calls, requires={"demo": "sklearn"}) == 2
    assert calls == [] and asked == [("icml25-shared", "cli"), ("icml25-shared", "sklearn")]
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and captured.out == ""
    assert "needs the extras [cli,sklearn] (somepkg not installed)" in lines[0]
    # the wheel's own name, never a path into this repository
    assert lines[0].endswith('pip install "icml25-shared[cli,sklearn]"') and "./" not in lines[0]


def test_demo_without_matplotlib_names_the_cli_extra(installed, monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(cli, "missing_extra", lambda dist, extra: ["matplotlib"] if extra == "cli" else [])
    calls = []
    for command in ("demo", "reproduce"):
        assert toy_main([command, "--out", str(tmp_path)], calls) == 2
        line = capsys.readouterr().err.strip()
        assert "\n" not in line and line.endswith('pip install "icml25-shared[cli]"'), line
    assert calls == []
    # an extra command needs only what `requires` names for it
    audit = ExtraCommand("audit", lambda argv: 7)
    assert toy_main(["audit"], calls, extra_commands={"audit": audit}) == 7


def test_extra_commands_are_checked_too(installed, monkeypatch, capsys):
    monkeypatch.setattr(cli, "missing_extra", lambda dist, extra: ["somepkg"])
    audit = ExtraCommand("audit", lambda argv: 0)
    assert toy_main(["audit"], [], extra_commands={"audit": audit}, requires={"audit": "peers"}) == 2
    assert "needs the extras [peers]" in capsys.readouterr().err
    with pytest.raises(ValueError, match="unknown commands"):
        toy_main(["demo"], [], requires={"train": "peers"})


def test_commands_run_when_their_extras_are_installed(installed, tmp_path):
    calls = []
    assert toy_main(["demo", "--out", str(tmp_path)], calls, requires={"demo": "test"}) == 0
    assert toy_main(["reproduce", "--out", str(tmp_path)], calls) == 0
    assert calls == ["demo", "reproduce"]


def test_missing_extra_reads_the_installed_metadata():
    assert missing_extra("icml25-shared", "test") == []  # pytest, scipy are installed here
    assert missing_extra("icml25-shared", "no-such-extra") == []
    assert missing_extra("no-such-distribution", "cli") == ["no-such-distribution"]


def test_missing_extra_follows_a_requirement_into_its_extras(monkeypatch):
    """pkg[cli] = icml25-shared[cli]: matplotlib missing from shared's cli extra is pkg's cli missing."""
    requires = {"pkg": ['icml25-shared[cli]>=0.1; extra == "cli"', 'numpy>=1'],
                "icml25-shared": ['matplotlib>=3.6; extra == "cli"', 'tqdm>=4; extra == "cli"']}
    installed = {"icml25-shared", "tqdm", "numpy"}

    def version(name):
        if name not in installed:
            raise cli.metadata.PackageNotFoundError(name)
        return "1.0"

    monkeypatch.setattr(cli.metadata, "requires", lambda dist: requires[dist])
    monkeypatch.setattr(cli.metadata, "version", version)
    monkeypatch.setattr(cli, "_module_importable", lambda name: name in installed)
    assert missing_extra("pkg", "cli") == ["matplotlib"]
    installed.add("matplotlib")
    assert missing_extra("pkg", "cli") == []


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


def test_a_module_installed_under_another_distribution_name_satisfies_the_extra(monkeypatch):
    """xgboost-cpu ships the `xgboost` module: `fastpd[xgboost]` is satisfied although no `xgboost` dist exists."""
    import icml25_shared.cli as cli

    requires = ['numpy; extra == "fast"', 'json-five; extra == "fast"']

    def fake_requires(dist):
        return requires

    def fake_version(name):
        raise cli.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(cli.metadata, "requires", fake_requires)
    monkeypatch.setattr(cli.metadata, "version", fake_version)
    # numpy is importable (under any distribution name); json_five is not
    assert cli.missing_extra("toy", "fast") == ["json-five"]
