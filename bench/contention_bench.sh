#!/usr/bin/env bash
# The default OpenMP wait policy on both kinds of machine, in one run (issue #7 item 14, issue #24 item 1):
# an idle phase (dedicated cores) and a busy phase (a busy loop pinned to the last CPU of this process's
# affinity set for the whole phase). Each round trains the same short job once per mode, modes alternated and
# rotated (round r starts at the r-th mode), $RUNS rounds per phase:
#   one      --intra-op-threads 1
#   default  no thread flag, no OpenMP variable: ctrain samples its CPUs for 100 ms and picks ACTIVE
#            (spin) on idle ones, PASSIVE (sleep) when another process uses them (train/openmp_wait.h)
#   passive  default threads, OMP_WAIT_POLICY=passive (ctrain's fixed default before)
#   active   default threads, OMP_WAIT_POLICY=active (libgomp spins)
#   autotune --autotune, no OpenMP variable: the layouts measured under the sampled policy, then the winner
#            under the other one (a re-exec, train/autotune.h); the faster policy trains
#   spin     default threads, GOMP_SPINCOUNT=300000 (libgomp's own default; add it to MODES to see the
#            collapse with a busy core)
# The job is the built-in synthetic DeepFM job at batch 1024 ($STEPS steps; the issue's throughput config),
# or the job given as arguments. examples/s come from --metrics-json, the policy the default mode chose from
# its run line. Prints min and median per phase and mode, then the targets:
#   idle: default / the best explicit mode >= 0.97 (medians)
#   busy: default / one >= 0.9 (medians)
#   idle: default / the f32 GEMM roofline (build/bench/sgemm_roofline_bench at the same batch, all threads;
#         goal >= 0.8) when that bench is built and no job arguments were given
# and one JSON object on the last line.
#
#   bash bench/contention_bench.sh                    # both phases, 3 rounds of 250 steps
#   RUNS=5 STEPS=300 bash bench/contention_bench.sh
#   PHASES=busy MODES="one default spin" bash bench/contention_bench.sh
#   bash bench/contention_bench.sh --train f.libsvm --id-base 1 --feature-size 921 --deep-layers 32,16
# Environment: BUILD_DIR (build), RUNS (3), STEPS (250), PHASES ("idle busy"),
# MODES ("one default passive active autotune").
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
RUNS=${RUNS:-3}
STEPS=${STEPS:-250}
PHASES=${PHASES:-idle busy}
MODES=${MODES:-one default passive active autotune}
CTRAIN="$BUILD_DIR/ctrain"
[ -x "$CTRAIN" ] || { echo "missing $CTRAIN (build first: scripts/build.sh)" >&2; exit 1; }
OUT=$(mktemp -d /tmp/contention_bench.XXXXXX)
BUSY_PID=""
stop_busy() {
  if [ -n "$BUSY_PID" ]; then kill "$BUSY_PID" 2>/dev/null || true; wait "$BUSY_PID" 2>/dev/null || true; fi
  BUSY_PID=""
}
cleanup() {
  stop_busy
  rm -rf "$OUT"
}
trap cleanup EXIT

CPUS=$(python3 -c 'import os; print(" ".join(map(str, sorted(os.sched_getaffinity(0)))))')
LAST_CPU=${CPUS##* }
echo "== CPUs this process may use: $CPUS; $(nproc) online; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2

BATCH=1024
if [ $# -eq 0 ]; then
  JOB=(--max-steps "$STEPS" --batch-size "$BATCH" --progress none)
else
  JOB=(--max-steps "$STEPS" --progress none "$@")
fi
run_mode() {  # phase mode round -> prints examples/s
  local phase=$1 mode=$2 json="$OUT/$1.$2.$3.json" log="$OUT/$1.$2.$3.log"
  case $mode in
    one) env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY -u CTRAIN_OMP_WAIT "$CTRAIN" train "${JOB[@]}" --intra-op-threads 1 --metrics-json "$json" ;;
    default) env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY -u CTRAIN_OMP_WAIT "$CTRAIN" train "${JOB[@]}" --metrics-json "$json" ;;
    passive) env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=passive "$CTRAIN" train "${JOB[@]}" --metrics-json "$json" ;;
    active) env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=active "$CTRAIN" train "${JOB[@]}" --metrics-json "$json" ;;
    autotune) env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY -u CTRAIN_OMP_WAIT "$CTRAIN" train "${JOB[@]}" --autotune --metrics-json "$json" ;;
    spin) env -u OMP_WAIT_POLICY GOMP_SPINCOUNT=300000 "$CTRAIN" train "${JOB[@]}" --metrics-json "$json" ;;
    *) echo "unknown mode $mode" >&2; exit 2 ;;
  esac >/dev/null 2>"$log" || { cat "$log" >&2; exit 1; }
  if [ "$mode" = default ] || [ "$mode" = autotune ]; then
    grep -o ' wait=[A-Za-z]*' "$log" | head -1 | sed 's/ wait=//' >>"$OUT/$phase.$mode.policy"
  fi
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["examples_per_sec"])' "$json"
}

