"""Constant per-client cost (vs the SecAgg+ baseline) and the federated-learning example."""

import numpy as np
import pytest

from janus_sa.experiments import janus_costs, secaggplus_costs
from janus_sa.fl import run_federated
from janus_sa.secaggplus import neighbours_for, run_secaggplus_round, shamir_reconstruct, shamir_share


def test_shamir_roundtrip():
    secret = 2**255 + 12345
    shares = shamir_share(secret, 4, 7)
    pts = list(enumerate(shares, start=1))
    assert shamir_reconstruct(pts[:4]) == secret
    assert shamir_reconstruct(pts[3:]) == secret
    assert shamir_reconstruct(pts[:3]) != secret  # below threshold


def test_secaggplus_baseline_is_correct_with_dropouts():
    rng = np.random.default_rng(0)
    codes = {i: rng.integers(0, 1 << 22, 40).astype(np.uint32) for i in range(1, 16)}
    total, clients = run_secaggplus_round(codes, dim=40, drop_after_shares={3, 9})
    np.testing.assert_array_equal(total, sum(codes[i].astype(np.int64) for i in codes if i not in (3, 9)))
    assert all(len(c.neigh) >= neighbours_for(15) for c in clients)


def _janus_upload(n):
    row = janus_costs(n, 10)
    assert row["verified"] and row["upload_bytes_distinct"] == 1
    return row["upload_bytes"]


def test_per_client_upload_constant_in_n_while_secaggplus_grows():
    janus = [_janus_upload(n) for n in (10, 100)]
    assert janus[0] == janus[1]
    sec = [secaggplus_costs(n, 10) for n in (10, 100)]
    assert all(r["correct_sum"] for r in sec)
    assert sec[1]["upload_bytes"] > 1.5 * sec[0]["upload_bytes"]
    assert sec[0]["upload_bytes"] > janus[0]


@pytest.mark.slow
def test_per_client_upload_identical_at_n_1000():
    assert _janus_upload(1000) == _janus_upload(10)


def test_federated_digits_matches_fedavg_up_to_quantisation():
    run = run_federated(n_clients=10, rounds=3, local_steps=5, participation=0.8, random_state=1)
    assert run.participants == [8, 8, 8]
    # parameter gap after r rounds is at most the sum of the per-round mean error bounds
    assert all(gap <= sum(run.error_bound[: r + 1]) + 1e-12 for r, gap in enumerate(run.max_param_gap))
    assert np.allclose(run.accuracy_janus, run.accuracy_fedavg, atol=1 / 450)
    assert run.accuracy_janus[-1] > 0.85
