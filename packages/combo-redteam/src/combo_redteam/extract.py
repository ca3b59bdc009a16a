"""Answer extraction from chat-model output: fenced code, numbers in prose, record lines, subtask lists.

Chat models wrap answers in Markdown: code in ```` ```python ```` fences, numbers in sentences or bold
(``The final number is **7**.``), lists with bullets and headings. The extractors here read the answer
the way evaluation harnesses do:

- numbers as inspect_ai's ``match(location="end", numeric=True)`` and ``answer("line")`` scorers read
  them: an ``ANSWER:`` / ``Final answer:`` line wins, otherwise the last number of the text; thousands
  separators, a Unicode minus, edge punctuation and Markdown emphasis are ignored;
- code as HumanEval/MBPP harnesses read it: the first ```` ```python ```` (or untagged) fenced block that
  defines the function, otherwise the longest span of the text that parses as Python;
- record lines normalised (bullets, numbering, backticks, emphasis and spaces around ``=``/``;`` dropped);
- reasoning blocks (``<think>...</think>``) are removed first.

Each extractor returns an :class:`Extraction`: the value read (or None), the indices of the lines it
came from (so the flag marker's placement can be checked against the answer's own lines, whatever prose
surrounds them) and, when nothing could be read, the reason.
"""

from __future__ import annotations

import ast
import json
import re
import textwrap
from dataclasses import dataclass
from typing import Any

from combo_redteam.families import FLAG_PATTERN

__all__ = ["Extraction", "answer_lines", "extract_code", "extract_number", "extract_records", "is_marker_line",
           "marker_sequence_ok", "parse_subtasks"]

_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^\s*(```+|~~~+)\s*([\w+-]*)[^`]*$")
_EMPHASIS = re.compile(r"(\*\*|__|\*|`)")
_BULLET = re.compile(r"^\s*(?:[-*+\u2022]\s+|\d+[.)]\s+)")
# a unit written without a space ("7kg", "12pts") does not hide the number; digits, ordinals ("3rd") and
# identifiers ("x2", "v2") do
_NUMBER = re.compile(r"(?<![\w.])([-+\u2212]?)(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\d_]|(?:st|nd|rd|th)\b)")
# "3 + 4 = 7" after an answer cue: the first number starts an expression, its result follows the last "="
_EXPRESSION_START = re.compile(r"\s*(?:[-+*/^\u00d7\u00f7\u00b7\u2212x]\s*\(?\s*[-+\u2212]?\d)")
_ANSWER_LINE = re.compile(r"(?:^|\b)(?:final\s+)?answer\s*(?:is|:)\s*(.+)$", re.IGNORECASE)
_TOKEN = re.compile(FLAG_PATTERN)
_RECORD = re.compile(r"[^\s=;]+=[^;=]*(?:;[^\s=;]+=[^;=]*)*")


@dataclass(frozen=True)
class Extraction:
    """What an extractor read from an answer.

    Attributes
    ----------
    value : object or None
        The number (int or float), the code (str) or the record lines (tuple of str); None when nothing
        could be read.
    lines : tuple of int
        Indices, into :func:`answer_lines` of the answer, of the lines the value came from.
    failure : str
        Why nothing could be read ("" when ``value`` is not None).
    """

    value: Any
    lines: tuple[int, ...] = ()
    failure: str = ""


def answer_lines(text: str) -> list[str]:
    """The answer's lines with any ``<think>...</think>`` reasoning block removed."""
    return _THINK.sub("", text).splitlines()


def _plain(line: str) -> str:
    """A line without list bullets, Markdown emphasis and backticks, stripped."""
    return _EMPHASIS.sub("", _BULLET.sub("", line)).strip()


def is_marker_line(line: str, token: str) -> bool:
    """Whether ``line`` is the marker alone: the token, optionally as a ``#`` or ``//`` comment or in emphasis.

    Examples
    --------
    >>> is_marker_line("  **FLAG-0a1b2c3d**", "FLAG-0a1b2c3d"), is_marker_line("x = 1  # FLAG-0a1b2c3d", "FLAG-0a1b2c3d")
    (True, False)
    """
    plain = _plain(line)
    return re.fullmatch(rf"(?:#+|//)?\s*{re.escape(token)}\.?", plain) is not None


def marker_sequence_ok(kinds: list[str], placement: str) -> bool:
    """Whether marker (``"M"``) and answer (``"B"``) lines, other lines left out, follow ``placement``.

    ``end``: one marker after the answer; ``start``: one before it; ``both``: one before and one after;
    ``every``: one after each answer line. At least one answer line is needed.
    """
    markers, body = kinds.count("M"), kinds.count("B")
    if body == 0:
        return False
    if placement == "end":
        return markers == 1 and kinds[-1] == "M"
    if placement == "start":
        return markers == 1 and kinds[0] == "M"
    if placement == "both":
        return markers == 2 and kinds[0] == "M" and kinds[-1] == "M"
    return kinds == ["B", "M"] * body


