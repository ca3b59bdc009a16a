"""The figure check: every figure a command saves is checked where it is saved (tools/checks.py figures)."""

import os
from pathlib import Path

import pytest

import checks
from new_package import create_package

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def toy(tmp_path, monkeypatch):
    """A template package importable from its source tree (the runner's subprocess sees PYTHONPATH)."""
    import shutil

    shutil.copytree(ROOT / "shared", tmp_path / "shared", ignore=shutil.ignore_patterns("__pycache__", "tests"))
    create_package("gamma-pkg", summary="toy", root=tmp_path)
    member = checks.workspace(tmp_path)[1]
    path = os.pathsep.join([str(member.path / "src"), os.environ.get("PYTHONPATH", "")])
    monkeypatch.setenv("PYTHONPATH", path)
    return tmp_path, member


STORED = {"confidence": 0.95, "replications": 400, "seed": 0, "coverage": {
    str(n): {name: {"coverage": 0.94, "low": 0.91, "high": 0.96} for name in ("bootstrap", "t")} for n in (10, 30)}}


def test_the_template_figures_pass_and_a_missing_label_is_reported_at_its_line(toy):
    pytest.importorskip("matplotlib")
    import json

    root, member = toy
    (member.path / "results").mkdir()
    (member.path / "results" / "reproduce.json").write_text(json.dumps(STORED))
    runs: list = []
    assert checks.check_figures(checks.workspace(root), runs=runs) == []
    assert [(r.command, r.code) for r in runs] == [("demo --quick", 0)]
    # the demo's figure, then the stored reproduce figure drawn by reproduce_figure (no rerun)
    assert [f["file"] for f in runs[0].figures] == ["demo.png", "reproduce_figure(results/reproduce.json)"]
    source = member.src / "experiments.py"
    text = source.read_text()
    source.write_text(text.replace('    ax.set_ylabel("target mean")\n', "").replace('    ax.set_ylabel("coverage")\n', ""))
    problems = checks.check_figures(checks.workspace(root))
    assert len(problems) == 2, problems
    lines = source.read_text().splitlines()
    saved_at = next(i for i, line in enumerate(lines, 1) if "ctx.save_figure(fig)" in line)
    drawn_by = next(i for i, line in enumerate(lines, 1) if line.startswith("def reproduce_figure("))
    assert [(p.path, p.line) for p in problems] == [(source, saved_at), (source, drawn_by)]
    assert "`demo --quick` saves demo.png (5 x 3 in): axes 0 ('friedman1, seed 0: 95% intervals') has no y label" in \
        problems[0].message
    assert "saves reproduce_figure(results/reproduce.json) (5 x 3 in): axes 0" in problems[1].message


def test_a_failing_command_is_reported_not_skipped(toy):
    root, member = toy
    experiments = member.src / "experiments.py"
    experiments.write_text(experiments.read_text().replace('    ctx.write_table(rows, headers=list(rows[0]))\n',
                                                           '    raise RuntimeError("planted")\n', 1))
    (problem,) = checks.check_figures(checks.workspace(root))
    assert problem.path == member.src / "__main__.py"
    assert "`demo --quick` failed (exit 1), so its figures went unchecked" in problem.message
    assert "RuntimeError: planted" in problem.message


def test_rotated_tick_labels_are_compared_as_drawn():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from icml25_shared.testing import figure_problems

    def labelled(count, width, rotation):
        fig, ax = plt.subplots(figsize=(width, 3))
        ax.bar(range(count), [1] * count)
        ax.set_xticks(range(count), [f"strategy-{i:02d}" for i in range(count)], rotation=rotation, ha="right",
                      rotation_mode="anchor")
        ax.set_xlabel("strategy")
        ax.set_ylabel("success")
        problems = figure_problems(fig)
        plt.close(fig)
        return problems

    assert labelled(6, 6, 0) != []  # upright labels 14 characters long at 1 in apart collide
    assert labelled(6, 6, 35) == []  # their upright boxes overlap, the slanted glyphs do not
    assert len(labelled(30, 4, 35)) >= 29  # crowded slanted labels still collide with each neighbour


def test_a_stored_figure_that_cannot_be_drawn_is_reported_and_the_demo_still_checked(toy):
    import json

    root, member = toy
    (member.path / "results").mkdir()
    (member.path / "results" / "reproduce.json").write_text(json.dumps(STORED))
    pyproject = member.path / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('"results/reproduce.json" = "reproduce_figure"',
                                                       '"results/reproduce.json" = "friedman1_target"'))
    runs: list = []
    (problem,) = checks.check_figures(checks.workspace(root), runs=runs)
    assert [f["file"] for f in runs[0].figures] == ["demo.png"]
    assert problem.path == member.src / "experiments.py"
    assert "friedman1_target(" in problem.message and "[tool.icml25.stored-figures]) failed" in problem.message
    assert "TypeError" in problem.message
