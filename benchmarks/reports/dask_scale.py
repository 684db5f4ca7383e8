"""Issue 20's Dask acceptance run: a lazily generated 10^8 x 10 float32 mixture on a
LocalCluster of 2 worker processes, against the same data in memory.

    OPENBLAS_NUM_THREADS=1 python benchmarks/reports/dask_scale.py [--n 100000000] [--chunk 500000]

Prints, for the dask pass on the cluster and for the in-memory pass in this process:
the sketch time, the largest difference of the two sketches (and the stated tolerance),
the peak resident memory of every worker process (getrusage's ru_maxrss, read on each
worker after the run), and the relative SSE (SSE of the centers / SSE of the generating
centers, computed blockwise) of a private CompressiveKMeans at epsilon = 1 fitted on each.

The data: k = 10 clusters in d = 10, centers N(0, 4 I), unit-variance float32 noise; block
b of `chunk` rows comes from numpy's generator seeded (seed, b), so the dask array and
the in-memory array hold the same numbers and no worker ever holds more than a block.
"""

import argparse
import os
import resource
import time
import warnings

import numpy as np

K, D, SEED = 10, 10, 20_261_126


def _centers():
    return 2.0 * np.random.default_rng(SEED).standard_normal((K, D))


def mixture_block(b, rows):
    """Block b of the data: `rows` records, float32."""
    rng = np.random.default_rng([SEED, b])
    labels = rng.integers(K, size=rows)
    X = rng.standard_normal((rows, D), dtype=np.float32)
    X += _centers()[labels].astype(np.float32)
    return X


def _dask_mixture(n, chunk):
    import dask.array as da

    sizes = [min(chunk, n - s) for s in range(0, n, chunk)]

    def make(block_info=None):
        b = block_info[None]["chunk-location"][0]
        return mixture_block(b, block_info[None]["chunk-shape"][0])

    return da.map_blocks(make, dtype=np.float32, chunks=(tuple(sizes), (D,)), meta=np.empty((0, D), np.float32))


def _sse_block(block, first_row, C):
    X = np.asarray(block, dtype=np.float64)
    best = np.full(X.shape[0], np.inf)
    for c in C:
        best = np.minimum(best, np.einsum("ij,ij->i", X - c, X - c))
    return float(best.sum())


def _sse(X, C):
    from pysketch.blocks import map_reduce

    return map_reduce(X, _sse_block, lambda a, b: a + b, args=(C,))


def _peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10**8)
    parser.add_argument("--chunk", type=int, default=500_000)
    parser.add_argument("--m", type=int, default=1000, help="sketch size of the sketch comparison (default 10 k d)")
    parser.add_argument("--skip-memory", action="store_true", help="skip the in-memory side (4 GB + 8 GB)")
    args = parser.parse_args()
    os.environ.setdefault("PYSKETCH_NUM_THREADS", "1")  # one per worker process: 2 workers on 2 cores
    import distributed

    from pysketch import CompressiveKMeans, make_feature_map

    n, chunk = args.n, args.chunk
    C = _centers()
    box = (float(np.floor(C.min() - 7)), float(np.ceil(C.max() + 7)))  # public: centers +- 7 sd
    fm = make_feature_map(D, args.m, "complex", operator="dense", law=None, sigma=1.0, random_state=1,
                          dtype=np.float32)
    print(f"data: n = {n:.3g}, d = {D}, k = {K}, float32, blocks of {chunk} rows ({n // chunk} blocks), "
          f"box {box}; map: complex, m = {args.m}, dense operator")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None, memory_limit="4GiB")
        client = distributed.Client(cluster)
    try:
        Xd = _dask_mixture(n, chunk)
        t = time.perf_counter()
        sk_dask = fm.sketch(Xd)
        t_dask = time.perf_counter() - t
        print(f"dask sketch: {t_dask:.1f} s ({n / t_dask / 1e6:.2f} M rows/s on the cluster)")
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # records clipped to the box, if any
            km_dask = CompressiveKMeans(K, epsilon=1.0, bounds=box, dtype=np.float32, random_state=0).fit(Xd)
        t_fit_dask = time.perf_counter() - t
        sse_true = _sse(Xd, C)
        rse_dask = km_dask.inertia_ / sse_true
        print(f"dask private k-means (epsilon = 1): {t_fit_dask:.1f} s, RSE {rse_dask:.4f}, sketch size "
              f"{km_dask.sketch_size_}")
        peaks = client.run(_peak_rss_mb)
        for worker, mb in sorted(peaks.items()):
            print(f"worker {worker}: peak RSS {mb:.0f} MB")
    finally:
        client.close()
        cluster.close()
    if args.skip_memory:
        return
    X = np.empty((n, D), np.float32)
    for b, s in enumerate(range(0, n, chunk)):
        X[s : s + chunk] = mixture_block(b, min(chunk, n - s))
    os.environ["PYSKETCH_NUM_THREADS"] = "2"
    from pysketch import set_num_threads

    set_num_threads(2)
    t = time.perf_counter()
    sk_mem = fm.sketch(X)
    t_mem = time.perf_counter() - t
    diff = float(np.abs(sk_dask.sum - sk_mem.sum).max())
    tol = n * 1e-12
    print(f"in-memory sketch (2 threads): {t_mem:.1f} s; counts {sk_dask.count} / {sk_mem.count}; "
          f"max |dask - memory| = {diff:.3g} (tolerance n * 1e-12 = {tol:.3g}: "
          f"{'OK' if diff <= tol and sk_dask.count == sk_mem.count else 'EXCEEDED'})")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        km_mem = CompressiveKMeans(K, epsilon=1.0, bounds=box, dtype=np.float32, random_state=0).fit(X)
    rse_mem = km_mem.inertia_ / _sse(X, C)
    print(f"in-memory private k-means (epsilon = 1): RSE {rse_mem:.4f}; dask / memory RSE = "
          f"{rse_dask / rse_mem:.4f}")


if __name__ == "__main__":
    main()
