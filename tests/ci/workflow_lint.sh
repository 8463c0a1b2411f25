#!/usr/bin/env bash
# The CI definitions themselves: every .github/workflows/*.yml (and the user
# templates in examples/ci) against GitHub's and GitLab's schemas (check-jsonschema's vendored copy, in the tools venv that
# ci/deps makes), every script in ci/ and .ci/ parses (bash -n), and every
# repository script a workflow step runs exists and is executable.
set -euo pipefail
src=${1:?usage: workflow_lint.sh SOURCE_DIR}
tools=${FAULTLINE_OPT:-/opt/faultline}/tools/bin
cd "$src"
[ -x "$tools/check-jsonschema" ] || { echo "no $tools/check-jsonschema: run ci/deps" >&2; exit 1; }
shopt -s nullglob
workflows=(.github/workflows/*.yml .github/workflows/*.yaml)
[ ${#workflows[@]} -gt 0 ] || { echo "no workflow in .github/workflows" >&2; exit 1; }
"$tools/check-jsonschema" --builtin-schema vendor.github-workflows "${workflows[@]}"
# The templates users copy (docs/USING.md, "CI templates"): GitHub's and GitLab's schemas.
[ -f examples/ci/github-actions.yml ] && [ -f examples/ci/gitlab-ci.yml ] || { echo "examples/ci templates missing" >&2; exit 1; }
"$tools/check-jsonschema" --builtin-schema vendor.github-workflows examples/ci/github-actions.yml
"$tools/check-jsonschema" --builtin-schema vendor.gitlab-ci examples/ci/gitlab-ci.yml
for f in ci/* .ci/*; do
  [ -f "$f" ] || continue
  bash -n "$f" || { echo "$f: does not parse" >&2; exit 1; }
done
fail=0
for wf in "${workflows[@]}"; do
  # `run: ci/x ...` and `run: .ci/x ...` lines: the script must be there.
  while read -r script; do
    if [ ! -x "$script" ]; then
      echo "$wf: runs $script, which is not an executable file of the repository" >&2
      fail=1
    fi
  done < <(sed -n 's/^[[:space:]]*\(-[[:space:]]*\)\{0,1\}run:[[:space:]]*\(\.\{0,1\}ci\/[^[:space:]]*\).*/\2/p' "$wf")
done
exit $fail
