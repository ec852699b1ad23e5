"""The lab from a terminal: count the bytes an attention kernel moves, or check its
float32 answer, through the same requests the page sends (lab_api.handle).

Examples:
  python -m lab_api count --kernel plain --n 4096 --d 16
  python -m lab_api check --kernel fused-no-rescale --n 256 --d 64 --seed 1
  python -m lab_api check --kernel fused --input model --head 3
  python -m lab_api count --kernel fused --direction backward --n 4096 --d 64 --json

Bad arguments print one line to stderr and exit with status 2, never a
traceback.
"""
from __future__ import annotations

import argparse
import json
import sys

import lab_api as api
from emulator import backward
from emulator.tiling import KERNELS, M_DEFAULT


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2
        sys.stderr.write(f"lab_api: {message}\n")
        raise SystemExit(2)


def main(argv=None) -> int:
    parser = _Parser(prog="python -m lab_api", description=__doc__,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="op", required=True, parser_class=_Parser)
    for op in ("count", "check"):
        p = sub.add_parser(op)
        p.add_argument("--kernel", choices=KERNELS + tuple(k for k in backward.lab_names() if k not in KERNELS),
                       required=True)
        p.add_argument("--direction", choices=("forward", "backward"), default="forward")
        p.add_argument("--n", required=(op == "count"), help="sequence length N")
        p.add_argument("--d", required=(op == "count"), help="head dimension d")
        p.add_argument("--causal", action="store_true")
        p.add_argument("--workgroup-bytes", default=str(M_DEFAULT), help="workgroup memory M in bytes")
        p.add_argument("--json", action="store_true", help="print JSON")
        if op == "check":
            p.add_argument("--seed", default="1", help="seed of the random inputs (the lab's default is 1)")
            p.add_argument("--input", choices=("random", "model"), default="random",
                           help="random Q, K, V, or the model's sentence (facts/probe_qkv.json)")
            p.add_argument("--head", default="0", help="the model's head, with --input model")
    args = parser.parse_args(argv)
    params = {"kernel": args.kernel, "n": args.n, "d": args.d, "causal": args.causal,
              "workgroup_bytes": args.workgroup_bytes, "seed": getattr(args, "seed", "1"),
              "input": getattr(args, "input", "random"), "head": getattr(args, "head", "0"),
              "direction": args.direction}
    if params["input"] == "model":
        from lab_api import _load_model_qkv
        try:
            data = _load_model_qkv()
        except FileNotFoundError:
            sys.stderr.write("lab_api: facts/probe_qkv.json is missing; run `python -m facts`\n")
            return 2
        params["n"], params["d"] = params["n"] or str(data["n"]), params["d"] or str(data["d"])
    elif args.op == "check" and (args.n is None or args.d is None):
        parser.error("check needs --n and --d (or --input model)")
    reply = api.handle({"op": args.op, "params": params})
    if not reply["ok"]:
        sys.stderr.write("lab_api: " + " ".join(e["message"] for e in reply["errors"]) + "\n")
        return 2
    r = reply["result"]
    if r.get("direction") == "backward":
        return _print_backward(args.op, r, args.json)
    if args.op == "count":
        out = dict(r["selected"])
        out["plain_to_fused_ratio"] = r["ratio"]
        if args.json:
            print(json.dumps(out, sort_keys=True))
        else:
            print(f"{out['kernel']}: N={out['n']:,} d={out['d']} causal={out['causal']} "
                  f"B_r={out['block_rows']} B_c={out['block_cols']}")
            for name in ("Q", "K", "V", "S", "P", "O"):
                rd, wr = out["reads"][name], out["writes"][name]
                if rd or wr:
                    print(f"  {name}: read {rd:>15,} B  written {wr:>15,} B")
            print(f"  total {out['total_bytes']:,} B ({out['total_mib']:.1f} MiB)")
    else:
        if args.json:
            print(api.json.dumps(api._clean(r), sort_keys=True))
        else:
            verdict = "PASS" if r["passed"] else "FAIL"
            print(f"{verdict}: {r['kernel']} N={r['n']:,} d={r['d']} causal={r['causal']}: "
                  f"max abs error {r['max_abs_error']:.3g}, bound {r['bound']:.3g}, {r['rows_description']}")
            if r["first_failing_row"] is not None:
                print(f"  first failing row {r['first_failing_row']} (query tile {r['first_failing_tile']})")
    return 0


def _print_backward(op: str, r: dict, as_json: bool) -> int:
    """Print a backward count (bytes per tensor, backward ÷ forward) or check (errors per tensor)."""
    if op == "count":
        out = dict(r["selected"])
        out.update(forward_total_bytes=r["forward"]["total_bytes"],
                   backward_to_forward_ratio=r["backward_to_forward_ratio"])
        if as_json:
            print(json.dumps(out, sort_keys=True))
            return 0
        print(f"{out['kernel']}: N={out['n']:,} d={out['d']} causal={out['causal']} "
              f"B_r={out['block_rows']} B_c={out['block_cols']}")
        for name in backward.TENSORS:
            rd, wr = out["reads"][name], out["writes"][name]
            if rd or wr:
                print(f"  {name}: read {rd:>15,} B  written {wr:>15,} B")
        print(f"  total {out['total_bytes']:,} B = {out['backward_to_forward_ratio']:.2f} × "
              f"the forward's {out['forward_total_bytes']:,} B")
        return 0
    if as_json:
        print(api.json.dumps(api._clean(r), sort_keys=True))
        return 0
    print(f"{'PASS' if r['passed'] else 'FAIL'}: {r['kernel']} N={r['n']:,} d={r['d']} causal={r['causal']}")
    for name, t in r["tensors"].items():
        print(f"  {name}: max abs error {t['max_abs_error']:.3g}, worst error ÷ bound {t['worst_ratio']:.3g}"
              f" ({'pass' if t['passed'] else 'FAIL'})")
    print(f"  identity residual max |rowsum(dO∘O) − rowsum(dP∘P)| = {r['identity_residual']:.3g} (float64)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
