#!/usr/bin/env bash
# Exercise 3 (the Triton port) on a CUDA machine, in one go: the tests of each solution module
# (solution.py, the kernel the prompt teaches, and solution_fast.py, its fast path), their atomic-dQ
# backward's tests, each wrong answer against the tests exercise.toml names for it, then the
# benchmark alone on the GPU.
#
#   bash bench/run_triton_h200.sh OUT_DIR "BENCH ARGS"
#   MODULES=solution_fast WRONG=0 bash bench/run_triton_h200.sh OUT_DIR   # one module's tests, no wrong answers
#
# Phase 1 runs in parallel (the GPU is only checked, not timed): pytest in processes by dtype and
# direction, one per wrong answer, and bench_flash_triton.py --warm-one for each (dtype, d, mask)
# and a third of each autotuner's configs, which compiles every config into Triton's on-disk
# cache. Phase 2 is the timed benchmark, with BENCH ARGS. Writes OUT_DIR/tests.txt,
# OUT_DIR/bench.log and what BENCH ARGS name.
set -u
OUT=$1
BENCH=${2:-}
cd "$(dirname "$0")/../site/content/exercises/triton-port"
export PYTHONUNBUFFERED=1
LOGS=$(mktemp -d)
T0=$(date +%s)
MODULES=${MODULES:-solution solution_fast}
# each module with dQ from atomic adds at every N (by default it is timed against the two kernels from N = 1,024)
for m in $MODULES; do
  printf 'import functools\nimport %s\nflash_attention = functools.partial(%s.flash_attention, dq_atomic=True)\n' \
    "$m" "$m" > "_atomic_$m.py"
done
# the wrong answers, stored as patches against solution.py (exercises/README.md), written out
# whole as the package wrong/ in $LOGS, which the wrong answers' jobs put on PYTHONPATH
python3 - "$LOGS" <<'PY'
import os, sys
sys.path.insert(0, os.path.abspath("../../../.."))  # the repository root: exercises.content
from exercises import content
os.makedirs(os.path.join(sys.argv[1], "wrong"))
for name, source in content.wrong_answers({"dir": os.getcwd()}).items():
    with open(os.path.join(sys.argv[1], "wrong", name), "w", encoding="utf-8") as f:
        f.write(source)
PY
python3 - "$LOGS" "$MODULES" "${WRONG:-1}" "$BENCH" > "$LOGS/jobs.txt" <<'PY'
import shlex, sys, tomllib
ex = tomllib.load(open("exercise.toml", "rb"))
modules, wrong, bench = sys.argv[2].split(), sys.argv[3] == "1", shlex.split(sys.argv[4])
warm = bench[bench.index("--module") + 1] if "--module" in bench else "starter"  # the module the benchmark times
py = "python3"
jobs = []
for dt in ("float16", "bfloat16") if bench else ():
    for d in (64, 128):
        for c in (0, 1):
            for i in range(3):
                jobs.append(f"{py} bench_flash_triton.py --warm-one {warm} {dt} {d} {c} forward,forward+backward auto {i} 3")
pick = {"f32": "float32", "h-fwd": "float16 and not bfloat16 and forward", "h-bwd": "float16 and not bfloat16 and backward",
        "b-fwd": "bfloat16 and forward", "b-bwd": "bfloat16 and backward", "rest": "not float16 and not float32"}
for m in modules:
    for name, k in pick.items():
        jobs.append(f"FLASH_MODULE={m} {py} -m pytest test_flash_triton.py -q -rs -p no:cacheprovider -k '{k}' "
                    f"> $LOGS/{m}-{name}.txt 2>&1")
    for name, k in {"h": "backward and float16 and not bfloat16 or backward and float32",
                    "b": "backward and bfloat16"}.items():
        jobs.append(f"FLASH_MODULE=_atomic_{m} {py} -m pytest test_flash_triton.py -q -rs -p no:cacheprovider "
                    f"-k '{k}' > $LOGS/atomic-dq-{m}-{name}.txt 2>&1")
for w in ex["wrong"] if wrong else []:
    mod = w["file"].removesuffix(".py").replace("/", ".")
    jobs.append(f"PYTHONPATH=$LOGS FLASH_MODULE={mod} {py} -m pytest test_flash_triton.py -q -p no:cacheprovider -k '{w['tests']}' "
                f"> $LOGS/{mod}.txt 2>&1; echo \"exit $? (must be 1); says: $(grep -c -F '{w['says']}' $LOGS/{mod}.txt)\" "
                f">> $LOGS/{mod}.txt")
print("\n".join(jobs).replace("$LOGS", sys.argv[1]))
PY
xargs -d "\n" -P 15 -I{} timeout 150 bash -c "{}" < "$LOGS/jobs.txt" > "$LOGS/warm.txt" 2>&1
for f in "$LOGS"/*.txt; do [ "$f" = "$LOGS/jobs.txt" ] && continue; echo "=== $(basename "$f")"; tail -n 12 "$f"; done > "$OUT/tests.txt"
echo "phase 1: $(( $(date +%s) - T0 )) s" | tee -a "$OUT/tests.txt"
if [ -n "$BENCH" ]; then
  eval "python3 bench_flash_triton.py $BENCH" > "$OUT/bench.log" 2>&1
  echo "bench exit $?; $(( $(date +%s) - T0 )) s" | tee -a "$OUT/bench.log"
fi
for m in $MODULES; do rm -f "_atomic_$m.py"; done
