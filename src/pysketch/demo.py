"""`pysketch demo`: compressive k-means end to end (see cli.py for the options)."""

import sys
import time

import numpy as np

from . import __version__
from .blocks import update_column_bounds
from .datasets import make_blobs_gaussian_centers
from .estimators import CompressiveKMeans
from .metrics import kmeans_plus_plus, sse
from .runtime import get_num_threads, simd_level
from .accumulate import SketchAccumulator


class _Progress:
    """tqdm when it is installed, else a plain one-line progress bar on stdout."""

    def __init__(self, total, desc):
        self.total, self.done, self.desc = total, 0, desc
        try:
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=desc, unit=" records", unit_scale=True, leave=True)
        except ImportError:
            self.bar = None
            self._last = -1

    def update(self, k):
        self.done += k
        if self.bar is not None:
            self.bar.update(k)
            return
        pct = int(100 * self.done / self.total)
        if pct // 5 != self._last // 5 or self.done == self.total:
            self._last = pct
            filled = pct // 5
            print(f"\r{self.desc}: [{'#' * filled}{'.' * (20 - filled)}] {pct:3d}%", end="", flush=True)

    def close(self):
        if self.bar is not None:
            self.bar.close()
        else:
            print()


def _load(path):
    """The records of --data, read by pysketch.files as `pysketch sketch` reads them (the same
    kinds of files, header rows, delimiters and checks), as one array; notes (a header taken)
    are printed on stderr."""
    from .files import DataFileError, open_data

    try:
        src = open_data(path)
        parts = []
        for block in src.blocks():
            part = np.array(block.data)
            bad = np.flatnonzero(~np.isfinite(part).all(axis=1))
            if bad.size:
                raise DataFileError(f"{path}: record {block.first_row + int(bad[0])} (counting from 0) contains NaN "
                                    "or infinity (missing values are not records: remove them first)")
            parts.append(part)
    except DataFileError as exc:
        raise DataFileError(f"--data: {exc}") from None
    for note in src.notes:
        print(f"pysketch demo: note: {note}", file=sys.stderr)
    X = np.concatenate(parts) if len(parts) > 1 else parts[0]
    if X.shape[0] < 2:
        raise ValueError(f"--data: {path} holds {X.shape[0]} record; the demo needs at least 2")
    return X


