"""The one tidy format of a switching posterior p(ξ_t = k | D_<t).

Shared by :meth:`mdlnb.switching.SwitchResult.to_frame`,
:attr:`mdlnb.Report.posterior` and the CLI's ``--posterior`` files; it sits
below all three, so stage 2 does not import the report that presents it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd


def posterior_frame(
    posterior: np.ndarray, names: Sequence[str], readouts: Sequence[str] | None = None
) -> pd.DataFrame:
    """The one tidy posterior format (``Report.posterior``, ``mdlnb switch/evaluate
    --posterior``): one row per (t, expert), columns

    * ``t``: examples seen before the prediction, 0 … N−1 (row t of the loss
      matrix; ``t = 0`` is the prior p(ξ_1));
    * ``expert``: the expert's name (its column index as text when unknown);
    * ``readout``: the expert's readout name (missing — empty in a CSV — when unknown);
    * ``probability``: p(ξ = expert | D_<t), the switching posterior before
      seeing example t + 1's label.
    """
    post = np.asarray(posterior)
    n, k = post.shape
    names = [str(x) for x in names]
    ros = [None] * k if readouts is None else [str(r) for r in readouts]
    if len(names) != k or len(ros) != k:
        raise ValueError(
            f"names: need K = {k} expert names and readouts, got {len(names)} and {len(ros)}"
        )
    return pd.DataFrame(
        {
            "t": np.repeat(np.arange(n), k),
            "expert": pd.Categorical(
                np.tile(np.asarray(names, object), n), categories=list(dict.fromkeys(names))
            ),
            "readout": pd.Categorical(
                np.tile(np.asarray(ros, object), n),
                categories=[r for r in dict.fromkeys(ros) if r is not None],
            ),
            "probability": post.reshape(-1),
        }
    )