ROOFLINE=""
for phase in $PHASES; do
  case $phase in
    idle) echo "== idle phase: no busy process" >&2 ;;
    busy)
      taskset -c "$LAST_CPU" sh -c 'while :; do :; done' &
      BUSY_PID=$!
      echo "== busy phase: a busy loop (pid $BUSY_PID) pinned to CPU $LAST_CPU" >&2 ;;
    *) echo "unknown phase $phase (idle, busy)" >&2; exit 2 ;;
  esac
  read -r -a MODE_LIST <<<"$MODES"
  for r in $(seq "$RUNS"); do
    # Round r starts at mode r - 1 (rotating), so no mode always runs right after the same other one.
    for k in $(seq 0 $((${#MODE_LIST[@]} - 1))); do
      m=${MODE_LIST[$(((k + r - 1) % ${#MODE_LIST[@]}))]}
      v=$(run_mode "$phase" "$m" "$r")
      echo "$v" >>"$OUT/$phase.$m.txt"
      printf '   %s round %d  %-8s %10.0f examples/s\n' "$phase" "$r" "$m" "$v" >&2
    done
  done
  if [ "$phase" = idle ] && [ $# -eq 0 ] && [ -x "$BUILD_DIR/bench/sgemm_roofline_bench" ]; then
    OMP_WAIT_POLICY=active "$BUILD_DIR/bench/sgemm_roofline_bench" --batch "$BATCH" >"$OUT/roofline.json"
    ROOFLINE="$OUT/roofline.json"
  fi
  stop_busy
done

python3 - "$OUT" "$STEPS" "$RUNS" "$ROOFLINE" "$PHASES" $MODES <<'EOF'
import json, os, statistics, sys
out, steps, runs, roofline, phases, modes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5].split(), sys.argv[6:]
summary = {"steps": steps, "runs": runs, "phases": {}}
print(f"{'phase':6s} {'mode':8s} {'min ex/s':>10s} {'median ex/s':>12s}  runs", file=sys.stderr)
for ph in phases:
    res = {}
    for m in modes:
        v = [float(x) for x in open(f"{out}/{ph}.{m}.txt").read().split()]
        res[m] = {"min": min(v), "median": statistics.median(v), "runs": v}
        print(f"{ph:6s} {m:8s} {res[m]['min']:10.0f} {res[m]['median']:12.0f}  " + " ".join(f"{x:.0f}" for x in v),
              file=sys.stderr)
    for m in ("default", "autotune"):
        p = f"{out}/{ph}.{m}.policy"
        if os.path.exists(p):
            res[f"{m}_chose"] = open(p).read().split()
            print(f"{ph:6s} {m} chose: {' '.join(res[f'{m}_chose'])}", file=sys.stderr)
    summary["phases"][ph] = res
idle, busy = summary["phases"].get("idle"), summary["phases"].get("busy")
if idle and "default" in idle:
    explicit = [m for m in modes if m not in ("default", "autotune")]
    if explicit:
        best = max(explicit, key=lambda m: idle[m]["median"])
        r = idle["default"]["median"] / idle[best]["median"]
        summary["idle_default_over_best"] = r
        summary["idle_best_explicit"] = best
        summary["target_idle_0.97_met"] = r >= 0.97
        print(f"idle: default / best explicit ({best}) = {r:.3f} (median; worst run {idle['default']['min'] / idle[best]['median']:.3f}); "
              f"target >= 0.97 {'met' if r >= 0.97 else 'NOT met'}", file=sys.stderr)
    if roofline:
        rl = json.load(open(roofline))["threads_all"]["roofline_examples_per_sec"]
        f = idle["default"]["median"] / rl
        summary["roofline_examples_per_sec"] = rl
        summary["idle_default_over_roofline"] = f
        print(f"idle: default / f32 GEMM roofline ({rl:.0f} ex/s) = {f:.2f} (goal >= 0.8)", file=sys.stderr)
if idle and busy and "autotune" in idle and "autotune" in busy:
    explicit = [m for m in modes if m not in ("default", "autotune")]
    if explicit:
        best = max(explicit, key=lambda m: idle[m]["median"])
        ri = idle["autotune"]["median"] / idle[best]["median"]
        summary["idle_autotune_over_best"] = ri
    if "one" in busy:
        rb = busy["autotune"]["median"] / busy["one"]["median"]
        summary["busy_autotune_over_one"] = rb
        print(f"autotune: idle / best explicit = {ri:.3f}, busy / one = {rb:.3f} (medians; its layout may differ)",
              file=sys.stderr)
if busy and "default" in busy and "one" in busy:
    r = busy["default"]["median"] / busy["one"]["median"]
    summary["busy_default_over_one"] = r
    summary["target_busy_0.9_met"] = r >= 0.9
    print(f"busy: default / one = {r:.3f} (median; worst run {busy['default']['min'] / busy['one']['median']:.3f}); "
          f"target >= 0.9 {'met' if r >= 0.9 else 'NOT met'}", file=sys.stderr)
print(json.dumps(summary))
EOF
