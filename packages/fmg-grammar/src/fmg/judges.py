"""Judges: who describes motifs, chooses merges, the root motif and the interaction to cut.

``MolecularJudge`` is the protocol the decomposition calls. ``MMFMJudge`` asks a multimodal foundation
model (any callable ``mmfm(prompt, images) -> str``) with the paper's four questions, parses the answers
strictly, retries and falls back; ``OpenAICompatibleJudge`` is that judge over an OpenAI-compatible chat
endpoint. ``HeuristicChemJudge`` answers the same questions with SMARTS rules, deterministically.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import re
import threading
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from rdkit import Chem

__all__ = ["FUNCTIONAL_GROUPS", "PROMPTS", "HeuristicChemJudge", "MMFMJudge", "MolecularJudge", "MotifView",
           "OpenAICompatibleJudge", "ReplayJudge"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False)
class MotifView:
    """What a judge sees: the molecule and its current motifs.

    Attributes
    ----------
    smiles : str
        Canonical SMILES of the molecule.
    mol : rdkit.Chem.Mol
        The kekulised molecule whose bond indices the motifs use.
    motifs : tuple of frozenset of int
        Bond indices of each motif, numbered as the judge must answer.
    descriptions : tuple of str or None
        One description per motif once they have been written.
    """

    smiles: str
    mol: Chem.Mol
    motifs: tuple[frozenset[int], ...]
    descriptions: tuple[str, ...] | None = None

    def motif_atoms(self, k: int) -> list[int]:
        """Sorted atom indices touched by the bonds of motif ``k``."""
        atoms: set[int] = set()
        for b in self.motifs[k]:
            bond = self.mol.GetBondWithIdx(b)
            atoms.update((bond.GetBeginAtomIdx(), bond.GetEndAtomIdx()))
        return sorted(atoms)

    def motif_smiles(self, k: int) -> str:
        """SMILES fragment of motif ``k`` (its bonds and their atoms)."""
        return Chem.MolFragmentToSmiles(self.mol, atomsToUse=self.motif_atoms(k),
                                        bondsToUse=sorted(self.motifs[k]), kekuleSmiles=True)


@runtime_checkable
class MolecularJudge(Protocol):
    """The four decisions the decomposition delegates; indices refer to ``view.motifs``."""

    def describe_motifs(self, view: MotifView) -> list[str]:
        """One description per motif."""

    def choose_merge(self, view: MotifView) -> tuple[int, int] | None:
        """A pair of motif indices to merge, or None to stop merging."""

    def choose_root(self, view: MotifView) -> int:
        """Index of the root motif."""

    def break_cycle(self, view: MotifView, interactions: Sequence[tuple[int, int]]) -> int:
        """Index into ``interactions`` (motif pairs on one cycle) of the least important one, to delete."""


# Functional groups the heuristic judge knows, in priority order (name, SMARTS).
FUNCTIONAL_GROUPS: tuple[tuple[str, str], ...] = (
    ("isocyanate", "[C,c][NX2]=C=O"),
    ("acrylate", "[CH2]=[CX3]C(=O)O[C,c]"),
    ("carbamate", "[N,n]C(=O)O[C,c]"),
    ("ester", "[C,c]C(=O)O[C,c]"),
    ("amide", "[C,c]C(=O)[NX3]"),
    ("carboxylic acid", "[C,c]C(=O)[OX2H]"),
    ("nitrile", "[C,c]C#N"),
    ("primary or secondary amine", "[C,c][NX3;H2,H1;!$(NC=O)]"),
    ("hydroxyl", "[C,c][OX2H]"),
    ("carbonyl", "[C,c][CX3](=O)"),
    ("ether", "[C,c][OX2][C,c]"),
    ("alkene", "[C,c]=[C,c]"),
)
_PATTERNS = [(name, Chem.MolFromSmarts(s)) for name, s in FUNCTIONAL_GROUPS]


def functional_groups(mol: Chem.Mol) -> list[tuple[str, frozenset[int]]]:
    """Every match of ``FUNCTIONAL_GROUPS`` in ``mol`` as (name, bond indices), in priority order."""
    key = Chem.MolToSmiles(mol, canonical=False)
    if key in _GROUP_CACHE:
        return _GROUP_CACHE[key]
    aromatic = Chem.Mol(mol)
    Chem.SanitizeMol(aromatic)
    found = []
    for name, pattern in _PATTERNS:
        for match in aromatic.GetSubstructMatches(pattern):
            bonds = frozenset(b.GetIdx() for i, a in enumerate(match) for c in match[i + 1:]
                              if (b := mol.GetBondBetweenAtoms(a, c)) is not None)
            if bonds:
                found.append((name, bonds))
    if len(_GROUP_CACHE) > 4096:
        _GROUP_CACHE.clear()
    _GROUP_CACHE[key] = found
    return found


_GROUP_CACHE: dict[str, list[tuple[str, frozenset[int]]]] = {}


class HeuristicChemJudge:
    """Deterministic judge from SMARTS functional groups; an offline stand-in for a foundation model.

    - merge: the pair of motifs that most completes a functional group (isocyanate, acrylate, ester, ...)
      with at most one bond outside it; None once no pair completes more of any group;
    - root: the motif containing the largest functional group (then the largest motif, then index 0);
    - cycle: the interaction sharing the fewest bonds (ties: the first listed).

    Examples
    --------
    >>> from fmg import HeuristicChemJudge, decompose
    >>> d = decompose("O=C=NCCCCCCN=C=O", HeuristicChemJudge())
    >>> d.descriptions[d.root]
    'Motif 0: [CH2]N=C=O; contains isocyanate'
    """

    def describe_motifs(self, view: MotifView) -> list[str]:
        """``'Motif k: <fragment SMILES>; contains <groups>'`` for every motif."""
        groups = functional_groups(view.mol)
        out = []
        for k, motif in enumerate(view.motifs):
            names = sorted({name for name, bonds in groups if bonds <= motif})
            frag = view.motif_smiles(k)
            out.append(f"Motif {k}: {frag}" + (f"; contains {', '.join(names)}" if names else ""))
        return out

    def choose_merge(self, view: MotifView) -> tuple[int, int] | None:
        """The pair that completes most of the highest-priority unfinished functional group."""
        for _, group in functional_groups(view.mol):
            if any(group <= m for m in view.motifs):
                continue
            best, best_key = None, None
            for i, mi in enumerate(view.motifs):
                for j in range(i + 1, len(view.motifs)):
                    mj = view.motifs[j]
                    if not (mi & group and mj & group):
                        continue
                    union = mi | mj
                    gain = len(union & group) - max(len(mi & group), len(mj & group))
                    extra = len(union - group)
                    if gain <= 0 or extra > 1:
                        continue
                    key = (extra, -gain, i, j)
                    if best_key is None or key < best_key:
                        best, best_key = (i, j), key
            if best is not None:
                return best
        return None

    def choose_root(self, view: MotifView) -> int:
        """The motif holding the largest functional group."""
        groups = functional_groups(view.mol)
        keys = [(max((len(g) for _, g in groups if g <= m), default=0), len(m), -k) for k, m in enumerate(view.motifs)]
        return -max(keys)[2]

    def compare(self, a: Any, b: Any) -> int:
        """0 when decomposition ``a`` is better: its root holds the larger functional group, then fewer motifs."""
        def key(d: Any) -> tuple[int, int]:
            groups = functional_groups(d.mol)
            return (max((len(g) for _, g in groups if g <= d.motifs[d.root]), default=0), -len(d.motifs))

        return 0 if key(a) >= key(b) else 1

    def break_cycle(self, view: MotifView, interactions: Sequence[tuple[int, int]]) -> int:
        """The interaction whose two motifs share the fewest bonds."""
        sizes = [len(view.motifs[i] & view.motifs[j]) for i, j in interactions]
        return sizes.index(min(sizes))


# Prompts rebuilt from the paper's description of its four questions (the official prompt files are not
# published); ``{smiles}``, ``{n}``, ``{last}``, ``{descriptions}``, ``{interactions}`` are filled in.
PROMPTS: dict[str, str] = {
    "describe": (
        "You are an expert chemist. The image shows the molecule {smiles}. It is divided into {n} "
        "substructures (motifs), each highlighted in its own colour and numbered 0 to {last}; further images "
        "show each motif on its own. Describe every motif in one line: what functional group or structural "
        "unit it is and what role it plays in the molecule. Answer with exactly {n} lines of the form "
        "'Motif k: <description>', for k = 0 to {last}."),
    "merge": (
        "You are an expert chemist. The molecule {smiles} is divided into {n} numbered motifs:\n"
        "{descriptions}\n"
        "A good motif is a chemically meaningful unit (a functional group, a ring system, a linker). Should two "
        "of these motifs be merged into one such unit? If so, answer on the last line with the two motif "
        "numbers as 'x,y'. If no merge makes the motifs more meaningful, answer NONE on the last line."),
    "root": (
        "You are an expert chemist. The molecule {smiles} is divided into {n} numbered motifs:\n"
        "{descriptions}\n"
        "Which motif is the most important, the one defining the molecule's class and function, to put at "
        "the root of its motif tree? Answer on the last line with one integer from 0 to {last}."),
    "cycle": (
        "You are an expert chemist. The molecule {smiles} is divided into motifs:\n"
        "{descriptions}\n"
        "The following interactions between motifs form a cycle; one of them must be removed so that the "
        "motifs form a tree:\n{interactions}\n"
        "Which interaction is the least important to the molecule's chemistry? Answer on the last line with "
        "the interaction's integer index."),
    "compare": (
        "You are an expert chemist. Two motif trees describe the molecule {smiles}.\n"
        "Decomposition A:\n{tree_a}\nDecomposition B:\n{tree_b}\n"
        "Which decomposition splits the molecule into more chemically meaningful motifs, with the most important "
        "motif at the root? Answer on the last line with A or B."),
}
ONE_SHOT = {
    "describe": "Example: for O=C=NCCCCCCN=C=O with motifs 0 (N=C=O with its carbon) and 1 (an ethylene "
                "link), answer\nMotif 0: isocyanate group, the reactive end\nMotif 1: methylene chain linker\n",
    "merge": "Example: motifs 0 'C=O of an ester' and 1 'the ester oxygen' belong together: answer 0,1\n",
    "root": "Example: for a diisocyanate, an isocyanate motif is the root: answer 0\n",
    "cycle": "Example: if interaction 2 joins two chain fragments that share only one bond: answer 2\n",
    "compare": "Example: a tree rooted at an isocyanate group beats one rooted at a methylene link: answer A\n",
}


class MMFMJudge:
    """Judge that asks a multimodal foundation model, with the paper's four prompts.

    Parameters
    ----------
    mmfm : callable
        ``mmfm(prompt: str, images: list[bytes]) -> str``: the foundation model. Images are PNG bytes of
        the molecule with its numbered, highlighted motifs (none when ``text_only``).
    max_tries : int, default 10
        Attempts per question; after the last malformed answer the fallback is used and recorded.
    text_only : bool, default False
        Send no images (the paper's text-only ablation).
    scheme : {"zero", "one"}, default "zero"
        Zero-shot prompts, or prompts with one worked example.
    cache_dir : str or Path, optional
        Folder of a disk cache keyed by the prompt and the images' SHA-256; a cached question sends no
        request.

    Attributes
    ----------
    records : list of dict
        One entry per question: ``step``, ``smiles``, ``tries``, ``answer`` (the raw last answer),
        ``fallback`` (True when the fallback was used) and ``cached``.
    n_requests : int
        Calls made to ``mmfm``.
    """

    def __init__(self, mmfm: Callable[[str, list[bytes]], str], *, max_tries: int = 10, text_only: bool = False,
                 scheme: str = "zero", cache_dir: str | Path | None = None) -> None:
        if not callable(mmfm):
            raise TypeError(f"mmfm must be callable as mmfm(prompt, images) -> str, got {type(mmfm).__name__}")
        if isinstance(max_tries, bool) or not isinstance(max_tries, int) or max_tries < 1:
            raise ValueError(f"max_tries must be a positive int, got {max_tries!r}")
        if scheme not in ("zero", "one"):
            raise ValueError(f"scheme must be 'zero' or 'one', got {scheme!r}")
        self.mmfm = mmfm
        self.max_tries = max_tries
        self.text_only = bool(text_only)
        self.scheme = scheme
        self.cache_dir = None if cache_dir is None else Path(cache_dir)
        self.records: list[dict[str, Any]] = []
        self.n_requests = 0
        self._transcript: dict[str, list[str]] = {}
        self._lock = threading.Lock()
        self.max_concurrency = 1

    # -- plumbing ---------------------------------------------------------------------------------------
    def _prompt(self, step: str, view: MotifView, **extra: str) -> str:
        descriptions = "\n".join(view.descriptions) if view.descriptions else ""
        text = PROMPTS[step].format(smiles=view.smiles, n=len(view.motifs), last=len(view.motifs) - 1,
                                    descriptions=descriptions, interactions=extra.get("interactions", ""),
                                    tree_a=extra.get("tree_a", ""), tree_b=extra.get("tree_b", ""))
        return (ONE_SHOT[step] + text) if self.scheme == "one" else text

    def _images(self, view: MotifView, isolated: bool) -> list[bytes]:
        if self.text_only:
            return []
        from fmg.chem import draw_motifs

        images = [draw_motifs(view.mol, view.motifs)]
        if isolated:
            images += [draw_motifs(view.mol, view.motifs, isolated=k) for k in range(len(view.motifs))]
        return images

    def _call(self, prompt: str, images: list[bytes], attempt: int) -> tuple[str, bool]:
        answer, cached = self._call_cached(prompt, images, attempt)
        with self._lock:
            answers = self._transcript.setdefault(_prompt_key(prompt), [])
            if len(answers) == attempt:
                answers.append(answer)
        return answer, cached

    def transcript(self) -> dict[str, list[str]]:
        """Every answer received so far: SHA-256 of the prompt -> the answers to its successive tries."""
        return {k: list(v) for k, v in self._transcript.items()}

    def save_transcript(self, path: str | Path) -> Path:
        """Write ``transcript()`` as JSON, for ``ReplayJudge``; returns the path."""
        path = Path(path)
        path.write_text(json.dumps(self.transcript(), indent=1))
        return path

    def _call_cached(self, prompt: str, images: list[bytes], attempt: int) -> tuple[str, bool]:
        key = hashlib.sha256("\x00".join([prompt, str(attempt)] + [hashlib.sha256(i).hexdigest() for i in images])
                             .encode()).hexdigest()
        path = self.cache_dir / f"{key}.json" if self.cache_dir is not None else None
        if path is not None and path.exists():
            return json.loads(path.read_text())["answer"], True
        with self._lock:
            self.n_requests += 1
        answer = self.mmfm(prompt, images)
        if not isinstance(answer, str):
            answer = ""
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"prompt": prompt, "answer": answer}))
        return answer, False

    def _ask(self, step: str, view: MotifView, parse: Callable[[str], Any], fallback: Any,
             images: list[bytes], **extra: str) -> Any:
        prompt = self._prompt(step, view, **extra)
        answer, cached_all = "", True
        for attempt in range(self.max_tries):
            answer, cached = self._call(prompt, images, attempt)
            cached_all &= cached
            value = parse(answer)
            if value is not None:
                self.records.append({"step": step, "smiles": view.smiles, "tries": attempt + 1, "answer": answer,
                                     "fallback": False, "cached": cached_all})
                return value
        log.info("%s: %d malformed answers to %r, using the fallback", view.smiles, self.max_tries, step)
        self.records.append({"step": step, "smiles": view.smiles, "tries": self.max_tries, "answer": answer,
                             "fallback": True, "cached": cached_all})
        return fallback

    # -- the four questions -----------------------------------------------------------------------------
    def describe_motifs(self, view: MotifView) -> list[str]:
        """Descriptions parsed from lines ``'Motif k: ...'`` (exactly one per motif, else retried)."""
        n = len(view.motifs)

        def parse(answer: str) -> list[str] | None:
            found: dict[int, str] = {}
            for line in answer.splitlines():
                m = re.match(r"\s*\**\s*Motif\s+(\d+)\s*\**\s*[:.\-]\s*(.+)", line)
                if m:
                    found.setdefault(int(m.group(1)), m.group(2).strip())
            if sorted(found) != list(range(n)):
                return None
            return [f"Motif {k}: {found[k]}" for k in range(n)]

        return self._ask("describe", view, parse, [f"Motif {k}: {view.motif_smiles(k)}" for k in range(n)],
                         self._images(view, isolated=True))

    def choose_merge(self, view: MotifView) -> tuple[int, int] | None:
        """``'x,y'`` (two distinct motif numbers) or ``NONE`` on the answer's last line; fallback NONE."""
        n = len(view.motifs)

        def parse(answer: str) -> Any:
            last = _last_line(answer)
            if re.fullmatch(r"none\.?", last, flags=re.IGNORECASE):
                return "NONE"
            m = re.fullmatch(r"\(?\s*(\d+)\s*,\s*(\d+)\s*\)?\.?", last)
            if m and int(m.group(1)) != int(m.group(2)) and max(int(m.group(1)), int(m.group(2))) < n:
                return (int(m.group(1)), int(m.group(2)))
            return None

        value = self._ask("merge", view, parse, "NONE", self._images(view, isolated=False))
        return None if value == "NONE" else value

    def choose_root(self, view: MotifView) -> int:
        """One integer in ``[0, n)`` on the answer's last line; fallback 0."""
        return self._ask("root", view, lambda a: _index(a, len(view.motifs)), 0, self._images(view, isolated=False))

    def break_cycle(self, view: MotifView, interactions: Sequence[tuple[int, int]]) -> int:
        """One interaction index on the answer's last line; fallback 0."""
        listing = "\n".join(f"Interaction {k} features {view.descriptions[i] if view.descriptions else i} and "
                            f"{view.descriptions[j] if view.descriptions else j}"
                            for k, (i, j) in enumerate(interactions))
        return self._ask("cycle", view, lambda a: _index(a, len(interactions)), 0,
                         self._images(view, isolated=False), interactions=listing)

    def compare(self, a: Any, b: Any) -> int:
        """0 when the model prefers decomposition ``a`` (answer A), 1 for B (text only); fallback A."""
        view = MotifView(a.smiles, a.mol, a.motifs, a.descriptions)

        def parse(answer: str) -> int | None:
            return {"A": 0, "B": 1}.get(_last_line(answer).strip(" .*").upper())

        return self._ask("compare", view, parse, 0, [], tree_a=_tree_text(a), tree_b=_tree_text(b))


def _tree_text(d: Any) -> str:
    lines = [f"root: {d.descriptions[d.root]}"]
    lines += [f"{d.descriptions[u]} -- {d.descriptions[v]}" for u, v in sorted(d.tree.edges())]
    return "\n".join(lines)


def _prompt_key(prompt: str) -> str:
    return hashlib.sha256(prompt.encode()).hexdigest()


class _Replay:
    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers
        self.calls: dict[str, int] = {}

    def __call__(self, prompt: str, images: list[bytes]) -> str:
        key = _prompt_key(prompt)
        k = self.calls.get(key, 0)
        self.calls[key] = k + 1
        if key not in self.answers or k >= len(self.answers[key]):
            first = prompt.splitlines()[0][:120]
            raise ValueError(f"no recorded answer (try {k + 1}) for the prompt starting {first!r}; the "
                             "transcript holds the prompts of the molecules and options it was recorded with")
        return self.answers[key][k]


class ReplayJudge(MMFMJudge):
    """``MMFMJudge`` that answers from a transcript saved by ``MMFMJudge.save_transcript``.

    Replays a foundation model's answers offline (same prompts, parsing, retries and fallbacks); no
    image is drawn.

    Parameters
    ----------
    path : str or Path
        The JSON transcript.
    max_tries, scheme
        As in ``MMFMJudge`` (use the values of the recording).

    Raises
    ------
    ValueError
        At the first question whose prompt the transcript does not hold.
    """

    def __init__(self, path: str | Path, *, max_tries: int = 10, scheme: str = "zero") -> None:
        answers = json.loads(Path(path).read_text())
        if not isinstance(answers, dict) or not all(isinstance(v, list) for v in answers.values()):
            raise ValueError(f"{path}: not a transcript (expected a JSON object of prompt hash -> list of answers)")
        super().__init__(_Replay(answers), max_tries=max_tries, text_only=True, scheme=scheme)
        self.path = Path(path)


def _last_line(answer: str) -> str:
    lines = [line.strip() for line in answer.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _index(answer: str, n: int) -> int | None:
    m = re.fullmatch(r"(\d+)\.?", _last_line(answer))
    return int(m.group(1)) if m and int(m.group(1)) < n else None


@dataclass
class _OpenAIChat:
    model: str
    base_url: str
    api_key: str | None
    timeout: float
    backoff: float
    retries: int = 3
    _sent: list[dict[str, Any]] = field(default_factory=list, repr=False)

    def __call__(self, prompt: str, images: list[bytes]) -> str:
        content: list[dict[str, Any]] = [{"type": "text", "text": prompt}]
        content += [{"type": "image_url", "image_url": {"url": "data:image/png;base64," +
                                                        base64.b64encode(img).decode()}} for img in images]
        body = json.dumps({"model": self.model, "messages": [{"role": "user", "content": content}]}).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        url = self.base_url.rstrip("/") + "/chat/completions"
        for attempt in range(self.retries + 1):
            try:
                request = urllib.request.Request(url, data=body, headers=headers, method="POST")
                with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310 (user URL)
                    payload = json.loads(response.read())
                return str(payload["choices"][0]["message"]["content"])
            except (OSError, KeyError, IndexError, ValueError) as exc:
                if attempt == self.retries:
                    log.warning("request to %s failed %d times: %s", url, attempt + 1, exc)
                    return ""
                time.sleep(self.backoff * 2 ** attempt)
        return ""


class OpenAICompatibleJudge(MMFMJudge):
    """``MMFMJudge`` over an OpenAI-compatible ``/chat/completions`` endpoint (the paper used gpt-4o).

    Parameters
    ----------
    model : str, default "gpt-4o"
        Model name sent with every request.
    base_url : str, optional
        Endpoint root (default ``https://api.openai.com/v1``); a local server works too.
    api_key : str, optional
        Bearer token; read it from your environment yourself, none is read here.
    max_tries, text_only, scheme, cache_dir
        As in ``MMFMJudge``.
    max_concurrency : int, default 8
        Molecules ``FMG.fit`` decomposes at once in threads (requests in flight); results do not depend on it,
        the order of ``records`` does.
    timeout : float, default 120
        Seconds per HTTP request.
    backoff : float, default 1.0
        Base of the exponential backoff between failed HTTP requests (3 retries).
    """

    def __init__(self, model: str = "gpt-4o", *, base_url: str | None = None, api_key: str | None = None,
                 max_tries: int = 10, text_only: bool = False, scheme: str = "zero",
                 cache_dir: str | Path | None = None, max_concurrency: int = 8, timeout: float = 120.0,
                 backoff: float = 1.0) -> None:
        chat = _OpenAIChat(model, base_url or "https://api.openai.com/v1", api_key, timeout, backoff)
        super().__init__(chat, max_tries=max_tries, text_only=text_only, scheme=scheme, cache_dir=cache_dir)
        if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int) or max_concurrency < 1:
            raise ValueError(f"max_concurrency must be a positive int, got {max_concurrency!r}")
        self.model = model
        self.base_url = chat.base_url
        self.max_concurrency = max_concurrency
