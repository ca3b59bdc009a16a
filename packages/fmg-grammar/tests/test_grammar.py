"""Grammar: exact round trips, normalised probabilities, valid and reproducible samples."""

import numpy as np
import pytest
from rdkit import Chem

from fmg import FMG, Grammar, HeuristicChemJudge, canonical_smiles, load_dataset
from fmg.experiments import CONFIGS as ABLATIONS
from fmg.experiments import SETS


@pytest.mark.parametrize("ablation", list(ABLATIONS))
def test_every_training_molecule_round_trips_exactly(fitted, datasets, ablation):
    for name in SETS:
        model = fitted[(name, ablation)]
        for smiles in datasets[name]:
            assert model.replay(model.derive(smiles)) == canonical_smiles(smiles), (name, smiles)


def test_rule_counts_equal_tree_nodes_and_probabilities_sum_to_one(fitted):
    for model in fitted.values():
        g = model.grammar_
        assert sum(g.counts) == sum(len(d.motifs) for d in model.decompositions_)
        p = g.probabilities()
        for lhs in {r.lhs for r in g.rules}:
            idx = [i for i, r in enumerate(g.rules) if r.lhs == lhs]
            assert abs(p[idx].sum() - 1.0) < 1e-12
            counts = np.array([g.counts[i] for i in idx])
            np.testing.assert_allclose(p[idx], counts / counts.sum(), rtol=0, atol=1e-15)


def test_rules_are_deduplicated_up_to_isomorphism(fitted):
    g = fitted[("isocyanates", "FMG")].grammar_
    for i, r in enumerate(g.rules):
        assert g.find(r)[0] == i
    both = g.combine(g)
    assert both.n_rules == g.n_rules and both.counts == [2 * c for c in g.counts]


def test_save_load_keeps_rules_counts_and_derivations(fitted, tmp_path):
    model = fitted[("acrylates", "FMG")]
    loaded = Grammar.load(model.grammar_.save(tmp_path / "g.json"))
    assert loaded.rules == model.grammar_.rules and loaded.counts == model.grammar_.counts
    assert loaded.descriptions == model.grammar_.descriptions and loaded.sources == model.grammar_.sources
    assert all(d.startswith("Motif ") for d in loaded.descriptions) and all(loaded.sources)
    for smiles in load_dataset("acrylates")[:5]:
        assert loaded.replay(model.derive(smiles)) == canonical_smiles(smiles)


def test_samples_are_valid_single_molecules_and_reproducible(fitted, isocyanate_draws):
    model = fitted[("isocyanates", "FMG")]
    first = isocyanate_draws
    assert len(first.smiles) == 500
    for s in first.smiles:
        mol = Chem.MolFromSmiles(s)
        assert mol is not None and len(Chem.GetMolFrags(mol)) == 1 and canonical_smiles(s) == s
    # draw k has its own stream: a shorter run with the same seed repeats the first draws exactly
    again = model.sample(100, random_state=0)
    assert again.smiles == first.smiles[:100]
    assert model.sample(100, random_state=1).smiles != first.smiles[:100]


def test_samples_do_not_depend_on_n_jobs(fitted):
    model = fitted[("chain_extenders", "FMG")]
    assert model.sample(40, random_state=7, n_jobs=2) == model.sample(40, random_state=7)
    # collecting distinct molecules: the same molecules and the same count of rejected derivations
    # (the batches of two workers draw further ahead; draws past the n-th distinct one do not count)
    one = model.sample(40, random_state=3, unique=True)
    assert one == model.sample(40, random_state=3, unique=True, n_jobs=2) and one.n_rejected > 0


def test_index_lookup_draws_what_a_graphmatcher_scan_draws(fitted):
    g = fitted[("acrylates", "FMG")].grammar_
    for label in {r.lhs for r in g.rules} | {((1, 1), (2, 0))}:
        assert g.candidates(label) == g.candidates_scan(label)
    model = fitted[("acrylates", "FMG")]
    free = {"context": None, "budget": None}
    assert model.sample(30, random_state=3, **free) == model.sample(30, random_state=3, scan=True, **free)


