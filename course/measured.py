"""The H200's measured figures for the lab's Time card: one small table, written by
build.py (dist/data/measured-h200.json) from the current result files under bench/results/,
which docs/BENCHMARKS.md names. It is the site's own reader of those files (the benchmarks
write them; the build never imports bench/). The page never types a figure: it reads
this table, picks the measured size nearest the form's, and says where it came from.

Current sources (docs/BENCHMARKS.md):

* forward: ``bench/results/h200-forward-rows-table.json`` (``bench.bench_wgsl``), rows at
  WebGPU's default limits with subgroups, what a page gets, fused-rows among them; each
  plain row's passes timed alone;
* backward: ``bench/results/wgsl-backward-h200-final.json`` (``bench.bench_wgsl_backward``);
* roofline: ``bench/results/roofline-h200.json`` (``bench.bench_roofline``), absent until
  it has been measured; then the table says so (``"roofline": null``);
* the fair plain baseline: ``bench/results/wgsl-plain-reg-h200.json`` (``bench.bench_wgsl``
  with ``plain-reg``, plain's passes and bytes at fused-reg's register tiling, timed at the
  device's largest limits since it needs more than WebGPU's default workgroup memory).

Each entry carries its file, its date (the file's own ``date`` or ``started`` field, else
the date of the commit that added it, from git log), the device and the command that
measured it, reconstructed from the run's argv with outputs under bench/results/.
Times are milliseconds for all ``heads`` heads; GFLOP/s by the run's FLOP convention
(forward 4·N²·d per head, backward 10·N²·d, causal half); bytes from emulator.traffic.count.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

from emulator.traffic import SOFTMAX_FLOP_PER_SCORE

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
FORWARD = "h200-forward-rows-table.json"
BACKWARD = "wgsl-backward-h200-final.json"
FAIR_PLAIN = "wgsl-plain-reg-h200.json"
FAIR_KERNEL = "plain-reg"
ROOFLINE = "roofline-h200.json"
OUTPUT_FLAGS = ("--json", "--md", "--roofline")


def _date(data: dict, path: Path) -> str:
    """YYYY-MM-DD: the run's own date, else the commit that added the file."""
    for key in ("date", "started"):
        if data.get(key):
            return str(data[key])[:10]
    try:
        out = subprocess.run(["git", "log", "--diff-filter=A", "--format=%as", "--", str(path)],
                             cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        out = []
    return out[-1] if out else ""


def command(argv: list) -> str:
    """The measuring command as typed from the repository root: the script as a module,
    each output file under bench/results/."""
    if not argv:
        return ""
    script = Path(argv[0])
    module = "bench." + script.stem if script.suffix == ".py" else str(argv[0])
    args, out = [], False
    for a in argv[1:]:
        args.append(f"bench/results/{Path(a).name}" if out else a)
        out = a in OUTPUT_FLAGS
    return " ".join(["python3 -m", module, *args])


def _source(data: dict, path: Path) -> dict:
    return {"file": f"bench/results/{path.name}", "date": _date(data, path),
            "device": (data.get("adapter") or {}).get("device", ""), "command": command(data.get("argv") or [])
            or data.get("command", "")}


def _sig(x: float) -> float:
    """Six significant digits: the table stays small, and no figure is changed visibly."""
    return float(f"{x:.6g}")


def _entry(r: dict) -> dict:
    e = {k: (_sig(r[k]) if isinstance(r[k], float) else r[k])
         for k in ("kernel", "medianMs", "gflops", "gbps", "bytes") if k in r}
    e["intensity"] = _sig(r["gflops"] / r["gbps"]) if r.get("gbps") else None
    if r.get("pass"):
        e["pass"] = r["pass"]
    return e


def _sizes(rows: list, direction: str, keep) -> list:
    sizes: dict = {}
    for r in rows:
        if not keep(r) or "medianMs" not in r or r.get("direction", "forward") != direction:
            continue
        key = (r["n"], r["d"], bool(r["causal"]), r["heads"])
        s = sizes.setdefault(key, {"n": r["n"], "d": r["d"], "causal": bool(r["causal"]), "heads": r["heads"],
                                   "kernels": [], "passes": []})
        s["kernels"].append(_entry(r))
        s.setdefault("_subgroups", bool(r.get("subgroups", False)))
        for p in r.get("passes") or []:
            if "medianMs" in p:
                s["passes"].append(_entry(p))
    return [_fold(sizes[k]) for k in sorted(sizes)]


def _fold(size: dict) -> dict:
    """One row per distinct run, as the visitor's Time does (planner.same_runs):
    a kernel whose plan repeats another's (same shaders, tiles, workgroup size and
    constants) and whose counted bytes are the same leaves the rows and is named in
    ``same`` as [{"kernel", "as"}]."""
    import planner
    from emulator.tiling import M_DEFAULT, InputError

    subgroups = size.pop("_subgroups", False)
    plans = {}
    for k in size["kernels"]:
        try:
            plans[k["kernel"]] = planner.kernel_plan(k["kernel"], size["n"], size["d"], size["causal"], M_DEFAULT,
                                                     size["heads"], 32 if subgroups else 0)
        except (InputError, KeyError):
            continue
    by_name = {k["kernel"]: k for k in size["kernels"]}
    same = [{"kernel": k, "as": a} for k, a in planner.same_runs(plans).items()
            if by_name[k].get("bytes") == by_name[a].get("bytes")]
    gone = {x["kernel"] for x in same}
    size["kernels"] = [k for k in size["kernels"] if k["kernel"] not in gone]
    size["same"] = same
    return size


def _load(path: Path):
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def table(results: Path = RESULTS) -> dict:
    """{"forward": {source..., "sizes": [...]}, "backward": {...}, "roofline": {source...,
    "bytes_per_second", "flop_per_second", "ridge_flop_per_byte"} or None, "fair_plain":
    {source..., "kernel", "sizes": fair_plain(...)} or None, "conventions":
    {"softmax_flop_per_score": FLOP a score of plain's softmax pass counts, as bench_wgsl
    counts it}}; a direction whose file is missing is None. ``results``: the folder."""
    out: dict = {"forward": None, "backward": None, "roofline": None, "fair_plain": None,
                 "conventions": {"softmax_flop_per_score": SOFTMAX_FLOP_PER_SCORE}}
    fwd = _load(results / FORWARD)
    if fwd:
        out["forward"] = {**_source(fwd, results / FORWARD), "sizes": _sizes(
            fwd["rows"], "forward", lambda r: r.get("limits") == "default" and r.get("subgroups", True)
            and not r.get("fallback"))}
    bwd = _load(results / BACKWARD)
    if bwd:
        out["backward"] = {**_source(bwd, results / BACKWARD),
                           "sizes": _sizes(bwd["rows"], "backward", lambda r: True)}
    roof = _load(results / ROOFLINE)
    if roof:
        out["roofline"] = {**_source(roof, results / ROOFLINE), **arithmetic_roof(roof, fwd)}
    fair = _load(results / FAIR_PLAIN)
    out["fair_plain"] = {**_source(fair, results / FAIR_PLAIN), "kernel": FAIR_KERNEL,
                         "sizes": fair_plain(fair["rows"])} if fair else None
    return out


def fair_plain(rows: list) -> list:
    """Per size of one bench_wgsl run that timed plain-reg: [{"n", "d", "causal", "heads",
    "plain_reg_ms", "fused": {"kernel", "medianMs", "limits"} (the fastest fused kernel of
    the run at that size, at any limits), "plain_ms" (the lesson's plain at the default
    limits, None where not timed)}], sorted by (n, d, causal, heads); times in ms for all
    heads. A size where plain-reg or every fused kernel went untimed is left out."""
    sizes: dict = {}
    for r in rows:
        if r.get("medianMs") is None or r.get("direction", "forward") != "forward":
            continue
        key = (r["n"], r["d"], bool(r["causal"]), r["heads"])
        size = sizes.setdefault(key, {"plain_reg_ms": None, "fused": None, "plain_ms": None})
        if r["kernel"] == FAIR_KERNEL:
            size["plain_reg_ms"] = _sig(r["medianMs"])
        elif r["kernel"] == "plain" and r.get("limits") == "default":
            size["plain_ms"] = _sig(r["medianMs"])
        elif r["kernel"].startswith("fused") and (size["fused"] is None
                                                  or r["medianMs"] < size["fused"]["medianMs"]):
            size["fused"] = {"kernel": r["kernel"], "medianMs": _sig(r["medianMs"]), "limits": r.get("limits")}
    return [{"n": n, "d": d, "causal": c, "heads": h, **v} for (n, d, c, h), v in sorted(sizes.items())
            if v["plain_reg_ms"] and v["fused"]]


def arithmetic_roof(roof: dict, fwd: dict | None) -> dict:
    """The roofline's figures: bytes_per_second (the copy probe), flop_per_second (the
    higher of the FMA probe's rate and, on the same device, the forward run's float32
    SGEMM, ``ceilings.sgemm_gflops``, PyTorch without TF32: a roof a real kernel exceeds
    is no roof), flop_roof ("fma" or "sgemm": which one), fma_flop_per_second,
    sgemm_flop_per_second (None where not measured on that device), ridge_flop_per_byte.
    Units: B/s, FLOP/s, FLOP/B."""
    fma = roof["flop_per_second"]
    ceilings = (fwd or {}).get("ceilings") or {}
    same = ceilings.get("device") and ceilings.get("device") == (roof.get("adapter") or {}).get("device")
    sgemm = ceilings["sgemm_gflops"] * 1e9 if same and ceilings.get("sgemm_gflops") else None
    flop = max(fma, sgemm or 0.0)
    return {"bytes_per_second": roof["bytes_per_second"], "flop_per_second": flop,
            "flop_roof": "sgemm" if sgemm and sgemm > fma else "fma", "fma_flop_per_second": fma,
            "sgemm_flop_per_second": sgemm, "ridge_flop_per_byte": flop / roof["bytes_per_second"]}
