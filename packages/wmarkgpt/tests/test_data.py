"""Generators: the watermark's invariants, the position vocabulary, the datasets, the readers."""

import gzip
import json

import numpy as np
import pytest

from wmarkgpt.data import (
    POSITION_VOCABULARY,
    describe_synthetic,
    embed_watermark,
    make_logo,
    make_position_dataset,
    make_real_style_dataset,
    make_scene,
    make_synthetic_dataset,
    read_wqa,
    relative_position,
    visibility_from_score,
)
from wmarkgpt.scoring import VISIBILITY_LEVELS


@pytest.fixture(scope="module")
def scene():
    return make_scene(size=48, n_objects=3, random_state=0)


@pytest.mark.parametrize("kind", ["star", "ring", "cross", "diamond"])
def test_weight_zero_is_bit_identical(scene, kind):
    logo, mask = make_logo(kind, 16)
    for rematch in ("box", "global"):
        wm = embed_watermark(scene.image, logo, mask, weight=0.0, random_state=1, rematch=rematch)
        assert np.array_equal(wm.image, scene.image) and wm.gt_score == 5.0 and wm.visibility == "invisible"


@pytest.mark.parametrize("seed", range(6))
def test_box_bounds_the_changes_and_brightness_is_kept(scene, seed):
    rng = np.random.default_rng(seed)
    logo, mask = make_logo(str(rng.choice(["star", "ring", "cross", "diamond"])), int(rng.integers(8, 24)),
                           color=tuple(int(c) for c in rng.choice([[255, 255, 255], [0, 0, 0]])))
    for w in (0.01, 0.1, 0.25, 0.6):
        wm = embed_watermark(scene.image, logo, mask, weight=w, random_state=rng)
        x1, y1, x2, y2 = wm.box
        changed = np.argwhere((wm.image != scene.image).any(-1))
        assert changed.size and changed[:, 0].min() >= y1 and changed[:, 0].max() < y2
        assert changed[:, 1].min() >= x1 and changed[:, 1].max() < x2
        assert abs(wm.image.astype(float).mean() - scene.image.astype(float).mean()) <= 1.0


def test_brightness_kept_even_when_clipping(scene):
    bright = np.full((32, 32, 3), 250, np.uint8)
    logo, mask = make_logo("diamond", 20, color=(255, 255, 255))
    wm = embed_watermark(bright, logo, mask, weight=0.25, position=(4, 4))
    assert abs(wm.image.astype(float).mean() - 250) <= 1.0


def test_labels_are_monotone_in_weight(scene):
    logo, mask = make_logo("star", 16)
    weights = np.round(np.arange(0, 0.26, 0.01), 2)
    marks = [embed_watermark(scene.image, logo, mask, weight=float(w), position=(3, 5)) for w in weights]
    scores = [m.gt_score for m in marks]
    levels = [VISIBILITY_LEVELS.index(m.visibility) for m in marks]
    assert scores == [round(5 - 20 * w, 2) for w in weights]
    assert all(a > b for a, b in zip(scores, scores[1:], strict=False))
    assert all(a <= b for a, b in zip(levels, levels[1:], strict=False)) and levels[0] == 0 and levels[-1] == 4
    # the official repo's weights are U[0, 0.25] rounded to 0.01, so 0.25 -> score 0
    assert marks[-1].gt_score == 0.0


def test_global_rematch_is_the_official_whole_image_shift(scene):
    logo, mask = make_logo("ring", 12, color=(255, 255, 255))
    wm = embed_watermark(scene.image, logo, mask, weight=0.2, position=(2, 2), rematch="global")
    outside = np.ones(scene.image.shape[:2], bool)
    outside[2:14, 2:14] = False
    assert (wm.image[outside] != scene.image[outside]).any()
    assert abs(wm.image.astype(float).mean() - scene.image.astype(float).mean()) <= 1.0


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"weight": 1.5}, "weight"),
    ({"weight": 0.1, "position": (40, 0)}, "outside"),
    ({"weight": 0.1, "rematch": "local"}, "rematch"),
])
def test_embed_errors(scene, kwargs, match):
    logo, mask = make_logo("star", 16)
    with pytest.raises(ValueError, match=match):
        embed_watermark(scene.image, logo, mask, **kwargs)


def test_embed_rejects_bad_arrays(scene):
    logo, mask = make_logo("star", 16)
    with pytest.raises(ValueError, match="cover"):
        embed_watermark(scene.image.astype(float), logo, mask, weight=0.1)
    with pytest.raises(ValueError, match="empty"):
        embed_watermark(scene.image, logo, np.zeros_like(mask), weight=0.1)
    with pytest.raises(ValueError, match="does not fit"):
        embed_watermark(scene.image[:8, :8], logo, mask, weight=0.1)


def test_relative_position_covers_the_vocabulary():
    ref = (30, 30, 60, 60)
    got = {relative_position((x, y, x + 2, y + 2), ref) for x in (0, 44, 80) for y in (0, 44, 80)}
    assert got == set(POSITION_VOCABULARY)
    with pytest.raises(ValueError, match="x2 > x1"):
        relative_position((5, 5, 5, 6), ref)


def test_visibility_bins():
    assert [visibility_from_score(s) for s in (5, 4, 3.99, 3, 2, 1, 0.99, 0)] == [
        "invisible", "invisible", "faint", "faint", "moderate", "visible", "obvious", "obvious"]
    with pytest.raises(ValueError, match="decreasing"):
        visibility_from_score(3, bins=(1, 2, 3, 4))


