"""Assess a portfolio of systems at once: a CSV file, a pandas DataFrame or a sequence of mappings.

The table has one row per system and one column per question id, plus optional ``system`` (a name) and
``high_risk`` columns. Scoring is vectorised with numpy and gives the same tier, rung, scores and warning
flags as :func:`right_to_ai.assess` row by row.
"""

from __future__ import annotations

import csv
import itertools
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from icml25_shared.validation import check_param

from right_to_ai.assess import AnswerError, _data
from right_to_ai.data import ANSWERS, DIMENSIONS, RightToAIData, load

__all__ = ["Portfolio", "assess_many"]

_MISSING = len(ANSWERS)  # code of a missing answer (after yes, no, partial, unknown)
_CODE = {a: i for i, a in enumerate(ANSWERS)}
_ALIASES = {"y": "yes", "true": "yes", "n": "no", "false": "no"}
_RESERVED = ("system", "high_risk")


@dataclass(frozen=True, eq=False)
class Portfolio:
    """One assessment row per system (read-only arrays; compare them with ``numpy.array_equal``).

    Attributes
    ----------
    system : tuple of str
        The systems' names (the ``system`` column, else ``"row <i>"``).
    tier : numpy.ndarray of int
        Tier 1-4 of each system.
    arnstein_rung : numpy.ndarray of int
        Rung level 1-8.
    agency, transparency, inclusivity : numpy.ndarray of float
        Dimension scores in [0, 1].
    participation_washing : numpy.ndarray of bool
        Consultation without decision rights.
    high_risk : numpy.ndarray of bool
        The ``high_risk`` column (False when absent).
    high_risk_without_hybrid_control : numpy.ndarray of bool
        High risk without hybrid expert and citizen control.
    n_missing : numpy.ndarray of int
        Unanswered questions (scored as unknown).
    n_unmet_next : numpy.ndarray of int
        Unmet gate indicators of the next tier (0 at tier 4).
    highest_own_gate : numpy.ndarray of int
        The highest tier whose own gate is met (1 when none is), as ``Assessment.higher_tiers_met``.
    inconsistent_profile : numpy.ndarray of bool
        A tier above ``tier`` has its own gate met (``Assessment``'s ``inconsistent_profile`` warning).
    data_version, citation : str
        The data used.
    """

    system: tuple[str, ...]
    tier: np.ndarray
    arnstein_rung: np.ndarray
    agency: np.ndarray
    transparency: np.ndarray
    inclusivity: np.ndarray
    participation_washing: np.ndarray
    high_risk: np.ndarray
    high_risk_without_hybrid_control: np.ndarray
    n_missing: np.ndarray
    n_unmet_next: np.ndarray
    highest_own_gate: np.ndarray
    inconsistent_profile: np.ndarray
    data_version: str
    citation: str

    def __len__(self) -> int:
        return len(self.system)

    def to_rows(self) -> list[dict[str, Any]]:
        """One dict per system with names of the tier, rung and next transition.

        Each row also carries ``data_version`` and ``unverified_data``: True when the row's tier, transition,
        rung, questions or warning rules are not checked against the paper (as ``Assessment.unverified``).

        Returns
        -------
        list of dict
            Plain Python values, in input order.
        """
        data = load(self.data_version)
        tiers = {t.id: t for t in data.tiers}
        always = not (data.signals.verified and all(q.verified for q in data.questions))
        rows = []
        for i, name in enumerate(self.system):
            tier = tiers[int(self.tier[i])]
            rung = data.rung(int(self.arnstein_rung[i]))
            rows.append({
                "system": name, "tier": int(self.tier[i]), "tier_name": tier.name,
                "arnstein_rung": rung.level, "arnstein_rung_name": rung.name,
                "agency": float(self.agency[i]), "transparency": float(self.transparency[i]),
                "inclusivity": float(self.inclusivity[i]),
                "next_transition": tier.transition.mechanism if tier.transition else "",
                "n_unmet_next": int(self.n_unmet_next[i]),
                "highest_own_gate": int(self.highest_own_gate[i]),
                "inconsistent_profile": bool(self.inconsistent_profile[i]),
                "participation_washing": bool(self.participation_washing[i]),
                "high_risk": bool(self.high_risk[i]),
                "high_risk_without_hybrid_control": bool(self.high_risk_without_hybrid_control[i]),
                "incomplete": bool(self.n_missing[i] > 0),
                "data_version": self.data_version,
                "unverified_data": always or not (tier.verified and rung.verified and (
                    tier.transition is None or tier.transition.verified)),
            })
        return rows

    def to_dataframe(self) -> Any:
        """The rows as a pandas DataFrame (needs the ``pandas`` extra).

        Returns
        -------
        pandas.DataFrame
            One row per system.
        """
        try:
            import pandas as pd
        except ImportError as err:  # pragma: no cover - depends on the environment
            raise ImportError("Portfolio.to_dataframe needs pandas: pip install 'right-to-ai[pandas]'") from err
        return pd.DataFrame(self.to_rows())

    def to_csv(self, path: str | Path) -> Path:
        """Write the rows to a CSV file.

        Parameters
        ----------
        path : str or Path
            Destination.

        Returns
        -------
        Path
            ``path``.
        """
        path = Path(path)
        rows = self.to_rows()
        with path.open("w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["system"], lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
        return path


def _no_duplicates(names: Sequence[str]) -> None:
    """Raise AnswerError for a column name given twice (a reader would keep only one of them)."""
    seen = set()
    for name in names:
        if name in seen:
            raise AnswerError(f"column {name!r} appears twice; keep one column per question", question=name,
                              accepted=(name,))
        seen.add(name)


def _columns(table: Any) -> tuple[list[str], dict[str, Sequence[Any]], int]:
    """Column names, columns as object arrays, and the number of rows of any accepted table."""
    if isinstance(table, (str, Path)):
        # utf-8-sig: spreadsheet programs write a byte order mark before the first column name
        with Path(table).open(newline="", encoding="utf-8-sig") as f:
            reader = csv.reader(f)
            try:
                header = next(reader)
            except StopIteration:
                raise ValueError(f"{table}: the CSV file is empty (expected a header of question ids)") from None
            _no_duplicates(header)
            try:
                import pandas as pd
            except ImportError:
                pd = None
            if pd is None:
                body = list(reader)
        if pd is not None:  # pandas' C parser; every cell read as text
            frame = pd.read_csv(table, dtype=str, keep_default_na=False, encoding="utf-8-sig")
            return [str(c) for c in frame.columns], {str(c): frame[c].tolist() for c in frame.columns}, len(frame)
        if any(len(r) != len(header) for r in body):
            bad = next(i for i, r in enumerate(body) if len(r) != len(header))
            raise ValueError(f"{table}: row {bad + 1} has {len(body[bad])} cells, the header has {len(header)}")
        cells = list(zip(*body, strict=True)) if body else [() for _ in header]
        return header, dict(zip(header, cells, strict=True)), len(body)
    if hasattr(table, "columns") and hasattr(table, "to_numpy"):  # a pandas DataFrame
        names = [str(c) for c in table.columns]
        _no_duplicates(names)
        return names, {str(c): table[c].tolist() for c in table.columns}, len(table)
    if isinstance(table, Sequence) and all(isinstance(r, Mapping) for r in table):
        names = list(dict.fromkeys(k for r in table for k in r))
        return names, {n: [r.get(n) for r in table] for n in names}, len(table)
    raise TypeError("assess_many: table must be a CSV path, a pandas DataFrame or a sequence of mappings; got "
                    f"{type(table).__name__}")


def _is_missing(value: Any) -> bool:
    if value is None or value is getattr(sys.modules.get("pandas"), "NA", None):  # pandas' nullable missing value
        return True
    return (isinstance(value, float) and math.isnan(value)) or (isinstance(value, str) and value.strip() == "")


def _lookup(question: Any) -> dict[Any, int]:
    """Exact raw values (common spellings, booleans, empty) to answer codes, for the fast path of ``_encode``."""
    # No bool keys: True == 1 as a dict key would accept the number 1; booleans take the slow path.
    table: dict[Any, int] = {None: _MISSING, "": _MISSING}
    for alias, answer in (*_ALIASES.items(), *((a, a) for a in question.accepted)):
        if answer in question.accepted:
            for spelling in (alias, alias.upper(), alias.capitalize()):
                table[spelling] = _CODE[answer]
    return table


def _encode(question: Any, column: Sequence[Any]) -> np.ndarray:
    """Answer codes of one column; raises AnswerError naming the question, row and accepted values."""
    get = _lookup(question).get
    try:
        out = np.array(list(map(get, column, itertools.repeat(-1))), dtype=np.int8).reshape(len(column))
    except TypeError:  # an unhashable cell: every cell takes the slow path
        out = np.full(len(column), -1, dtype=np.int8)
    for row in map(int, np.flatnonzero(out == -1)):  # rare spellings, NaN, and invalid answers
        raw = _key(column[row])
        answer = _ALIASES.get(raw, raw)
        if raw == "":
            out[row] = _MISSING
        elif answer in question.accepted:
            out[row] = _CODE[answer]
        else:
            raise AnswerError(f"row {row + 1}: question {question.id!r} accepts {', '.join(question.accepted)}; got "
                              f"{column[row]!r}", question=question.id, accepted=question.accepted)
    return out


def _key(value: Any) -> str:
    if _is_missing(value):
        return ""
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    return str(value).strip().lower()


def _flags(column: Sequence[Any]) -> np.ndarray:
    out = np.zeros(len(column), dtype=bool)
    for i, value in enumerate(column):
        key = _key(value)
        if key in ("yes", "true", "1", "y"):
            out[i] = True
        elif key not in ("", "no", "false", "0", "n"):
            raise ValueError(f"row {i + 1}: high_risk accepts true/false/yes/no/1/0 or empty; got {value!r}")
    return out


def assess_many(table: Any, *, data: RightToAIData | None = None, allow_missing: bool = False) -> Portfolio:
    """Assess every row of a table of answer sets.

    Parameters
    ----------
    table : str, Path, pandas.DataFrame or sequence of mappings
        One row per system; columns are question ids, plus optional ``system`` and ``high_risk``.
    data : RightToAIData, optional
        The data (default: the latest version).
    allow_missing : bool, default False
        Accept empty cells and absent question columns (scored as unknown; ``n_missing`` counts them).

    Returns
    -------
    Portfolio
        One row per system, in input order.

    Raises
    ------
    AnswerError
        For an unknown column, an answer a question does not accept (naming the row), or a missing answer
        when ``allow_missing`` is False.

    Examples
    --------
    >>> from right_to_ai import load
    >>> from right_to_ai.portfolio import assess_many
    >>> rows = [{"system": c.name, **c.answers_dict()} for c in load().case_studies]
    >>> assess_many(rows).tier.tolist()
    [2, 2, 2, 2, 4, 2, 1, 1, 2]
    """
    check_param("allow_missing", allow_missing, ["boolean"], owner="assess_many")
    data = _data(data)
    names, columns, n = _columns(table)
    ids = [q.id for q in data.questions]
    unknown = [c for c in names if c not in ids and c not in _RESERVED]
    if unknown:
        raise AnswerError(f"unknown column {unknown[0]!r}; the accepted columns are system, high_risk and the question "
                          f"ids: {', '.join(ids)}", question=unknown[0], accepted=tuple(ids))
    codes = np.full((n, len(ids)), _MISSING, dtype=np.int8)
    for j, q in enumerate(data.questions):
        if q.id in columns:
            codes[:, j] = _encode(q, columns[q.id])
    missing = codes == _MISSING
    if not allow_missing and missing.any():
        row, j = (int(x) for x in np.argwhere(missing)[0])
        q = data.questions[j]
        where = "no column" if q.id not in columns else f"row {row + 1} has no answer"
        raise AnswerError(f"question {q.id!r}: {where}; it accepts {', '.join(q.accepted)} (pass allow_missing=True to "
                          "score missing answers as unknown)", question=q.id, accepted=q.accepted)
    yes = codes == _CODE["yes"]
    col = {qid: j for j, qid in enumerate(ids)}

    def all_yes(qids: Sequence[str]) -> np.ndarray:
        return yes[:, [col[q] for q in qids]].all(axis=1) if qids else np.ones(n, dtype=bool)

    def any_yes(qids: Sequence[str]) -> np.ndarray:
        return yes[:, [col[q] for q in qids]].any(axis=1)

    tier = np.ones(n, dtype=np.int64)
    own = np.ones(n, dtype=np.int64)
    reached = np.ones(n, dtype=bool)
    for t in data.tiers[1:]:
        met = all_yes(t.gate)
        reached &= met
        tier[reached] = t.id
        own[met] = t.id
    inconsistent = own > tier
    rung = np.ones(n, dtype=np.int64)
    for r in data.rungs:
        ok = (tier >= r.tier) & all_yes(r.criteria)
        rung[ok] = np.maximum(rung[ok], r.level)
    value_of = dict(data.answer_values)
    values = np.array([value_of[a] for a in ANSWERS] + [value_of["unknown"]])[codes]
    scores = {}
    for dim in DIMENSIONS:
        idx = [j for j, q in enumerate(data.questions) if q.dimension == dim]
        scores[dim] = values[:, idx].sum(axis=1) / len(idx)
    n_unmet = np.zeros(n, dtype=np.int64)
    for t in data.tiers[1:]:
        at_prev = tier == t.id - 1
        n_unmet[at_prev] = (~yes[:, [col[q] for q in t.gate]]).sum(axis=1)[at_prev]
    sig = data.signals
    consulted = np.isin(codes[:, [col[q] for q in sig.consultation]], (_CODE["yes"], _CODE["partial"])).any(axis=1)
    washing = consulted & ~any_yes(sig.decision_rights)
    high_risk = _flags(columns["high_risk"]) if "high_risk" in columns else np.zeros(n, dtype=bool)
    hybrid = any_yes(sig.expert_control) & any_yes(sig.citizen_control)
    names_given = columns.get("system", [None] * n)
    system = tuple(f"row {i + 1}" if _is_missing(v) else str(v) for i, v in enumerate(names_given))
    unguarded = high_risk & ~hybrid
    arrays = (tier, rung, *scores.values(), washing, high_risk, unguarded, n_unmet, own, inconsistent)
    for array in arrays:
        array.setflags(write=False)
    n_missing = missing.sum(axis=1)
    n_missing.setflags(write=False)
    return Portfolio(system=system, tier=tier, arnstein_rung=rung, agency=scores["agency"],
                     transparency=scores["transparency"], inclusivity=scores["inclusivity"],
                     participation_washing=washing, high_risk=high_risk,
                     high_risk_without_hybrid_control=unguarded, n_missing=n_missing,
                     n_unmet_next=n_unmet, highest_own_gate=own, inconsistent_profile=inconsistent,
                     data_version=data.version, citation=data.citation)
