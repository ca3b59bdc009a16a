"""The demo's spectrogram figure: one dB scale for every panel, labelled axes, a colour bar, no overlaps."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from de_antifake.experiments import _spectrogram_figure, spectrogram_db  # noqa: E402


def test_spectrogram_db_is_absolute():
    t = np.arange(16000) / 16000
    sine = np.sin(2 * np.pi * 1000 * t)
    assert spectrogram_db(sine).max() == pytest.approx(-3.0, abs=1.5)  # full scale, not normalised per clip
    assert spectrogram_db(0.1 * sine).max() == pytest.approx(spectrogram_db(sine).max() - 20, abs=0.01)
    assert spectrogram_db(np.zeros(4000)).min() == -100.0


def test_panels_share_one_scale_and_are_labelled():
    rng = np.random.default_rng(0)
    clips = {"clean": 0.3 * rng.standard_normal(16000), "quiet": 0.003 * rng.standard_normal(16000),
             "protected": 0.3 * rng.standard_normal(16000)}
    fig = _spectrogram_figure(clips, caption="3 clips, seed 0")
    fig.canvas.draw()
    panels = [ax for ax in fig.axes if ax.images]
    assert len(panels) == 3 and len(fig.axes) == 4  # three spectrograms and one colour bar
    assert len({ax.images[0].get_clim() for ax in panels}) == 1  # one shared scale
    assert all(ax.get_xlabel() == "time (s)" for ax in panels) and panels[0].get_ylabel() == "frequency (kHz)"
    assert "dB" in fig.axes[-1].get_ylabel()
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for ax in fig.axes
             for t in (ax.title, ax.xaxis.label, ax.yaxis.label) if t.get_text()]
    boxes.append(fig._suptitle.get_window_extent(renderer))
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


def _runs(seeds, names=("clean reference", "protected (none)", "LPF", "AudioPure t=5", "stage 1 (t=3)",
                        "unguided refiner", "PhonePuRe", "PhonePuRe, shuffled alignment")):
    rng = np.random.default_rng(0)
    runs = []
    for seed in seeds:
        rows = {}
        for n in names:
            accepted = [bool(a) for a in rng.random(8) < 0.6]
            rows[n] = {"success": float(np.mean(accepted)), "sim": 0.9, "snr_db": 20.0, "accepted": accepted,
                       "sims": [0.9] * 8}
        runs.append({"seed": seed, "rows": rows})
    return runs


@pytest.mark.parametrize("seeds", [[0, 1, 2], [5]])
def test_reproduce_figure_is_legible_with_intervals_and_seeds(seeds):
    import matplotlib.pyplot as plt
    from icml25_shared.testing import figure_problems

    from de_antifake.experiments import _success_figure

    runs = _runs(seeds)
    fig = _success_figure(runs)
    try:
        assert figure_problems(fig) == []
        (ax,) = fig.axes
        box, page = ax.title.get_window_extent(fig.canvas.get_renderer()), fig.bbox
        assert page.x0 <= box.x0 and box.x1 <= page.x1 and box.y1 <= page.y1  # the caption is not cut off
        title = ax.get_title()
        assert all(str(s) in title for s in seeds) and "8 references per seed" in title
        assert ("95% t-interval" in title) == (len(seeds) > 1)
        widths = [p.get_width() for p in ax.patches]
        expected = [np.mean([r["rows"][n]["success"] for r in runs]) for n in runs[0]["rows"]]
        np.testing.assert_allclose(widths, expected)  # the bars are the means over seeds, in row order
    finally:
        plt.close(fig)


def test_demo_figure_is_legible_with_its_real_caption():
    import matplotlib.pyplot as plt
    from icml25_shared.testing import figure_problems

    rng = np.random.default_rng(1)
    names = ("clean", "protected", "LPF", "stage 1 (t=3)", "PhonePuRe")  # the panels demo shows
    fig = _spectrogram_figure({n: 0.1 * rng.standard_normal(32000) for n in names},
                              caption="clip 1 of 4, seed 0; weights: shipped with the package (reproduce --quick, seed 0)")
    try:
        assert figure_problems(fig) == []
    finally:
        plt.close(fig)
