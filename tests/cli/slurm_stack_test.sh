#!/usr/bin/env bash
# ctest entries slurm_stack_*: one scenarios/multinode scenario through the real
# `faultline run --stack slurm` (2 nodes x 2 ranks, a faultline agent per
# task): it must pass (its expectations: root cause, blame, teardown clean),
# every rank must carry its node in supervisor.json, and neither a job nor a
# process of the run may be left. A missing cluster fails (ci/test starts it);
# it is never a skip.
set -euo pipefail
faultline=$1 scenario=$2
export SLURM_CONF=${SLURM_CONF:-${FAULTLINE_SLURM_DIR:-/var/tmp/faultline-slurm}/slurm.conf}
[ -f "$SLURM_CONF" ] || { echo "no $SLURM_CONF: ci/slurm-up was not run (ci/test runs it)" >&2; exit 1; }
out=$(mktemp -d "${TMPDIR:-/tmp}/fl-slurm-XXXXXX")
trap 'rm -rf "$out"' EXIT
rc=0
"$faultline" run --strict "$scenario" --stack slurm -o "$out/run" || rc=$?
[ "$rc" = 0 ] || { echo "faultline run exited $rc" >&2; cat "$out/run/launcher/stderr" >&2 || true; exit 1; }
python3 - "$out/run/supervisor.json" <<'PY'
import json, sys
rec = json.load(open(sys.argv[1]))
nodes = {r["rank"]: r.get("node") for r in rec["ranks"]}
want = {0: "n1", 1: "n1", 2: "n2", 3: "n2"}
if nodes != want:
    sys.exit(f"ranks' nodes in supervisor.json: {nodes}, expected {want}")
PY
jobs=$(squeue -h -n faultline -o %i)
[ -z "$jobs" ] || { echo "slurm jobs left: $jobs" >&2; exit 1; }
if grep -l "FAULTLINE_RUN_DIR=$out/run" /proc/[0-9]*/environ 2>/dev/null | grep -v "/proc/$$/"; then
  echo "processes of the run left (above)" >&2; exit 1
fi
exit 0
