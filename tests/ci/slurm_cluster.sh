#!/usr/bin/env bash
# ctest entry slurm_cluster: the two-node Slurm cluster ci/slurm-up starts is up
# and runs a job across both nodes: sinfo lists n1 and n2 in partition fl, an
# srun of 2 nodes x 2 tasks gives ranks 0-3 with n1 holding 0-1 and n2 2-3,
# the step leaves no process behind and squeue is empty after it. A missing
# cluster fails (ci/test starts it); it is never a skip.
set -euo pipefail
export SLURM_CONF=${SLURM_CONF:-${FAULTLINE_SLURM_DIR:-/var/tmp/faultline-slurm}/slurm.conf}
[ -f "$SLURM_CONF" ] || { echo "no $SLURM_CONF: ci/slurm-up was not run (ci/test runs it)" >&2; exit 1; }
nodes=$(sinfo -h -N -p fl -o '%N %t' | sort -u)
echo "$nodes"
grep -Eq '^n1 (idle|mix|alloc)' <<<"$nodes" && grep -Eq '^n2 (idle|mix|alloc)' <<<"$nodes" || {
  echo "nodes n1 and n2 are not both up" >&2; exit 1; }
marker=fl-slurm-cluster-test-$$
out=$(timeout 120 srun -p fl -N2 --ntasks-per-node=2 -J "$marker" \
  bash -c 'echo "$SLURM_PROCID $SLURMD_NODENAME $SLURM_LOCALID"; exec -a '"$marker"' sleep 0.2' | sort -n)
echo "$out"
expected=$'0 n1 0\n1 n1 1\n2 n2 0\n3 n2 1'
[ "$out" = "$expected" ] || { echo "ranks are not placed 2 per node in order: got" >&2; echo "$out" >&2; exit 1; }
for _ in $(seq 1 100); do
  [ -z "$(squeue -h -n "$marker")" ] && ! pgrep -f "$marker" >/dev/null && exit 0
  sleep 0.1
done
echo "after the step: squeue '$(squeue -h -n "$marker")', processes '$(pgrep -af "$marker")'" >&2
exit 1
