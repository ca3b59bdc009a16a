"""assess_many agrees with assess row by row; CSV, DataFrame and record input; errors name the row."""

import numpy as np
import pandas as pd
import pytest

from right_to_ai import AnswerError, assess, load
from right_to_ai.portfolio import assess_many

DATA = load()
IDS = [q.id for q in DATA.questions]


def random_rows(n, seed, missing=0.0):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        row = {"system": f"s{i}", "high_risk": bool(rng.random() < 0.3)}
        for q in DATA.questions:
            u = rng.random()
            row[q.id] = None if u < missing else "yes" if u < 0.6 else str(rng.choice(q.accepted))
        rows.append(row)
    return rows


@pytest.mark.parametrize("missing", [0.0, 0.1])
def test_agrees_with_assess_row_by_row(missing):
    rows = random_rows(1500, seed=1 if missing else 0, missing=missing)
    p = assess_many(rows, allow_missing=bool(missing))
    assert len(p) == 1500 and len(set(p.tier.tolist())) == 4  # every tier occurs
    for i, row in enumerate(rows):
        answers = {q: v for q, v in row.items() if q in IDS and v is not None}
        a = assess(answers, high_risk=row["high_risk"], allow_missing=bool(missing))
        assert (p.tier[i], p.arnstein_rung[i]) == (a.tier, a.arnstein_rung)
        assert (p.agency[i], p.transparency[i], p.inclusivity[i]) == (
            a.dimension_scores.agency, a.dimension_scores.transparency, a.dimension_scores.inclusivity)
        codes = a.warning_codes()
        assert p.participation_washing[i] == ("participation_washing" in codes)
        assert p.high_risk_without_hybrid_control[i] == ("high_risk_without_hybrid_control" in codes)
        assert p.n_missing[i] == len(a.missing)
        assert p.n_unmet_next[i] == (len(a.next_transition.unmet) if a.next_transition else 0)


def test_monotone_on_the_vectorised_path():
    rows = random_rows(3000, seed=2)
    rng = np.random.default_rng(3)
    flipped = [dict(r, **{IDS[j]: "yes"}) for r, j in zip(rows, rng.integers(0, len(IDS), len(rows)), strict=True)]
    a, b = assess_many(rows), assess_many(flipped)
    for field in ("tier", "arnstein_rung", "agency", "transparency", "inclusivity"):
        assert (getattr(b, field) >= getattr(a, field)).all(), field


def test_csv_dataframe_and_records_agree(tmp_path):
    rows = random_rows(200, seed=4)
    frame = pd.DataFrame(rows)
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    results = [assess_many(rows), assess_many(frame), assess_many(path), assess_many(str(path))]
    for r in results[1:]:
        assert r.system == results[0].system
        for field in ("tier", "arnstein_rung", "agency", "high_risk", "participation_washing"):
            assert np.array_equal(getattr(r, field), getattr(results[0], field)), field
    out = results[0].to_dataframe()
    assert list(out["tier"]) == results[0].tier.tolist() and out.shape[0] == 200
    back = pd.read_csv(results[0].to_csv(tmp_path / "out.csv"))
    assert list(back["tier_name"]) == list(out["tier_name"])


def test_case_studies_as_a_portfolio():
    rows = [{"system": c.name, **c.answers_dict()} for c in DATA.case_studies]
    p = assess_many(rows)
    assert p.tier.tolist() == [c.placement_tier for c in DATA.case_studies]
    assert p.to_rows()[4]["next_transition"] == ""  # Te Hiku Media sits on tier 4
    with pytest.raises(ValueError, match="read-only"):
        p.tier[0] = 4


def test_unknown_column_names_it():
    with pytest.raises(AnswerError, match=r"unknown column 'colour'.*system, high_risk and the question ids"):
        assess_many([dict(random_rows(1, 0)[0], colour="red")])


def test_bad_answer_names_row_question_and_values():
    rows = random_rows(5, 0)
    rows[3]["feedback_button"] = "partial"
    with pytest.raises(AnswerError, match=r"row 4: question 'feedback_button' accepts yes, no, unknown; got 'partial'"):
        assess_many(rows)


