#!/usr/bin/env bash
# One notebook through mdlnb's runner, as .github/workflows/notebooks.yml runs it, with its
# inputs in the environment:
#   NOTEBOOK    the notebook's name (notebooks/NAME.py)
#   PROFILE     smoke, default or full (default: smoke)
#   PARAMETERS  overrides, NAME=VALUE, one per line or separated by ';' (each is a -p)
#   SWEEP       NAME=V1,V2,..., one per line or separated by ';' (each is a --sweep): one run
#               per combination, and the table of every run's numbers (values.csv)
#   OUT         the folder the workflow uploads (default: build/ci): the executed notebook,
#               its HTML and what the notebook saved (OUT/paper, or per run for a sweep)
# Arguments after these (e.g. --check) go to the runner too.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${NOTEBOOK:?NOTEBOOK: the notebook to run}"
PROFILE=${PROFILE:-smoke}
OUT=${OUT:-build/ci}
PYTHON=${PYTHON:-.venv/bin/python}

items() {  # the NAME=VALUE items of $1: split at newlines and ';', blanks trimmed
  printf '%s\n' "$1" | tr ';' '\n' | sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' | grep -v '^$' || true
}

args=(--profile "$PROFILE" --out-dir "$OUT")
while IFS= read -r item; do args+=(-p "$item"); done < <(items "${PARAMETERS:-}")
sweeps=()
while IFS= read -r item; do sweeps+=(--sweep "$item"); done < <(items "${SWEEP:-}")
if [ ${#sweeps[@]} -eq 0 ]; then
  args+=(-p "paper_dir=$OUT/paper")   # a sweep gives each run its own paper/
fi
"$PYTHON" -m mdlnb.tools.runner "$NOTEBOOK" "${args[@]}" "${sweeps[@]}" "$@"
# HTML beside every executed notebook (a sweep has one per run); none after --check
if [ -d "$OUT" ]; then
  find "$OUT" -name '*.ipynb' ! -name '*.failed.ipynb' -print0 | sort -z \
    | xargs -0 -r "$PYTHON" -m mdlnb.tools.runner --html
fi
