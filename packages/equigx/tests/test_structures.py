"""PDB / SDF readers, complex graphs and the BioLiP and SCOP loaders on tiny files written here."""

import shutil

import numpy as np
import pytest
import torch

from equigx.structures import (
    complex_graph,
    load_biolip,
    load_complex,
    load_scop,
    make_complexes,
    parse_affinity,
    read_pdb,
    read_sdf,
)


def _atom(serial, name, resname, chain, resseq, xyz, element, record="ATOM", altloc=" ", icode=" "):
    return (f"{record:<6}{serial:>5} {name:<4}{altloc}{resname:>3} {chain}{resseq:>4}{icode}   "
            f"{xyz[0]:>8.3f}{xyz[1]:>8.3f}{xyz[2]:>8.3f}{1.0:>6.2f}{0.0:>6.2f}          {element:>2}")


RESIDUES = [("ALA", 1), ("PHE", 2), ("GLY", 3), ("TRP", 4), ("LYS", 5), ("SER", 6)]


def _receptor(path, *, extra=()):
    lines = ["HELIX    1   1 ALA A    1  PHE A    2  1                                   2",
             "SHEET    1   A 2 TRP A   4  LYS A   5  0"]
    serial = 1
    for k, (res, num) in enumerate(RESIDUES):
        ca = (3.8 * k, 0.0, 0.0)
        lines.append(_atom(serial, "N", res, "A", num, (ca[0] - 1.0, 0.5, 0.0), "N"))
        lines.append(_atom(serial + 1, "CA", res, "A", num, ca, "C"))
        serial += 2
    # an alternate location B of residue 2's C-alpha and a water: both ignored
    lines.append(_atom(serial, "CA", "PHE", "A", 2, (50.0, 50.0, 50.0), "C", altloc="B"))
    lines.append(_atom(serial + 1, "O", "HOH", "A", 99, (1.0, 1.0, 1.0), "O", record="HETATM"))
    lines += list(extra)
    lines += ["END"]
    path.write_text("\n".join(lines) + "\n")


def _sdf(path, atoms):
    lines = ["lig", "  test", "", f"{len(atoms):>3}  0  0  0  0  0  0  0  0  0999 V2000"]
    for el, (x, y, z) in atoms:
        lines.append(f"{x:>10.4f}{y:>10.4f}{z:>10.4f} {el:<3} 0  0  0  0  0  0  0  0  0  0  0  0")
    lines += ["M  END", "$$$$"]
    path.write_text("\n".join(lines) + "\n")


def test_read_pdb_skips_water_and_alternate_locations_and_reads_ss_records(tmp_path):
    _receptor(tmp_path / "r.pdb")
    atoms = read_pdb(tmp_path / "r.pdb")
    ca = atoms.calpha()
    assert list(ca.resname) == [r for r, _ in RESIDUES]
    np.testing.assert_allclose(ca.pos[:, 0], 3.8 * np.arange(6))
    assert atoms.helix == [("A", 1, 2)] and atoms.sheet == [("A", 4, 5)]
    assert "HOH" not in set(atoms.resname)


def test_read_sdf_and_its_errors(tmp_path):
    _sdf(tmp_path / "l.sdf", [("C", (0, 0, 0)), ("Cl", (1.7, 0, 0)), ("H", (0, 1, 0))])
    el, pos = read_sdf(tmp_path / "l.sdf")
    assert list(el) == ["C", "CL", "H"] and pos.shape == (3, 3)
    (tmp_path / "v3.sdf").write_text("x\n\n\n  0  0  0     0  0            999 V3000\n")
    with pytest.raises(ValueError, match="V3000"):
        read_sdf(tmp_path / "v3.sdf")


def test_parse_affinity_units_and_preference():
    assert parse_affinity("Kd=1.5uM") == pytest.approx(1.5)
    assert parse_affinity("IC50=3nM; Ki=250nM") == pytest.approx(0.25)
    assert parse_affinity("Kd=2mM Ki=1nM") == pytest.approx(2000.0)  # Kd is preferred over Ki
    assert parse_affinity("IC50=3nM") is None


def test_complex_graph_pocket_and_hydrogens():
    prot = np.array([[0.0, 0, 0], [5, 0, 0], [30, 0, 0]])
    lig = np.array([[1.0, 1, 0], [1.5, 1, 0]])
    part = complex_graph(prot, np.array([0, 13, 20]), lig, np.array([0, 9]), pocket_radius=10.0,
                         protein_mask=np.array([True, False, True]), ligand_elements=["C", "H"])
    assert part["pos"].shape == (3, 3)  # residue 3 is outside the pocket, the hydrogen is dropped
    assert list(part["node_part"]) == [0, 0, 1] and list(part["node_mask"]) == [True, False, False]
    assert part["node_attr"].sum(axis=1).tolist() == [1, 1, 1] and part["node_attr"][1, 13] == 1
    with pytest.raises(ValueError, match="pocket"):
        complex_graph(prot[2:], np.array([0]), lig, np.array([0, 0]), pocket_radius=5.0)
    with pytest.raises(ValueError, match="finite"):
        complex_graph(prot, np.zeros(3, int), lig * np.nan, np.zeros(2, int))


