"""The driver: :func:`run` (both encoders of a :class:`LayersConfig`, like every study's
``run(config)``) with its two results (:class:`LayersStudy`), and :func:`run_encoder`
(one encoder, its layers, the tasks)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

from mdlnb.api._compare import compare
from mdlnb.encoders import layer_names, layers
from mdlnb.infra import _progress
from mdlnb.studies.layers._config import LayersConfig
from mdlnb.studies.layers._result import LayersResult


def run_encoder(
    encoder: Any,
    tasks: Sequence[Any],
    *,
    which: Sequence[str | int] | None = None,
    pooling: str = "mean",
    seeds: Sequence[int] = (0, 1, 2),
    protocol: Any = "small",
    progress: bool | None = None,
    cache: bool = True,
) -> LayersResult:
    """Compare ``which`` layers of ``encoder`` on each of ``tasks`` (Tasks of images),
    paired over ``seeds`` (≥ 3 orders), under ``protocol`` (:func:`mdlnb.compare`).
    ``progress``: as :func:`mdlnb.compare`'s, for each task's comparison (``None``,
    the default: a bar where someone watches a long run, one line per run in batch
    mode)."""
    encs = layers(encoder, which, pooling=pooling)
    labels = tuple(
        e.meta["layer"] + ("" if pooling == "mean" else f"[{pooling}]") for e in encs.values()
    )
    if len(labels) < 2:
        raise ValueError(f"which: need at least 2 layers to compare, got {list(labels)}")
    own = layer_names(encoder)[-1] + ("" if pooling == "mean" else f"[{pooling}]")
    reference = own if own in labels else labels[-1]
    comps = {}
    for task in tasks:
        if task.name in comps:
            raise ValueError(f"tasks: {task.name!r} given twice")
        comps[task.name] = compare(
            encs, task, protocol=protocol, seeds=seeds, progress=progress, cache=cache
        )
    dims = {lab: e.feature_dim for lab, e in zip(labels, encs.values())}
    return LayersResult(
        encoder=encoder.name,
        layers=labels,
        reference=reference,
        comparisons=comps,
        feature_dims=dims,
    )


@dataclasses.dataclass(frozen=True, eq=False)
class LayersStudy:
    """The study's two results on the same tasks, orders and protocol.

    Attributes:
      lite: the EfficientNet-Lite layers (:class:`LayersResult`).
      vit: the self-pretrained ViT's layers, or None when the config has no ViT.
    """

    lite: LayersResult
    vit: LayersResult | None = None

    def results(self) -> dict[str, LayersResult]:
        """``{file prefix: result}``: ``layers`` for the Lite, ``layers_vit`` for the ViT."""
        return {"layers": self.lite, **({"layers_vit": self.vit} if self.vit is not None else {})}

    def findings(self) -> str:
        """Markdown: one section per encoder (:meth:`LayersResult.findings`)."""
        return "\n\n".join(f"**{r.encoder}**\n\n{r.findings()}" for r in self.results().values())

    def save(self, paper_dir: Any, points: int = 60) -> None:
        """Each result's files under its prefix (:meth:`results`)."""
        for prefix, r in self.results().items():
            r.save(paper_dir, prefix=prefix, points=points)


def run(
    config: LayersConfig | None = None,
    tasks: Sequence[Any] | None = None,
    *,
    progress: bool | None = None,
    cache: bool = True,
    **options: Any,
) -> LayersStudy | LayersResult:
    """Run the study of ``config`` (default: the CPU run): the EfficientNet-Lite's layers
    and, unless ``config.vit`` is None, the ViT's, on the same tasks, orders and
    protocol; returns a :class:`LayersStudy`. ``progress``: as :func:`run_encoder`'s,
    except in batch mode (``None`` where nobody watches), where each encoder gets one
    summary line instead of one line per comparison run.

    ``run(encoder, tasks, which=..., pooling=..., seeds=..., protocol=...)``, the form of
    before, is :func:`run_encoder`."""
    if config is not None and not isinstance(config, LayersConfig):
        if tasks is None:
            raise ValueError(
                f"config: expected a LayersConfig, got {type(config).__name__} "
                "(one encoder's layers: run_encoder(encoder, tasks, ...))"
            )
        return run_encoder(config, tasks, progress=progress, cache=cache, **options)
    if tasks is not None or options:
        given = ["tasks"] * (tasks is not None) + sorted(options)
        raise ValueError(f"{', '.join(given)}: set by the config, not given to run(config)")
    config = config or LayersConfig()
    tasks = config.tasks()
    # batch mode (bars off, or nobody watching): one line per encoder
    summary = progress is None and not (_progress.enabled() and _progress.wanted(None))
    kw = dict(
        pooling=config.pooling,
        seeds=list(config.seeds),
        protocol=config.protocol,
        progress=False if summary else progress,
        cache=cache,
    )

    def one(encoder: Any, which: Sequence[str | int]) -> LayersResult:
        t0 = time.perf_counter()
        result = run_encoder(encoder, tasks, which=list(which), **kw)
        if summary:
            print(
                f"layers: {getattr(encoder, 'name', encoder)}: {len(tasks)} tasks × "
                f"{len(which)} layers × "
                f"{len(config.seeds)} orders in {time.perf_counter() - t0:.1f} s",
                flush=True,
            )
        return result

    vit = config.vit_encoder()
    return LayersStudy(
        lite=one(config.encoder(), config.which),
        vit=None if vit is None else one(vit, config.vit_which),
    )


def run_config(
    config: LayersConfig | None = None, *, progress: bool | None = False, cache: bool = True
) -> LayersStudy:
    """:func:`run` of ``config``, quiet unless ``progress`` (the name of before)."""
    if config is not None and not isinstance(config, LayersConfig):
        raise ValueError(f"config: expected a LayersConfig, got {type(config).__name__}")
    return run(config, progress=progress, cache=cache)
