"""Parity of de_antifake.ecapa with speechbrain's own ECAPA pipeline on a tiny random model.

Run: PYTHONPATH=<folder with speechbrain installed> python studies/ecapa_parity.py
A torchaudio that cannot load (a CUDA build beside a CPU torch) is replaced by an empty module:
speechbrain's Fbank, InputNormalization and ECAPA_TDNN do not call it.
"""

import sys
import tempfile
import types

import numpy as np
import torch


def main() -> None:
    try:
        import torchaudio  # noqa: F401
    except (ImportError, OSError):
        sys.modules["torchaudio"] = types.ModuleType("torchaudio")
        sys.modules["torchaudio"].__version__ = "0"

    import speechbrain
    from speechbrain.lobes.features import Fbank
    from speechbrain.lobes.models.ECAPA_TDNN import ECAPA_TDNN
    from speechbrain.processing.features import InputNormalization

    from de_antifake.corpus import make_corpus
    from de_antifake.ecapa import load_ecapa

    torch.manual_seed(0)
    sb = ECAPA_TDNN(80, channels=[32, 32, 32, 32, 96], kernel_sizes=[5, 3, 3, 3, 1], dilations=[1, 2, 3, 4, 1],
                    attention_channels=16, lin_neurons=24, se_channels=16, res2net_scale=4)
    with torch.no_grad():  # non-trivial batch-norm statistics
        for m in sb.modules():
            if isinstance(m, torch.nn.BatchNorm1d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
    sb.eval()
    folder = tempfile.mkdtemp()
    torch.save(sb.state_dict(), f"{folder}/embedding_model.ckpt")
    with open(f"{folder}/hyperparams.yaml", "w") as fh:
        fh.write(f"""n_mels: 80
pretrained_path: {folder}
compute_features: !new:speechbrain.lobes.features.Fbank
    n_mels: !ref <n_mels>
mean_var_norm: !new:speechbrain.processing.features.InputNormalization
    norm_type: sentence
    std_norm: False
embedding_model: !new:speechbrain.lobes.models.ECAPA_TDNN.ECAPA_TDNN
    input_size: !ref <n_mels>
    channels: [32, 32, 32, 32, 96]
    kernel_sizes: [5, 3, 3, 3, 1]
    dilations: [1, 2, 3, 4, 1]
    attention_channels: 16
    se_channels: 16
    res2net_scale: 4
    lin_neurons: 24
""")

    ours = load_ecapa(folder)
    c = make_corpus(n_speakers=3, n_utterances=2, seconds=2.0, random_state=1)
    wav = torch.from_numpy(c.waveforms())
    noise = torch.from_numpy(np.random.default_rng(0).standard_normal((2, 23456)).astype(np.float32) * 0.1)
    fb, norm = Fbank(n_mels=80), InputNormalization(norm_type="sentence", std_norm=False)
    print(f"speechbrain {speechbrain.__version__}, torch {torch.__version__}")
    for name, x in (("synthetic speech 6 x 2 s", wav), ("noise 2 x 23456 samples", noise)):
        with torch.no_grad():
            f_sb = fb(x)
            ref = sb(norm(f_sb, torch.ones(len(x))), torch.ones(len(x)))[:, 0]
            got = ours.raw_embed(x)
            f_ours = ours.front(x)
        ferr = float((f_sb - f_ours).abs().max())
        rel = float(((ref - got).norm(dim=1) / ref.norm(dim=1)).max())
        cos = float(torch.nn.functional.cosine_similarity(ref, got, dim=1).min())
        print(f"{name}: Fbank max abs diff {ferr:.2e} dB; embedding max relative error {rel:.2e}; min cosine {cos:.7f}")


if __name__ == "__main__":
    main()
