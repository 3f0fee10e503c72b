"""The package's commands: the ``mdlnb`` command line, the notebook runner and the cache.

- :mod:`.cli` — ``mdlnb evaluate | compare | switch | cache`` (:mod:`._cli_options`,
  :mod:`._cli_evaluate`, :mod:`._cli_switch`, :mod:`._cli_cache`), each calling the library
  function of the same name;
- :mod:`.runner` — ``python -m mdlnb.tools.runner``: the notebooks run under a profile
  (smoke, default, full) by papermill, their outputs to ``build/`` or ``paper/``;
- :mod:`.cache` — what the on-disk cache (``$MDLNB_CACHE``) holds, its size, clearing it.

The top of the layout: it may import everything, and nothing imports it.
"""
