"""RetroPlanner: least-cost routes over a toy one-step model, budgets, cycles and bad model answers."""

import math

import pytest

from fmg import evaluate
from fmg.retro import RetroPlanner

# a toy one-step model: product -> [(reactants, probability)]
TOY = {
    "CCOC(C)=O": [(("CC(=O)O", "CCO"), 0.6), (("CC(=O)Cl", "CCO"), 0.4)],
    "CC(=O)O": [(("CC=O",), 0.5)],
    "CC(=O)Cl": [(("CC(=O)O", "O=S(Cl)Cl"), 0.9)],
    "CCCCO": [(("CCCC=O",), 0.7)],
    "CCCC=O": [(("CCCCO",), 0.7)],  # a cycle with the line above
    "CC(C)O": [(("CC(C)=O",), 0.8)],
}


def toy(smiles):
    return TOY.get(smiles, [])


def test_least_cost_route_and_starting_materials():
    planner = RetroPlanner(toy, ["CC(=O)O", "CCO", "CC(=O)Cl", "O=S(Cl)Cl"])
    route = planner.plan("O=C(C)OCC")  # any spelling of ethyl acetate
    assert route.target == "CCOC(C)=O" and route.cost == pytest.approx(-math.log(0.6))
    assert route.reactions == (("CCOC(C)=O", ("CC(=O)O", "CCO"), pytest.approx(-math.log(0.6))),)
    assert route.starting_materials == {"CC(=O)O", "CCO"}
    # without acetic acid in stock: through the acid chloride, or two steps through acetaldehyde
    planner = RetroPlanner(toy, ["CCO", "CC(=O)Cl", "CC=O"])
    route = planner.plan("CCOC(C)=O")
    assert route.cost == pytest.approx(-math.log(0.4)) and -math.log(0.4) < -math.log(0.6) - math.log(0.5)
    assert route.starting_materials == {"CC(=O)Cl", "CCO"}
    assert planner.plan("CCO").reactions == ()  # a building block needs no step


def test_budget_depth_cycles_and_success_rate():
    stock = ["CC=O", "CCO"]
    assert RetroPlanner(toy, stock).plan("CCOC(C)=O").cost == pytest.approx(-math.log(0.6) - math.log(0.5))
    assert RetroPlanner(toy, stock, max_iterations=1).plan("CCOC(C)=O") is None
    assert RetroPlanner(toy, stock, max_depth=1).plan("CCOC(C)=O") is None
    assert RetroPlanner(toy, stock).plan("CCCCO") is None  # the cycle ends, no route
    planner = RetroPlanner(toy, ["CC(C)=O", "CCO", "CC=O"])
    assert planner.success_rate(["CC(C)O", "CCCCO", "CCOC(C)=O", "CCO"]) == 0.75
    m = evaluate(["CC(C)O", "CCCCO", "CCOC(C)=O", "CCO"], ["CCO"], planner=planner)
    assert m.rs == 0.75 and math.isnan(evaluate(["CCO"], ["CCO"]).rs)


def test_cost_scores_and_bad_answers():
    costs = {"CCOC(C)=O": [(("CC(=O)O", "CCO"), 2.0), (("CC(=O)Cl", "CCO"), 0.5)]}
    planner = RetroPlanner(lambda s: costs.get(s, []), ["CC(=O)O", "CC(=O)Cl", "CCO"], scores="cost")
    assert planner.plan("CCOC(C)=O").cost == 0.5
    bad = [({"CCOC(C)=O": [(("CCO",), 1.5)]}, r"answer 0: probability 1.5 not in \(0, 1\]"),
           ({"CCOC(C)=O": [("CCO", 0.5)]}, r"answer 0: reactants must be a non-empty sequence"),
           ({"CCOC(C)=O": [(("C1CC",), 0.5)]}, r"answer 0: reactant 'C1CC': RDKit cannot parse"),
           ({"CCOC(C)=O": ["CCO"]}, r"answer 0 is 'CCO'; expected \(reactants, score\)")]
    for table, match in bad:
        with pytest.raises(ValueError, match=match):
            RetroPlanner(lambda s, t=table: t.get(s, []), ["CCO"]).plan("CCOC(C)=O")
    with pytest.raises(ValueError, match=r"one_step\('CCOC\(C\)=O'\) returned None; expected a list"):
        RetroPlanner(lambda s: None, ["CCO"]).plan("CCOC(C)=O")
    with pytest.raises(ValueError, match="building block 1 'C1CC': RDKit cannot parse"):
        RetroPlanner(toy, ["CCO", "C1CC"])
    with pytest.raises(ValueError, match="target '': RDKit cannot parse"):
        RetroPlanner(toy, ["CCO"]).plan("")
    with pytest.raises(ValueError, match="max_iterations must be a positive int, got 0"):
        RetroPlanner(toy, ["CCO"], max_iterations=0)
    with pytest.raises(ValueError, match="scores must be 'probability' or 'cost'"):
        RetroPlanner(toy, ["CCO"], scores="logit")
    with pytest.raises(TypeError, match="one_step must be callable"):
        RetroPlanner({}, ["CCO"])


def test_a_route_found_within_the_budget_is_returned():
    # one call shows a complete route (cost -log 0.5) and a cheaper open branch that needs a second call
    table = {"CCOC(C)=O": [(("CCOC(C)=N",), 0.9), (("CC(=O)O", "CCO"), 0.5)]}
    planner = RetroPlanner(lambda s: table.get(s, []), ["CC(=O)O", "CCO"], max_iterations=1)
    route = planner.plan("CCOC(C)=O")
    assert route is not None and route.cost == pytest.approx(-math.log(0.5))
    assert route.starting_materials == {"CC(=O)O", "CCO"}


def test_the_budget_bounds_the_search_when_molecules_recur():
    # twelve molecules that all make each other, none purchasable: without a bound on expansions the
    # search would walk every chain of up to max_depth steps (10^10 partial routes)
    import time

    pool = ["C" * k + "O" for k in range(1, 13)]
    calls = []

    def model(s):
        calls.append(s)
        return [((m,), 0.5) for m in pool if m != s][:10]

    start = time.perf_counter()
    assert RetroPlanner(model, ["N"], max_iterations=200).plan("CO") is None
    assert time.perf_counter() - start < 5 and len(calls) <= 12


def test_top_k_keeps_the_cheapest_answers_in_any_order():
    # the model lists its answers worst first: top_k=1 must keep the probable one, not the first listed
    table = {"CCOC(C)=O": [(("CCOC(C)=N",), 0.1), (("CC(=O)O", "CCO"), 0.8)]}
    route = RetroPlanner(lambda s: table.get(s, []), ["CC(=O)O", "CCO"], top_k=1).plan("CCOC(C)=O")
    assert route is not None and route.cost == pytest.approx(-math.log(0.8))
    with pytest.raises(ValueError, match="not a single string"):
        RetroPlanner(toy, ["CCO"]).success_rate("CCO")  # would plan the atoms C, C and O
    with pytest.raises(ValueError, match="not the single string 'CCO'"):
        RetroPlanner(toy, "CCO")  # would stock C and O
