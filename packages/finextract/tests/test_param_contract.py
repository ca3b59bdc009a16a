"""Public entry points reject a wrong type with TypeError and a wrong value with ValueError, naming it."""

import numpy as np
from icml25_shared.testing import assert_rejects

from finextract import cluster_extract

FEATS = np.random.default_rng(0).standard_normal((12, 4))


def test_cluster_extract():
    assert_rejects(cluster_extract, "n_train", wrong_type=2.5, wrong_value=0, features=FEATS)
    assert_rejects(cluster_extract, "stop", wrong_type=1, wrong_value="early", features=FEATS, n_train=3)
    assert_rejects(cluster_extract, "quantile", wrong_type="q", wrong_value=1.5, features=FEATS, n_train=3)
    assert_rejects(cluster_extract, "random_state", wrong_type="seed", wrong_value=-1, features=FEATS, n_train=3)
