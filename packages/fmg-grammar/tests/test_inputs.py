"""Bad inputs raise errors that name the molecule or index and the accepted values."""

import pytest
from sklearn.exceptions import NotFittedError

from fmg import FMG, HeuristicChemJudge, evaluate, load_dataset, load_smiles, membership


@pytest.mark.parametrize(("smiles", "match"), [
    ("", r"molecule 1 '': expected a non-empty SMILES"),
    ("C1CC", r"molecule 1 'C1CC': RDKit cannot parse"),
    ("c1cccc1", r"molecule 1 'c1cccc1': RDKit cannot sanitise or kekulise"),
    ("CCO.CC", r"molecule 1 'CCO.CC': has 2 fragments"),
    ("C", r"molecule 1 'C': has no bond"),
    (None, r"molecule 1 None: expected a non-empty SMILES"),
])
def test_bad_molecules_are_named_with_their_index(smiles, match):
    with pytest.raises(ValueError, match=match):
        FMG(HeuristicChemJudge()).fit(["CCO", smiles])


def test_unknown_dataset_and_class():
    with pytest.raises(ValueError, match="unknown dataset 'hopv'; accepted: isocyanates, acrylates"):
        load_dataset("hopv")
    with pytest.raises(ValueError, match="unknown monomer class 'polymers'; accepted: isocyanates"):
        membership(["CCO"], "polymers")
    with pytest.raises(ValueError, match="unknown monomer class"):
        evaluate(["CCO"], ["CCO"], "polymers")


def test_bad_options_and_unfitted_model(tmp_path):
    with pytest.raises(ValueError, match="root must be 'judge' or 'random', got 'first'"):
        FMG(HeuristicChemJudge(), root="first").fit(["CCO"])
    with pytest.raises(ValueError, match="tree must be 'judge' or 'max-spanning'"):
        FMG(HeuristicChemJudge(), tree="min").fit(["CCO"])
    with pytest.raises(TypeError, match="lacks describe_motifs"):
        FMG(object()).fit(["CCO"])
    with pytest.raises(ValueError, match="non-empty sequence"):
        FMG(HeuristicChemJudge()).fit("CCO")
    with pytest.raises(NotFittedError, match="call fit"):
        FMG(HeuristicChemJudge()).sample(3)
    model = FMG(HeuristicChemJudge()).fit(["CCO"])
    with pytest.raises(ValueError, match="'CCCC' was not in the training set"):
        model.derive("CCCC")
    with pytest.raises(ValueError, match="n must be a non-negative int"):
        model.sample(-1)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    with pytest.raises(ValueError, match="no SMILES found"):
        load_smiles(empty)


def test_local_smiles_file_and_duplicates(tmp_path):
    path = tmp_path / "hopv.csv"
    path.write_text("# smiles name\nOCCO a\n\nOCCCO b\nC(O)CO c\n")
    smiles = load_smiles(path)
    assert smiles == ["OCCO", "OCCCO", "C(O)CO"]
    assert FMG(HeuristicChemJudge()).fit(smiles).train_smiles_ == ["OCCO", "OCCCO"]


def test_explicit_hydrogen_atoms_are_the_same_molecule(tmp_path):
    # "[H]OCC" is ethanol: one training molecule, derivable under either spelling
    model = FMG(HeuristicChemJudge()).fit(["CCO", "[H]OCC", "[H]C([H])([H])CO"])
    assert model.train_smiles_ == ["CCO"]
    assert model.replay(model.derive("[H]OCC")) == "CCO"
    assert all("[H]" not in s for s in model.sample(20, random_state=0).smiles)
    # hydrogen isotopes are atoms of their own and stay
    assert FMG(HeuristicChemJudge()).fit(["[2H]OCC"]).train_smiles_ == ["[2H]OCC"]


@pytest.mark.parametrize("smiles", ["C/C=C/C(=O)O", "C[C@H](N)C(=O)O"])
def test_removed_stereochemistry_is_announced(smiles):
    with pytest.warns(UserWarning, match=r"molecule 0 '.*': stereochemistry removed"):
        model = FMG(HeuristicChemJudge()).fit([smiles])
    assert "/" not in model.train_smiles_[0] and "@" not in model.train_smiles_[0]


def test_charges_and_isotopes_round_trip_exactly():
    train = ["C[N+](C)(C)CC(=O)[O-]", "O=[N+]([O-])c1ccccc1", "[13CH3]CO", "[O-]C1=CC=CC=[N+]1",
             "c1ccncc1", "c1cc[nH]c1", "c1ccsc1", "C1CCCCCCCCCCCCCCCCCCCCC1", "C1CC2CCC1C2"]
    import warnings

    from rdkit import Chem

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no stereo here, so no warning
        model = FMG(HeuristicChemJudge()).fit(train)
    for s in train:
        assert model.replay(model.derive(s)) == Chem.MolToSmiles(Chem.MolFromSmiles(s))
