"""Shared fixtures: the HELM hand fixture and the HELM-faithful reference in benchmarks/."""

import importlib.util
from pathlib import Path

import pytest

HERE = Path(__file__).parent
DATA = HERE / "data" / "helm"


def _load_reference():
    spec = importlib.util.spec_from_file_location("helm_reference", HERE.parent / "benchmarks" / "helm_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def ref():
    return _load_reference()


@pytest.fixture(scope="session")
def helm_data():
    return DATA
