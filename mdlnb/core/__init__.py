"""What every stage works on: the task, its targets, the checks on arguments, the units.

- :mod:`._task` — the :class:`~mdlnb.Task` (inputs, labels or real targets, what they are);
  :mod:`._userfiles` — features and labels from ``.npy``/``.npz``/``.csv``/``.parquet`` files.
- :mod:`._targets` — task kinds and how a readout's outputs code a target.
- :mod:`._checks` — input validation shared by every public function, each error naming
  its argument.
- :mod:`._units` — nats ↔ bits for every result that carries a codelength.
- :mod:`._standardize` — per-feature standardisation, one zero-variance rule.
- :mod:`._fit` — offline supervised training of one readout, the step stage 1 and the
  baselines share; :mod:`._grid` — the one log-spaced integer grid of sizes and bins.

Imports only :mod:`mdlnb.infra` (``tests/test_structure.py``). The modules are private;
the public names (``mdlnb.Task``) are re-exported at the top level.
"""
