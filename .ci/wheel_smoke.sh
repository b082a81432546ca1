#!/usr/bin/env bash
# The installed wheel runs the main commands with NO extras (issue 32: `pip install` of the wheel once failed on
# `release --domain-bbox` with ModuleNotFoundError: h3, which neither CI nor `make demo` could see: both install
# '.[test]'). Builds the wheel, installs it into a fresh venv beside no checkout, imports every module of the
# package, and runs the demo and two README recipes there. Usage: bash .ci/wheel_smoke.sh [WORKDIR]
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-$(mktemp -d)}"
python="${PYTHON:-python3}"
mkdir -p "$work"
echo "wheel smoke: building the wheel in $work" >&2
"$python" -m pip wheel --quiet --no-deps --wheel-dir "$work/dist" "$repo" 2>&1 | grep -v '^WARNING: Location' >&2 || true
wheel="$(ls "$work"/dist/urbandp-*.whl)"
"$python" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --upgrade pip 2>&1 | grep -v '^WARNING: Location' >&2 || true
"$work/venv/bin/python" -m pip install --quiet "$wheel" 2>&1 | grep -v '^WARNING: Location' >&2 || true
"$work/venv/bin/python" -c "import urbandp" || { echo "wheel smoke: the wheel did not install" >&2; exit 1; }
cd "$work"  # never the checkout: the installed package must be what runs
# every module imports with the runtime dependencies alone (extras' modules import their extra lazily)
"$work/venv/bin/python" "$repo/.ci/import_all.py"
"$work/venv/bin/urbandp" --version
"$work/venv/bin/python" -m urbandp._demo "$work/demo" >/dev/null
test -s "$work/demo/release/privacy.json"
# README recipes: the fleet release with a public extent, and plan with one
"$work/venv/bin/urbandp" synth fleet --vehicles 20 --days 2 --out "$work/fleet.parquet" --seed 1 >/dev/null
W=(--start 2021-11-15 --end 2021-11-16)
"$work/venv/bin/urbandp" plan "$work/fleet.parquet" --out "$work/plan" "${W[@]}" --epsilon-per-day 10 \
    --target-error 2 --domain-bbox 21.09,72.75,21.25,72.91 >/dev/null
"$work/venv/bin/urbandp" release "$work/fleet.parquet" --out "$work/rel" "${W[@]}" --epsilon-per-day 10 \
    --domain-bbox 21.09,72.75,21.25,72.91 >/dev/null
test -s "$work/rel/privacy.json"
"$work/venv/bin/urbandp" counts synth --days 1 --trips-per-day 50 --out "$work/taps" >/dev/null
# the getting-started page as a new user runs it, with the wheel's urbandp (every block but the install)
"$work/venv/bin/python" "$repo/docs/run_blocks.py" "$repo/docs/getting-started.md" "$work/getting-started" \
    "$work/venv" >/dev/null
echo "wheel smoke: OK ($(basename "$wheel"): import of every module, demo, plan and release with --domain-bbox, the getting-started page)"
