"""MMFM judge: prompts, strict parsing, retries, fallbacks, cache, and an OpenAI-compatible server."""

import base64
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import networkx as nx
import pytest
from icml25_shared.random import spawn

from fmg import FMG, HeuristicChemJudge, MMFMJudge, OpenAICompatibleJudge, ReplayJudge, decompose, load_dataset
from fmg.experiments import CONFIGS


class ChemistMMFM:
    """A deterministic stand-in for a foundation model: answers each of the four prompts from its text.

    describe: one line per motif; merge: the first two motifs whose descriptions mention the same element
    pair (here: never after ``max_merges``); root: the motif with the most highlighted atoms mentioned;
    cycle: the last interaction. ``bad`` malformed answers are returned first for every question.
    """

    def __init__(self, bad=0, max_merges=1, bad_answer="I am not sure."):
        self.bad, self.max_merges, self.bad_answer = bad, max_merges, bad_answer
        self.prompts, self.images, self.merges = [], [], 0
        self._seen = {}

    def __call__(self, prompt, images):
        self.prompts.append(prompt)
        self.images.append(images)
        self._seen[prompt] = self._seen.get(prompt, 0) + 1
        if self._seen[prompt] <= self.bad:  # the first `bad` answers to every question are malformed
            return self.bad_answer
        found = re.search(r"into (\d+)", prompt)
        n = int(found.group(1)) if found else None
        if prompt.startswith("You are an expert chemist. The image shows"):
            return "\n".join(f"Motif {k}: part number {k}" for k in range(n))
        if "merged" in prompt:
            if self.merges < self.max_merges and n > 2:
                self.merges += 1
                return "Merging the two first motifs makes a larger unit.\n0,1"
            return "NONE"
        if "root" in prompt:
            return f"The most important motif is the last one.\n{n - 1}"
        k = len(re.findall(r"Interaction \d+ features", prompt))
        return f"{k - 1}"


def test_prompts_carry_the_motif_images_and_descriptions():
    mmfm = ChemistMMFM()
    judge = MMFMJudge(mmfm)
    dec = decompose("O=C=NCCCCCCN=C=O", judge)
    assert len(dec.merges) == 1 and dec.root == len(dec.motifs) - 1
    assert dec.descriptions[0] == "Motif 0: part number 0"
    first = mmfm.images[0]  # describe: the combined view and one isolated view per motif
    n_motifs = len(decompose("O=C=NCCCCCCN=C=O", HeuristicChemJudge(), merge=False).motifs)
    assert len(first) == 1 + n_motifs and all(img.startswith(b"\x89PNG") for img in first)
    assert "Motif 0: part number 0" in mmfm.prompts[1]  # descriptions inserted into the merge prompt
    assert all(not r["fallback"] for r in judge.records)


def test_text_only_sends_no_images_and_scheme_one_adds_an_example():
    mmfm = ChemistMMFM()
    decompose("NCCO", MMFMJudge(mmfm, text_only=True, scheme="one"))
    assert all(images == [] for images in mmfm.images)
    assert all(p.startswith("Example") for p in mmfm.prompts)


@pytest.mark.parametrize("bad_answer", ["Motif 0: only one", "maybe 0 and 1", "the third one", "0,0", "99"])
def test_malformed_answers_are_retried_then_the_fallback_is_recorded(bad_answer):
    mmfm = ChemistMMFM(bad=3, bad_answer=bad_answer)
    judge = MMFMJudge(mmfm, max_tries=3)
    dec = decompose("OCCCO", judge)
    # every question got 3 malformed answers: descriptions fall back, merge -> NONE, root -> 0
    assert [r["step"] for r in judge.records][:3] == ["describe", "merge", "root"]
    assert all(r["fallback"] and r["tries"] == 3 for r in judge.records)
    assert dec.merges == () and dec.root == 0
    assert judge.n_requests == 3 * len(judge.records)


def test_answers_valid_on_a_retry_are_used():
    mmfm = ChemistMMFM(bad=2)
    judge = MMFMJudge(mmfm, max_tries=3)
    dec = decompose("OCCCCO", judge)
    assert dec.root == len(dec.motifs) - 1 and all(r["tries"] == 3 and not r["fallback"] for r in judge.records)


def test_a_cached_rerun_sends_no_request(tmp_path):
    first = MMFMJudge(ChemistMMFM(max_merges=0), cache_dir=tmp_path)
    a = decompose("O=C=NCCCCCCN=C=O", first)
    second_mmfm = ChemistMMFM(max_merges=0)
    second = MMFMJudge(second_mmfm, cache_dir=tmp_path)
    b = decompose("O=C=NCCCCCCN=C=O", second)
    assert first.n_requests > 0 and second.n_requests == 0 and second_mmfm.prompts == []
    assert (a.root, a.motifs, a.descriptions) == (b.root, b.motifs, b.descriptions)
    assert all(r["cached"] for r in second.records)


