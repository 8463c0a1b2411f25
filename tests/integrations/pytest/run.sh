#!/usr/bin/env bash
# ctest entry pytest_plugin: installs the pytest plugin with pip from the
# checkout into a scratch directory (no network: the venv's setuptools builds
# it) and runs its tests with that venv's pytest, the plugin found by its
# entry point. Needs $FAULTLINE (the binary) and $FL_TORCH_BIN (a venv's bin/).
set -euo pipefail
src=$(cd "$(dirname "$0")/../../.." && pwd)
bin=${FL_TORCH_BIN:-/opt/faultline/torch-2.13/bin}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# From a copy: setuptools builds in the source tree (build/, *.egg-info).
cp -r "$src/integrations/pytest" "$scratch/plugin"
"$bin/pip" install -q --disable-pip-version-check --no-deps --no-build-isolation --no-index \
  --target "$scratch/site" "$scratch/plugin" >/dev/null
export PYTHONPATH="$scratch/site${PYTHONPATH:+:$PYTHONPATH}" FAULTLINE_SOURCE_DIR="$src"
exec "$bin/python" -m pytest -p no:cacheprovider -q "$src/tests/integrations/pytest" "$@"
