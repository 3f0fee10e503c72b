"""The measurements behind the default protocol (docs/protocols.md).

    python -m benchmarks.protocol_choice [--seeds 3] [--out build/protocol_choice.npz]

Six representations (digits raw pixels and with mixed per-feature scales and
offsets; Fashion-MNIST 1,000 raw pixels; EfficientNet-Lite0 features at 64 px
of both; a SimCLR ResNet-XS self-pretrained for 300 steps on 5,000 other
Fashion-MNIST images), each coded by a 48-expert board (linear + MLP 1–3 ×
lr {1e-4 … 3e-2} × EMA {1e-2, 1}) under ``standardize="prefix"`` and
``"none"``. Since an expert's losses do not depend on the rest of the board,
every smaller learning-rate grid is a column subset of these runs. Prints the
three tables of docs/protocols.md (standardisation, m, learning-rate grid). Minutes on a
GPU; about an hour on a 2-core CPU.
"""

from __future__ import annotations

import argparse
import json
import re

import numpy as np

import mdlnb
from mdlnb import encoders, prequential, switching
from mdlnb.board import readouts as R

LRS = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2)
GRIDS = {
    "{3e-4, 1e-3, 3e-3}": LRS[1:4],
    "{3e-4 … 1e-2}": LRS[1:5],
    "{3e-4 … 3e-2}": LRS[1:],
    "{1e-4 … 3e-2}": LRS,
}


def representations() -> dict[str, mdlnb.Task]:
    dig = mdlnb.data.load("digits", split="all")
    fm = mdlnb.data.load("fashion_mnist", split="train", size=1000, seed=0)
    flat = lambda t: t.x.reshape(t.n, -1).astype(np.float32)  # noqa: E731
    rng = np.random.default_rng(0)
    mixed = flat(dig) * 10 ** rng.uniform(-2, 2, 64) + rng.normal(0, 100, 64)
    lite = encoders.efficientnet_lite(0, resolution=64)
    pre = mdlnb.data.load("fashion_mnist", split="train", size=5000, seed=1)
    simclr = encoders.pretrain(
        "simclr", "resnet", "XS", pre, 300, 0, batch_size=128, learning_rate=2e-3
    )
    feats = {
        "digits_raw": (flat(dig), dig),
        "digits_mixed": (mixed.astype(np.float32), dig),
        "fmnist_raw": (flat(fm), fm),
        "digits_effnet64": (encoders.features(lite, dig).x, dig),
        "fmnist_effnet64": (encoders.features(lite, fm).x, fm),
        "fmnist_simclr_resnetXS": (encoders.features(simclr, fm).x, fm),
    }
    return {k: mdlnb.Task(k, x, t.y, t.num_classes) for k, (x, t) in feats.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", default="build/protocol_choice.npz")
    args = ap.parse_args()
    board = mdlnb.expert_grid(
        [R.linear(), R.mlp(1), R.mlp(2), R.mlp(3)],
        learning_rate=LRS,
        weight_decay=1e-4,
        ema=[1e-2, 1.0],
        replay_streams=10,
    )
    lr = np.array([float(re.search(r"-lr(.+?)-wd", e.name).group(1)) for e in board])
    runs = {}
    for name, task in representations().items():
        for std in ("prefix", "none"):
            for seed in range(args.seeds):
                runs[name, std, seed] = prequential.run(
                    task, board, seed=seed, standardize=std, batch_size=32
                ).losses
                print(name, std, seed, flush=True)
    np.savez(
        args.out,
        names=np.array(json.dumps([e.name for e in board])),
        **{"|".join(map(str, k)): v for k, v in runs.items()},
    )

    def code(L, m=2.0):
        return switching.codelength(L, switching.FixedShare(m=m), posterior=False).total_nats

    default = np.isin(lr, LRS[1:])  # the default board's 40 columns
    ms = lambda v: f"{np.mean(v):,.1f} ± {np.std(v, ddof=1):.1f}"  # noqa: E731
    print("\nrepresentation | prefix | none | best expert prefix | best expert none")
    for name in dict.fromkeys(k[0] for k in runs):
        cell = {
            std: [runs[name, std, s][:, default] for s in range(args.seeds)]
            for std in ("prefix", "none")
        }
        print(
            name,
            *(ms([code(L) for L in cell[s]]) for s in cell),
            *(ms([L.sum(0, dtype=np.float64).min() for L in cell[s]]) for s in cell),
            sep=" | ",
        )
    print("\nrepresentation | m=2 − m=11 (prefix, paired)")
    for name in dict.fromkeys(k[0] for k in runs):
        d = [
            code(runs[name, "prefix", s][:, default], 2)
            - code(runs[name, "prefix", s][:, default], 11)
            for s in range(args.seeds)
        ]
        print(name, ms(d), sep=" | ")
    print("\nlearning rates | K | best on an edge | mean code m=2")
    for label, grid in GRIDS.items():
        cols = np.isin(lr, grid)
        edge, codes = 0, []
        for (_name, std, _seed), L in runs.items():
            if std != "prefix":
                continue
            best = lr[cols][np.argmin(L[:, cols].sum(0, dtype=np.float64))]
            edge += best in (min(grid), max(grid))
            codes.append(code(L[:, cols]))
        print(label, cols.sum(), f"{edge}/{len(codes)}", f"{np.mean(codes):.1f}", sep=" | ")


if __name__ == "__main__":
    main()
