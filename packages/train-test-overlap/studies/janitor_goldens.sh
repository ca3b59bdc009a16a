#!/usr/bin/env bash
# Regenerate tests/data/janitor_ngrams.json with lm-evaluation-harness's own Janitor (Python mode).
# usage: studies/janitor_goldens.sh /path/to/EleutherAI/lm-evaluation-harness/clone python3
set -euo pipefail
LM=$1
PY=$2
HERE=$(cd "$(dirname "$0")/.." && pwd)
COMMIT=98c1880f3d4911951e1367f320a30159a1a6f66d
WORK=$(mktemp -d)
git -C "$LM" show "$COMMIT:lm_eval/decontamination/janitor.py" > "$WORK/janitor.py"
(cd "$WORK" && "$PY" - "$HERE/tests/data/janitor_ngrams.json" "$COMMIT" <<'PYEOF' 2>/dev/null
import json, sys
from janitor import Janitor
texts = [
    "   ,, I'm a very !dirty,, ,,  dirty boy. Clean me daddy. \n\nhe he he hehe heh.  lastword  " * 2,
    "dirty boy. Clean he he",
    "The Center for Research on Foundation Models (CRFM) is an interdisciplinary initiative born out of the Stanford "
    "Institute for Human-Centered Artificial Intelligence (HAI) that aims to make fundamental advances.",
    "Caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u2014 unicode words are lower-cased by Python so \u00c9COLE becomes \u00e9cole in every token here",
    "don't split-words like HELM does; it's the janitor's rule: delete punctuation, then split on whitespace only!!",
    "is 2+2 4 true or false",
    "",
]
out = []
for t in texts:
    row = {"text": t}
    for n in (3, 13):
        jan = Janitor(ngram_n=n)
        jan.register_contaminant_python(t)
        row[str(n)] = sorted(jan.dirt_ngrams)
    out.append(row)
json.dump({"source": f"EleutherAI/lm-evaluation-harness lm_eval/decontamination/janitor.py @ {sys.argv[2]} "
           "(Janitor(ngram_n=n).register_contaminant_python)", "cases": out},
          open(sys.argv[1], "w", encoding="utf-8"), ensure_ascii=False, indent=1)
PYEOF
)
rm -rf "$WORK"
