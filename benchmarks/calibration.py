"""Forward calibration's codelength change (issue 28 part 3; docs/protocols.md, "Calibrated experts").

    python -m benchmarks.calibration [--n 600] [--seeds 3] [--out build/calibration.json]

The six representations of the standardisation table in docs/protocols.md
(:func:`benchmarks.protocol_choice.representations`: digits raw pixels and
with mixed per-feature scales; Fashion-MNIST raw pixels; EfficientNet-Lite0
features at 64 px of both; a SimCLR ResNet-XS self-pretrained for 300 steps),
each cut to its first ``n`` examples, coded under the ``default`` protocol
(40-expert board, B = 32, ``prefix`` standardisation, fixed share m = 2) with
and without ``calibrate=True`` over orders (seeds) 0 … seeds − 1. Reported,
per representation, paired over orders: the switching code without and with
calibration, their difference (nats and bits/example) with a 95 % t-interval
over orders, the same for the best single expert, the code of the 80-expert
board ``calibrate=[False, True]`` (both boards' columns: an expert's losses do
not depend on the rest of the board), and how many of the 40 experts the
calibration shortened. Each run is cached (stage 1's cache), and the
codes are written to ``--out`` as they come, so a killed run resumes.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
from scipy import stats

import mdlnb
from mdlnb import prequential, switching


def _code(losses: np.ndarray) -> float:
    return float(
        switching.codelength(losses, switching.FixedShare(m=2.0), posterior=False).total_nats
    )


def _interval(d: list[float]) -> tuple[float, float]:
    """Mean and 95 % t half-width over orders."""
    d = np.asarray(d, np.float64)
    if len(d) < 2:
        return float(d.mean()), float("nan")
    return float(d.mean()), float(
        stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d))
    )


def measure(tasks: dict[str, mdlnb.Task], seeds: int, out: Path) -> dict:
    rows = json.loads(out.read_text()) if out.exists() else {}
    for name, task in tasks.items():
        for seed in range(seeds):
            key = f"{name}|{seed}"
            if key in rows:
                continue
            runs = {
                cal: prequential.run(
                    task,
                    protocol=mdlnb.protocol("default", calibrate=cal),
                    seed=seed,
                    progress=False,
                ).losses
                for cal in (False, True)
            }
            both = np.concatenate([runs[False], runs[True]], axis=1)
            rows[key] = {
                "n": task.n,
                "off": _code(runs[False]),
                "on": _code(runs[True]),
                "grid": _code(both),
                "best_off": float(runs[False].sum(0, dtype=np.float64).min()),
                "best_on": float(runs[True].sum(0, dtype=np.float64).min()),
                "experts_shorter": int(
                    (
                        runs[True].sum(0, dtype=np.float64) < runs[False].sum(0, dtype=np.float64)
                    ).sum()
                ),
            }
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(rows, indent=1))
            print(key, rows[key], flush=True)
    return rows


def table(rows: dict) -> str:
    names = list(dict.fromkeys(k.split("|")[0] for k in rows))
    lines = [
        "| representation | N | orders | code, off (nats) | code, on (nats) | on − off (nats, 95 % CI) "
        "| on − off (bits/example) | best expert on − off (nats) | `calibrate=[False, True]` − off "
        "(nats) | calibrated experts shorter |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    ms = lambda v: f"{np.mean(v):,.1f} ± {np.std(v, ddof=1):.1f}"  # noqa: E731
    for name in names:
        r = [v for k, v in rows.items() if k.split("|")[0] == name]
        n = r[0]["n"]
        d = [x["on"] - x["off"] for x in r]
        m, h = _interval(d)
        mb, hb = _interval([x["best_on"] - x["best_off"] for x in r])
        mg, hg = _interval([x["grid"] - x["off"] for x in r])
        lines.append(
            f"| {name} | {n} | {len(r)} | {ms([x['off'] for x in r])} | "
            f"{ms([x['on'] for x in r])} | {m:+.1f} ± {h:.1f} | "
            f"{m / math.log(2) / n:+.4f} ± {h / math.log(2) / n:.4f} | "
            f"{mb:+.1f} ± {hb:.1f} | {mg:+.1f} ± {hg:.1f} | "
            f"{np.mean([x['experts_shorter'] for x in r]):.1f} / 40 |"
        )
    # every (representation, order) pair as one paired run; relative change per run
    rel = [100 * (x["on"] - x["off"]) / x["off"] for x in rows.values()]
    bpe = [(x["on"] - x["off"]) / math.log(2) / x["n"] for x in rows.values()]
    mr, hr = _interval(rel)
    mb, hb = _interval(bpe)
    lines.append(
        f"\nAll {len(rel)} paired runs: on − off = {mr:+.2f} ± {hr:.2f} % of the code, "
        f"{mb:+.4f} ± {hb:.4f} bits/example (mean ± 95 % t half-width over runs); "
        f"shorter in {sum(r < 0 for r in rel)} of {len(rel)}."
    )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=600, help="first n examples of each representation")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--only", default=None, help="comma-separated representation names")
    ap.add_argument("--out", default="build/calibration.json")
    args = ap.parse_args()
    from benchmarks.protocol_choice import representations

    tasks = {
        k: mdlnb.Task(k, t.x[: args.n], t.y[: args.n], t.num_classes)
        for k, t in representations().items()
        if args.only is None or k in args.only.split(",")
    }
    rows = measure(tasks, args.seeds, Path(args.out))
    print(table(rows))


if __name__ == "__main__":
    main()
