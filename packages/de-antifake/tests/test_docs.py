"""The README's reproduction wall times are those its JSON files record."""

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_wall_times_match_the_reproduction_json():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    want = [round(json.loads((ROOT / "results" / f).read_text())["seconds"])
            for f in ("reproduce.json", "reproduce_confirm.json")]
    found = re.findall(r"(\d+) s and (\d+) s wall", readme)
    assert found and all([int(a), int(b)] == want for a, b in found), (found, want)
