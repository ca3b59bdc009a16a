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
    with pytest.raises(ValueError, match="unknown dataset 'zinc'; accepted: isocyanates, acrylates.*hopv, ptc"):
        load_dataset("zinc")
    with pytest.raises(ValueError, match="dataset 'hopv' is not shipped: pass path="):
        load_dataset("hopv")
    with pytest.raises(ValueError, match="dataset 'isocyanates' is shipped; path is only for hopv, ptc"):
        load_dataset("isocyanates", path="x.txt")
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
    with pytest.raises(ValueError, match="n must be an int >= 0"):
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


HOPV15 = """Cc1ccc(-c2ccc(C)s2)s1
InChI=1S/C10H10S2/c1-7-3-5-9(11-7)10-6-4-8(2)12-10/h3-6H,1-2H3
-5.2,-3.1,2.1,1.9,1.2,0.8,5.1,0.6
Cc1ccc(-c2ccc(C)s2)s1
1
Conformer 1
2
C 0.0 0.0 0.0
C 1.5 0.0 0.0
c1ccc2c(c1)oc1ccccc12
InChI=1S/C12H8O/c1-3-7-11-9(5-1)10-6-2-4-8-12(10)13-11/h1-8H
-5.6,-2.4,3.2,3.0,0.4,0.5,1.1,0.3
"""


def test_hopv_and_ptc_local_files(tmp_path):
    from rdkit import Chem

    from fmg import load_hopv, load_ptc

    raw = tmp_path / "HOPV_15_revised_2.data"
    raw.write_text(HOPV15)
    assert load_hopv(raw) == ["Cc1ccc(-c2ccc(C)s2)s1", "c1ccc2c(c1)oc1ccccc12"]
    assert load_dataset("hopv", path=raw) == load_hopv(raw)
    csv = tmp_path / "hopv.csv"
    csv.write_text("smiles,HOMO,LUMO\nCc1ccc(-c2ccc(C)s2)s1,-5.2,-3.1\nc1ccsc1,-5.9,-1.0\n")
    assert load_hopv(csv) == ["Cc1ccc(-c2ccc(C)s2)s1", "c1ccsc1"]
    ptc_csv = tmp_path / "ptc.csv"
    ptc_csv.write_text("id;SMILES;label\n1;ClCCl;1\n2;O=[N+]([O-])c1ccccc1;0\n")
    assert load_ptc(ptc_csv) == ["ClCCl", "O=[N+]([O-])c1ccccc1"]
    sdf = tmp_path / "ptc.sdf"
    with Chem.SDWriter(str(sdf)) as w:
        for s in ("ClCCl", "Nc1ccccc1"):
            w.write(Chem.MolFromSmiles(s))
    assert load_dataset("ptc", path=sdf) == ["ClCCl", "Nc1ccccc1"]
    plain = tmp_path / "ptc.txt"
    plain.write_text("ClCCl\nNc1ccccc1\n")
    assert load_ptc(plain) == ["ClCCl", "Nc1ccccc1"]
    model = FMG(HeuristicChemJudge()).fit(load_hopv(raw) + load_ptc(sdf))
    for s in model.train_smiles_:
        assert model.replay(model.derive(s)) == s


def test_hopv_and_ptc_bad_files(tmp_path):
    from fmg import load_hopv, load_ptc

    with pytest.raises(FileNotFoundError, match="missing.data: no such file"):
        load_hopv(tmp_path / "missing.data")
    bad = tmp_path / "ptc.csv"
    bad.write_text("id,structure\n1,CCO\n")
    with pytest.raises(ValueError, match="no 'smiles' column \\(found 'id', 'structure'\\); pass smiles_column"):
        load_ptc(bad)
    assert load_ptc(bad, smiles_column="Structure") == ["CCO"]
    sdf = tmp_path / "broken.sdf"
    sdf.write_text("not a molecule\n$$$$\n")
    with pytest.raises(ValueError, match="SDF record 0 cannot be read"):
        load_ptc(sdf)


def test_local_files_in_other_encodings_and_layouts(tmp_path):
    from fmg import load_hopv, load_ptc, load_smiles

    cases = {  # a file written by Excel or Windows tools: byte-order marks, UTF-16, Latin-1 names
        "bom.txt": "\ufeffCCO\nCCN\n".encode(),
        "bom.csv": "\ufeffsmiles,name\nCCO,ethanol\nCCN,ethylamine\n".encode(),
        "latin1.csv": "smiles,name\nCCO,\xe9thanol\nCCN,\xe9thylamine\n".encode("latin-1"),
        "utf16.csv": "smiles\tname\r\nCCO\tethanol\r\nCCN\tethylamine\r\n".encode("utf-16"),
        "tab.txt": b"SMILES\tname\nCCO\tethanol\nCCN\tethylamine\n",
        "header.smi": b"smiles name\nCCO ethanol\nCCN ethylamine\n",
        # an InChI column first: its lines start with "InChI=" but the file is a CSV, not HOPV15 raw
        "inchi.csv": b"inchi,smiles\n\"InChI=1S/C2H6O/c1-2-3/h3H,2H2,1H3\",CCO\n\"InChI=1S/C2H7N/c1-2-3/h2-3H2,1H3\",CCN\n",
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        assert load_ptc(tmp_path / name) == ["CCO", "CCN"], name
        assert load_hopv(tmp_path / name) == ["CCO", "CCN"], name
    assert load_smiles(tmp_path / "bom.txt") == ["CCO", "CCN"]
    assert load_smiles(tmp_path / "header.smi") == ["CCO", "CCN"]


def test_malformed_hopv_and_empty_files_are_named(tmp_path):
    from fmg import load_hopv, load_ptc

    raw = tmp_path / "HOPV_15_revised_2.data"
    # the second record lost its SMILES line: it must not vanish silently
    raw.write_text("CCO\nInChI=1S/C2H6O/c1-2-3/h3H,2H2,1H3\n1,2\nCCO\n1\n\nInChI=1S/CH4O/c1-2/h2H,1H3\n")
    with pytest.raises(ValueError, match="line 7: an InChI line without the SMILES line before it"):
        load_hopv(raw)
    shifted = tmp_path / "shifted.csv"  # unquoted InChI: its commas split it into several fields
    shifted.write_text("inchi,smiles\nInChI=1S/C2H6O/c1-2-3/h3H,2H2,1H3,CCO\n")
    with pytest.raises(ValueError, match="line 2: 4 fields, the header has 2"):
        load_hopv(shifted)
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(ValueError, match="empty.csv: the file is empty"):
        load_ptc(empty)
