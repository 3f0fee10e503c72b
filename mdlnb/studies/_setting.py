"""The setting of each study beside the paper's: the first table of the claims page.

A verdict at 100–1,000× the papers' scale says something different from one at
theirs, so the claims page states both settings above the verdicts. The papers'
side is fixed text taken from the papers (:data:`PAPERS`); this run's side is
computed from the study's own config and results by the helpers here, so it
cannot go stale. Each study's result has a ``setting()`` method returning rows
of ``(aspect, the paper's, this run's)`` for :func:`mdlnb.studies.finish`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from mdlnb.board import experts as ex
from mdlnb.board._arguments import resolve_protocol

#: The papers' settings, per aspect (Li, Bornschein & Hutter 2023, arXiv:2302.09579,
#: Sec. 4, App. A.5, Tables 3, 6, 9; Whitney et al. 2020, arXiv:2009.07368, Sec. 3–4;
#: Ding et al. 2022, arXiv:2203.05126, Sec. 4; Lu et al. 2022, arXiv:2206.01251, Sec. 3).
PAPERS = {
    "readout": {
        "encoders": "ResNet-50/101/152 (26–60 M parameters) and ViT-S/B/L (22–304 M), "
        "pretrained on ImageNet (1.28 M images) with SUP, SimCLR, BYOL, DINO, MAE",
        "tasks": "19 VTAB tasks (7 natural, 4 specialized, 8 structured), reshuffled; "
        "ImageNet for the readout and data-efficiency analyses",
        "examples per task (N)": "2,040–663,552 (Table 3); ImageNet 1.28 M",
        "readouts": "linear and MLPs of 1–7 hidden layers, each under a 576-point grid "
        "(Table 6): 4,608 experts",
        "protocol": "B = 32, fixed share α_t = 10/t (VTAB); B = 512, m = 2 (ImageNet)",
        "orders": "one order per cell; 5 orders for the permutation study (App. A.7)",
    },
    "sdl": {
        "data": "MNIST (60,000 training images); the parity toy of Sec. 3.1",
        "representations": "raw pixels, a VAE's code, a CIFAR-pretrained CNN (Fig. 2)",
        "evaluation sizes": "10 to 60,000 examples, 8 seeds per size",
    },
}


def fmt_range(values: Iterable[float], unit: str = "") -> str:
    """``"71,296–803,584 parameters"`` (one value: no range)."""
    v = sorted({int(x) for x in values})
    if not v:
        return "none"
    body = f"{v[0]:,}" if len(v) == 1 else f"{v[0]:,}–{v[-1]:,}"
    return f"{body} {unit}".strip()


def board_text(protocol: Any) -> str:
    """The readouts of a protocol's board in words: count, depths, widths."""
    p = resolve_protocol(protocol)
    board = ex.preset(p.board) if isinstance(p.board, str) else tuple(p.board)
    names = sorted({e.readout.name for e in board})
    depth = max(e.readout.hidden_layers for e in board)
    return (
        f"{len(board)} experts ({', '.join(names)}): up to {depth} hidden layers; "
        f"B = {p.batch_size}, {p.strategy!r}"
    )


def rows(
    paper: str, ours: dict[str, str], *, keys: Sequence[str] | None = None
) -> list[tuple[str, str, str]]:
    """(aspect, the paper's, this run's) for ``keys`` (default: this run's aspects)."""
    ref = PAPERS[paper]
    return [(k, ref.get(k, "—"), ours[k]) for k in (keys or list(ours))]
