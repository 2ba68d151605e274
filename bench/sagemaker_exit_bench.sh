#!/usr/bin/env bash
# Issue #21's matrix: the SageMaker Python SDK's trees (tests/python/test_sagemaker_contract.py: local
# mode's /opt/ml per host, the SDK's hyperparameters and distribution settings) launched on loopback,
# one `ctrain launch --sm-root` per host, each host its own 127.0.0.x. Per layout: the test's result
# and how long each host took to exit by itself after the model was written (the checkpoint's mtime:
# the end of the last step), min and median over REPEAT rounds of the slowest host.
#   bench/sagemaker_exit_bench.sh [REPEAT=3]
# Needs: build/ctrain, the installed package (pip install .), sagemaker and sagemaker-training
# (scripts/install-deps.sh), mpirun for the mpi layouts, sshd for the real-ssh one.
set -euo pipefail
REPEAT=${1:-3}
SRC=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}
[ -x "$SRC/build/ctrain" ] || { echo "no $SRC/build/ctrain (build first: scripts/build.sh)" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ctrain_exit_bench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
for i in $(seq "$REPEAT"); do
  (cd "$SRC/tests/python" && CTRAIN_EXIT_TIMES="$WORK/exits.jsonl" CTRAIN_CLI="$SRC/build/ctrain" \
     "$PY" -m pytest -q -p no:cacheprovider test_sagemaker_contract.py -k "loopback or sshd" -m "slow or not slow" \
     --junitxml="$WORK/round$i.xml" > "$WORK/round$i.log" 2>&1) || true
  tail -1 "$WORK/round$i.log"
done
"$PY" - "$WORK" "$REPEAT" <<'PYEOF'
import collections, json, pathlib, statistics, sys
import xml.etree.ElementTree as ET
work, repeat = pathlib.Path(sys.argv[1]), int(sys.argv[2])
results = collections.defaultdict(list)
for i in range(1, repeat + 1):
    for case in ET.parse(work / f"round{i}.xml").iter("testcase"):
        outcome = "skipped" if case.find("skipped") is not None else \
            "FAILED" if case.find("failure") is not None or case.find("error") is not None else "passed"
        results[case.get("name")].append(outcome)
exits = collections.defaultdict(list)
for line in (work / "exits.jsonl").read_text().splitlines() if (work / "exits.jsonl").exists() else []:
    j = json.loads(line)
    if j["after_model_s"]:
        exits[j["test"].split("::")[-1]].append(j["after_model_s"])
print("\n| SDK layout (test) | result | hosts | slowest host's exit after the model, min / median (s) |")
print("|---|---|---:|---|")
for name, outcomes in results.items():
    runs = exits.get(name, [])
    worst = [max(r.values()) for r in runs]
    hosts = max((len(r) for r in runs), default=0)
    when = f"{min(worst):.2f} / {statistics.median(worst):.2f}" if worst else "-"
    summary = ", ".join(f"{n} {o}" for o, n in collections.Counter(outcomes).items())
    print(f"| {name} | {summary} | {hosts or '-'} | {when} |")
PYEOF
