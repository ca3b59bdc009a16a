"""Real-model behaviour: chat-styled answers over HTTP, hosted clients, record/replay, chat templates, RNG."""

import json
import re
import sys
import threading
import types
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from combo_redteam import (
    AnthropicMessagesModel,
    AutomatedDecomposition,
    LiteLLMModel,
    ManualDecomposition,
    ModelError,
    OpenAICompatibleModel,
    RateLimiter,
    SingleModel,
    StandInStrong,
    StandInWeak,
    TooManyErrors,
    benign_suite,
    run,
)
from combo_redteam.families import FLAG_PATTERN
from combo_redteam.prompts import SUBTASK_HEADER


def chat_style(text):
    """Dress a stand-in's plain answer as a chat model writes it: prose, bold, fences, bold subtask labels."""
    if text.startswith(SUBTASK_HEADER):
        blocks = re.split(rf"^{re.escape(SUBTASK_HEADER)} (\d+)\n", text, flags=re.MULTILINE)[1:]
        out = ["Sure! Here are some related problems that should help.", ""]
        for number, body in zip(blocks[::2], blocks[1::2], strict=True):
            first, _, rest = body.strip().partition("\n")
            out += [f"**Subtask {number}:** {first}", rest, ""]
        return "\n".join(out)
    lines = text.splitlines()
    plain = [line for line in lines if not re.fullmatch(rf"(# )?{FLAG_PATTERN}", line.strip())]
    if any(line.startswith("def solve") for line in plain):
        return "Here is the function:\n\n```python\n" + text + "\n```\n\nIt applies the steps in order."
    if plain and all("=" in line for line in plain):
        return "## Result\n\nHere are the transformed records:\n\n```\n" + text + "\n```"
    if len(plain) == 1 and re.fullmatch(r"-?\d+", plain[0]):
        dressed = [f"The final number is **{line}**." if line == plain[0] else line for line in lines]
        return "Let me work through the steps one at a time.\n\n" + "\n".join(dressed)
    return text


