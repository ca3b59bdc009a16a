"""The README's robust-overfitting pilot tables are the stored results, rendered by the pilot script."""

import importlib.util
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def pilot():
    spec = importlib.util.spec_from_file_location("robust_overfitting_pilot",
                                                  PACKAGE / "studies/robust_overfitting_pilot.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: the result files of the README's pilot table, in its row order
README_PILOTS = ["robust-overfitting-pilot-150-small.json", "robust-overfitting-pilot-150-small-seed1-noise.json",
                 "robust-overfitting-pilot-100-wide-noise.json", "robust-overfitting-pilot-100-wide-clean.json"]


def test_the_readme_shows_the_rendered_pilot_table(pilot):
    table = pilot.render([str(PACKAGE / "results" / f) for f in README_PILOTS])
    assert table in (PACKAGE / "README.md").read_text()


def test_no_pilot_of_the_readme_passed_the_gate(pilot):
    """The README's verdict (no robust overfitting, the grid not run) is what the stored rows say."""
    import json

    rows = [r for f in README_PILOTS for r in json.loads((PACKAGE / "results" / f).read_text())["pilots"]]
    assert len(rows) == 5 and all(r["trained"] and not r["gate_passed"] for r in rows)
    assert all(r["test"]["best"]["cas"] > r["test"]["last"]["cas"] for r in rows)  # the README's observation
    assert all(r["test_robust_best_minus_last"] < 0.03 for r in rows)
    assert all(r["eps"] == 0.3 and r["train_pgd_steps"] == 10 for r in rows)


def test_the_completed_pilots_did_not_pass_the_gate(pilot):
    table = pilot.render([str(PACKAGE / "results/robust-overfitting-pilot-30-noise.json"),
                          str(PACKAGE / "results/robust-overfitting-pilot-30-clean.json")])
    rows = table.splitlines()[2:]
    assert [r.split(" | ")[1] for r in rows] == ["21 of 30", "19 of 30"]
    assert [r.split(" | ")[3] for r in rows] == ["+0.002", "-0.002"]
    assert all(r.endswith("| not passed |") for r in rows)
