"""Backends: OpenAICompatibleModel against a mock server on 127.0.0.1; a tiny local transformers model."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from combo_redteam import (
    ModelError,
    ModelTimeoutError,
    OpenAICompatibleModel,
    RefusalDetector,
    SingleModel,
    StandInStrong,
    benign_suite,
    run,
)


class MockServer:
    """An OpenAI-compatible /v1/chat/completions endpoint; ``script`` lists statuses to answer first."""

    def __init__(self, *, script=(), delay_s=0.0, backend=None):
        self.requests, self.script, self.delay_s = [], list(script), delay_s
        self.backend = backend or StandInStrong()
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with outer.lock:
                    outer.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                    status = outer.script.pop(0) if outer.script else 200
                if status == "drop":  # close without an answer
                    self.close_connection = True
                    return
                if outer.delay_s:
                    time.sleep(outer.delay_s)
                if status != 200:
                    self.send_response(status)
                    self.send_header("Retry-After", "0")
                    self.end_headers()
                    self.wfile.write(b'{"error": "try later"}')
                    return
                reply = outer.backend.complete(body["messages"], max_tokens=body["max_tokens"], seed=body.get("seed"))
                data = json.dumps({"choices": [{"index": 0, "finish_reason": "stop",
                                                "message": {"role": "assistant", "content": reply.text}}],
                                   "usage": {"prompt_tokens": reply.usage.prompt_tokens,
                                             "completion_tokens": reply.usage.completion_tokens}}).encode()
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


def _model(server, **kw):
    return OpenAICompatibleModel("mock-1", base_url=server.url, api_key_env="COMBO_TEST_KEY", sleep=lambda s: None,
                                 **kw)


def test_request_format_and_reply(monkeypatch):
    monkeypatch.setenv("COMBO_TEST_KEY", "sk-test")
    task = benign_suite(1, random_state=0, variants=("control",))[0]
    with MockServer() as server:
        reply = _model(server).complete([{"role": "user", "content": task.problem}], max_tokens=64, seed=5)
    (request,) = server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer sk-test"
    assert request["headers"]["Content-Type"] == "application/json"
    assert request["body"] == {"model": "mock-1", "messages": [{"role": "user", "content": task.problem}],
                               "max_tokens": 64, "temperature": 0.0, "seed": 5}
    assert reply.text == str(task.grader["expected"]) and not reply.refused and reply.usage.completion_tokens == 1


def test_refusals_are_detected(monkeypatch):
    monkeypatch.setenv("COMBO_TEST_KEY", "k")
    task = benign_suite(1, random_state=0, variants=("flagged",))[0]
    with MockServer() as server:
        assert _model(server).complete([{"role": "user", "content": task.prompt}]).refused


def test_retries_on_429_and_500(monkeypatch):
    monkeypatch.setenv("COMBO_TEST_KEY", "k")
    with MockServer(script=[429, 500]) as server:
        reply = _model(server, max_retries=2).complete([{"role": "user", "content": "hello"}])
    assert len(server.requests) == 3 and reply.text
    with MockServer(script=[500, 500, 500]) as server, pytest.raises(ModelError, match="HTTP 500 after 3 attempt"):
        _model(server, max_retries=2).complete([{"role": "user", "content": "hello"}])
    with MockServer(script=[400]) as server, pytest.raises(ModelError, match="HTTP 400 after 1 attempt"):
        _model(server, max_retries=2).complete([{"role": "user", "content": "hello"}])
    assert len(server.requests) == 1  # a 400 is not retried


def test_dropped_connections_are_retried(monkeypatch):
    monkeypatch.setenv("COMBO_TEST_KEY", "k")
    with MockServer(script=["drop"]) as server:
        assert _model(server, max_retries=1).complete([{"role": "user", "content": "hello"}]).text
    assert len(server.requests) == 2
    with MockServer(script=["drop", "drop"]) as server, pytest.raises(ModelError, match="RemoteDisconnected"):
        _model(server, max_retries=1).complete([{"role": "user", "content": "hello"}])


def test_timeout_raises_a_timeout_error(monkeypatch):
    monkeypatch.setenv("COMBO_TEST_KEY", "k")
    with MockServer(delay_s=1.5) as server:
        start = time.perf_counter()
        with pytest.raises(ModelTimeoutError, match="timeout_s=0.3"):
            _model(server, timeout_s=0.3).complete([{"role": "user", "content": "hello"}])
        assert time.perf_counter() - start < 1.4


def test_missing_key_and_bad_url(monkeypatch):
    monkeypatch.delenv("COMBO_TEST_KEY", raising=False)
    with MockServer() as server, pytest.raises(ModelError, match="'COMBO_TEST_KEY' \\(api_key_env\\) is not set"):
        _model(server).complete([{"role": "user", "content": "hi"}])
    with pytest.raises(ValueError, match="base_url must start with http"):
        OpenAICompatibleModel("m", base_url="127.0.0.1:80")


def test_cache_hit_sends_no_request(tmp_path, monkeypatch):
    monkeypatch.setenv("COMBO_TEST_KEY", "k")
    suite = benign_suite(3, random_state=0)
    with MockServer() as server:
        first = run(suite, [SingleModel(_model(server))], cache_dir=tmp_path)
        sent = len(server.requests)
        second = run(suite, [SingleModel(_model(server))], cache_dir=tmp_path)
        assert sent == 6 and len(server.requests) == sent
    assert first == second
    assert first.success_rate("single-strong").estimate == 0.0  # the mock's strong stand-in refuses flagged tasks
    assert first.success_rate("single-strong", "control").estimate == 1.0


def test_tiny_transformers_model_built_saved_and_reloaded(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer, models, pre_tokenizers

    from combo_redteam import TransformersChatModel

    torch.manual_seed(0)
    words = ["[UNK]", "[PAD]", "[EOS]", "user:", "assistant:", "system:", "hello", "world", "add", "2", "3", "Step",
             "1:", "Compute", "the"]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]",
                                                     eos_token="[EOS]")
    config = transformers.GPT2Config(vocab_size=len(words), n_positions=512, n_embd=16, n_layer=1, n_head=2,
                                     eos_token_id=2, bos_token_id=2, pad_token_id=1)
    original = transformers.GPT2LMHeadModel(config).eval()
    original.save_pretrained(tmp_path / "tiny")
    tokenizer.save_pretrained(tmp_path / "tiny")

    model = TransformersChatModel(tmp_path / "tiny")
    assert model.name == f"transformers:{(tmp_path / 'tiny').resolve()}"
    chat = [{"role": "user", "content": "hello world add 2 3"}]
    reply = model.complete(chat, max_tokens=6)
    ids = tokenizer("user: hello world add 2 3\nassistant:", return_tensors="pt")
    with torch.no_grad():
        expected = original.generate(**ids, max_new_tokens=6, do_sample=False, pad_token_id=1)
    new = expected[0, ids["input_ids"].shape[1]:]
    assert reply.text == tokenizer.decode(new, skip_special_tokens=True)
    assert reply.usage.prompt_tokens == ids["input_ids"].shape[1] and reply.usage.completion_tokens == new.numel()
    assert model.complete(chat, max_tokens=6) == reply  # greedy decoding is deterministic
    sampled = [model.complete(chat, max_tokens=6, temperature=1.0, seed=3).text for _ in range(2)]
    assert sampled[0] == sampled[1]
    result = run(benign_suite(1, random_state=0, variants=("control",)), [SingleModel(model)], max_tokens=4)
    assert result.episodes[0].strong_calls == 1 and not result.episodes[0].success
    with pytest.raises(FileNotFoundError, match="no model folder"):
        TransformersChatModel(tmp_path / "absent")


def test_a_different_refusal_detector_does_not_reuse_cached_refusals(tmp_path, monkeypatch):
    # the cache stores Completion.refused, which the detector decides: same server and model, other detector
    monkeypatch.setenv("COMBO_TEST_KEY", "k")
    suite = benign_suite(3, random_state=0, variants=("control",))
    strict = RefusalDetector(patterns=[r"\d"])  # calls every numeric answer a refusal
    with MockServer() as server:
        plain = run(suite, [SingleModel(_model(server))], cache_dir=tmp_path)
        judged = run(suite, [SingleModel(_model(server, refusal_detector=strict))], cache_dir=tmp_path)
        assert len(server.requests) == 6  # the second model asked the server itself
    assert plain.refusal_rate("single-strong", "control") == 0.0
    assert judged.refusal_rate("single-strong", "control") > 0.0
    assert _model(server).name == f"openai:mock-1@{server.url}"
    assert _model(server, refusal_detector=RefusalDetector()).name == _model(server).name
    assert _model(server, refusal_detector=strict).name != _model(server).name
