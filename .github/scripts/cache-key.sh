#!/usr/bin/env bash
# The key of the $MDLNB_CACHE cache in CI, as a GitHub step output line (cache=KEY): the OS,
# the argument (the Python version), a hash of the installed packages (pip freeze, this
# checkout's own editable install left out) and a hash of the cache versions in the code
# (mdlnb.prequential.CODE_VERSION and every CACHE_VERSION / VERSION constant that is part
# of a cache key). Either changing gives a new key, so an old cache is never restored.
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-.venv/bin/python}
deps=$("$PYTHON" -m pip freeze --exclude-editable --disable-pip-version-check | sort | sha256sum | cut -c1-16)
code=$(grep -rhE '^(CODE_|CACHE_)?VERSION = ' --include='*.py' mdlnb | sort | sha256sum | cut -c1-16)
echo "cache=mdlnb-$(uname -s)-${1:-py}-deps-${deps}-code-${code}"