def run_demo(args):
    k = args.clusters
    rng = np.random.default_rng(args.seed)
    true_centers = None
    print(f"pysketch {__version__} demo (SIMD {simd_level()}, {get_num_threads()} threads)")
    if args.data:
        X = _load(args.data)
        source = f"{args.data}"
    else:
        X, _, params = make_blobs_gaussian_centers(args.n, k, args.d, random_state=rng, return_params=True)
        true_centers = params["centers"]
        source = f"{args.n} generated records: {k} unit-variance clusters, centers N(0, 4 I_{args.d})"
    n, d = X.shape
    if k > n:
        raise ValueError(f"-k {k} is larger than the number of records {n}")
    print(f"data: {source}; n = {n}, d = {d}")

    est = CompressiveKMeans(k, sketch_size=args.sketch_size, random_state=args.seed)
    # 1. the kernel scale from a pilot and the feature map (what fit() does, in steps, so
    #    that the sketching can be timed and shown with a progress bar)
    t0 = time.perf_counter()
    est._validate_params()
    sigma = est._scale(X, np.random.default_rng(args.seed))
    fm = est._make_map(d, sigma, np.random.default_rng(args.seed + 1))
    t_pilot = time.perf_counter() - t0
    # 2. the sketch, in one pass, and the bounding box of the data
    acc = SketchAccumulator(fm)
    lo, hi = np.full(d, np.inf), np.full(d, -np.inf)
    progress = _Progress(n, "sketching")
    t0 = time.perf_counter()
    step = max(1, (16 << 20) // (8 * d))
    for start in range(0, n, step):
        batch = np.asarray(X[start : start + step], dtype=np.float64)
        acc.update(batch)  # (rejects NaN and infinity)
        update_column_bounds(batch, lo, hi)
        progress.update(batch.shape[0])
    sketch = acc.sketch()
    t_sketch = time.perf_counter() - t0
    progress.close()
    # 3. the centers from the sketch alone
    t0 = time.perf_counter()
    est.fit_sketch(sketch, (lo, hi))
    t_decode = time.perf_counter() - t0
    centers = est.cluster_centers_

    private = None
    if args.epsilon is not None:
        from .privacy import make_private

        t0 = time.perf_counter()
        noisy = make_private(sketch, args.epsilon, args.delta)
        t_noise = time.perf_counter() - t0
        t0 = time.perf_counter()
        pest = CompressiveKMeans(k, random_state=args.seed).fit_sketch(noisy, (lo, hi))
        private = (noisy, pest.cluster_centers_, t_noise, time.perf_counter() - t0)

    # quality: SSE relative to k-means++ (best of 3) on the full data
    t0 = time.perf_counter()
    base_centers, base_sse = kmeans_plus_plus(np.asarray(X), k, n_init=3, random_state=args.seed)
    t_base = time.perf_counter() - t0
    sse_ours = sse(np.asarray(X), centers)
    rows = [("pysketch (sketch + CL-OMPR)", t_pilot + t_sketch, t_decode, sse_ours / base_sse,
             f"m = {fm.m} frequencies, {fm.operator.kind} operator, kernel scale {sigma:.3g}")]
    if private is not None:
        noisy, pcenters, t_noise, t_pdecode = private
        p = noisy.privacy
        rows.append((f"pysketch private (eps={p['epsilon']:g}, delta={p['delta']:g})", t_pilot + t_sketch + t_noise,
                     t_pdecode, sse(np.asarray(X), pcenters) / base_sse,
                     f"{p['mechanism']} noise, add/remove; box and scale read from the data (give public ones)"))
    if not args.no_baseline:
        try:
            from sklearn.cluster import KMeans
        except ImportError:
            print("(scikit-learn is not installed: its KMeans is not shown)")
        else:
            t0 = time.perf_counter()
            km = KMeans(k, n_init=3, random_state=args.seed).fit(np.asarray(X))
            rows.append(("scikit-learn KMeans(n_init=3)", time.perf_counter() - t0, 0.0, km.inertia_ / base_sse,
                         "on the full data"))
    rows.append(("pysketch.metrics.kmeans_plus_plus", t_base, 0.0, 1.0, "Lloyd, k-means++, best of 3: the RSE baseline"))

    print()
    print(f"{'method':34} {'sketch s':>9} {'decode s':>9} {'RSE':>7}  notes")
    print("-" * 100)
    for name, ts, td, rse, note in rows:
        print(f"{name:34} {ts:9.2f} {td:9.2f} {rse:7.4f}  {note}")
    print(f"\nsketch: {fm.m} complex numbers for {n} records ({n * d * 8 / 2**20:.1f} MiB of data -> "
          f"{fm.m * 16 / 2**10:.1f} KiB)")

    if args.output and args.output.lower() != "none":
        _plot(np.asarray(X), centers, true_centers, args.output, rng)
    return 0


def _plot(X, centers, true_centers, path, rng):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib is not installed: no plot)")
        return
    sample = X[rng.choice(X.shape[0], size=min(20000, X.shape[0]), replace=False)]
    mean = sample.mean(axis=0)
    _, _, vt = np.linalg.svd(sample - mean, full_matrices=False)
    basis = vt[:2].T if vt.shape[0] >= 2 else np.eye(X.shape[1], 2)
    project = lambda A: (A - mean) @ basis  # noqa: E731
    fig, ax = plt.subplots(figsize=(7, 6))
    P = project(sample)
    ax.scatter(P[:, 0], P[:, 1], s=2, alpha=0.25, color="0.5", label="data (sample)")
    if true_centers is not None:
        T = project(true_centers)
        ax.scatter(T[:, 0], T[:, 1], s=120, marker="o", facecolors="none", edgecolors="tab:blue", linewidths=2,
                   label="true centers")
    C = project(centers)
    ax.scatter(C[:, 0], C[:, 1], s=90, marker="x", color="tab:red", linewidths=2.5, label="learned from the sketch")
    ax.set_xlabel("first principal direction")
    ax.set_ylabel("second principal direction")
    ax.set_title("pysketch demo: compressive k-means")
    ax.legend(loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"plot written to {path}")
