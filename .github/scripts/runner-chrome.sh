#!/usr/bin/env bash
# GitHub's Ubuntu runners come with Google Chrome and its chromedriver (in $CHROMEWEBDRIVER).
# Link the driver where `make browser-packages` looks for one (/usr/bin/chromedriver), so that
# `make test` opens JupyterLab (tests/test_lab.py) in that Chrome instead of installing
# Debian's chromium, which Ubuntu packages as a snap. Elsewhere it does nothing.
set -euo pipefail
dir=${LINK_DIR:-/usr/bin}
driver="${CHROMEWEBDRIVER:-}/chromedriver"
if [ -n "${CHROMEWEBDRIVER:-}" ] && [ -x "$driver" ] && [ ! -e "$dir/chromedriver" ]; then
  if [ -w "$dir" ]; then ln -s "$driver" "$dir/chromedriver"; else sudo ln -s "$driver" "$dir/chromedriver"; fi
  echo "chromedriver: $dir/chromedriver -> $driver"
fi
