"""The roofline's point labels (site/static/js/lab/roofline-labels.js, under node): every
point named, H200's faint points too, no label on another label or on another point's
mark, all inside the plot. At 1280 px, N = 1,024, d = 128, causal, "fused" once sat on
"fused-fast"."""
from __future__ import annotations

import pytest
from test_js_parity import NODE, js

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")

BOUNDS = {"left": 76, "right": 622, "top": 16, "bottom": 330}


def place(marks, size=12):
    (reply,) = js([{"fn": "placeLabels", "args": [marks, BOUNDS, size]}])
    assert reply["ok"], reply
    return reply["value"]


def meets(a, b):
    return a["left"] < b["right"] and b["left"] < a["right"] and a["top"] < b["bottom"] and b["top"] < a["bottom"]


CASES = {
    # two kernels 20 units apart on one level: apart enough to be two labels, close enough to collide
    "fused-beside-fused-fast": [{"x": 300, "y": 200, "label": "fused"}, {"x": 320, "y": 200, "label": "fused-fast"},
                                {"x": 150, "y": 260, "label": "plain"}],
    # a crowd: the visitor's kernels and plain's passes, and the H200's points near them
    "crowd": [{"x": 300 + 9 * i, "y": 180 + 7 * (i % 3), "label": name} for i, name in enumerate(
        ["fused", "fused-fast", "fused-fast-16k", "plain", "plain: scores", "plain: softmax", "plain: pv",
         "H200 fused", "H200 fused-fast", "H200 plain"])],
    # at the plot's right and bottom edges
    "edges": [{"x": 615, "y": 320, "label": "fused-fast-16k"}, {"x": 600, "y": 30, "label": "H200 fused-fast"}],
}


@pytest.mark.parametrize("name", CASES)
def test_every_point_is_named_once_and_no_label_meets_another_or_a_mark(name):
    marks = CASES[name]
    labels = place(marks)
    named = sorted(i for lab in labels for i in lab["marks"])
    assert named == list(range(len(marks)))
    for lab in labels:
        assert lab["text"] == ", ".join(marks[i]["label"] for i in lab["marks"])
        box = lab["box"]
        assert BOUNDS["left"] <= box["left"] and box["right"] <= BOUNDS["right"], lab
        assert BOUNDS["top"] <= box["top"] and box["bottom"] <= BOUNDS["bottom"], lab
    for i, a in enumerate(labels):
        for b in labels[i + 1:]:
            assert not meets(a["box"], b["box"]), (a["text"], b["text"])
        for j, m in enumerate(marks):
            dot = {"left": m["x"] - 6, "right": m["x"] + 6, "top": m["y"] - 6, "bottom": m["y"] + 6}
            if j not in a["marks"]:
                assert not meets(a["box"], dot), (a["text"], m["label"])


def test_two_points_far_apart_get_a_label_each():
    labels = place(CASES["fused-beside-fused-fast"])
    assert sorted(lab["text"] for lab in labels) == ["fused", "fused-fast", "plain"]