def test_datasets_are_seeded_and_labelled():
    a = make_synthetic_dataset(12, random_state=3)
    b = make_synthetic_dataset(12, random_state=3)
    assert all(np.array_equal(x.image, y.image) and x.answer == y.answer for x, y in zip(a, b, strict=False))
    for x in a:
        assert x.answer.endswith(f"The watermark visibility is: {x.visibility}.")
        assert x.gt_score == round(x.gt_score, 2) and 0 <= x.gt_score <= 5
    pos = make_position_dataset(20, random_state=0)
    assert {x.answer for x in pos} <= set(POSITION_VOCABULARY)
    real = make_real_style_dataset(30, random_state=0)
    kinds = {x.kind for x in real}
    assert kinds <= {"real-dct", "real-dwt", "real-text"} and "real-text" in kinds
    assert all(x.visibility == "invisible" for x in real if x.kind != "real-text")
    with pytest.raises(ValueError, match="n must be an int >= 1"):
        make_synthetic_dataset(0)


def test_invisible_real_marks_change_few_grey_levels():
    real = [x for x in make_real_style_dataset(30, random_state=1) if x.kind != "real-text"]
    assert real  # some invisible items
    assert all(x.gt_score >= 4.0 for x in real)


def test_description_names_the_position_and_level(scene):
    text = describe_synthetic("star", (0, 0, 8, 8), scene.objects, "moderate", 48)
    assert "star logo in the top-left of the image" in text and text.endswith("visibility is: moderate.")
    with pytest.raises(ValueError, match="not one of"):
        describe_synthetic("star", (0, 0, 8, 8), scene.objects, "slight", 48)


def test_reader_normalises_case_and_reports_unknown_levels(tmp_path, labels):
    from wmarkgpt.data import UnknownVisibilityWarning

    assert len(labels) == 500 and labels[0]["image"] == "02001.JPEG"
    records = [{"image": f"{i}.png", "visibility": v, "conversations": [{}, {"value": "a"}]}
               for i, v in enumerate(["Faint", " INVISIBLE ", "slight", "slight", "obvious"])]
    path = tmp_path / "answers.json.gz"
    with gzip.open(path, "wt") as fh:
        json.dump(records, fh)
    with pytest.warns(UnknownVisibilityWarning, match=r"2 of 5 records .*'slight' x2"):
        got = read_wqa(path)
    assert [r["visibility"] for r in got] == ["faint", "invisible", "slight", "slight", "obvious"]
    records[2]["visibility"] = 3
    with gzip.open(path, "wt") as fh:
        json.dump(records, fh)
    with pytest.raises(ValueError, match="visibility must be a str"):
        read_wqa(path)
    with pytest.raises(FileNotFoundError):
        read_wqa(tmp_path / "missing.json")


@pytest.mark.parametrize(("base", "tone"), [(5, 255), (250, 0)])
def test_brightness_kept_at_full_weight_on_an_extreme_cover(base, tone):
    # four re-match rounds left the mean up to 6 grey levels off when most of the box clips at 0 or 255
    cover = np.full((16, 16, 3), base, np.uint8)
    logo, mask = make_logo("diamond", 14, color=(tone, tone, tone))
    wm = embed_watermark(cover, logo, mask, weight=1.0, position=(1, 1))
    assert abs(wm.image.astype(float).mean() - base) <= 1.0
    assert (wm.image != cover).any()


@pytest.mark.parametrize("max_weight", [0.5, -0.1, float("nan")])
def test_synthetic_max_weight_outside_the_score_range_is_an_error(max_weight):
    # gt_score = 5 - 20 w leaves [0, 5] above w = 0.25: max_weight=0.5 gave gt_score down to -5 silently
    with pytest.raises(ValueError, match="max_weight"):
        make_synthetic_dataset(50, size=16, max_weight=max_weight, random_state=0)


@pytest.mark.parametrize("mark", ["dwtDctSvd", "rivaGan"])
def test_invisible_watermark_marks_on_photo_covers_decode(mark):
    pytest.importorskip("imwatermark")
    pytest.importorskip("skimage")
    from imwatermark import WatermarkDecoder

    from wmarkgpt.data import IMWM_PAYLOAD

    (item,) = make_real_style_dataset(1, size=256, covers="photos", marks=(mark,), short_answer_rate=0.0,
                                      random_state=1)
    assert item.kind == f"real-{mark}" and item.visibility == "invisible" and item.image.shape == (256, 256, 3)
    assert 4.0 <= item.gt_score <= 5.0 and item.box == (0, 0, 256, 256)
    if mark == "rivaGan":
        WatermarkDecoder.loadModel()
    assert WatermarkDecoder("bytes", 32).decode(np.ascontiguousarray(item.image[..., ::-1]), mark) == IMWM_PAYLOAD


def test_photo_covers_and_mark_errors():
    pytest.importorskip("skimage")
    from wmarkgpt.data import natural_cover

    a, b = natural_cover(32, random_state=3), natural_cover(32, random_state=3)
    assert a.shape == (32, 32, 3) and a.dtype == np.uint8 and np.array_equal(a, b) and a.std() > 0
    items = make_real_style_dataset(6, size=32, covers="photos", short_answer_rate=0.0, random_state=2)
    assert {x.kind for x in items} <= {"real-dct", "real-dwt", "real-text"}
    texts = [x.answer for x in items if x.kind == "real-text"]
    assert texts and all("picture;" in t for t in texts)  # a photo has no labelled objects to relate to
    with pytest.raises(ValueError, match="256"):
        make_real_style_dataset(1, size=32, marks=("rivaGan",))
    with pytest.raises(ValueError, match="marks"):
        make_real_style_dataset(1, marks=("lsb",))
    with pytest.raises(ValueError, match="covers"):
        make_real_style_dataset(1, covers="coco")
