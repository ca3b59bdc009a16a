"""One torch thread: the suite's models are tiny and CI's two cores are shared."""

try:
    import torch
except ImportError:  # the solver and accounting tests need no torch
    torch = None

if torch is not None:
    torch.set_num_threads(1)
