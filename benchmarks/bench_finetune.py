"""Fine-tuning through stage 1: cost on CPU of encoder + linear head experts.

Setting (brief): Fashion-MNIST test images at 28×28, S-size ResNet and ViT
(``mdlnb.encoders.archs``, random init — the cost does not depend on the
weights), B = 32, replay 3, K = 2 fine-tune experts (two learning rates,
``vmap``-ped). Each board is run once to compile, then ``REPEATS`` times,
interleaved with the other boards, keeping the best time (the machine is
shared). Numbers per architecture:

* ``compile_s``: first run minus the best later run;
* ``steps_per_s``: optimizer steps of one expert per second (each on B
  examples, forward + backward through the encoder), coding passes included;
* ``vs_plain_loop``: a plain jitted ``lax.scan`` of the same number of AdamW
  steps of one expert (no coding, no EMA, no replay sampling) over the
  per-expert time of the board — the machinery's overhead (< 1 = slower);
* ``vmap_vs_alone``: time of the K = 2 board over twice the time of one
  expert alone (< 1: vmapping pays);
* ``grouped_vs_blocks`` (ResNet): the K = 2 board with both experts in one
  ``vmap`` block (XLA makes grouped convolutions) over the default of one
  expert per block (``FinetuneReadout.max_block`` = 1 on CPU); > 1 means the
  cap pays;
* ``projected_s_n2000_r10``: the measured per-step cost extrapolated to
  N = 2,000, replay 10, K = 2 (cost per batch does not depend on the
  position in the stream).
"""

from __future__ import annotations

import dataclasses
import math
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

from benchmarks._records import Headline
from mdlnb import prequential
from mdlnb.baselines import finetune
from mdlnb.data import fashion_mnist
from mdlnb.encoders import pretrain

N, B, R, C = 256, 32, 3, 10
LRS = (1e-3, 3e-3)
REPEATS = 3


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def _plain_loop_s(ro, task, steps: int) -> float:
    """Best seconds for ``steps`` AdamW steps of one expert in a jitted lax.scan (compiled)."""
    x = jnp.asarray(task.features[: 4 * B])
    y = jnp.asarray(task.y[: 4 * B])
    opt = optax.adamw(1e-3)
    params = ro.init(jax.random.PRNGKey(0), x.shape[1], C)

    def loss(p, i):
        xb = jax.lax.dynamic_slice_in_dim(x, (i % 4) * B, B)
        yb = jax.lax.dynamic_slice_in_dim(y, (i % 4) * B, B)
        return optax.softmax_cross_entropy_with_integer_labels(ro.apply(p, xb), yb).mean()

    @jax.jit
    def run(params):
        def step(carry, i):
            p, s = carry
            upd, s = opt.update(jax.grad(loss)(p, i), s, p)
            return (optax.apply_updates(p, upd), s), None

        return jax.lax.scan(step, (params, opt.init(params)), jnp.arange(steps))[0][0]

    jax.block_until_ready(run(params))
    return min(_timed(lambda: jax.block_until_ready(run(params)))[1] for _ in range(REPEATS))


#: the headline figures of ``main()``'s result (benchmarks/_records.py)
HEADLINE = [
    Headline("vit_S.steps_per_s", "fine-tuning ViT-S through stage 1 (K = 2)", "steps/s"),
    Headline("resnet_S.steps_per_s", "fine-tuning ResNet-S through stage 1 (K = 2)", "steps/s"),
]


def main() -> dict:
    train, test = fashion_mnist.build()
    task = test.take(np.arange(N), name="fmnist-bench")
    steps = math.ceil(N / B) * R  # optimizer steps per expert
    out = {"N": N, "B": B, "replay": R, "K": len(LRS)}
    for arch in ("vit", "resnet"):
        enc = pretrain("random", arch, "S", train.take(np.arange(B)), 0, cache=False)
        board = finetune.experts(enc, task, learning_rate=LRS, replay_streams=R, scratch=False)
        boards = {"board": board, "alone": board[:1]}
        if board[0].readout.max_block == 1:
            ro = dataclasses.replace(board[0].readout)  # equal readout, own cached properties
            ro.__dict__["max_block"] = None  # override the cap: both experts in one vmap block
            boards["grouped"] = [e.replace(readout=ro) for e in board]
        run = lambda ex: prequential.run(task, ex, batch_size=B, cache=False)  # noqa: E731
        first = {k: _timed(lambda ex=ex: run(ex))[1] for k, ex in boards.items()}
        best = {k: math.inf for k in boards}
        for _ in range(REPEATS):  # interleaved, best of REPEATS: the machine is shared
            for k, ex in boards.items():
                best[k] = min(best[k], _timed(lambda ex=ex: run(ex))[1])
        board_s = best["board"]
        plain = _plain_loop_s(board[0].readout, task, steps)
        per_expert = board_s / len(board)
        res = {
            "params": board[0].readout.num_params(784, C),
            "mflops_per_example": round(board[0].readout.flops(784, C) / 1e6, 2),
            "compile_s": round(first["board"] - board_s, 2),
            "board_s": round(board_s, 2),
            "steps_per_s": round(steps * len(board) / board_s, 2),
            "vs_plain_loop": round(plain / per_expert, 3),
            "vmap_vs_alone": round(board_s / (2 * best["alone"]), 3),
            "projected_s_n2000_r10": round(board_s / steps * math.ceil(2000 / B) * 10, 1),
        }
        print(
            f"{arch}_S: {res['params']:,} params, {res['mflops_per_example']} MFLOP/example fwd; "
            f"compile {res['compile_s']} s; {res['steps_per_s']} expert-steps/s "
            f"(K={len(board)}, N={N}, B={B}, r={R}); plain jitted loop / board per expert "
            f"= {res['vs_plain_loop']}; vmapped K=2 / 2x alone = {res['vmap_vs_alone']}; "
            f"N=2000, r=10, K=2 projected {res['projected_s_n2000_r10']} s",
            flush=True,
        )
        if "grouped" in best:
            res["grouped_vs_blocks"] = round(best["grouped"] / board_s, 3)
            print(
                f"{arch}_S: one vmap block of 2 (grouped convolutions) / one expert per block "
                f"= {res['grouped_vs_blocks']}",
                flush=True,
            )
        out[f"{arch}_S"] = res
    return out