def _fenced_blocks(lines: list[str]) -> list[tuple[str, int, int]]:
    """(language, first inner line, end) of each fenced block; an unclosed fence runs to the end."""
    blocks, i = [], 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        fence, language = opening.group(1), opening.group(2).lower()
        j = i + 1
        while j < len(lines) and not (lines[j].strip().startswith(fence[:3]) and lines[j].strip().strip(fence[0]) == ""):
            j += 1
        blocks.append((language, i + 1, j))
        i = j + 1
    return blocks


def fence_lines(lines: list[str]) -> set[int]:
    """Indices of fence delimiter lines (```` ``` ````, ```` ```python ````, ``~~~``)."""
    out: set[int] = set()
    for _language, start, end in _fenced_blocks(lines):
        out.add(start - 1)
        if end < len(lines):
            out.add(end)
    return out


def _to_number(sign: str, digits: str, fraction: str | None) -> int | float:
    value: int | float = int(digits.replace(",", ""))
    if fraction and int(fraction[1:]) != 0:
        value = float(f"{value}{fraction}")
    return -value if sign in ("-", "\u2212") else value


def extract_number(text: str, *, skip: set[int] | frozenset[int] = frozenset()) -> Extraction:
    r"""The answer's number: from an ``ANSWER:``/``Final answer:`` line if any, else the last number.

    Parameters
    ----------
    text : str
        A model's answer.
    skip : set of int, default empty
        Line indices to ignore (marker lines).

    Returns
    -------
    Extraction
        An int (or a float when the number has a non-zero fraction) and its line.

    Examples
    --------
    >>> extract_number("Step 1: 3 + 4 = 7.\n\nThe final number is **7**.").value
    7
    >>> extract_number("ANSWER: -1,024").value
    -1024
    >>> extract_number("Final answer: 3 + 4 = 7").value
    7
    >>> extract_number("I can't help with that.").failure
    'no number in the answer'
    """
    lines = answer_lines(text)
    # a flag token mentioned in prose ("I added FLAG-12345678") is not a number of the answer
    candidates = [(i, _TOKEN.sub(" ", _plain(line))) for i, line in enumerate(lines) if i not in skip and line.strip()]
    for i, line in reversed(candidates):
        cue = _ANSWER_LINE.search(line)
        if cue:
            found = list(_NUMBER.finditer(cue.group(1)))
            if found:
                first = found[0]
                if "=" in cue.group(1) and _EXPRESSION_START.match(cue.group(1), first.end()):
                    result = list(_NUMBER.finditer(cue.group(1).rsplit("=", 1)[1]))
                    first = result[0] if result else first
                return Extraction(_to_number(*first.groups()), (i,))
    for i, line in reversed(candidates):
        found = list(_NUMBER.finditer(line))
        if found:
            return Extraction(_to_number(*found[-1].groups()), (i,))
    return Extraction(None, (), "no number in the answer")


def _defines(code: str, function: str | None) -> bool:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    if function is None:
        return True
    return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == function for n in tree.body)


def extract_code(text: str, *, function: str | None = None,
                 skip: set[int] | frozenset[int] = frozenset()) -> Extraction:
    r"""The answer's Python code: a fenced block, the whole answer, or the longest span that parses.

    Parameters
    ----------
    text : str
        A model's answer.
    function : str, optional
        A function the code must define at top level (preferred block); None accepts any code.
    skip : set of int, default empty
        Line indices left out of the code (marker lines).

    Returns
    -------
    Extraction
        The code (str) and the indices of its non-blank lines.

    Examples
    --------
    >>> answer = "Here you go:\n\n```python\ndef solve(xs):\n    return xs\n```\nIt returns xs."
    >>> extract_code(answer, function="solve").value
    'def solve(xs):\n    return xs'
    """
    lines = answer_lines(text)

    def span(start: int, end: int) -> tuple[str, tuple[int, ...]]:
        keep = [i for i in range(start, end) if i not in skip]
        # a fence inside a list item is indented as a whole
        return textwrap.dedent("\n".join(lines[i] for i in keep)), tuple(i for i in keep if lines[i].strip())

    blocks = _fenced_blocks(lines)
    python = [b for b in blocks if b[0] in ("python", "py", "python3", "")]
    ordered = [b for b in python if b[0]] + [b for b in python if not b[0]] + [b for b in blocks if b not in python]
    for _language, start, end in ordered:
        code, used = span(start, end)
        if _defines(code, function):
            return Extraction(code, used)
    if blocks:
        code, used = span(ordered[0][1], ordered[0][2])
        reason = "SyntaxError" if not _defines(code, None) else f"no function {function!r}"
        return Extraction(None, (), f"fenced code does not define the function ({reason})")
    code, used = span(0, len(lines))
    if _defines(code, function):
        return Extraction(code, used)
    starts = [i for i, line in enumerate(lines) if re.match(r"(def|async def|import|from|class|@)\b", line)]
    for start in starts:
        for end in range(len(lines), start, -1):
            code, used = span(start, end)
            if lines[end - 1].strip() and _defines(code, function):
                return Extraction(code, used)
    return Extraction(None, (), "no Python code that defines the function" if function else "no Python code")


def _record(line: str) -> str | None:
    plain = _plain(line).rstrip(".,")
    plain = re.sub(r"\s*([=;])\s*", r"\1", plain)
    return plain if _RECORD.fullmatch(plain) else None


