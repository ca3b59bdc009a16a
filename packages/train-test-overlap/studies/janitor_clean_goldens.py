"""Write tests/data/janitor_clean.json: what lm-evaluation-harness's own ``Janitor.clean_python`` matches.

usage: python studies/janitor_clean_goldens.py LM_EVAL_CHECKOUT

Reads ``lm_eval/decontamination/janitor.py`` and ``tests/test_janitor.py`` from the checkout (MIT licence,
EleutherAI). Cases:

- lm-eval's own janitor test strings (``TEST_SEQUENCE`` and the sequences, contaminants and n of
  ``test_janitor1`` .. ``test_janitor7``), taken from the test file's syntax tree;
- 300 seeded documents with stand-alone punctuation (``-``, ``...``, ``(``, ``,`` between words), attached
  punctuation and case changes, each against a contaminant built from the same words.

For each case the file stores the contaminants, the corpus document, n, and lm-eval's answer: every corpus
n-gram window whose normalised text is a registered n-gram (``clean_python``'s contamination indices, as
the normalised n-gram and its character span), and the chunks ``clean_python`` returns.
"""

from __future__ import annotations

import ast
import importlib.util
import io
import json
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parents[1]
WORDS = ["the", "cell", "makes", "ATP", "from", "glucose", "and", "oxygen", "in", "a", "mitochondrion", "don't",
         "Stop", "it's", "energy", "FAST"]
STANDALONE = ["-", "--", "...", ",", "(", ")", "!", "&", ":", "'"]
ATTACHED = [",", ".", "!", "?", ";", ")", "'s", '"']


def _load_janitor(checkout: Path):
    spec = importlib.util.spec_from_file_location("lm_eval_janitor", checkout / "lm_eval/decontamination/janitor.py")
    module = importlib.util.module_from_spec(spec)
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):  # it warns that it runs in python mode
        spec.loader.exec_module(module)
    return module


def _lm_eval_tests(checkout: Path) -> list[dict]:
    tree = ast.parse((checkout / "tests/test_janitor.py").read_text(encoding="utf-8"))
    consts = {node.targets[0].id: ast.literal_eval(node.value) for node in tree.body
              if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
              and isinstance(node.value, (ast.Constant, ast.JoinedStr, ast.BinOp))
              and _is_literal(node.value)}
    cases = []
    for fn in tree.body:
        if not (isinstance(fn, ast.FunctionDef) and fn.name.startswith("test_janitor")):
            continue
        local: dict = {}
        n = None
        registered: list[str] = []
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                name = node.targets[0].id
                if name in ("sequence", "filth", "filths"):
                    local[name] = _value(node.value, consts)
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Janitor":
                n = next(ast.literal_eval(k.value) for k in node.keywords if k.arg == "ngram_n")
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "register_contaminant":
                registered.append(node.args[0].id)
        if "sequence" not in local:
            continue  # test_janitor8 is empty
        filths = []
        for name in registered:  # a local, a module constant, or the loop variable over `filths`
            value = local.get(name, consts.get(name))
            filths.extend(local["filths"] if value is None else [value])
        cases.append({"name": f"lm-eval {fn.name}", "contaminants": filths, "document": local["sequence"], "n": n})
    cases.append({"name": "lm-eval TEST_SEQUENCE", "contaminants": ["like eating pizza, chicken, chips and ice"],
                  "document": consts["TEST_SEQUENCE"], "n": 3})
    return cases


def _is_literal(node: ast.AST) -> bool:
    try:
        ast.literal_eval(node)
    except ValueError:
        return False
    return True


def _value(node: ast.AST, consts: dict):
    if isinstance(node, ast.Name):
        return consts[node.id]
    if isinstance(node, ast.List):
        return [_value(e, consts) for e in node.elts]
    return ast.literal_eval(node)


def _decorate(word: str, rng: np.random.Generator) -> list[str]:
    out = word.upper() if rng.random() < 0.15 else word
    if rng.random() < 0.2:
        out += ATTACHED[rng.integers(len(ATTACHED))]
    tokens = [out]
    if rng.random() < 0.15:  # a stand-alone punctuation token after the word
        tokens.append(STANDALONE[rng.integers(len(STANDALONE))])
    return tokens


def _random_cases(count: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    cases = []
    for k in range(count):
        words = list(rng.choice(WORDS, size=int(rng.integers(8, 16))))
        contaminant = " ".join(t for w in words for t in _decorate(w, rng))
        filler = list(rng.choice(WORDS, size=int(rng.integers(0, 6))))
        doc_words = filler + words + list(rng.choice(WORDS, size=int(rng.integers(0, 6))))
        document = " ".join(t for w in doc_words for t in _decorate(w, rng))
        cases.append({"name": f"random {k}", "contaminants": [contaminant], "document": document,
                      "n": int(rng.choice([3, 4, 5]))})
    return cases


def main(checkout: str) -> None:
    root = Path(checkout)
    janitor = _load_janitor(root)
    commits = {f: subprocess.run(["git", "-C", str(root), "log", "-1", "--format=%H", "--", f], capture_output=True,
                                 text=True, check=True).stdout.strip()
               for f in ("lm_eval/decontamination/janitor.py", "tests/test_janitor.py")}
    cases = _lm_eval_tests(root) + _random_cases(300, seed=20251207)
    for case in cases:
        jan = janitor.Janitor(ngram_n=case["n"], window_to_remove=200, too_dirty_cutoff=10, minimum_slice_length=200)
        for c in case["contaminants"]:
            jan.register_contaminant_python(c)
        doc = case["document"]
        case["matches"] = [[jan.normalize_string(gram), start, end]
                           for gram, (start, end) in janitor.word_ngrams_indices(doc, case["n"])
                           if jan.normalize_string(gram) in jan.dirt_ngrams]
        case["clean"] = jan.clean_python(doc)
    out = {"source": "EleutherAI/lm-evaluation-harness (MIT): "
                     + ", ".join(f"{f} @ {c}" for f, c in commits.items())
                     + "; Janitor(ngram_n=n).register_contaminant_python + word_ngrams_indices / clean_python",
           "cases": cases}
    (HERE / "tests/data/janitor_clean.json").write_text(json.dumps(out, ensure_ascii=False, indent=0) + "\n",
                                                         encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1])
