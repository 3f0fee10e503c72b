"""``python -m mdlnb.tools.runner``: :func:`mdlnb.tools.runner.main`; a bad name, profile or
parameter ends it with one line on stderr and status 2."""

import sys

from mdlnb.tools.runner import main

try:
    raise SystemExit(main())
except ValueError as err:  # a bad name, profile or parameter: one line, status 2
    print(f"error: {err}", file=sys.stderr)
    raise SystemExit(2) from None
