"""Every other way to judge a representation, beside the MDL score: what the papers
compare it with.

- :mod:`.blockwise` — the block-wise (Voita & Titov) code of one readout;
- :mod:`.probes` — frozen-feature probes: a readout trained offline, its test accuracy;
- :mod:`.finetune` — the whole encoder trained on the task;
- :mod:`.transfer` — transferability metrics (LEEP … PACTran, LogME, H-score, SFDA, GBC,
  TransRate, NCTI, ETran; one concept per file, each tested against a reference);
- :mod:`.labelfree` — label-free measures (cluster learnability, TwoNN intrinsic
  dimension, RankMe, CLID);
- :mod:`.curves` — loss-data curves and the measures read off them (SDL, εSC).

Each family is imported when first used (``mdlnb.baselines.transfer``), since each pulls
its own dependencies. Imports the stages (:mod:`mdlnb.prequential`, :mod:`mdlnb.board`,
:mod:`mdlnb.switching`, :mod:`mdlnb.encoders`) and the floor (:mod:`mdlnb.core`,
:mod:`mdlnb.infra`), never :mod:`mdlnb.api`.
"""

from typing import TYPE_CHECKING

from mdlnb.infra._lazy import submodule_getattr

if TYPE_CHECKING:
    from mdlnb.baselines import blockwise, curves, finetune, labelfree, probes, transfer

__all__ = ["blockwise", "curves", "finetune", "labelfree", "probes", "transfer"]


__getattr__ = submodule_getattr(__name__, __all__)
