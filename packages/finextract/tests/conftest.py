import torch

# tiny models gain nothing from intra-op threads, and on shared 2-core CI runners spinning threads cost 5-10x
torch.set_num_threads(1)
