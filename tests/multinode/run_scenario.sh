#!/usr/bin/env bash
# End-to-end: one multi-node scenario through the real CLI on a real stack,
# then faultline's teardown checked from outside:
#   - every expectation of the scenario passes;
#   - report.json's teardown has no leak (survivors, processes the teardown had
#     to SIGKILL, are the scenario's expectations: teardown.clean);
#   - no process of the run is left (FAULTLINE_RUN_DIR=OUT in its environment:
#     ranks, torchrun agents, node agents, the driver), none stuck in TCPStore;
#   - none of the run's network namespaces or links is left (OUT/nodes/network.json).
# Usage: run_scenario.sh FAULTLINE SCENARIO STACK
set -uo pipefail
faultline=$1 scenario=$2 stack=$3
out=$(mktemp -d /tmp/fl-multinode-XXXXXX)
start=$(date +%s.%N)
"$faultline" run --stack "$stack" -o "$out" "$scenario"
rc=$?
printf 'faultline run: exit %d in %.1f s\n' "$rc" "$(echo "$(date +%s.%N) - $start" | bc)"
fail=0
python3 - "$out/report.json" <<'PY' || fail=1
import json, sys
r = json.load(open(sys.argv[1]))
bad = 0
for e in r.get("expectations", []):
    what, status = e["what"], e.get("status", "pass" if e.get("ok") else "fail")
    mark = "ok" if status == "pass" else "FAIL"
    print(f"  {mark:4} {what} expected {json.dumps(e['expected'])} actual {json.dumps(e.get('actual'))}")
    bad += mark == "FAIL"
t = r["teardown"]
print(f"  teardown: clean={t['clean']} by={t['by']} duration_ms={t['duration_ms']} survivors={t['survivors']} leaks={t['leaks']}")
# Survivors (a process SIGKILLed after the grace period, as torch 1.13's agent
# stuck in TCPStore) are the scenario's to expect; a leak never is.
if t["leaks"]:
    bad += 1
sys.exit(1 if bad else 0)
PY
# Nothing of the run is left: no process with its run directory, no namespace, no link.
left=$(grep -l -s -a "FAULTLINE_RUN_DIR=$out" /proc/[0-9]*/environ 2>/dev/null | grep -v "/proc/$$/" || true)
if [ -n "$left" ]; then
  echo "FAIL: processes of the run left:"
  for e in $left; do p=${e#/proc/}; p=${p%/environ}; echo "  $p $(tr '\0' ' ' < /proc/$p/cmdline 2>/dev/null)"; done
  fail=1
fi
tag=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['tag'])" "$out/nodes/network.json" 2>/dev/null || true)
if [ -z "$tag" ]; then
  echo "FAIL: no OUT/nodes/network.json"; fail=1
else
  ns=$(ip netns list | grep "^$tag" || true)
  links=$(ip -o link show | grep ": $tag" || true)
  [ -z "$ns$links" ] || { echo "FAIL: network $tag left: $ns $links"; fail=1; }
  echo "  network $tag: removed"
fi
# A failed run's directory is kept for a look, and what it found is said
# last: CI keeps only the tail of a failing test's output.
if [ "$fail" -eq 0 ]; then rm -rf "$out"; exit 0; fi
echo "run directory kept: $out"
python3 - "$out/report.json" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    sys.exit(f"  no report: {e}")
for v in r.get("ranks", []):
    print(f"  rank {v.get('rank')} ({v.get('role')}): {v.get('diagnosis')}")
print(f"  verdict {r.get('verdict')}; root cause: {(r.get('root_cause') or {}).get('summary', 'none')}")
PY
exit $fail
