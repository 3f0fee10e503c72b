"""Pruning the board (issue 13): expert-updates saved and codelength change.

    python -m benchmarks prune                 # default: N = 1,000 per task
    python -m benchmarks.bench_prune [N] [--real | --real=TAU,W ...] [--wide] [--task=NAME]
    python -m benchmarks.bench_prune --replay=PATH   # a saved LossMatrix (e.g. the full board)

Protocol ``paper-vtab`` (B = 32, fixed share m = 11, raw features) on a
reduced ``vtab`` grid (:func:`board`: all 8 readouts of the paper, linear and
MLP 1–7 of width 256, × replay {3, 10} × lr {3e-4, 3e-3} × EMA {1e-2, 1},
β1 0.9, wd 1e-4 = 64 experts; the full 4,608-expert board does not fit this
2-core CPU). Tasks: digits pixels (D = 64) and EfficientNet-Lite0 (64 px,
D = 1,280) features of the mini-VTAB tasks ``textures`` (natural) and
``clevr_count`` (structured), the first N examples of each.

Per task: one unpruned run; every (threshold, window) of :data:`GRID` is
replayed on its losses with :func:`mdlnb.prequential._prune.simulate` (the decisions a
pruned run takes: an expert's losses do not depend on the rest of the
board). With ``--real`` the :data:`REAL` settings are also run for real
(stage 1 stops training the pruned experts): wall time, expert-updates
computed (with the bucket padding), and the codelength against the replay.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from benchmarks._records import Headline

GRID = [(t, w, k) for k in (0, 1) for t in (3e-3, 1e-2, 3e-2, 1e-1) for w in (128, 256, 512)]
REAL = [(3e-2, 128)]
SEGMENT_BATCHES = 4


def board(wide: bool = False):
    """64 experts; ``wide``: 192 (lr {1e-4, 3e-4, 1e-3, 3e-3} × EMA {1e-4, 1e-2, 1})."""
    from mdlnb import expert_grid
    from mdlnb.board import readouts

    if wide:
        return expert_grid(
            readouts.board(7),
            learning_rate=[1e-4, 3e-4, 1e-3, 3e-3],
            b1=[0.9],
            weight_decay=[1e-4],
            ema=[1e-4, 1e-2, 1.0],
            replay_streams=[3, 10],
        )
    return expert_grid(
        readouts.board(7),
        learning_rate=[3e-4, 3e-3],
        b1=[0.9],
        weight_decay=[1e-4],
        ema=[1e-2, 1.0],
        replay_streams=[3, 10],
    )


def tasks(n: int) -> dict:
    import mdlnb
    from mdlnb import encoders

    dig = mdlnb.data.load("digits", split="all")
    out = {
        "digits|pixels": mdlnb.Task(
            "digits|pixels", dig.x.reshape(dig.n, -1).astype(np.float32), dig.y, dig.num_classes
        ).take(np.arange(min(n, dig.n)))
    }
    lite = encoders.efficientnet_lite(0, resolution=64)
    for name in ("textures", "clevr_count"):
        t = mdlnb.data.load(name, split="train")
        t = t.take(np.arange(min(n, t.n)))
        out[f"{name}|effnet-lite0-64"] = encoders.features(lite, t)
    return out


#: the replay grid for a saved full board (``--replay``): the GRID's thresholds and
#: windows and smaller ones, without and with one survivor kept per readout
REPLAY_GRID = [
    (t, w, k)
    for k in (0, 1)
    for t in (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1)
    for w in (64, 128, 256, 512)
]


def _replay_row(lm, name: str, thr: float, win: int, kpr: int) -> dict:
    """One (threshold, window, keep) replayed on ``lm`` with ``simulate_pruning``; printed."""
    from mdlnb import Prune
    from mdlnb import simulate_pruning as simulate

    t0 = time.perf_counter()
    s = simulate(
        lm, Prune(threshold=thr, window=win, segment_batches=SEGMENT_BATCHES, keep_per_readout=kpr)
    )
    row = {
        "task": name,
        "n": lm.n,
        "k": lm.k,
        "threshold": thr,
        "window": win,
        "keep_per_readout": kpr,
        "kind": "replay",
        "num_pruned": s.num_pruned,
        "updates_ratio": s.updates_ratio,
        "unpruned_nats": s.unpruned_nats,
        "pruned_nats": s.total_nats,
        "change_pct": 100 * (s.total_nats / s.unpruned_nats - 1),
    }
    print(
        f"  tau={thr:g} W={win} keep={kpr}: {s['num_pruned']}/{lm.k} pruned, "
        f"{s['updates_ratio']:.2f}x fewer expert-updates, codelength "
        f"{s['unpruned_nats']:.2f} -> {s['total_nats']:.2f} nats ({row['change_pct']:+.3f} %)"
        f"  [{time.perf_counter() - t0:.1f} s]",
        flush=True,
    )
    return row


def replay(path: str) -> dict:
    """Every (threshold, window, keep) of :data:`REPLAY_GRID` replayed on the
    ``LossMatrix`` saved at ``path`` (``bench_scale vtab N PATH`` writes the
    4,608-expert board), with its own protocol's strategy."""
    from mdlnb.prequential import LossMatrix

    lm = LossMatrix.load(path)
    print(
        f"{lm.task_name}: N={lm.n} K={lm.k}, protocol {lm.protocol.name if lm.protocol else '?'}, "
        f"strategy {lm.protocol.strategy!r}",
        flush=True,
    )
    rows = [_replay_row(lm, lm.task_name, thr, win, kpr) for thr, win, kpr in REPLAY_GRID]
    return {
        "board": f"{lm.k} experts from {path}",
        "segment_batches": SEGMENT_BATCHES,
        "rows": rows,
    }