def test_unique_collection_gives_distinct_samples(fitted):
    model = fitted[("chain_extenders", "FMG")]
    out = model.sample(60, random_state=0, unique=True)
    assert len(set(out.smiles)) == 60


def test_single_bond_molecule_and_small_training_set():
    model = FMG(HeuristicChemJudge()).fit(["CO", "CCO"])
    assert model.replay(model.derive("OC")) == "CO"
    samples = model.sample(50, random_state=0).smiles
    for s in samples:  # only the atoms and hydrogen counts of the training molecules
        assert {a.GetSymbol() for a in Chem.MolFromSmiles(s).GetAtoms()} <= {"C", "O"}
    assert {"CO", "CCO"} <= set(samples)


@pytest.mark.slow
def test_readme_isocyanate_numbers(fitted, datasets, isocyanate_draws):
    from fmg import evaluate

    model = fitted[("isocyanates", "FMG")]
    distinct = evaluate(model.sample(500, random_state=0, unique=True).smiles, datasets["isocyanates"], "isocyanates")
    assert distinct.valid == 1.0 and distinct.unique == 1.0
    assert distinct.diversity > 0.727 and round(distinct.diversity, 3) == 0.736
    assert distinct.membership >= 0.8 and round(distinct.membership, 3) == 0.92
    independent = evaluate(isocyanate_draws.smiles, datasets["isocyanates"], "isocyanates")
    assert independent.valid == 1.0 and round(independent.unique, 2) == 0.54


@pytest.mark.slow
def test_polymers_117_round_trip():
    # the first 25 molecules here; all 117: studies/polymers_round_trip.py
    model = FMG(HeuristicChemJudge()).fit(load_dataset("polymers_117")[:25])
    assert len(model.train_smiles_) == 25
    for smiles in model.train_smiles_:
        assert model.replay(model.derive(smiles)) == smiles
    assert all(Chem.MolFromSmiles(s) is not None for s in model.sample(50, random_state=0).smiles)


def test_rule_choice_is_numpys_choice():
    from fmg.grammar import _choose

    gen = np.random.default_rng(11)
    for _ in range(2000):
        p = gen.integers(1, 30, size=int(gen.integers(1, 9))).astype(float)
        seed = int(gen.integers(2**32))
        a, b = np.random.default_rng(seed), np.random.default_rng(seed)
        assert _choose(b, p) == int(a.choice(len(p), p=p / p.sum())) and a.random() == b.random()


@pytest.mark.parametrize(("edit", "match"), [
    (lambda d: d["counts"].__setitem__(0, -5), r"count of rule 0 is -5; accepted: a finite number > 0"),
    (lambda d: d["counts"].__setitem__(1, float("nan")), r"count of rule 1 is nan"),
    (lambda d: d["counts"].pop(), r"2 counts for 3 rules"),
    (lambda d: d["rules"][2].pop("lhs"), r"rule 2 is malformed \(KeyError: 'lhs'\)"),
])
def test_a_corrupted_grammar_file_is_refused(tmp_path, edit, match):
    import json

    d = FMG(HeuristicChemJudge()).fit(["CCO", "OCCO"]).grammar_.to_json()
    assert len(d["rules"]) == 3
    edit(d)
    (tmp_path / "g.json").write_text(json.dumps(d))
    with pytest.raises(ValueError, match=match):
        Grammar.load(tmp_path / "g.json")
    with pytest.raises(ValueError, match="count must be a finite number > 0"):
        Grammar().add(Grammar.from_json(FMG(HeuristicChemJudge()).fit(["CCO"]).grammar_.to_json()).rules[0], 0.0)


