"""Fitting, loading and switching never draw from the caller's global torch RNG."""

import torch

from safety_transfer import AffineMapper, AutoEncoderMapper, SafetySwitch, TriggerProbe, load_mapper, tiny_causal_lm


def _untouched(run):
    """Run ``run()`` after seeding the global RNG; fail when the RNG's state changed."""
    torch.manual_seed(1234)
    state = torch.get_rng_state()
    result = run()
    assert torch.equal(torch.get_rng_state(), state), f"{run} drew from the global torch RNG"
    return result


def test_fit_load_and_switch_leave_the_global_rng_untouched(tmp_path):
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(60, 8, generator=g), torch.randn(60, 8, generator=g)
    for i, mapper in enumerate((AffineMapper(), AffineMapper(solver="ridge", ridge=0.1),
                   AffineMapper(solver="adam", epochs=2, random_state=0),
                   AutoEncoderMapper(8, 8, epochs=2, random_state=0))):
        fitted = _untouched(lambda m=mapper: m.fit(x, y))
        path = fitted.save(tmp_path / f"mapper{i}.safetensors")
        back = _untouched(lambda p=path: load_mapper(p))
        assert torch.equal(back.transform(x), fitted.transform(x))
    probe = _untouched(lambda: TriggerProbe(random_state=0).fit(x + 3, x))
    model = _untouched(lambda: tiny_causal_lm("llama", hidden_size=8, num_layers=2, num_heads=2, random_state=0))
    ids = torch.tensor([[1, 2, 3, 4]])
    mapper = AffineMapper().fit(x, y)

    def switched():
        with SafetySwitch(model, model, mapper, 0, gate=probe):
            return model(input_ids=ids).logits

    _untouched(switched)


def test_the_check_sees_a_global_draw():
    try:
        _untouched(lambda: torch.nn.Linear(2, 2))
    except AssertionError:
        return
    raise AssertionError("a global draw went unnoticed")