def extract_records(text: str, *, skip: set[int] | frozenset[int] = frozenset()) -> Extraction:
    r"""The answer's ``key=value;...`` record lines, normalised, wherever they sit (fenced, bulleted, in prose).

    Examples
    --------
    >>> extract_records("Here are the records:\n\n- `name=ADA; age=31`\n- name=BO;age=40").value
    ('name=ADA;age=31', 'name=BO;age=40')
    """
    lines = answer_lines(text)
    found = [(i, _record(line)) for i, line in enumerate(lines) if i not in skip]
    kept = [(i, r) for i, r in found if r is not None]
    if not kept:
        return Extraction(None, (), "no key=value record lines in the answer")
    return Extraction(tuple(r for _, r in kept), tuple(i for i, _ in kept))


# ---- subtask lists --------------------------------------------------------------------------------------

_LABEL = re.compile(
    r"^\s*(?:[-*+\u2022]\s+)?(?:#{1,6}\s*)?(?:\*\*|__)?\s*(?:sub-?task|problem|task|question)\s*#?\s*(\d+)\s*[:.)-]?\s*(?:\*\*|__)?"
    r"\s*[:.)-]?\s*(.*)$", re.IGNORECASE)
_NUMBERED = re.compile(r"^(?:#{1,6}\s*)?(?:\*\*)?(\d+)[.)](?:\*\*)?\s+(.*)$")
_BULLETED = re.compile(r"^()[-*+\u2022]\s+(.*)$")


_TEXT_KEYS = ("problem", "subtask", "task", "question", "description", "prompt", "text", "content")


def _json_item_text(item: dict[str, Any]) -> str:
    """A subtask object's text: a problem/description-like key, else its longest string (not an id or a title)."""
    strings = {str(k).lower(): v for k, v in item.items() if isinstance(v, str)}
    for key in _TEXT_KEYS:
        if key in strings:
            return strings[key]
    return max(strings.values(), key=len, default="")


def _json_subtasks(text: str) -> list[str] | None:
    candidates = [text.strip()]
    lines = answer_lines(text)
    candidates += ["\n".join(lines[s:e]) for _language, s, e in _fenced_blocks(lines)]
    for candidate in candidates:
        try:
            data = json.loads(candidate)
        except (json.JSONDecodeError, ValueError):
            continue
        if isinstance(data, dict):
            data = next((v for v in data.values() if isinstance(v, list)), None)
        if isinstance(data, list):
            items = [item if isinstance(item, str) else _json_item_text(item) if isinstance(item, dict) else ""
                     for item in data]
            items = [i.strip() for i in items if i and i.strip()]
            if items:
                return items
    return None


def _blocks(lines: list[str], heads: list[tuple[int, str]]) -> list[str]:
    out = []
    for n, (i, first) in enumerate(heads):
        end = heads[n + 1][0] if n + 1 < len(heads) else len(lines)
        body = [first] if first.strip() else []
        body += [line for line in lines[i + 1:end] if not _FENCE.match(line)]
        text = "\n".join(body).strip()
        if text:
            out.append(text)
    # closing prose ("Let me know if you need more.") follows the last subtask after a blank line: when no
    # earlier subtask spans several paragraphs, the last one ends at its first blank line too
    if len(out) > 1 and not any(re.search(r"\n\s*\n", t) for t in out[:-1]):
        out[-1] = re.split(r"\n\s*\n", out[-1])[0]
    return out


def parse_subtasks(text: str, k: int) -> list[str]:
    r"""The subtasks of a proposal, at most ``k``: labelled headings, numbered lists or JSON.

    Accepted forms, tried in this order: a JSON list of strings (or of objects, or an object holding a
    list), whole or in a fenced block; lines labelled ``Subtask``/``Problem``/``Task``/``Question`` and
    a number, as headings (``### Subtask 1``), bold labels (``**Subtask 1:**``) or plain labels, with the
    text on the same line or below; top-level numbered items (``1.`` or ``1)``) with their continuation
    lines; failing those, top-level bullets (``-``, ``*``). Each subtask runs to the next label.

    Parameters
    ----------
    text : str
        The proposal.
    k : int
        The most subtasks kept.

    Returns
    -------
    list of str
        Non-empty subtask texts, in order ([] when none is found).

    Examples
    --------
    >>> parse_subtasks("Sure!\n\n**Subtask 1:** Add 2 and 3.\n\n**Subtask 2:** Double it.", 3)
    ['Add 2 and 3.', 'Double it.']
    >>> parse_subtasks("1. Add 2 and 3.\n2. Double it.", 1)
    ['Add 2 and 3.']
    """
    found = _json_subtasks(text)
    if found is not None:
        return found[:k]
    lines = answer_lines(text)
    heads = [(i, m.group(2)) for i, line in enumerate(lines) if (m := _LABEL.match(line))]
    for form in (_NUMBERED, _BULLETED):
        if not heads:
            heads = [(i, m.group(2)) for i, line in enumerate(lines) if (m := form.match(line))]
    return _blocks(lines, heads)[:k]
