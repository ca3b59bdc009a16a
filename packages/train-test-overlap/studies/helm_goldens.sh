#!/usr/bin/env bash
# Regenerate tests/data/helm/golden_* by running HELM's own data_overlap scripts on the hand fixture.
#
# usage: studies/helm_goldens.sh /path/to/stanford-crfm/helm/clone /path/to/python-with-nltk-cattrs-tqdm
#
# The overlap statistics with the "intersect" part come from compute_data_overlap_metrics.py at commit
# 003a3c0a2b65cfda4af3624dc2b13ac8f67e8342 (2023-08-28, "Update comment"; the intersect part was added in
# 5cdddb55 and never merged before the scripts were removed from main in fe9bd052, PR #2382). The metrics
# come from compute_metrics_from_ngrams.py at commit 02b46f9be6c77e581ebfc55343b84aa453804454 (2023-10-19,
# "Update with N"). Both read light_tokenizer.DefaultTokenizer, identical at the two commits.
set -euo pipefail
HELM=$1
PY=$2
HERE=$(cd "$(dirname "$0")/.." && pwd)
DATA=$HERE/tests/data/helm
WORK=$(mktemp -d)
export PYTHONUTF8=1 PYTHONHASHSEED=0
git -C "$HELM" archive 003a3c0a2b65cfda4af3624dc2b13ac8f67e8342 scripts/data_overlap | tar -x -C "$WORK" --wildcards '*.py' 2>/dev/null || true
mkdir -p "$WORK/m/scripts/data_overlap"
for f in $(git -C "$HELM" ls-tree -r --name-only 02b46f9be6c77e581ebfc55343b84aa453804454 -- scripts/data_overlap | grep '\.py$'); do
  mkdir -p "$WORK/m/$(dirname "$f")"
  git -C "$HELM" show "02b46f9be6c77e581ebfc55343b84aa453804454:$f" > "$WORK/m/$f"
done
mkdir -p "$WORK/corpus"
cp "$DATA/corpus.txt" "$WORK/corpus/corpus.txt"
(cd "$WORK/scripts/data_overlap" && "$PY" compute_data_overlap_metrics.py --input-data "$WORK/corpus" \
   --scenario-data "$DATA/scenarios.jsonl" --output-stats "$DATA/golden_stats.jsonl" --input-format raw --N 5 9 13)
mv "$DATA/golden_stats.jsonl_ngrams" "$DATA/golden_ngrams.jsonl"
for N in 5 9 13; do
  (cd "$WORK/m/scripts/data_overlap" && "$PY" compute_metrics_from_ngrams.py --ngrams-path "$DATA/golden_ngrams.jsonl" \
     --scenario-path "$DATA/scenarios.jsonl" --out-path "$DATA/golden_metrics_N$N.jsonl" --N $N)
done
rm -rf "$WORK"

# Tokenizer cases: HELM's DefaultTokenizer (normalization "default") and LightTokenizer ("none").
(cd "$(git -C "$HELM" rev-parse --show-toplevel)" >/dev/null; true)
WORK2=$(mktemp -d)
git -C "$HELM" show 003a3c0a2b65cfda4af3624dc2b13ac8f67e8342:scripts/data_overlap/light_tokenizer.py > "$WORK2/light_tokenizer.py"
(cd "$WORK2" && "$PY" - "$DATA/tokenizer_cases.json" <<'PYEOF'
import json, sys
from light_tokenizer import DefaultTokenizer, LightTokenizer
doc = ("The Center for Research on Foundation Models (CRFM) is an interdisciplinary initiative born out of the Stanford "
       "Institute for Human-Centered Artificial Intelligence (HAI) that aims to make fundamental advances in the study, "
       "development, and deployment of foundation models.")
cases = [doc, "THis ,,iS a SiMPlE t-EsT cAsE", "", "!!!", "  leading space", "trailing.", "don't stop", "Caf\u00e9 \u00c9COLE na\u00efve",
         "a\u2014b \u2013 c", "tab\tnew\nline\r\n", "\u0130stanbul", "x_y", "stra\u00dfe \u1e9e", "100%... 2+2=4", "\u00a0nbsp\u2003em\u3000x",
         "(\"quoted\")", "emoji \U0001F600 ok"]
out = [{"text": c, "default": DefaultTokenizer().tokenize(c), "none": LightTokenizer().tokenize(c)} for c in cases]
json.dump({"source": "stanford-crfm/helm scripts/data_overlap/light_tokenizer.py @ 003a3c0a2b65cfda4af3624dc2b13ac8f67e8342",
           "cases": out}, open(sys.argv[1], "w", encoding="utf-8"), ensure_ascii=False, indent=1)
PYEOF
)
rm -rf "$WORK2"