def test_step_rejection_and_uniform_weights(fitted):
    model = fitted[("isocyanates", "FMG")]
    g = model.grammar_
    uniform = g.probabilities("uniform")
    for idx in g._by_lhs.values():
        np.testing.assert_allclose(uniform[idx], 1 / len(idx), rtol=0, atol=1e-15)
    step = model.sample(30, random_state=4, rejection="step")
    for s in step.smiles:
        mol = Chem.MolFromSmiles(s)
        assert mol is not None and len(Chem.GetMolFrags(mol)) == 1 and canonical_smiles(s) == s
    # the same draws again, with two workers and with the GraphMatcher scan
    assert model.sample(30, random_state=4, rejection="step", n_jobs=2) == step
    free = {"context": None, "budget": None}
    assert model.sample(10, random_state=4, rejection="step", scan=True, **free).smiles == model.sample(
        10, random_state=4, rejection="step", **free).smiles
    # refusing single steps keeps larger molecules than redrawing whole derivations (context-free lookup)
    whole = model.sample(30, random_state=4, **free)
    step = model.sample(30, random_state=4, rejection="step", **free)
    assert step.n_rejected < whole.n_rejected
    size = lambda smiles: np.mean([Chem.MolFromSmiles(s).GetNumAtoms() for s in smiles])  # noqa: E731
    assert size(step.smiles) > size(whole.smiles)
    assert len(set(model.sample(30, random_state=4, rejection="step", weights="uniform").smiles)) > len(set(whole.smiles))
    with pytest.raises(ValueError, match="rejection must be one of .*'derivation'.*; got str 'rule'"):
        model.sample(3, rejection="rule")
    with pytest.raises(ValueError, match="weights must be one of 'counts', 'uniform'; got 'softmax'"):
        g.probabilities("softmax")


def test_step_check_refuses_a_second_bond_between_two_atoms():
    from fmg.grammar import Rule, _expand, _fits, _Host

    c3, c2 = ("C", 0, 3, 0), ("C", 0, 2, 0)
    # start: CH3 (atom 0) - C (atom 1) on bond node 0; atom 1 also touches nodes 1 and 2, left to a nonterminal
    start = Rule((), (1, 1, 1), (), ((c3, (0,)), (("C", 0, 1, 0), (0, 1, 2))), (((1, 2), (1, 1)),))
    host = _Host()
    _expand(host, (), start, ())
    assert host.ends == {0: [0, 1], 1: [1], 2: [1]} and host.pairs == {(0, 1)}
    one_atom_on_both = Rule(((1, 1), (1, 1)), (1, 1), (0, 1), ((c2, (0, 1)),), ())  # a second bond 1-2
    one_atom_each = Rule(((1, 1), (1, 1)), (1, 1), (0, 1), ((c3, (0,)), (c3, (1,))), ())
    two_on_one = Rule(((1, 1), (1, 1)), (1, 1), (0, 1), ((c3, (0,)), (c3, (0,)), (c3, (1,))), ())
    assert not _fits(host, (1, 2), one_atom_on_both, (0, 1))
    assert not _fits(host, (1, 2), two_on_one, (0, 1))  # three atoms on one bond
    assert _fits(host, (1, 2), one_atom_each, (0, 1))
    _expand(host, (1, 2), one_atom_each, (0, 1))
    assert host.pairs == {(0, 1), (1, 2), (1, 3)}
    from fmg.chem import build_molecule

    assert Chem.MolToSmiles(build_molecule(host.atoms, host.node_order)) == "CC(C)C"


def test_sampling_gives_up_with_a_named_error(fitted):
    model = fitted[("chain_extenders", "FMG")]
    for kw in ({}, {"unique": True}, {"n_jobs": 2}):
        with pytest.raises(RuntimeError, match="no valid molecule in 3 derivations; raise max_tries or max_steps"):
            model.grammar_.sample(4, random_state=0, max_steps=1, max_tries=3, **kw)
    for kw in ({"max_tries": 0}, {"max_steps": -1}, {"n_jobs": 0}):
        with pytest.raises(ValueError, match=f"{next(iter(kw))} must be an int >= 1"):
            model.grammar_.sample(4, random_state=0, **kw)
    ethane = FMG(HeuristicChemJudge()).fit(["CC"])  # one molecule only
    for n_jobs in (1, 2):
        with pytest.raises(RuntimeError, match="only 1 distinct molecules in 4 draws"):
            ethane.sample(2, random_state=0, unique=True, max_tries=2, n_jobs=n_jobs)
