"""The root conftest.py pins this test process to one BLAS/OpenMP/torch thread."""

import os

import numpy as np
import pytest


def test_thread_variables_and_blas_are_pinned():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    assert os.environ["OMP_NUM_THREADS"] == os.environ.get("ICML25_TEST_THREADS", "1")
    np.ones((64, 64)) @ np.ones((64, 64))
    blas = [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
    assert blas and set(blas) == {int(os.environ.get("ICML25_TEST_THREADS", "1"))}


def test_torch_imported_by_a_test_module_is_pinned():
    torch = pytest.importorskip("torch")  # imported during collection, as package test modules do
    assert torch.get_num_threads() == int(os.environ.get("ICML25_TEST_THREADS", "1"))
