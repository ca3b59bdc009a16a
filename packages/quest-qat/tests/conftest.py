import torch

# The suite's tensors are tiny; one intra-op thread avoids OpenMP spin-waits on a shared 2-core runner.
torch.set_num_threads(1)
