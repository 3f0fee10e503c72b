#!/usr/bin/env bash
# After `make reproduce`: how this checkout's paper/ compares with the committed one (HEAD),
# by mdlnb/research/_paperdiff.py, written to DIR (default build/paper-diff): paper-diff.txt (the
# report `make reproduce` prints), paper-diff.csv (every moved cell, its tolerance and
# whether it moved beyond the run's own spread), verdicts.csv (claims whose two-part
# verdict changed) and paper-files.txt (every paper/ file whose bytes changed, figures too).
# Exit status 1 when a number moved beyond its tolerance (the table's spread; for a cell
# without one, 1e-9 + 1e-3 |old|) or a claim's verdict changed, else 0.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-build/paper-diff}
PYTHON=${PYTHON:-.venv/bin/python}
mkdir -p "$OUT"
git diff --stat -- paper/ > "$OUT/paper-files.txt"
"$PYTHON" - "$OUT" <<'PY'
import sys
from pathlib import Path

from mdlnb.research import _paperdiff

out = Path(sys.argv[1])
diff = _paperdiff.paper_diff("paper", rev="HEAD")
verdicts = _paperdiff.verdict_changes("paper", rev="HEAD")
text = _paperdiff.report(diff, verdicts=verdicts)
(out / "paper-diff.txt").write_text(text + "\n")
diff.to_csv(out / "paper-diff.csv", index=False)
verdicts.to_csv(out / "verdicts.csv", index=False)
print(text)
sys.exit(1 if diff["beyond spread"].astype(bool).any() or len(verdicts) else 0)
PY
