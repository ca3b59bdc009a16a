"""`import kandinsky_cp` and `python -m kandinsky_cp --help` load no heavy library and start about as fast as Python."""

from icml25_shared.testing import assert_fast_startup


def test_help_loads_no_heavy_library_and_starts_fast():
    assert_fast_startup("kandinsky_cp")