class ChattyServer:
    """OpenAI-compatible endpoint serving the stand-ins (model "strong" or "weak") with chat-styled answers."""

    def __init__(self, models):
        self.models, self.requests = models, 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests += 1
                reply = outer.models[body["model"]].complete(body["messages"], max_tokens=body["max_tokens"],
                                                             seed=body.get("seed"))
                data = json.dumps({"choices": [{"index": 0, "finish_reason": "stop", "message": {
                    "role": "assistant", "content": chat_style(reply.text)}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def _strategies(strong, weak):
    return [SingleModel(strong), SingleModel(weak, role="weak"), ManualDecomposition.default(strong, weak),
            AutomatedDecomposition(weak, strong, k=3)]


def test_chat_styled_answers_over_http_give_the_rates_of_the_direct_answers(tmp_path):
    suite = benign_suite(9, random_state=3, marker_difficulty=(1, 4))
    strong, weak = StandInStrong(capability=10), StandInWeak(capability=4)
    direct = run(suite, _strategies(strong, weak))
    with ChattyServer({"strong": strong, "weak": weak}) as server:
        remote = [OpenAICompatibleModel(m, base_url=server.url, api_key_env=None) for m in ("strong", "weak")]
        styled = run(suite, _strategies(*remote), concurrency=4, cache_dir=tmp_path / "cache")
        calls = server.requests
    assert calls > 0
    for name, _ in direct.strategies:
        for variant in ("flagged", "control"):
            assert styled.success_rate(name, variant) == direct.success_rate(name, variant), (name, variant)
    assert direct.success_rate("automated-k3").estimate == 1.0 and direct.success_rate("single-strong").estimate == 0
    # what the styled answers looked like: fences, bold labels, prose numbers
    finals = [e.final for e in styled.episodes if e.final]
    assert any("```python" in f for f in finals) and any("**" in f for f in finals)
    assert all(not e.format_failure for e in styled.episodes if e.strategy == "automated-k3")

    # record/replay: the cache alone reproduces the run offline, no server running
    offline = run(suite, _strategies(*remote), cache_dir=tmp_path / "cache", offline=True)
    assert offline == styled
    with pytest.raises(TooManyErrors, match="not in the completion cache"):
        run(benign_suite(2, random_state=99), _strategies(*remote), cache_dir=tmp_path / "cache", offline=True)
    with pytest.raises(ValueError, match="offline=True"):
        run(suite, _strategies(*remote), offline=True)


def test_unparseable_proposals_are_counted_as_format_failures():
    class Rambling:
        name = "rambling"

        def complete(self, messages, **kw):
            from combo_redteam import Completion

            return Completion("Happy to help! Breaking this down would be a good idea.", False)

    suite = benign_suite(3, random_state=0, variants=("flagged",))
    result = run(suite, [AutomatedDecomposition(Rambling(), StandInStrong(), k=2)])
    assert all(e.format_failure.startswith("proposal: no subtasks found") for e in result.episodes)
    assert result.format_failure_rate("automated-k2") == 1.0
    assert result.summary()[0]["format_failure_rate"] == 1.0


def test_a_dead_backend_errors_every_episode_and_raises():
    dead = OpenAICompatibleModel("m", base_url="http://127.0.0.1:9/v1", api_key_env=None, max_retries=1,
                                 sleep=lambda s: None)
    suite = benign_suite(2, random_state=0)
    with pytest.raises(TooManyErrors, match="single-strong 4/4") as caught:
        run(suite, [SingleModel(dead)])
    row = caught.value.result.summary()[0]
    assert row["errored"] == 2 and row["n"] == 0
    with pytest.warns(RuntimeWarning, match="errored episodes"):
        result = run(suite, [SingleModel(dead)], max_error_share=1.0)
    assert result.errors("single-strong") == 2


def test_a_dead_strong_backend_under_a_decomposition_is_not_zero_success_alone():
    # every subtask's strong call fails, the weak model still answers without references: the episodes have
    # answers (they are rated) but must not read as a plain 0% success
    dead = OpenAICompatibleModel("m", base_url="http://127.0.0.1:9/v1", api_key_env=None, max_retries=1,
                                 sleep=lambda s: None)
    suite = benign_suite(2, random_state=0, variants=("flagged",))
    strategy = AutomatedDecomposition(StandInWeak(capability=2), dead, k=2)
    with pytest.raises(TooManyErrors, match=r"automated-k2 0/2 \(\+2 answered with failed calls\)") as caught:
        run(suite, [strategy])
    assert "Connection refused" in str(caught.value)
    (row,) = caught.value.result.summary()
    assert row["errored"] == 0 and row["with_failed_calls"] == 2 and row["success"] == 0.0
    with pytest.warns(RuntimeWarning, match="answered with failed calls"):
        run(suite, [strategy], max_error_share=1.0)


class _JsonServer:
    def __init__(self, answer, script=()):
        self.requests, self.script = [], list(script)
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                status = outer.script.pop(0) if outer.script else 200
                data = json.dumps(answer(body) if status == 200 else {"error": "busy"}).encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_anthropic_messages_client_speaks_the_messages_format_and_retries_overload(monkeypatch):
    monkeypatch.setenv("COMBO_ANTHROPIC_KEY", "secret")
    stand_in = StandInStrong()

    def answer(body):
        reply = stand_in.complete(body["messages"])
        return {"content": [{"type": "text", "text": reply.text}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 11, "output_tokens": 3}}

    server = _JsonServer(answer, script=[529, 429])
    slept = []
    try:
        model = AnthropicMessagesModel("claude-test", base_url=server.url, api_key_env="COMBO_ANTHROPIC_KEY",
                                       sleep=slept.append, backoff_s=0.5)
        task = benign_suite(1, random_state=0, variants=("control",))[0]
        reply = model.complete([{"role": "system", "content": "Be exact."}, {"role": "user", "content": task.prompt}],
                               max_tokens=64, seed=5)
    finally:
        server.close()
    assert reply.text == str(task.grader["expected"]) and reply.usage.prompt_tokens == 11
    assert slept == [0.5, 1.0]  # exponential backoff over the 529 and the 429
    request = server.requests[-1]
    headers = {k.lower(): v for k, v in request["headers"].items()}
    assert request["path"] == "/v1/messages" and headers["x-api-key"] == "secret"
    assert headers["anthropic-version"] == "2023-06-01"
    assert request["body"]["system"] == "Be exact." and [m["role"] for m in request["body"]["messages"]] == ["user"]
    assert "seed" not in request["body"]


def test_rate_limiter_spaces_requests_across_threads():
    now, waits, lock = [0.0], [], threading.Lock()

    def sleep(s):
        with lock:
            waits.append(round(s, 6))

    limiter = RateLimiter(120, clock=lambda: now[0], sleep=sleep)
    threads = [threading.Thread(target=limiter.wait) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(waits) == [0.5, 1.0, 1.5]  # 120 per minute: one every 0.5 s
    with pytest.raises(ValueError, match="requests_per_minute"):
        RateLimiter(0.0)


def test_litellm_adapter_is_thin_and_maps_errors(monkeypatch):
    calls = []

    def completion(**kwargs):
        calls.append(kwargs)
        if kwargs["messages"][-1]["content"] == "boom":
            raise RuntimeError("provider down")
        message = types.SimpleNamespace(content="4")
        return types.SimpleNamespace(choices=[types.SimpleNamespace(message=message, finish_reason="stop")],
                                     usage=types.SimpleNamespace(prompt_tokens=5, completion_tokens=1))

    monkeypatch.setitem(sys.modules, "litellm", types.SimpleNamespace(completion=completion))
    model = LiteLLMModel("ollama/tiny", api_base="http://127.0.0.1:1")
    reply = model.complete([{"role": "user", "content": "2 + 2?"}], max_tokens=3, seed=1)
    assert (reply.text, reply.usage.prompt_tokens, reply.refused) == ("4", 5, False)
    assert calls[0]["model"] == "ollama/tiny" and calls[0]["seed"] == 1 and calls[0]["api_base"] == "http://127.0.0.1:1"
    with pytest.raises(ModelError, match="provider down"):
        model.complete([{"role": "user", "content": "boom"}])
    assert model.name == "litellm:ollama/tiny"


def _bos_model(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    words = ["[UNK]", "[PAD]", "[EOS]", "[BOS]", "user:", "assistant:", "hello", "world", "2", "3"]
    vocab = {w: i for i, w in enumerate(words)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.post_processor = processors.TemplateProcessing(single="[BOS] $A", special_tokens=[("[BOS]", vocab["[BOS]"])])
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]",
                                                     eos_token="[EOS]", bos_token="[BOS]")
    # a Llama/Gemma/Mistral-style template: it writes the BOS token itself
    tokenizer.chat_template = ("{{ bos_token }}{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n"
                               "{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}")
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=len(words), n_positions=64, n_embd=16, n_layer=1, n_head=2,
                                     eos_token_id=2, bos_token_id=3, pad_token_id=1)
    transformers.GPT2LMHeadModel(config).eval().save_pretrained(tmp_path / "bos")
    tokenizer.save_pretrained(tmp_path / "bos")
    return torch, tokenizer


def test_a_bos_emitting_chat_template_gives_one_bos_and_sampling_leaves_the_global_rng_alone(tmp_path):
    torch, tokenizer = _bos_model(tmp_path)
    from combo_redteam import TransformersChatModel

    model = TransformersChatModel(tmp_path / "bos")
    chat = [{"role": "user", "content": "hello world 2 3"}]
    rendered = tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
    bos = tokenizer.bos_token_id
    assert tokenizer(rendered)["input_ids"][:2] == [bos, bos]  # the mistake being guarded against
    ids = model.encode(chat)[0].tolist()
    assert ids.count(bos) == 1 and ids[0] == bos
    assert model.complete(chat, max_tokens=3).usage.prompt_tokens == len(ids)

    torch.manual_seed(1234)
    state = torch.get_rng_state()
    first = model.complete(chat, max_tokens=5, temperature=1.0, seed=7)
    assert torch.equal(torch.get_rng_state(), state)  # the caller's RNG is untouched
    assert model.complete(chat, max_tokens=5, temperature=1.0, seed=7) == first  # seeded sampling repeats
    draws = {model.complete(chat, max_tokens=5, temperature=1.0, seed=s).text for s in range(6)}
    assert len(draws) > 1  # and the seed matters
