"""Throughput of the sparse JL kernels (pysketch/sparse_jl.hpp) against a dense Gaussian JL and
scikit-learn's SparseRandomProjection.

    OPENBLAS_NUM_THREADS=1 python benchmarks/reports/sparse_jl_report.py
    python benchmarks/reports/sparse_jl_report.py --n 2000 --d 10000 --k 256 --s 4 --budget 2

One thread by default (pysketch's and BLAS's; --threads for pysketch's). Each measurement is the
best wall time over rounds that alternate the contenders (so they sample the same stretches of a
shared machine). Targets (issue 18), one thread, d = 10^4, k = 256, s = 4, n = 2000 float64
records: sjlt_apply >= 5x faster than the dense Gaussian JL X @ G through BLAS, and >= 2x faster
than SparseRandomProjection(n_components=k, density='auto').transform (fitted beforehand, not
timed; its density 1/sqrt(d) gives about k/sqrt(d) = 2.6 entries per column, against s here).

- dense batch: sjlt_apply on X (float64, then float32) against X @ G (G (d, k) float64) and
  against the sklearn transform of X.
- sparse batch (--density of X's entries nonzero, CSR): sjlt_apply_csr against the sklearn
  transform of the same CSR matrix, and sjlt_apply on its dense copy.
- streaming: sjlt_update calls per second from Python (one coordinate each).
S is the block construction: rows[r, j] = r k / s + h_r(j), vals = +-1 / sqrt(s). Each kernel is
checked against a NumPy reference (X @ S.T, to 1e-12) before it is timed.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _timing  # noqa: E402  (benchmarks/_timing.py)

_timing.one_thread()  # before any BLAS or OpenMP library loads

import numpy as np  # noqa: E402
from scipy import sparse  # noqa: E402

from pysketch import _core  # noqa: E402


def block_tables(d, k, s, rng):
    """rows (s, d) int32 and vals (s, d) float64 of the block construction (s must divide k)."""
    B = k // s
    rows = (np.arange(s)[:, None] * B + rng.integers(0, B, (s, d))).astype(np.int32)
    vals = rng.choice([-1.0, 1.0], (s, d)) / np.sqrt(s)
    return np.ascontiguousarray(rows), np.ascontiguousarray(vals)


def dense_matrix(rows, vals, k):
    s, d = rows.shape
    S = np.zeros((k, d))
    np.add.at(S, (rows, np.broadcast_to(np.arange(d), (s, d))), vals)
    return S


def check(name, got, want):
    scale = np.abs(want).max() if want.size else 1.0
    err = np.abs(got - want).max() if want.size else 0.0
    assert err <= 1e-12 * max(scale, 1.0), f"{name}: kernel and reference disagree (max error {err:.3e})"


def ms(ns):
    return f"{ns * 1e-6:8.2f} ms"


def dense_batch(X, rows, vals, k, G, srp, budget, rounds):
    n = X.shape[0]
    out = np.empty((n, k))
    X32 = X.astype(np.float32)
    S = dense_matrix(rows, vals, k)
    _core.sjlt_apply(X, rows, vals, out)
    check("sjlt_apply float64", out, X @ S.T)
    _core.sjlt_apply(X32, rows, vals, out)
    check("sjlt_apply float32", out, X32.astype(np.float64) @ S.T)
    contenders = {
        "sjlt_apply float64": lambda: _core.sjlt_apply(X, rows, vals, out),
        "sjlt_apply float32": lambda: _core.sjlt_apply(X32, rows, vals, out),
        "dense Gaussian JL X @ G (BLAS)": lambda: X @ G,
    }
    if srp is not None:
        contenders["sklearn SparseRandomProjection.transform"] = lambda: srp.transform(X)
    best = _timing.best_of(contenders, budget, min_rounds=rounds)
    print(f"dense batch: n = {n} float64 records, d = {X.shape[1]}, k = {k}, s = {rows.shape[0]}")
    for name, t in best.items():
        print(f"  {name:42s} {ms(t)}  ({n / (t * 1e-9):.3e} records/s)")
    sj = best["sjlt_apply float64"]
    ratio = best["dense Gaussian JL X @ G (BLAS)"] / sj
    print(f"  ratio dense Gaussian JL / sjlt_apply = {ratio:.1f} (target >= 5: {'met' if ratio >= 5 else 'NOT met'})")
    if srp is not None:
        ratio = best["sklearn SparseRandomProjection.transform"] / sj
        print(f"  ratio sklearn transform / sjlt_apply = {ratio:.1f} (target >= 2: {'met' if ratio >= 2 else 'NOT met'})")
    print(flush=True)


def sparse_batch(n, d, k, rows, vals, density, srp, budget, rounds, rng):
    A = sparse.random(n, d, density=density, format="csr", random_state=rng, data_rvs=rng.standard_normal)
    A.sort_indices()
    Xd = A.toarray()
    out, out_dense = np.empty((n, k)), np.empty((n, k))
    _core.sjlt_apply_csr(A.indptr, A.indices, A.data, d, rows, vals, out)
    check("sjlt_apply_csr", out, Xd @ dense_matrix(rows, vals, k).T)
    _core.sjlt_apply(Xd, rows, vals, out_dense)
    assert np.array_equal(out, out_dense), "sjlt_apply_csr and sjlt_apply differ on the same records"
    contenders = {
        "sjlt_apply_csr": lambda: _core.sjlt_apply_csr(A.indptr, A.indices, A.data, d, rows, vals, out),
        "sjlt_apply on the dense copy": lambda: _core.sjlt_apply(Xd, rows, vals, out_dense),
    }
    if srp is not None:
        contenders["sklearn transform of the CSR matrix"] = lambda: srp.transform(A)
    best = _timing.best_of(contenders, budget, min_rounds=rounds)
    print(f"sparse batch: n = {n} records, density {density} ({A.nnz} entries), CSR, same bits as the dense path")
    for name, t in best.items():
        print(f"  {name:42s} {ms(t)}  ({n / (t * 1e-9):.3e} records/s)")
    if srp is not None:
        print(f"  ratio sklearn transform / sjlt_apply_csr = "
              f"{best['sklearn transform of the CSR matrix'] / best['sjlt_apply_csr']:.1f}")
    print(flush=True)


def streaming(d, k, rows, vals, calls, rng):
    y = np.zeros(k)
    js = rng.integers(0, d, calls).tolist()
    deltas = rng.standard_normal(calls).tolist()
    update = _core.sjlt_update
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for j, delta in zip(js, deltas):
            update(y, j, delta, rows, vals)
        best = min(best, time.perf_counter() - start)
    print(f"streaming: sjlt_update from a Python loop, {best / calls * 1e9:.0f} ns per call "
          f"({calls / best:.3e} updates/s, Python loop included)", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=2000, help="records per batch")
    ap.add_argument("--d", type=int, default=10_000, help="input dimension")
    ap.add_argument("--k", type=int, default=256, help="sketch dimension")
    ap.add_argument("--s", type=int, default=4, help="entries per column of S (must divide k)")
    ap.add_argument("--density", type=float, default=0.01, help="fraction of nonzero entries of the sparse batch")
    ap.add_argument("--calls", type=int, default=200_000, help="sjlt_update calls timed")
    ap.add_argument("--budget", type=float, default=2.0, help="seconds of trials per contender")
    ap.add_argument("--rounds", type=int, default=5, help="at least this many rounds per measurement")
    ap.add_argument("--threads", type=int, default=1, help="pysketch threads")
    ap.add_argument("--no-sklearn", action="store_true", help="skip scikit-learn's SparseRandomProjection")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    if a.k % a.s:
        ap.error("--s must divide --k (block construction)")
    _core.set_num_threads(a.threads)
    for text in _timing.header_lines():
        print(text)
    print(f"numpy {np.__version__}, scikit-learn {_timing.package_version('scikit-learn')}, "
          f"BLAS/OpenMP threads: {os.environ.get('OPENBLAS_NUM_THREADS')}")
    print()
    rng = np.random.default_rng(a.seed)
    rows, vals = block_tables(a.d, a.k, a.s, rng)
    X = rng.standard_normal((a.n, a.d))
    G = rng.standard_normal((a.d, a.k)) / np.sqrt(a.k)
    srp = None
    if not a.no_sklearn:
        from sklearn.random_projection import SparseRandomProjection

        srp = SparseRandomProjection(n_components=a.k, density="auto", random_state=a.seed).fit(X)
    dense_batch(X, rows, vals, a.k, G, srp, a.budget, a.rounds)
    sparse_batch(a.n, a.d, a.k, rows, vals, a.density, srp, a.budget, a.rounds, rng)
    streaming(a.d, a.k, rows, vals, a.calls, rng)


if __name__ == "__main__":
    main()