class BadJudge(HeuristicChemJudge):
    def __init__(self, **answers):
        self.answers = answers

    def choose_root(self, view):
        return self.answers.get("root", 0)

    def choose_merge(self, view):
        return self.answers.get("merge")

    def break_cycle(self, view, cycle):
        return self.answers.get("cut", super().break_cycle(view, cycle))

    def describe_motifs(self, view):
        out = list(super().describe_motifs(view))
        return out[:-1] if self.answers.get("short") else out


PFP = "C=CC(=O)OC1=C(C(=C(C(=C1F)F)F)F)F"  # pentafluorophenyl acrylate: its clique graph has cycles to cut


@pytest.mark.parametrize(("answers", "match"), [({"root": 99}, r"root 99 names no motif; accepted: an int in \[0, "),
                                                ({"cut": 7}, r"interaction 7 names no interaction of the cycle; accepted: an int in \[0, "),
                                                ({"cut": "1"}, r"interaction '1' names no interaction"),
                                                ({"short": True}, r"descriptions for \d+ motifs"),
                                                ({"merge": (0, 42)}, "merge index 42"),
                                                ({"merge": (1, 1)}, "merge motif 1 with itself"),
                                                ({"merge": "0,1"}, "not a pair")])
def test_a_judge_naming_a_missing_motif_raises_naming_the_molecule(answers, match):
    with pytest.raises(ValueError, match=match) as info:
        decompose(PFP, BadJudge(**answers))
    assert "C=CC(=O)Oc1c(F)c(F)c(F)c(F)c1F" in str(info.value)


def test_each_ablation_changes_the_rule_count_on_some_set():
    counts = {}
    for name in ("isocyanates", "chain_extenders"):
        for config, kw in CONFIGS.items():
            model = FMG(MMFMJudge(ChemistMMFM(max_merges=1), text_only=True), **kw).fit(load_dataset(name))
            counts[(name, config)] = model.grammar_.n_rules
    for config in ("no merge", "random root", "max-spanning tree"):
        assert any(counts[(n, config)] != counts[(n, "FMG")] for n in ("isocyanates", "chain_extenders")), counts


class _Handler(BaseHTTPRequestHandler):
    requests: list = []
    answers: list = []

    def do_POST(self):  # noqa: N802 (http.server API)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        answer = type(self).answers.pop(0) if type(self).answers else "NONE"
        payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": answer}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    _Handler.requests, _Handler.answers = [], []
    httpd = HTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", _Handler
    httpd.shutdown()
    httpd.server_close()


def test_openai_compatible_judge_against_a_local_server(server, tmp_path):
    url, handler = server
    n_motifs = len(decompose("OCCCO", HeuristicChemJudge(), merge=False).motifs)
    descriptions = "\n".join(f"Motif {k}: hydroxyl chain part {k}" for k in range(n_motifs))
    handler.answers = ["Motif 0: too few", descriptions, "the pair 0 and 1", "NONE", "not a number", "1"]
    judge = OpenAICompatibleJudge("test-model", base_url=url, api_key="k", max_tries=3, cache_dir=tmp_path)
    dec = decompose("OCCCO", judge)
    assert dec.root == 1 and dec.merges == () and dec.descriptions[0] == "Motif 0: hydroxyl chain part 0"
    assert len(handler.requests) == 6 and [r["tries"] for r in judge.records] == [2, 2, 2]
    first = handler.requests[0]
    assert first["path"] == "/v1/chat/completions" and first["auth"] == "Bearer k"
    assert first["body"]["model"] == "test-model"
    content = first["body"]["messages"][0]["content"]
    assert content[0]["type"] == "text" and "OCCCO" in content[0]["text"]
    pngs = [base64.b64decode(c["image_url"]["url"].split(",", 1)[1]) for c in content[1:]]
    assert len(pngs) == 1 + n_motifs and all(p.startswith(b"\x89PNG") for p in pngs)
    again = OpenAICompatibleJudge("test-model", base_url=url, max_tries=3, cache_dir=tmp_path)
    assert decompose("OCCCO", again).root == 1 and len(handler.requests) == 6  # cached: no request sent


def test_replay_judge_reproduces_a_recorded_model_and_its_trees(tmp_path):
    train = load_dataset("chain_extenders")
    recorder = MMFMJudge(ChemistMMFM(bad=1, max_merges=3), text_only=True, max_tries=2)
    recorded = FMG(recorder).fit(train)
    path = recorder.save_transcript(tmp_path / "answers.json")
    replayed = FMG(ReplayJudge(path, max_tries=2)).fit(train)
    assert replayed.grammar_.rules == recorded.grammar_.rules and replayed.grammar_.counts == recorded.grammar_.counts
    for a, b in zip(recorded.decompositions_, replayed.decompositions_, strict=True):
        assert (a.motifs, a.root, a.merges, a.descriptions) == (b.motifs, b.root, b.merges, b.descriptions)
        assert nx.is_tree(b.tree) and len(b.owner) == b.mol.GetNumAtoms()
    for smiles in replayed.train_smiles_:
        assert replayed.replay(replayed.derive(smiles)) == smiles
    with pytest.raises(ValueError, match="no recorded answer .try 1. for the prompt starting 'You are an expert"):
        FMG(ReplayJudge(path)).fit(["O=C=NCCCCCCN=C=O"])
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a transcript"):
        ReplayJudge(bad)


