"""Stage-2 switching speed, precision and streaming memory.

Targets (DESIGN/brief): fixed share with decreasing rate on a float32
(1,000,000 × 256) matrix in ≤ 1.5× the time of one jitted
``jax.nn.logsumexp(L, axis=1)`` over the same matrix (same process, min over
repeats, both on a device-resident array); streaming peak memory beyond the
input < 64 MiB. Also: precision of the accumulated total against a float64
NumPy reference, and the other strategies at a smaller size.

Issue 13 (every time a ratio to the logsumexp, interleaved in one process):
the Bayesian and elementwise mixtures ≤ 1.5× (``mixtures``), the default
call — ``codelength(L)`` on a NumPy (4·10⁵, 256) matrix with the posterior
written — ≤ 2.5× (``default_call``). ``python -m benchmarks.bench_switching
[mixtures|default|strategies|all] [N K]`` runs one part.
"""

from __future__ import annotations

import math
import resource
import time

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks._records import Headline
from benchmarks._timing import best_of
from mdlnb import switching as sw
from mdlnb.infra import _aligned
from mdlnb.switching import forward

N_BIG, K_BIG = 1_000_000, 256
REPEATS = 3


def _interleaved(fns: dict, repeats=REPEATS) -> dict:
    """Min time of each function, repeats interleaved so load hits all alike."""
    for f in fns.values():
        f()
    best = {k: math.inf for k in fns}
    for _ in range(repeats):
        for k, f in fns.items():
            t0 = time.perf_counter()
            f()
            best[k] = min(best[k], time.perf_counter() - t0)
    return best


_lse = jax.jit(lambda L: jax.nn.logsumexp(L, axis=1))


def fixed_share_float64(L: np.ndarray, m: float) -> float:
    """Plain NumPy float64 forward pass of fixed share (uniform w), nats."""
    n, k = L.shape
    w = np.full(k, 1.0 / k)
    total = 0.0
    for t in range(n):
        c = L[t].min()
        q = w * np.exp(c - L[t])
        z = q.sum()
        total += c - math.log(z)
        a = min(1.0, (m - 1.0) / (t + 2))
        w = (1.0 - a) * q / z + a / k
    return total


