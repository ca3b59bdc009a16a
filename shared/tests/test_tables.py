"""icml25_shared.tables.markdown_table and RunContext.write_table with rows."""

import math
from pathlib import Path

import numpy as np
import pytest
from icml25_shared.cli import RunContext
from icml25_shared.tables import format_cell, markdown_table


def test_cells_floats_ints_bools_none_and_escaping():
    assert format_cell(0.000123456) == "0.0001235" and format_cell(1234567.0) == "1.235e+06"
    assert format_cell(2.0) == "2" and format_cell(np.float32(0.5)) == "0.5" and format_cell(1 / 3, 2) == "0.33"
    assert format_cell(np.int64(12)) == "12" and format_cell(10**20) == str(10**20)
    assert format_cell(True) == "yes" and format_cell(np.bool_(False)) == "no"
    assert format_cell(None) == "" and format_cell(math.nan) == "nan" and format_cell(-math.inf) == "-inf"
    assert format_cell("a|b\nc") == "a\\|b c"


def test_mapping_rows_take_columns_in_first_seen_order_and_fill_gaps():
    table = markdown_table([{"method": "ours", "error": 0.5}, {"method": "peer", "seconds": 2}])
    assert table.splitlines() == ["| method | error | seconds |", "|---|---|---|", "| ours | 0.5 |  |",
                                  "| peer |  | 2 |"]
    chosen = markdown_table([{"a": 1, "b": 2}], headers=["b", "a"])
    assert chosen.splitlines()[2] == "| 2 | 1 |"


def test_positional_rows_alignment_and_digits():
    table = markdown_table([[1, math.pi], [2, math.e]], headers=["n", "x|y"], digits=3, align=["l", "r"])
    assert table.splitlines() == ["| n | x\\|y |", "|:---|---:|", "| 1 | 3.14 |", "| 2 | 2.72 |"]
    assert markdown_table([], headers=["a"]) == "| a |\n|---|"


def test_bad_rows_raise():
    with pytest.raises(ValueError, match="row 1 has 1 cells for 2 columns"):
        markdown_table([[1, 2], [3]], headers=["a", "b"])
    with pytest.raises(ValueError, match="need headers"):
        markdown_table([[1, 2]])
    with pytest.raises(ValueError, match="without rows"):
        markdown_table([])
    with pytest.raises(ValueError, match="align"):
        markdown_table([[1]], headers=["a"], align=["x"])
    with pytest.raises(TypeError, match="all mappings or all sequences"):
        markdown_table([{"a": 1}, [2]])
    with pytest.raises(TypeError, match="not a string"):
        markdown_table(["ab"], headers=["a", "b"])


def _ctx(tmp_path: Path) -> RunContext:
    return RunContext(package="toy", command="demo", out=tmp_path / "o", seed=0, quick=True,
                      rng=np.random.default_rng(0))


def test_write_table_renders_rows_and_keeps_markdown_text(tmp_path):
    ctx = _ctx(tmp_path)
    path = ctx.write_table([{"n": 10, "error": 0.012345678}], name="rows")
    assert path.read_text() == "| n | error |\n|---|---|\n| 10 | 0.01235 |\n"
    path = ctx.write_table([[1, 2.5]], headers=["a", "b"])
    assert path.name == "demo.md" and path.read_text() == "| a | b |\n|---|---|\n| 1 | 2.5 |\n"
    ctx.write_table("| x |\n|---|\n| 1 |\n\n", name="text")
    assert (ctx.out / "text.md").read_text() == "| x |\n|---|\n| 1 |\n"
    assert ctx.written == [ctx.out / "rows.md", ctx.out / "demo.md", ctx.out / "text.md"]
    with pytest.raises(ValueError, match="headers apply to rows"):
        ctx.write_table("| x |\n|---|", headers=["x"])
