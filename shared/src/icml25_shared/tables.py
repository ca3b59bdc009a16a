"""One markdown table writer for results, benchmarks and command outputs.

Examples
--------
>>> from icml25_shared.tables import markdown_table
>>> print(markdown_table([{"method": "ours", "seconds": 0.01234}, {"method": "peer", "seconds": 1.5}]))
| method | seconds |
|---|---|
| ours | 0.01234 |
| peer | 1.5 |
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["format_cell", "markdown_table"]


def format_cell(value: Any, digits: int = 4) -> str:
    """A table cell: floats with ``digits`` significant digits, None as an empty cell, '|' escaped.

    Parameters
    ----------
    value : object
        The cell's value.
    digits : int, default 4
        Significant digits for floats.

    Returns
    -------
    str
        The cell's text.
    """
    if value is None:
        return ""
    if isinstance(value, bool) or getattr(getattr(value, "dtype", None), "kind", None) == "b":
        return "yes" if value else "no"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        value = float(value)
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return f"{value:.{digits}g}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown_table(rows: Sequence[Mapping[str, Any]] | Sequence[Sequence[Any]], headers: Sequence[str] | None = None,
                   *, digits: int = 4, align: Sequence[str] | None = None) -> str:
    """Render rows as a GitHub markdown table.

    Parameters
    ----------
    rows : sequence of mappings or of sequences
        Mappings are keyed by column (columns in first-seen order, or ``headers``); sequences are
        positional and need ``headers``.
    headers : sequence of str, optional
        Column names (and order).
    digits : int, default 4
        Significant digits for float cells.
    align : sequence of {"l", "r", "c", ""}, optional
        Per-column alignment.

    Returns
    -------
    str
        The table, without a trailing newline.
    """
    given: list[Any] = list(rows)
    if any(isinstance(row, (str, bytes)) for row in given):
        raise TypeError("each row must be a mapping or a sequence of cells, not a string")
    if given and any(isinstance(row, Mapping) != isinstance(given[0], Mapping) for row in given):
        raise TypeError("rows must be all mappings or all sequences")
    if given and isinstance(given[0], Mapping):
        if headers is None:
            headers = list(dict.fromkeys(key for row in given for key in row))
        body = [[row.get(h) for h in headers] for row in given]
    else:
        if headers is None:
            raise ValueError("positional rows need headers" if given else "a table without rows needs headers")
        body = [list(row) for row in given]
    headers = list(headers)
    for i, row in enumerate(body):
        if len(row) != len(headers):
            raise ValueError(f"row {i} has {len(row)} cells for {len(headers)} columns")
    marks = {"l": ":---", "r": "---:", "c": ":---:", "": "---"}
    align = list(align) if align is not None else [""] * len(headers)
    if len(align) != len(headers) or any(a not in marks for a in align):
        raise ValueError(f"align needs one of {sorted(marks)} per column")
    lines = ["| " + " | ".join(format_cell(h) for h in headers) + " |",
             "|" + "|".join(marks[a] for a in align) + "|"]
    lines += ["| " + " | ".join(format_cell(c, digits) for c in row) + " |" for row in body]
    return "\n".join(lines)