#: the headline figures of ``main()``'s result (benchmarks/_records.py)
HEADLINE = [
    Headline(
        "updates_ratio_within_target",
        "fewer expert-updates at ≤ 0.1 % longer code, best replayed (τ, W), worst task",
        "×",
        "≥ 5×",
    ),
]


def main(argv: list[str] | None = None) -> dict:
    import mdlnb
    from mdlnb import Prune, prequential
    from mdlnb import simulate_pruning as simulate

    argv = sys.argv[1:] if argv is None else argv
    for a in argv:
        if a.startswith("--replay="):
            return replay(a.split("=", 1)[1])
    n = int(next((a for a in argv if a.isdigit()), 1000))
    real = [
        tuple(float(v) for v in a.split("=")[1].split(",")) for a in argv if a.startswith("--real=")
    ] or (REAL if "--real" in argv else [])
    wide = "--wide" in argv
    proto = mdlnb.protocol("paper-vtab", board=tuple(board(wide)))
    rows = []
    todo = tasks(n)
    only = [a.split("=")[1] for a in argv if a.startswith("--task=")]
    for name, task in todo.items():
        if only and not any(name.startswith(o) for o in only):
            continue
        t0 = time.perf_counter()
        lm = prequential.run(task, protocol=proto, cache=True, memory_budget=None)
        base_s = time.perf_counter() - t0
        print(
            f"{name}: N={task.n} D={task.x.shape[1]} K={lm.k}, unpruned run {base_s:.0f} s "
            f"(cached: {lm.meta.get('seconds')} s when computed)",
            flush=True,
        )
        rows += [_replay_row(lm, name, thr, win, kpr) for thr, win, kpr in GRID]
        for thr, win in real:
            p = Prune(threshold=thr, window=int(win), segment_batches=SEGMENT_BATCHES)
            t0 = time.perf_counter()
            pl = prequential.run(
                task, protocol=proto.replace(prune=p), cache=False, memory_budget=None
            )
            secs = time.perf_counter() - t0
            rep = mdlnb.Report.from_losses(pl, warn=False)
            rec = pl.meta["prune"]
            sim = simulate(lm, p)
            row = {
                "task": name,
                "n": task.n,
                "threshold": thr,
                "window": win,
                "kind": "real",
                "num_pruned": rec["num_pruned"],
                "updates_ratio": rec["updates_ratio"],
                "computed_ratio": rec["expert_updates_unpruned"] / rec["expert_updates_computed"],
                "unpruned_nats": sim.unpruned_nats,
                "pruned_nats": rep.total_nats,
                "change_pct": 100 * (rep.total_nats / sim.unpruned_nats - 1),
                "seconds": secs,
                "unpruned_seconds": lm.meta.get("seconds"),
                "same_schedule_as_replay": bool(np.array_equal(sim.pruned_at, pl.pruned_at)),
                "replay_nats": sim.total_nats,
            }
            rows.append(row)
            print(
                f"  REAL tau={thr:g} W={win}: {rec['num_pruned']}/{pl.k} pruned, "
                f"{rec['updates_ratio']:.2f}x fewer expert-updates ({row['computed_ratio']:.2f}x "
                f"computed), {rep.total_nats:.1f} nats ({row['change_pct']:+.3f} %; replay "
                f"{sim.total_nats:.1f}, same schedule: {row['same_schedule_as_replay']}), "
                f"{secs:.0f} s vs {lm.meta.get('seconds')} s unpruned",
                flush=True,
            )
    return {
        "board": "vtab reduced: " + ("192 experts, --wide" if wide else "64 experts"),
        "protocol": "paper-vtab",
        "segment_batches": SEGMENT_BATCHES,
        "rows": rows,
        "updates_ratio_within_target": within_target(rows),
    }


def within_target(rows: list[dict], longer_pct: float = 0.1) -> float | None:
    """The savings every task reaches: per task the most expert-updates saved by a replayed
    (τ, W) whose code is at most ``longer_pct`` % longer, then the smallest over tasks."""
    best: dict[str, float] = {}
    for r in rows:
        if r["kind"] == "replay" and r["change_pct"] <= longer_pct:
            best[r["task"]] = max(best.get(r["task"], 0.0), r["updates_ratio"])
    return min(best.values()) if best else None


if __name__ == "__main__":
    main()
