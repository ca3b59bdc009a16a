"""The README's Python example runs as written and prints what its comments say; its shell lines parse."""

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

README = Path(__file__).parents[1] / "README.md"


def _blocks(lang):
    return re.findall(rf"```{lang}\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_python_example_prints_what_its_comments_say():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(_blocks("python")[0], str(README), "exec"), {})  # noqa: S102 - the README's own example
    lines = out.getvalue().splitlines()
    assert lines[0] == "2 Private corporate ownership with limited participation Consultation"
    assert lines[1] == "Statutory community audits and advisory boards ('binding_audit', 'advisory_board')"
    assert lines[2] == "('participation_washing', 'unverified_data')"
    assert len(eval(lines[3])) == 3  # noqa: S307 - a printed list of three names


@pytest.mark.parametrize("line", [ln for b in _blocks("bash") for ln in b.splitlines()
                                  if ln.startswith("python -m right_to_ai")])
def test_shell_lines_have_no_pipes_or_brackets_to_copy(line):
    # "--format md|html|json" pasted into a shell pipes into commands named html and json
    command = line.split("#", 1)[0]
    assert "|" not in command and "[" not in command, line
    from right_to_ai.__main__ import COMMANDS

    words = shlex.split(command)
    assert words[3] in {*COMMANDS, "demo", "reproduce"}, line
