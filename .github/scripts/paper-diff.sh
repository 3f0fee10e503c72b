#!/usr/bin/env bash
# After `make reproduce`: the committed paper/*.csv numbers (at HEAD) that this checkout's
# paper/ moved beyond the tolerance of mdlnb/_paperdiff.py, written to DIR (default
# build/paper-diff) as paper-diff.txt (the report `make reproduce` prints) and paper-diff.csv
# (one row per moved cell), with paper-files.txt (every paper/ file whose bytes changed,
# figures included). Exit status 1 when a number moved, else 0.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-build/paper-diff}
PYTHON=${PYTHON:-.venv/bin/python}
mkdir -p "$OUT"
git diff --stat -- paper/ > "$OUT/paper-files.txt"
"$PYTHON" - "$OUT" <<'PY'
import sys
from pathlib import Path

from mdlnb import _paperdiff

out = Path(sys.argv[1])
diff = _paperdiff.paper_diff("paper", rev="HEAD")
text = _paperdiff.report(diff)
(out / "paper-diff.txt").write_text(text + "\n")
diff.to_csv(out / "paper-diff.csv", index=False)
print(text)
sys.exit(1 if len(diff) else 0)
PY