def test_load_complex_and_biolip(tmp_path):
    (tmp_path / "receptor").mkdir()
    (tmp_path / "ligand").mkdir()
    _receptor(tmp_path / "receptor" / "1abcA.pdb")
    lig = [_atom(1, "C1", "LIG", "B", 1, (7.6, 3.0, 0.0), "C", record="HETATM"),
           _atom(2, "O1", "LIG", "B", 1, (7.6, 4.2, 0.0), "O", record="HETATM")]
    (tmp_path / "ligand" / "1abc_LIG_B_1.pdb").write_text("\n".join(lig) + "\nEND\n")
    cols = ["1abc", "A", "1.8", "BS01", "LIG", "B", "1", "F2 W4 G9", "", "", "", "", "", "", "", "Kd=10nM", "", ""]
    no_aff = ["1abc", "A", "1.8", "BS02", "LIG", "B", "1", "F2", "", "", "", "", "", "", "", "IC50=3nM", "", ""]
    dna = ["1abc", "A", "1.8", "BS03", "dna", "C", "1", "F2", "", "", "", "", "", "", "", "Kd=1uM", "", ""]
    gone = ["9xyz", "A", "1.8", "BS01", "LIG", "B", "1", "F2", "", "", "", "", "", "", "", "Kd=1uM", "", ""]
    (tmp_path / "BioLiP.txt").write_text("\n".join("\t".join(c) for c in (cols, no_aff, dna, gone)) + "\n")
    with pytest.raises(FileNotFoundError, match="9xyzA"):
        load_biolip(tmp_path)
    data = load_biolip(tmp_path, missing="skip", pocket_radius=None, dtype=torch.float64)
    assert data.ids == ["1abc_A_LIG_B_1"] and data.skipped == {"no_affinity": 1, "nucleic_acid": 1,
                                                               "missing_file": 1, "no_pocket": 0}
    g = data.graphs
    assert g.n_graphs == 1 and g.n_nodes == 8 and float(g.y[0]) == pytest.approx(8.0)  # 10 nM -> pK 8
    # binding site F2 and W4 (G9 is absent from the file); ligand atoms are never in the mask
    assert g.node_mask.tolist() == [False, True, False, True, False, False, False, False]
    assert g.node_part.tolist() == [0] * 6 + [1] * 2
    one = load_complex(tmp_path / "receptor" / "1abcA.pdb", tmp_path / "ligand" / "1abc_LIG_B_1.pdb",
                       pocket_radius=5.0, affinity_pk=7.0)
    assert one.node_part.tolist() == [0, 0, 0, 1, 1] and float(one.y[0]) == 7.0  # residues 2-4 within 5 A


def test_load_scop_with_secondary_structure_records(tmp_path):
    (tmp_path / "training").mkdir()
    for name in ("d1", "d2"):
        _receptor(tmp_path / "training" / f"{name}.pdb")
    (tmp_path / "training.txt").write_text("d1\tx\ta.1\nd2\tx\tb.2\n")
    data = load_scop(tmp_path, secondary="records")
    assert data.classes == ["a.1", "b.2"] and data.graphs.y.tolist() == [0, 1] and data.source == "records"
    assert data.graphs.node_mask.tolist()[:6] == [True, True, False, True, True, False]
    if shutil.which("mkdssp") is None and shutil.which("dssp") is None:
        with pytest.raises(ValueError, match="mkdssp"):
            load_scop(tmp_path, secondary="dssp")
        assert load_scop(tmp_path).source == "records"  # "auto" falls back to the records
    (tmp_path / "training.txt").write_text("d1\tc.9\n")
    with pytest.raises(ValueError, match="not among"):
        load_scop(tmp_path, classes=["a.1"], secondary="records")


def test_make_complexes_refuses_impossible_sizes_instead_of_looping_forever():
    with pytest.raises(ValueError, match="fewer residues"):
        make_complexes(1, n_residues=(400, 400), random_state=0)
    with pytest.raises(ValueError, match="inclusive range"):
        make_complexes(1, n_ligand=(5, 2))
    with pytest.raises(ValueError, match="ligand_elements"):
        complex_graph(np.zeros((1, 3)), np.zeros(1, int), np.ones((2, 3)), np.zeros(2, int), ligand_elements=["C"])


def test_make_complexes_labels_follow_the_aromatic_contacts():
    g = make_complexes(4, random_state=1)
    for k in range(4):
        nodes = g.batch == k
        assert float(g.y[k]) == 4.0 + float(g.node_mask[nodes].sum())
        assert not g.node_mask[nodes & (g.node_part == 1)].any()


