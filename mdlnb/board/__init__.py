"""The board: the readouts that learn a task online, the experts (readout ×
hyperparameters) stage 1 trains, and the protocol that fixes everything a codelength
depends on.

- :mod:`.readouts` — linear and MLP readouts of 1–7 hidden layers (public);
- :mod:`.experts` — :class:`Expert`, :func:`expert_grid` and the named boards (public);
- :mod:`._protocol` — :class:`~mdlnb.Protocol` (board, strategy, batch, standardisation,
  ...) and its presets; :mod:`._arguments` — the one resolution of a protocol from a
  call's arguments (``resolve_protocol``), used by evaluate, compare, stage 1 and studies.

Imports :mod:`mdlnb.switching`, :mod:`mdlnb.core` and :mod:`mdlnb.infra`
(``tests/test_structure.py``).
"""

from mdlnb.board import experts, readouts

__all__ = ["experts", "readouts"]