def _rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _peak_rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def streaming_memory(n=N_BIG, k=K_BIG, chunk=16_384) -> dict:
    """Peak RSS growth while streaming n rows in chunks, beyond the chunk itself.

    The matrix is never materialized: each chunk is generated, fed, deleted.
    Peak RSS (VmHWM) is reset after the warm-up via /proc/self/clear_refs."""
    rng = np.random.default_rng(1)
    stream = sw.streaming(sw.FixedShare(m=2), k)
    stream.update(rng.standard_exponential((chunk, k), dtype=np.float32))  # compile
    base = _rss_mib()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        reset = True
    except OSError:
        reset = False
    for _ in range(n // chunk - 1):
        c = rng.standard_exponential((chunk, k), dtype=np.float32)
        stream.update(c)
        del c
    peak = _peak_rss_mib()
    chunk_mib = chunk * k * 4 / 2**20
    return {
        "stream_rows": stream.num_steps,
        "chunk_mib": chunk_mib,
        "rss_base_mib": base,
        "rss_peak_mib": peak,
        "peak_reset": reset,
        "beyond_input_mib": peak - base - chunk_mib,
    }


def mixtures(n=100_000, k=64, repeats=3) -> dict:
    """Bayesian and elementwise mixtures (device array, with and without the
    posterior) as multiples of one jitted logsumexp over the same matrix."""
    rng = np.random.default_rng(3)
    L = jnp.asarray(rng.standard_exponential((n, k), dtype=np.float32))
    fns = {"logsumexp": lambda: _lse(L).block_until_ready()}
    for name in ("bayes", "elementwise"):
        s = sw.get_strategy(name)
        fns[name] = lambda s=s: sw.codelength(L, s, posterior=False, chunk_rows=n)
        fns[f"{name}+posterior"] = lambda s=s: sw.codelength(L, s, posterior=True, chunk_rows=n)
    t = _interleaved(fns, repeats)
    out = {}
    print(f"mixtures, N={n:,} K={k} (device array):")
    for name, v in t.items():
        out[f"mix_{name}_ratio"] = v / t["logsumexp"]
        print(f"  {name:22s} {v:.3f} s  ({v / t['logsumexp']:.2f}x logsumexp; target <= 1.5x)")
    return out


def default_call(n=400_000, k=256, repeats=3) -> dict:
    """``codelength(L)`` as a user calls it: a NumPy float32 (N, K) matrix, the
    default strategy (fixed share m = 2), the (N, K) posterior written out."""
    rng = np.random.default_rng(4)
    L_np = rng.standard_exponential((n, k), dtype=np.float32)
    L = jnp.asarray(L_np)
    L_al = _aligned.empty(L_np.shape)  # as a LossMatrix holds its losses: read in place
    L_al[:] = L_np
    t = _interleaved(
        {
            "logsumexp": lambda: _lse(L).block_until_ready(),
            "default": lambda: sw.codelength(L_np),
            "default_no_posterior": lambda: sw.codelength(L_np, posterior=False),
            "default_aligned": lambda: sw.codelength(L_al),
        },
        repeats,
    )
    out = {f"default_{key}_ratio": v / t["logsumexp"] for key, v in t.items()}
    print(
        f"default call, NumPy N={n:,} K={k}: logsumexp {t['logsumexp']:.3f} s, codelength(L) "
        f"{t['default']:.3f} s -> {t['default'] / t['logsumexp']:.2f}x (target <= 2.5x); "
        f"without the posterior {t['default_no_posterior'] / t['logsumexp']:.2f}x; "
        f"a LossMatrix's (aligned) losses {t['default_aligned'] / t['logsumexp']:.2f}x"
    )
    return out


#: the headline figures of ``main()``'s result (benchmarks/_records.py)
HEADLINE = [
    Headline(
        "default_default_ratio",
        "`codelength(L)`, NumPy (4·10⁵, 256), posterior written, over one `logsumexp`",
        "×",
        "≤ 2.5×",
    ),
    Headline(
        "default_default_aligned_ratio",
        "the same on a `LossMatrix`'s (aligned) losses",
        "×",
        "≤ 2.5×",
    ),
    Headline("mix_bayes_ratio", "Bayesian mixture, (10⁵, 64) device array", "×", "≤ 1.5×"),
    Headline("mix_elementwise_ratio", "elementwise mixture, (10⁵, 64)", "×", "≤ 1.5×"),
    Headline(
        "small_switch_s",
        "switch distribution θ = 0.5, (10⁵, 64)",
        "×",
        "≤ 3×",
        over="small_logsumexp_s",
    ),
]


def main() -> dict:
    out = {}
    out.update(mixtures())
    out.update(default_call())
    mem = streaming_memory()
    out.update({f"stream_{k}": v for k, v in mem.items()})
    print(
        f"streaming {mem['stream_rows']} rows x {K_BIG} in {mem['chunk_mib']:.0f} MiB chunks: "
        f"peak RSS {mem['rss_peak_mib']:.0f} MiB vs {mem['rss_base_mib']:.0f} MiB after warm-up "
        f"-> {mem['beyond_input_mib']:.1f} MiB beyond the chunk (target < 64)"
    )

    rng = np.random.default_rng(0)
    L_np = rng.standard_exponential((N_BIG, K_BIG), dtype=np.float32)
    L_np += rng.uniform(0, 1, K_BIG).astype(np.float32)
    L = jnp.asarray(L_np)
    fs = sw.FixedShare(m=2)
    t = _interleaved(
        {
            "logsumexp": lambda: _lse(L).block_until_ready(),
            "fixed_share": lambda: sw.codelength(L, fs, posterior=False),
        }
    )
    ratio = t["fixed_share"] / t["logsumexp"]
    out.update(lse_s=t["logsumexp"], fixed_share_s=t["fixed_share"], fixed_share_ratio=ratio)
    print(
        f"N={N_BIG:,} K={K_BIG} float32 (device array): logsumexp {t['logsumexp']:.3f} s, "
        f"fixed share m=2 {t['fixed_share']:.3f} s -> {ratio:.2f}x (target <= 1.5x)"
    )
    t_post = best_of(lambda: sw.codelength(L, fs, posterior=True), repeats=1)
    t_np = best_of(lambda: sw.codelength(L_np, fs, posterior=False), repeats=1)
    out.update(fixed_share_with_posterior_s=t_post, fixed_share_numpy_input_s=t_np)
    print(
        f"  with the (N, K) posterior: {t_post:.3f} s; from a NumPy array (chunked host->XLA "
        f"copies): {t_np:.3f} s"
    )
    L = L_np = None  # free the (N, K) arrays (the closures above are done with them)

    # Precision of the total: float32 pass, float64 accumulation vs float64 NumPy.
    Lp = rng.standard_exponential((100_000, K_BIG), dtype=np.float32)
    ref = fixed_share_float64(Lp.astype(np.float64), 2.0)
    got = sw.codelength(Lp, fs, posterior=False).total_nats
    st, _ = jax.jit(lambda L: sw.step(fs, sw.init_state(fs, K_BIG), L))(jnp.asarray(Lp))
    kahan = float(st.total_nats)
    out.update(
        precision_n=100_000,
        precision_ref_nats=ref,
        precision_rel_err=abs(got - ref) / ref,
        precision_kahan_f32_rel_err=abs(kahan - ref) / ref,
    )
    print(
        f"precision, N=100,000 K={K_BIG}: total {got:.6f} vs float64 NumPy {ref:.6f} nats: "
        f"rel. err {abs(got - ref) / ref:.2e}; float32 Kahan state total rel. err "
        f"{abs(kahan - ref) / ref:.2e}"
    )

    out.update(strategies())
    return out


def strategies(n=100_000, k=64) -> dict:
    """Every strategy on a device array, as multiples of the logsumexp (run-length:
    also per state row of its chain, R − 1 + J rows)."""
    rng = np.random.default_rng(5)
    out = {}
    fs = sw.FixedShare(m=2)
    Ls = jnp.asarray(rng.standard_exponential((n, k), dtype=np.float32))
    strategies = {
        "bayes": sw.BayesianMixture(),
        "elementwise": sw.ElementwiseMixture(),
        "fixed-share (linear kernel)": fs,
        "switch": sw.SwitchDistribution(),
        "run-length R=8 J=16 (default)": sw.RunLength(),
        "run-length R=32 J=1": sw.RunLength(max_run=32, phases=1),
    }
    fns = {"logsumexp": lambda: _lse(Ls).block_until_ready()}
    for name, s in strategies.items():
        fns[name] = lambda s=s: sw.codelength(Ls, s, posterior=False, chunk_rows=n)
    state0 = sw.init_state(fs, k)
    fns["fixed-share (log kernel)"] = lambda: jax.block_until_ready(
        forward.run_all(fs.skeleton(), fs.params(k), state0, Ls, posterior=False, linear=False)
    )
    t = _interleaved(fns, repeats=2)
    print(f"N={n:,} K={k}:")
    rows = {"run-length R=8 J=16 (default)": 23, "run-length R=32 J=1": 32}
    for name, v in t.items():
        out[f"small_{name}_s"] = v
        per = f", {v / t['logsumexp'] / rows[name]:.2f}x per state row" if name in rows else ""
        print(f"  {name:28s} {v:.3f} s  ({v / t['logsumexp']:.1f}x logsumexp{per})")
    return out


if __name__ == "__main__":
    import sys

    part = sys.argv[1] if len(sys.argv) > 1 else "all"
    size = [int(a) for a in sys.argv[2:4]]
    {"mixtures": mixtures, "default": default_call, "strategies": strategies, "all": main}[part](
        *size
    )