def test_read_pdb_keeps_the_first_alternate_location_even_when_it_is_not_a(tmp_path):
    # residue 1 only has altlocs B and C (A was deposited elsewhere): it must not vanish from the chain
    lines = [_atom(1, "CA", "ALA", "A", 1, (1.0, 2.0, 3.0), "C", altloc="B"),
             _atom(2, "CA", "ALA", "A", 1, (9.0, 9.0, 9.0), "C", altloc="C"),
             _atom(3, "CA", "GLY", "A", 2, (4.0, 5.0, 6.0), "C", altloc="A"),
             _atom(4, "CA", "GLY", "A", 2, (7.0, 7.0, 7.0), "C", altloc="B"),
             _atom(5, "CA", "SER", "A", 2, (0.0, 0.0, 0.0), "C", icode="A"),
             # microheterogeneity: SER in altloc A, THR in B; THR's extra atoms must not join the SER
             _atom(6, "OG", "SER", "A", 3, (1.0, 0.0, 0.0), "O", altloc="A"),
             _atom(7, "OG1", "THR", "A", 3, (2.0, 0.0, 0.0), "O", altloc="B"),
             _atom(8, "CG2", "THR", "A", 3, (3.0, 0.0, 0.0), "C", altloc="B")]
    (tmp_path / "alt.pdb").write_text("\n".join(lines) + "\n")
    atoms = read_pdb(tmp_path / "alt.pdb")
    ca = atoms.calpha()
    assert list(ca.resseq) == [1, 2, 2] and list(ca.icode) == ["", "", "A"]
    np.testing.assert_allclose(ca.pos, [[1, 2, 3], [4, 5, 6], [0, 0, 0]])
    assert list(atoms.name[atoms.resseq == 3]) == ["OG"]


@pytest.mark.parametrize("line", ["ATOM      1  CA", "HELIX    1   1 ALA A    x  PHE A    2"])
def test_read_pdb_malformed_lines_are_a_clear_error_with_the_line_number(tmp_path, line):
    text = _atom(1, "CA", "ALA", "A", 1, (0.0, 0.0, 0.0), "C") + "\n" + line + "\n"
    (tmp_path / "bad.pdb").write_text(text)
    with pytest.raises(ValueError, match="line 2"):
        read_pdb(tmp_path / "bad.pdb")


def test_parse_affinity_bounds_and_malformed_numbers_are_not_values():
    assert parse_affinity("Kd<10nM") is None and parse_affinity("Ki>100uM") is None
    assert parse_affinity("Kd>=5nM") is None and parse_affinity("IC50=5nM") is None
    assert parse_affinity("Kd=1.5.3uM") is None  # not a number: no value rather than a crash
    assert parse_affinity("Kd~5uM") == 5.0 and parse_affinity("Kd=1e-9M") == pytest.approx(1e-3)
    assert parse_affinity("Ki=2pM") == pytest.approx(2e-6) and parse_affinity("Kd=3mM") == 3e3


@pytest.mark.parametrize("limit", [0, -1, 1.5, True])
def test_loaders_refuse_a_limit_that_is_not_a_positive_int(tmp_path, limit):
    # rows[:-1] silently dropped the last domain; limit=0 still returned one BioLiP complex
    (tmp_path / "training").mkdir()
    _receptor(tmp_path / "training" / "d1.pdb")
    (tmp_path / "training.txt").write_text("d1\ta.1\n")
    (tmp_path / "BioLiP.txt").write_text("")
    with pytest.raises(ValueError, match="limit"):
        load_scop(tmp_path, secondary="records", limit=limit)
    with pytest.raises(ValueError, match="limit"):
        load_biolip(tmp_path, limit=limit)


def test_read_pdb_without_element_columns_reads_two_letter_elements_by_alignment(tmp_path):
    # chlorine and bromine were read as carbon and boron when columns 77-78 were blank; PDB alignment puts
    # two-letter elements (and four-character names) in column 13, one-letter elements in column 14
    fields = [("HETATM", "CL1 ", "LIG"), ("HETATM", "BR  ", "LIG"), ("ATOM  ", " CA ", "ALA"),
              ("HETATM", " NA ", "HEM"), ("ATOM  ", "HG21", "THR"), ("HETATM", "CA  ", " CA")]
    lines = [f"{rec}{k:>5} {name} {res} A{k:>4}    {float(k):8.3f}{0.0:8.3f}{0.0:8.3f}"
             for k, (rec, name, res) in enumerate(fields, 1)]
    (tmp_path / "noel.pdb").write_text("\n".join(lines) + "\n")
    assert read_pdb(tmp_path / "noel.pdb").element.tolist() == ["CL", "BR", "C", "N", "H", "CA"]


@pytest.mark.parametrize("field", ["residue_types", "ligand_types"])
def test_complex_graph_refuses_fractional_or_boolean_types(field):
    # 1.7 was truncated to type 1 without a word
    args = {"protein_pos": np.zeros((2, 3)), "residue_types": np.array([0, 1]),
            "ligand_pos": np.ones((1, 3)), "ligand_types": np.array([2])}
    for bad in (np.full(len(args[field]), 1.7), np.ones(len(args[field]), bool)):
        with pytest.raises(ValueError, match=field):
            complex_graph(**{**args, field: bad}, pocket_radius=None)
    complex_graph(**{**args, field: args[field].astype(float)}, pocket_radius=None)  # whole floats are fine
