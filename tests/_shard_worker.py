"""Subprocess body of tests/test_sharding.py: one stage-1 run, losses saved to an .npz.

    python tests/_shard_worker.py OUT.npz [PROCESS_ID NUM_PROCESSES PORT]
    python tests/_shard_worker.py --default OUT.npz

``--default``: the default protocol's board on :func:`gaussian_task`.

With the last three arguments the process joins a ``jax.distributed`` job on
127.0.0.1 (CPU, gloo collectives) and the expert axis spans every process.
"""

import json
import sys

import jax
import numpy as np


def board():
    from mdlnb.board import readouts
    from mdlnb.board.experts import expert_grid

    # two architectures × three learning rates × two EMA rates: 12 experts in
    # two groups of 6 (4 devices: shares of 2 and padding; 2 processes: 3 each)
    return expert_grid(
        [readouts.linear(), readouts.mlp(1, 16)],
        learning_rate=[1e-3, 3e-3, 1e-2],
        ema=[0.1, 1.0],
        replay_streams=[2],
    )


def task():
    import mdlnb

    return mdlnb.data.load("digits").take(np.arange(96))


def gaussian_task(n=300):
    """The 12-feature Gaussian task of the sharding report (labels: sign of x0 + x1)."""
    import mdlnb

    rng = np.random.default_rng(9)
    x = rng.normal(size=(n, 12))
    return mdlnb.Task.from_arrays(x, (x[:, 0] + x[:, 1] > 0).astype(int), name="gauss")


def main(argv):
    if argv[0] == "--default":
        from mdlnb import prequential

        lm = prequential.run(gaussian_task(), cache=False)
        np.savez(argv[1], losses=lm.losses, devices=json.dumps(lm.meta["devices"]))
        return
    out = argv[0]
    if len(argv) > 1:
        pid, nproc, port = (int(a) for a in argv[1:4])
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        jax.distributed.initialize(
            coordinator_address=f"127.0.0.1:{port}",
            num_processes=nproc,
            process_id=pid,
            local_device_ids=[0],
        )
    from mdlnb import prequential

    lm = prequential.run(task(), board(), batch_size=16, seed=5, cache=False, memory_budget=None)
    np.savez(out, losses=lm.losses, devices=json.dumps(lm.meta["devices"]))
    if len(argv) > 1:
        jax.distributed.shutdown()


if __name__ == "__main__":
    main(sys.argv[1:])