def test_tournament_keeps_the_bradley_terry_winner():
    from fmg.decomposition import decompose as dec_fn

    train = load_dataset("chain_extenders")
    heuristic = FMG(HeuristicChemJudge(), n_candidates=4).fit(train)
    for smiles, d in zip(heuristic.train_smiles_, heuristic.decompositions_, strict=True):
        assert heuristic.replay(heuristic.derive(smiles)) == smiles
        own = dec_fn(smiles, HeuristicChemJudge())
        judge = HeuristicChemJudge()
        assert judge.compare(d, own) == 0  # the winner is at least as good as the judge's own tree

    class PreferLater(HeuristicChemJudge):
        def compare(self, a, b):
            return 1  # the later candidate always wins: candidate 3 beats all

    later = FMG(PreferLater(), n_candidates=4).fit(train[:3])
    for i, s in enumerate(train[:3]):
        stream = spawn(0, 3)[i]
        for k in range(4):  # replay the candidates' draws: the first uses the judge's root
            expected = dec_fn(s, PreferLater(), root="judge" if k == 0 else "random", random_state=stream, index=i)
        assert later.decompositions_[i].root == expected.root and later.decompositions_[i].motifs == expected.motifs


def test_mmfm_tournament_prompt_and_fallback():
    answers = iter(["B", "maybe", "maybe", "A"] * 50)
    seen = []

    def mmfm(prompt, images):
        if "Decomposition A" in prompt:
            seen.append(prompt)
            return next(answers)
        return ChemistMMFM()(prompt, images)

    judge = MMFMJudge(mmfm, text_only=True, max_tries=2)
    a = decompose("OCCCO", HeuristicChemJudge())
    b = decompose("OCCCO", HeuristicChemJudge(), root="random", random_state=1)
    assert judge.compare(a, b) == 1 and judge.compare(a, b) == 0  # second: two malformed answers -> fallback A
    assert judge.records[-1]["fallback"] and "root: Motif" in seen[0]
    with pytest.raises(TypeError, match="needs a judge with compare"):
        FMG(object.__new__(type("NoCompare", (), {k: (lambda *x: None) for k in (
            "describe_motifs", "choose_merge", "choose_root", "break_cycle")})), n_candidates=2).fit(["CCO"])


@pytest.mark.parametrize("config", list(CONFIGS))
def test_replay_judge_gives_tree_decompositions_under_every_ablation(tmp_path, config):
    train = load_dataset("chain_extenders")
    recorder = MMFMJudge(ChemistMMFM(max_merges=2), text_only=True)
    recorded = FMG(recorder, **CONFIGS[config]).fit(train)
    replayed = FMG(ReplayJudge(recorder.save_transcript(tmp_path / "t.json")), **CONFIGS[config]).fit(train)
    assert replayed.grammar_.rules == recorded.grammar_.rules
    for d in replayed.decompositions_:
        assert nx.is_tree(d.tree) and len(d.owner) == d.mol.GetNumAtoms()
        for atom in d.mol.GetAtoms():
            assert {b.GetIdx() for b in atom.GetBonds()} <= d.bags[d.owner[atom.GetIdx()]]
    for smiles in replayed.train_smiles_:
        assert replayed.replay(replayed.derive(smiles)) == smiles


def test_concurrent_judge_gives_the_sequential_grammar():
    import time as _time

    class Slow:
        def __init__(self):
            self.inner, self.active, self.peak, self.lock = ChemistMMFM(max_merges=0), 0, 0, threading.Lock()

        def __call__(self, prompt, images):
            with self.lock:
                self.active += 1
                self.peak = max(self.peak, self.active)
            _time.sleep(0.002)
            with self.lock:
                self.active -= 1
                return self.inner(prompt, images)

    train = load_dataset("chain_extenders")
    sequential = FMG(MMFMJudge(Slow(), text_only=True)).fit(train)
    slow = Slow()
    judge = MMFMJudge(slow, text_only=True)
    judge.max_concurrency = 4
    parallel = FMG(judge).fit(train)
    assert parallel.grammar_.rules == sequential.grammar_.rules and parallel.grammar_.counts == sequential.grammar_.counts
    assert [d.root for d in parallel.decompositions_] == [d.root for d in sequential.decompositions_]
    assert slow.peak > 1