def test_missing_cell_or_column_names_question():
    rows = random_rows(3, 0)
    rows[2]["data_trust"] = ""
    with pytest.raises(AnswerError, match=r"question 'data_trust': row 3 has no answer; it accepts yes, no, partial"):
        assess_many(rows)
    assert assess_many(rows, allow_missing=True).n_missing.tolist() == [0, 0, 1]
    frame = pd.DataFrame(random_rows(3, 0)).drop(columns=["advisory_board"])
    with pytest.raises(AnswerError, match="question 'advisory_board': no column"):
        assess_many(frame)


def test_bad_table_types(tmp_path):
    with pytest.raises(TypeError, match="CSV path, a pandas DataFrame or a sequence of mappings"):
        assess_many(42)
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(ValueError, match="empty"):
        assess_many(empty)
    rows = random_rows(2, 0)
    rows[1]["high_risk"] = "sometimes"
    with pytest.raises(ValueError, match="row 2: high_risk accepts"):
        assess_many(rows)


def _csv_text(rows, header=None):
    header = header or ["system", "high_risk", *IDS]
    return ",".join(header) + "\n" + "".join(",".join(str(r[c]) for c in header) + "\n" for r in rows)


@pytest.mark.parametrize("pandas_installed", [True, False])
def test_csv_duplicate_column_is_an_error(tmp_path, monkeypatch, pandas_installed):
    # Without pandas the csv reader kept the last of two equal columns (a "no" then a "yes" became yes);
    # with pandas the second became "feedback_button.1", reported as an unknown column.
    if not pandas_installed:
        monkeypatch.setitem(__import__("sys").modules, "pandas", None)
    rows = [{**{q: "no" for q in IDS}, "system": "a", "high_risk": "false"}]
    path = tmp_path / "dup.csv"
    header = ["system", "high_risk", *IDS]
    path.write_text(",".join([*header, "feedback_button"]) + "\n" + ",".join([*(rows[0][c] for c in header), "yes"])
                    + "\n")
    with pytest.raises(AnswerError, match="column 'feedback_button' appears twice"):
        assess_many(path)
    monkeypatch.undo()
    frame = pd.DataFrame([["no", "yes"]], columns=["feedback_button", "feedback_button"])
    with pytest.raises(AnswerError, match="column 'feedback_button' appears twice"):
        assess_many(frame, allow_missing=True)


@pytest.mark.parametrize("pandas_installed", [True, False])
def test_csv_with_byte_order_mark_and_unicode_names(tmp_path, monkeypatch, pandas_installed):
    # Spreadsheet programs save "CSV UTF-8" with a byte order mark; the first column must still be "system".
    if not pandas_installed:
        monkeypatch.setitem(__import__("sys").modules, "pandas", None)
    rows = random_rows(3, 1)
    rows[0]["system"] = "Système ü 中文"
    path = tmp_path / "bom.csv"
    path.write_text(_csv_text(rows), encoding="utf-8-sig")
    result = assess_many(path)
    assert result.system[0] == "Système ü 中文"
    assert result.tier.tolist() == [assess({q: r[q] for q in IDS}).tier for r in rows]


def test_absent_system_name_falls_back_to_the_row_number():
    rows = random_rows(2, 2)
    rows[1]["system"] = None
    assert assess_many(rows).system == ("s0", "row 2")


def test_portfolio_rows_carry_the_data_version_and_the_unverified_mark():
    rows = assess_many(random_rows(4, 3)).to_rows()
    # in data 1.0.0 every tier, rung and question is unverified, so every row uses unverified entries
    assert all(r["data_version"] == DATA.version and r["unverified_data"] is True for r in rows)
    keys = [set(assess({q: r[q] for q in IDS}).unverified) != set() for r in random_rows(4, 3)]
    assert keys == [r["unverified_data"] for r in rows]
    with pytest.raises(TypeError, match="data must be a RightToAIData"):
        assess_many(random_rows(1, 0), data="1.0.0")


def test_pandas_missing_value_is_a_missing_answer():
    # a DataFrame of pandas' nullable "string" dtype marks blanks as pd.NA; they were rejected as "<NA>"
    frame = pd.DataFrame(random_rows(3, 4)).astype({q: "string" for q in IDS})
    frame.loc[1, "data_trust"] = pd.NA
    assert assess_many(frame, allow_missing=True).n_missing.tolist() == [0, 1, 0]
    with pytest.raises(AnswerError, match="question 'data_trust': row 2 has no answer"):
        assess_many(frame)
