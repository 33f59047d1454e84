#!/usr/bin/env bash
# A replica of the learner's Colab runtime: Python 3.13 with Colab's versions of the
# packages the course touches (colab/packages.txt), the course installed on top of them
# the way a lesson's install cell does, and lessons executed in quick mode.
#
#   bash colab/replica.sh [LESSON.ipynb ...]     (default: lessons 01 and 04)
#
# Needs python3.13 (set PYTHON=...). torch 2.11 from PyPI is the CUDA build (several GB;
# it runs on a CPU too), so this is not part of CI. Prints what the install changed
# among Colab's packages, and fails if it changed any (MuJoCo and gymnasium's mujoco extra
# must install beside Colab's gymnasium, numpy and torch, not over them).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${PYTHON:-}" ]; then  # the first python3.13 that runs (a pyenv shim may not)
  for c in python3.13 "$HOME"/.pyenv/versions/3.13*/bin/python3.13; do
    if "$c" -c "" 2>/dev/null; then PYTHON=$c; break; fi
  done
fi
[ -n "${PYTHON:-}" ] || { echo "replica.sh: no python3.13 found; set PYTHON=/path/to/python3.13" >&2; exit 2; }
VENV=${VENV:-.venv-colab}
OUT=runs/colab-replica
lessons=("$@")
[ ${#lessons[@]} -gt 0 ] || lessons=(01_bellman_target.ipynb 04_target_policy_smoothing.ipynb)

start=$(date +%s)
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet -r colab/packages.txt
# Jupyter's runner for the lessons (Colab has its own; these are only the test tools).
"$VENV/bin/python" -m pip install --quiet nbconvert ipykernel "ipython==7.34.0"
"$VENV/bin/python" -m pip freeze | sort > "$VENV/before.txt"
echo "Colab's packages installed in $(( $(date +%s) - start )) s: $("$VENV/bin/python" --version)"

# The install cell installs the package (no extra for lessons without a Bullet environment).
rm -rf dist && "$VENV/bin/python" -m pip wheel --quiet --no-deps -w dist .
t0=$(date +%s)
"$VENV/bin/python" -m pip install dist/td3_lib-*.whl 2>&1 | tail -n 3
echo "td3_lib installed in $(( $(date +%s) - t0 )) s"
"$VENV/bin/python" -m pip freeze | sort > "$VENV/after.txt"
echo "Changed among the preinstalled packages (must be none):"
changed=$(comm -23 "$VENV/before.txt" "$VENV/after.txt" | grep -v '^td3' || true)
if [ -n "$changed" ]; then
  echo "$changed" | sed 's/^/  /'
  echo "replica.sh: installing the course changed Colab's own packages" >&2
  exit 1
fi
echo "  none"
echo "Added:"
comm -13 "$VENV/before.txt" "$VENV/after.txt" | sed 's/^/  /'

mkdir -p "$OUT"
for nb in "${lessons[@]}"; do
  t0=$(date +%s)
  (cd notebooks && TD3_QUICK=1 "../$VENV/bin/jupyter" nbconvert --to notebook --execute \
      --ExecutePreprocessor.kernel_name=python3 --output-dir "../$OUT" "$nb" >/dev/null 2>&1) \
    && echo "$nb: executed in quick mode in $(( $(date +%s) - t0 )) s" \
    || { echo "$nb: FAILED"; exit 1; }
done
echo "replica done in $(( $(date +%s) - start )) s"
