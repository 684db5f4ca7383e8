r"""Compressive k-means on real data, clean and private, against its peers (issues 14 and 32).

What it measures. For every configuration (a real data set of ``pysketch.datasets`` and a
number of clusters k) and every seed, each method fits k centres on the same array in the
same process, and the script reports the relative SSE of those centres and the CPU time
of the fit (``time.process_time`` around the fit call only; loading, subsampling and
scoring are not timed):

.. math::

    \mathrm{RSE}_{\text{method}}(\text{seed}) = \mathrm{SSE}(X, C_{\text{method}}) /
    \mathrm{SSE}(X, C_{\text{sklearn}}),

where SSE is ``pysketch.metrics.sse`` (sum over the records of the squared distance to the
nearest centre) and :math:`C_{\text{sklearn}}` is scikit-learn's
``KMeans(k, n_init=3, random_state=seed)`` fitted on the same data with the same seed
(the RSE reference; it is run whenever scikit-learn is installed, even if not asked for;
without scikit-learn the reference is ``pysketch.metrics.kmeans_plus_plus(n_init=3)``,
and the script says so). Reported per method: the median and the 90th percentile of the
RSE over the seeds, and the median CPU seconds; for pysketch also the medians of
``sketch_size_`` and of ``timings_`` ("pilot", "sketch", "decode") when the estimator
records them.

Data and public boxes. The configurations are world_cities (k = 10, 30), us_cities
(10, 30), nyc_weather, randhie, chicago, digits (10), image_patches_4x4 and
image_patches_8x8 (10, 20), loaded with ``pysketch.datasets.load_real_dataset``. Every
private method gets the data set's ``bounds``: a box documented in
``pysketch.datasets._real`` from what each column means (a latitude in [-90, 90], a pixel
in [0, 16] ...), never the data's own min/max, so it costs no privacy. ``--max-rows``
subsamples every data set with one fixed random generator (the same rows for every method
and seed); the n of the table and of the targets is the n actually fitted.

Methods (``--methods``):

- ``sklearn``: ``sklearn.cluster.KMeans(k, n_init=3, random_state=seed)``, no privacy.
- ``diffprivlib-eps1``, ``diffprivlib-eps0.1``: IBM diffprivlib's ``models.KMeans``
  (DP-Lloyd, Su et al. 2016) at epsilon 1 and 0.1 with the public box as ``bounds``:
  pure epsilon-DP. ``random_state=seed`` also seeds its noise (reproducible runs; a
  benchmark convenience, not how a private release should draw its noise). Each fit gets
  a fresh BudgetAccountant.
- ``eugkm-eps1``, ``eugkm-eps0.1``: EUGkM (Su, Cao, Li, Bertino & Jha 2016; the noisy
  uniform grid then a weighted k-means, ``pysketch.baselines.EUGkM``) with the public box:
  pure epsilon-DP, its noise from OS entropy.
- ``google-lsh``, ``google-lsh-eps0.1``: Google's differentially private LSH-coreset clustering
  (``clustering_algorithm.private_lsh_clustering`` of the ``learning/clustering`` folder
  of github.com/google/differential-privacy): (epsilon, delta)-DP at epsilon = 1 (and 0.1),
  delta = 1e-6. It clips the records to a ball around the origin, so the records are
  shifted by the box's midpoint and the radius is half the box's diagonal (a ball that
  holds the public box, so nothing is clipped and nothing is read from the data); the
  midpoint is added back to the centres. It draws from numpy's global generator, seeded
  with the seed before each fit. Its result object also computes labels and the loss of
  every record in a Python loop (non-private conveniences), and that time is part of its
  CPU time. It is not on PyPI: it runs only when the environment variable
  ``PYSKETCH_GOOGLE_DP_LEARNING`` names a checkout of that ``learning/`` folder (with
  absl-py and dp-accounting installed); otherwise it prints
  ``google-lsh: skipped (<reason>)``. Its code stays outside this repository.
- ``pysketch-clean``: ``CompressiveKMeans(k, random_state=seed)``, its defaults.
- ``pysketch-coreset``: the same with ``decoder="coreset"`` (an over-complete mixture of
  isotropic Gaussians decoded from a multi-scale sketch, then reduced by k-means;
  pysketch.decoders.coreset), clean only.
- ``pysketch-sketch``: the sketch of ``pysketch-clean``'s fit, read alone by
  ``CompressiveKMeans(k, random_state=seed).fit_sketch(sketch, the data's bounding box)``
  (no record: issue 32's target for a sketch merged from many sites, <= 1.15).
- ``pysketch-eps1``, ``pysketch-eps0.1`` (pure DP, delta = 0), ``pysketch-eps1-d1e-7``,
  ``pysketch-eps1-d1e-6``, ``pysketch-eps0.1-d1e-6``: ``CompressiveKMeans(k,
  epsilon=..., delta=..., bounds=public box, random_state=seed)`` (add/remove
  neighbours; the kernel-scale pilot charged to the budget). Its privacy noise comes from
  OS entropy, not from the seed, so private pysketch results vary between runs.

Warnings raised during a fit are caught (and so not printed one by one); a line per method
counts them by category.

Targets. After the table, a line per configuration checks what this run can check of
issue 32's "Done means": clean median RSE <= 1.10, from a sketch alone <= 1.15; at n >= 2*10^4, pysketch's pure-DP
median at epsilon 1 and 0.1 at most the best pure peer's (diffprivlib, EUGkM) and never
above 1.5 times the best peer (Google's LSH included), and pysketch at (epsilon, 1e-6) at
most Google's LSH; epsilon = 1 not worse than epsilon = 0.1 by more than 5%; at n >= 10^5,
epsilon = 1 within 5% of the clean fit, and with d <= 64 too the clean fit's CPU time at
most scikit-learn's; the clean fit's CPU at most 10 times scikit-learn's. Each is PASS,
FAIL, or n.a. (a method missing or the size condition not met). A last line counts the
(data set, epsilon) cells at n >= 2*10^4 where pysketch is at or below the best peer
(3 of every 4 wanted). The exit code is 0 (the script is a report), except with ``--quick``.

Threads. When run as a script, OPENBLAS_NUM_THREADS, OMP_NUM_THREADS, MKL_NUM_THREADS and
PYSKETCH_NUM_THREADS are set to 1 before numpy is imported (unless already set), so that
the CPU times compare one thread with one thread (scikit-learn's OpenMP Lloyd, BLAS in
every method, pysketch's sketching threads).

``--quick`` is the CI smoke run (under a minute): us_cities and digits at k = 10, at most
3000 rows each, 2 seeds, methods sklearn, diffprivlib-eps1 (when installed),
pysketch-clean and pysketch-eps1. It exits 1 when a method raised an exception or
returned centres of the wrong shape or not finite (a missing optional package is a skip,
not a failure). ``--sets``, ``--methods`` and ``--seeds`` given with it override its
choices.

Usage::

    python benchmarks/quality/real_quality.py                        # all 12 configurations, 5 seeds
    python benchmarks/quality/real_quality.py --quick                # CI smoke run
    python benchmarks/quality/real_quality.py --sets us_cities:10 digits --methods sklearn,pysketch-clean
    python benchmarks/quality/real_quality.py --sets image_patches_8x8:20 --seeds 3 --json out.json
    PYSKETCH_GOOGLE_DP_LEARNING=/path/to/differential-privacy/learning \
        python benchmarks/quality/real_quality.py --sets us_cities:10 --methods sklearn,google-lsh \
        --max-rows 5000
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
import functools
import importlib
import json
import math
import warnings

import numpy as np

import pysketch
from pysketch.datasets import REAL_DATASETS, load_real_dataset
from pysketch.estimators import CompressiveKMeans
from pysketch.metrics import kmeans_plus_plus, sse

#: Every configuration (data set, k) of the full run, in the order it runs.
DEFAULT_CONFIGS = (
    ("world_cities", 10), ("world_cities", 30),
    ("us_cities", 10), ("us_cities", 30),
    ("nyc_weather", 10),
    ("randhie", 10),
    ("chicago", 10),
    ("digits", 10),
    ("image_patches_4x4", 10), ("image_patches_4x4", 20),
    ("image_patches_8x8", 10), ("image_patches_8x8", 20),
)
QUICK_CONFIGS = (("us_cities", 10), ("digits", 10))
QUICK_METHODS = ("sklearn", "diffprivlib-eps1", "pysketch-clean", "pysketch-eps1")
QUICK_SEEDS = 2
QUICK_MAX_ROWS = 3000
DEFAULT_SEEDS = 5
#: Seeds the generator of ``--max-rows`` subsampling (the same rows for every method).
SUBSAMPLE_SEED = 14
#: The environment variable naming a checkout of google/differential-privacy's learning/.
GOOGLE_ENV = "PYSKETCH_GOOGLE_DP_LEARNING"
GOOGLE_EPSILON = 1.0
GOOGLE_DELTA = 1e-6
#: The stages of CompressiveKMeans.timings_.
TIMING_STAGES = ("pilot", "sketch", "decode")

PASS, FAIL, NA = "PASS", "FAIL", "n.a."
#: The size conditions of the issue's targets.
N_PEERS = 20_000      # the private targets against diffprivlib
N_LARGE = 100_000     # private within 5% of clean; CPU time against scikit-learn
D_TIME = 64


# ---------------------------------------------------------------------------------------
# The methods: each fit takes (X, k, bounds, seed) and returns the centres, or
# (centres, extras) where extras is a dict of numbers to report (pysketch's timings).
# ---------------------------------------------------------------------------------------

_GOOGLE = {}   # the imported modules of Google's clustering, filled by _probe_google


def fit_sklearn(X, k, bounds, seed):
    from sklearn.cluster import KMeans

    return KMeans(n_clusters=k, n_init=3, random_state=seed).fit(X).cluster_centers_


def fit_diffprivlib(X, k, bounds, seed, *, epsilon):
    from diffprivlib.accountant import BudgetAccountant
    from diffprivlib.models import KMeans

    lower, upper = bounds
    model = KMeans(n_clusters=k, epsilon=epsilon, bounds=(lower, upper), random_state=seed,
                   accountant=BudgetAccountant())
    return model.fit(X).cluster_centers_


def fit_google_lsh(X, k, bounds, seed, *, epsilon=GOOGLE_EPSILON):
    algorithm, params = _GOOGLE["clustering_algorithm"], _GOOGLE["clustering_params"]
    lower, upper = bounds
    middle = (lower + upper) / 2.0
    radius = float(np.linalg.norm(upper - lower)) / 2.0
    np.random.seed(seed)   # the LSH projections, the noise and its k-means++ all use np.random
    result = algorithm.private_lsh_clustering(
        k, params.Data(X - middle, radius=radius),
        params.DifferentialPrivacyParam(epsilon=epsilon, delta=GOOGLE_DELTA))
    return np.asarray(result.centers, dtype=np.float64) + middle


def fit_eugkm(X, k, bounds, seed, *, epsilon):
    from pysketch.baselines import EUGkM

    return EUGkM(k, epsilon, bounds, random_state=seed).fit(X).cluster_centers_


def fit_pysketch(X, k, bounds, seed, *, epsilon=None, delta=0.0, **options):
    if epsilon is None:
        est = CompressiveKMeans(k, random_state=seed, **options)
    else:
        est = CompressiveKMeans(k, epsilon=epsilon, delta=delta, bounds=bounds,
                                random_state=seed, **options)
    est.fit(X)
    extras = {}
    timings = getattr(est, "timings_", None)
    if isinstance(timings, dict):
        for stage in TIMING_STAGES:
            if stage in timings:
                extras[f"time_{stage}"] = float(timings[stage])
    size = getattr(est, "sketch_size_", None)
    if size is not None:
        extras["sketch_size"] = int(size)
    return est.cluster_centers_, extras


def fit_pysketch_sketch(X, k, bounds, seed):
    """k-means from a sketch alone: the sketch a clean default fit makes (its scale from the
    fit's pilot), read by a new estimator's fit_sketch with the data's bounding box (no
    record read: the centres of a sketch merged from many sites). The CPU counted includes
    making the sketch; ``time_decode`` is fit_sketch's own."""
    sketch = CompressiveKMeans(k, random_state=seed).fit(X).sketch_
    est = CompressiveKMeans(k, random_state=seed).fit_sketch(sketch, (X.min(axis=0), X.max(axis=0)))
    return est.cluster_centers_, {"time_decode": float(est.timings_["decode"])}


def _probe_module(module, package):
    """None when ``module`` imports, else why not (the import is also the warm-up, so that
    no method's first timed fit pays for importing its package)."""
    try:
        importlib.import_module(module)
    except Exception as exc:   # diffprivlib raises ImportError on an incompatible sklearn
        return f"{package} is not importable: {type(exc).__name__}: {exc}"
    return None


def _probe_google():
    if _GOOGLE:
        return None
    path = os.environ.get(GOOGLE_ENV, "").strip()
    if not path:
        return (f"set {GOOGLE_ENV} to a checkout of the learning/ folder of "
                "github.com/google/differential-privacy")
    path = os.path.abspath(os.path.expanduser(path))
    if not os.path.isdir(os.path.join(path, "clustering")):
        return f"{GOOGLE_ENV}={path} has no clustering/ folder"
    if path not in sys.path:
        sys.path.insert(0, path)
    try:
        clustering = importlib.import_module("clustering")
        algorithm = importlib.import_module("clustering.clustering_algorithm")
        params = importlib.import_module("clustering.clustering_params")
    except Exception as exc:   # absl-py or dp-accounting missing, a syntax error ...
        return f"importing clustering from {path} failed: {type(exc).__name__}: {exc}"
    where = os.path.abspath(getattr(clustering, "__file__", "") or "")
    if not where.startswith(path + os.sep):
        return f"the module named clustering comes from {where}, not from {path}"
    _GOOGLE.update(clustering_algorithm=algorithm, clustering_params=params)
    return None


# The requirement of each method: a probe returning None (available) or the reason it is not.
PROBES = {
    "sklearn": functools.partial(_probe_module, "sklearn.cluster", "scikit-learn"),
    "diffprivlib": functools.partial(_probe_module, "diffprivlib.models", "diffprivlib"),
    "google": _probe_google,
    "pysketch": lambda: None,
}

# name -> (fit function, requirement)
METHODS = {
    "sklearn": (fit_sklearn, "sklearn"),
    "diffprivlib-eps1": (functools.partial(fit_diffprivlib, epsilon=1.0), "diffprivlib"),
    "diffprivlib-eps0.1": (functools.partial(fit_diffprivlib, epsilon=0.1), "diffprivlib"),
    "eugkm-eps1": (functools.partial(fit_eugkm, epsilon=1.0), "pysketch"),
    "eugkm-eps0.1": (functools.partial(fit_eugkm, epsilon=0.1), "pysketch"),
    "google-lsh": (fit_google_lsh, "google"),
    "google-lsh-eps0.1": (functools.partial(fit_google_lsh, epsilon=0.1), "google"),
    "pysketch-clean": (fit_pysketch, "pysketch"),
    "pysketch-sketch": (fit_pysketch_sketch, "pysketch"),
    # the over-complete mixture decoder (pysketch.decoders.coreset), clean only
    "pysketch-coreset": (functools.partial(fit_pysketch, decoder="coreset"), "pysketch"),
    "pysketch-eps1": (functools.partial(fit_pysketch, epsilon=1.0), "pysketch"),
    "pysketch-eps0.1": (functools.partial(fit_pysketch, epsilon=0.1), "pysketch"),
    "pysketch-eps1-d1e-7": (functools.partial(fit_pysketch, epsilon=1.0, delta=1e-7), "pysketch"),
    "pysketch-eps1-d1e-6": (functools.partial(fit_pysketch, epsilon=1.0, delta=1e-6), "pysketch"),
    "pysketch-eps0.1-d1e-6": (functools.partial(fit_pysketch, epsilon=0.1, delta=1e-6), "pysketch"),
}
REFERENCE = "sklearn"


# ---------------------------------------------------------------------------------------
# Fitting and scoring
# ---------------------------------------------------------------------------------------


def check_centres(centres, k, d):
    """(usable, problem): whether an SSE can be computed from ``centres`` and what is wrong
    with them (None when they are a finite (k, d) array)."""
    try:
        c = np.asarray(centres, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        return False, f"centres not numeric: {exc}"
    if c.ndim != 2 or c.shape[1] != d or c.shape[0] == 0:
        return False, f"centres of shape {c.shape}, expected ({k}, {d})"
    if not np.isfinite(c).all():
        return False, "centres not finite"
    if c.shape[0] != k:
        return True, f"{c.shape[0]} centres, expected {k}"
    return True, None


def fit_once(fit, X, k, bounds, seed):
    """One timed fit: a record of its centres, CPU seconds, warnings and any error."""
    record = {"seed": seed, "cpu": math.nan, "sse": math.nan, "rse": math.nan,
              "error": None, "problem": None, "warnings": {}, "extras": {}}
    result = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with _timing.Stopwatch() as clock:
            try:
                result = fit(X, k, bounds, seed)
            except Exception as exc:
                record["error"] = f"{type(exc).__name__}: {exc}"
        record["cpu"] = clock.cpu
    record["warnings"] = dict(collections.Counter(w.category.__name__ for w in caught))
    if record["error"] is not None:
        return record, None
    centres, extras = result if isinstance(result, tuple) else (result, {})
    record["extras"] = dict(extras)
    usable, record["problem"] = check_centres(centres, k, X.shape[1])
    if not usable:
        return record, None
    centres = np.asarray(centres, dtype=np.float64)
    record["sse"] = float(sse(X, centres))
    return record, centres


def summarise(records):
    """Median and 90th percentile of the RSE, median CPU seconds, medians of the extras and
    the warning counts of one method's per-seed records."""
    rse = np.array([r["rse"] for r in records if np.isfinite(r["rse"])])
    cpu = np.array([r["cpu"] for r in records if r["error"] is None])
    summary = {
        "median": float(np.median(rse)) if rse.size else math.nan,
        "p90": float(np.quantile(rse, 0.9)) if rse.size else math.nan,
        "cpu": float(np.median(cpu)) if cpu.size else math.nan,
        "n_scored": int(rse.size),
        "n_fits": len(records),
        "n_errors": sum(r["error"] is not None for r in records),
        "n_problems": sum(r["problem"] is not None for r in records),
    }
    extras = collections.defaultdict(list)
    for r in records:
        for key, value in r["extras"].items():
            extras[key].append(value)
    summary["extras"] = {key: float(np.median(v)) for key, v in extras.items()}
    counts = collections.Counter()
    for r in records:
        counts.update(r["warnings"])
    summary["warnings"] = dict(counts)
    return summary


# ---------------------------------------------------------------------------------------
# Targets of issue 32
# ---------------------------------------------------------------------------------------


def _median(results, method):
    value = results.get(method, {}).get("median", math.nan)
    return value if value is not None and np.isfinite(value) else math.nan


def _cpu(results, method):
    value = results.get(method, {}).get("cpu", math.nan)
    return value if value is not None and np.isfinite(value) else math.nan


def _at_most(a, b, factor=1.0):
    """PASS when a <= factor * b, n.a. when either is missing (NaN)."""
    if not (np.isfinite(a) and np.isfinite(b)):
        return NA
    return PASS if a <= factor * b else FAIL


def _best_peer(results, eps):
    """The lowest median RSE of the pure-DP peers at eps (diffprivlib's DP-Lloyd, EUGkM)."""
    tag = "eps1" if eps == 1.0 else "eps0.1"
    values = [_median(results, f"{peer}-{tag}") for peer in ("diffprivlib", "eugkm")]
    values = [v for v in values if np.isfinite(v)]
    return min(values) if values else math.nan


def _google(results, eps):
    return _median(results, "google-lsh" if eps == 1.0 else "google-lsh-eps0.1")


def peer_cells(results, n):
    """The (data set, epsilon) cells of issue 32 for one configuration at n >= N_PEERS:
    {eps: (pysketch pure, best pure peer, pysketch delta=1e-6, Google's LSH)} (NaN where a
    method did not run); {} below the size."""
    if n < N_PEERS:
        return {}
    return {eps: (_median(results, "pysketch-eps1" if eps == 1.0 else "pysketch-eps0.1"), _best_peer(results, eps),
                  _median(results, "pysketch-eps1-d1e-6" if eps == 1.0 else "pysketch-eps0.1-d1e-6"),
                  _google(results, eps))
            for eps in (1.0, 0.1)}


def targets(results, n, d):
    """The checks of issue 32's "Done means" this run can make for one configuration.

    ``results`` maps a method name to its summary (``"median"`` RSE, ``"cpu"`` median
    seconds; a method absent or NaN makes the checks that need it n.a.); n and d are the
    configuration's size. Returns {check: "PASS" | "FAIL" | "n.a."} in a fixed order; the
    count of cells at or below the best peer (3 of every 4 wanted) is made over all
    configurations by `cell_summary`.
    """
    clean = _median(results, "pysketch-clean")
    eps1 = _median(results, "pysketch-eps1")
    eps01 = _median(results, "pysketch-eps0.1")
    peers = n >= N_PEERS
    large = n >= N_LARGE
    checks = {"clean <= 1.10": _at_most(clean, 1.10),
              "sketch alone <= 1.15": _at_most(_median(results, "pysketch-sketch"), 1.15)}
    for eps, tag, value in ((1.0, "eps1", eps1), (0.1, "eps0.1", eps01)):
        best = _best_peer(results, eps)
        checks[f"{tag} <= best pure peer"] = _at_most(value, best) if peers else NA
        checks[f"{tag} <= 1.5 x best peer"] = _at_most(value, min(best, _google(results, eps)), 1.5) if peers else NA
        checks[f"{tag}-d1e-6 <= google"] = _at_most(
            _median(results, f"pysketch-{tag}-d1e-6"), _google(results, eps)) if peers else NA
    checks["eps1 <= 1.05 x eps0.1"] = _at_most(eps1, eps01, 1.05)
    checks["eps1 <= 1.05 x clean"] = _at_most(eps1, clean, 1.05) if large else NA
    checks["clean CPU <= sklearn CPU"] = (_at_most(_cpu(results, "pysketch-clean"), _cpu(results, "sklearn"))
                                          if large and d <= D_TIME else NA)
    checks["clean CPU <= 10 x sklearn CPU"] = _at_most(_cpu(results, "pysketch-clean"), _cpu(results, "sklearn"), 10)
    return checks


def cell_summary(rows):
    """Over every configuration at n >= N_PEERS: how many (data set, epsilon) cells have
    pysketch (pure, or with delta = 1e-6 against Google's LSH) at or below the best peer,
    of those where both ran."""
    wins = total = 0
    for row in rows:
        for eps, (pure, best, gauss, google) in peer_cells(row["summaries"], row["n"]).items():
            if not (np.isfinite(pure) and np.isfinite(best)):
                continue
            total += 1
            ok = pure <= best and (not (np.isfinite(gauss) and np.isfinite(google)) or gauss <= google)
            wins += ok
    return wins, total


# ---------------------------------------------------------------------------------------
# Running the configurations
# ---------------------------------------------------------------------------------------


def subsample(X, max_rows):
    """At most ``max_rows`` rows of X, drawn without replacement by a fixed generator and
    kept in their order; X itself when it is small enough."""
    if max_rows is None or X.shape[0] <= max_rows:
        return X
    rng = np.random.default_rng(SUBSAMPLE_SEED)
    rows = np.sort(rng.choice(X.shape[0], size=max_rows, replace=False))
    return np.ascontiguousarray(X[rows])


def _fmt_extras(extras):
    parts = []
    if "sketch_size" in extras:
        parts.append(f"m = {extras['sketch_size']:.0f}")
    times = [f"{s} {extras['time_' + s]:.2f} s" for s in TIMING_STAGES if "time_" + s in extras]
    if times:
        parts.append(", ".join(times))
    return "; ".join(parts)


def run_config(label, X, k, bounds, methods, seeds, reference_is_sklearn, out):
    """Fit every method on X for every seed; {method: [per-seed record]}."""
    n = X.shape[0]
    per_method = {m: [] for m in methods}
    for seed in range(seeds):
        reference = None
        fitted = {}
        for method in methods:
            record, _ = fit_once(METHODS[method][0], X, k, bounds, seed)
            fitted[method] = record
            per_method[method].append(record)
            if method == REFERENCE and reference_is_sklearn and np.isfinite(record["sse"]):
                reference = record["sse"]
        if reference is None:
            # scikit-learn missing or failed on this seed: the library's own k-means++
            _, reference = kmeans_plus_plus(X, k, n_init=3, random_state=seed)
            reference = float(reference)
            if reference_is_sklearn:
                out(f"  {label} seed {seed}: scikit-learn failed, RSE reference is "
                    "pysketch.metrics.kmeans_plus_plus")
        for method, record in fitted.items():
            record["reference_sse"] = reference
            if np.isfinite(record["sse"]):
                record["rse"] = record["sse"] / reference if reference > 0 else math.nan
            line = f"  {label} n={n} seed {seed} {method}: "
            if record["error"] is not None:
                line += f"ERROR {record['error']}"
            else:
                line += f"RSE {record['rse']:.4f}  CPU {record['cpu']:.2f} s"
                extras = _fmt_extras(record["extras"])
                if extras:
                    line += f"  ({extras})"
                if record["problem"] is not None:
                    line += f"  BAD CENTRES: {record['problem']}"
            out(line)
    return per_method


def _cell(summary):
    if summary is None:
        return "-"
    if not np.isfinite(summary["median"]):
        return "error" if summary["n_errors"] else "bad"
    cpu = summary["cpu"]
    cpu_text = f"{cpu:.2f}" if cpu < 100 else f"{cpu:.0f}"
    # * : some seed returned centres of the wrong count (scored anyway) or failed
    flag = "*" if summary["n_problems"] or summary["n_errors"] else ""
    return f"{summary['median']:.3f}/{summary['p90']:.3f}, {cpu_text}s{flag}"


def print_table(rows, methods, reference, out):
    """One row per configuration: data set, k, n, d, then 'median/p90 RSE, median CPU s'
    per method."""
    head = ["data set", "k", "n", "d"] + list(methods)
    body = []
    for row in rows:
        body.append([row["name"], str(row["k"]), str(row["n"]), str(row["d"])]
                    + [_cell(row["summaries"].get(m)) for m in methods])
    widths = [max(len(line[i]) for line in [head] + body) for i in range(len(head))]
    out("")
    out(f"median/p90 RSE (reference: {reference}, same seed), median fit CPU s")
    out("  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(head, widths))))
    out("  ".join("-" * w for w in widths))
    for line in body:
        out("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                      for i, (c, w) in enumerate(zip(line, widths))))
    if any(cell.endswith("*") for line in body for cell in line):
        out("* some seeds failed or returned fewer centres than k (see the per-seed lines)")


def parse_sets(items, parser):
    """--sets items: 'name' (all its default k) or 'name:k'; commas split items too."""
    configs = []
    for item in items:
        for token in filter(None, (t.strip() for t in item.split(","))):
            name, _, k_text = token.partition(":")
            if name not in REAL_DATASETS:
                parser.error(f"unknown data set {name!r}; known: {', '.join(REAL_DATASETS)}")
            if k_text:
                try:
                    k = int(k_text)
                except ValueError:
                    parser.error(f"bad k in {token!r}")
                if k < 1:
                    parser.error(f"k must be positive in {token!r}")
                configs.append((name, k))
            else:
                configs.extend(c for c in DEFAULT_CONFIGS if c[0] == name)
    return configs


def parse_methods(items, parser):
    methods = []
    for item in items:
        for token in filter(None, (t.strip() for t in item.split(","))):
            if token not in METHODS:
                parser.error(f"unknown method {token!r}; known: {', '.join(METHODS)}")
            if token not in methods:
                methods.append(token)
    return methods


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (np.floating, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value


def _versions():
    versions = {"python": sys.version.split()[0], "numpy": np.__version__}
    for module in ("pysketch", "sklearn", "diffprivlib"):
        loaded = sys.modules.get(module)
        if loaded is not None:
            versions[module] = getattr(loaded, "__version__", "?")
    return versions


def main(argv=None, out=print):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sets", nargs="+", default=None, metavar="NAME[:K]",
                   help="data sets, as name (all its k) or name:k; default: all 12 configurations")
    p.add_argument("--methods", nargs="+", default=None, metavar="METHOD",
                   help="methods, space- or comma-separated; default: all of " + ", ".join(METHODS))
    p.add_argument("--seeds", type=int, default=None, help=f"seeds 0..N-1 (default {DEFAULT_SEEDS})")
    p.add_argument("--quick", action="store_true",
                   help="CI smoke run: us_cities:10 and digits:10, at most 3000 rows, 2 seeds, "
                        "4 methods; exit 1 on an error or bad centres")
    p.add_argument("--max-rows", type=int, default=None,
                   help="subsample each data set to at most this many rows (fixed generator)")
    p.add_argument("--json", default=None, metavar="PATH", help="write every per-seed result here")
    a = p.parse_args(argv)

    configs = parse_sets(a.sets, p) if a.sets else list(QUICK_CONFIGS if a.quick else DEFAULT_CONFIGS)
    methods = parse_methods(a.methods, p) if a.methods else list(QUICK_METHODS if a.quick else METHODS)
    seeds = a.seeds if a.seeds is not None else (QUICK_SEEDS if a.quick else DEFAULT_SEEDS)
    max_rows = a.max_rows
    if a.quick:
        max_rows = QUICK_MAX_ROWS if max_rows is None else min(max_rows, QUICK_MAX_ROWS)
    if seeds < 1:
        p.error("--seeds must be at least 1")
    if max_rows is not None and max_rows < 1:
        p.error("--max-rows must be at least 1")

    threads = {v: os.environ.get(v) for v in _timing.ALL_RUNTIMES}
    out("threads: " + ", ".join(f"{v}={threads[v]}" for v in threads))
    out(f"pysketch: {os.path.dirname(os.path.abspath(pysketch.__file__))}")

    # Which methods can run here; the RSE reference runs whenever scikit-learn is available.
    reasons = {}
    for requirement in sorted({METHODS[m][1] for m in set(methods) | {REFERENCE}}):
        reasons[requirement] = PROBES[requirement]()
    available = []
    for method in methods:
        reason = reasons[METHODS[method][1]]
        if reason is None:
            available.append(method)
        else:
            out(f"{method}: skipped ({reason})")
    reference_is_sklearn = reasons[METHODS[REFERENCE][1]] is None
    run_methods = list(available)
    if reference_is_sklearn and REFERENCE not in run_methods:
        run_methods.insert(0, REFERENCE)
        out(f"{REFERENCE}: added, it is the RSE reference")
    elif REFERENCE in run_methods:
        run_methods.remove(REFERENCE)
        run_methods.insert(0, REFERENCE)
    reference_name = ("scikit-learn KMeans(n_init=3)" if reference_is_sklearn
                      else "pysketch.metrics.kmeans_plus_plus(n_init=3)")
    if not reference_is_sklearn:
        out("RSE reference: pysketch.metrics.kmeans_plus_plus (n_init=3), scikit-learn is missing")
    if "google-lsh" in available:
        out(f"google-lsh: {_GOOGLE['clustering_algorithm'].__file__} "
            f"(epsilon {GOOGLE_EPSILON:g}, delta {GOOGLE_DELTA:g})")
    out(f"{len(configs)} configurations, {seeds} seeds, max rows {max_rows}, methods: "
        + ", ".join(run_methods))

    rows, report, failed = [], [], False
    dataset = None
    for name, k in configs:
        if dataset is None or dataset.name != name:
            dataset = None
            try:
                dataset = load_real_dataset(name)
            except Exception as exc:   # a missing data package, or its data changed
                out(f"{name}: skipped ({type(exc).__name__}: {exc})")
                continue
        X = subsample(dataset.data, max_rows)
        n, d = X.shape
        label = f"{name} k={k}"
        if k > n:
            out(f"{label}: skipped (k > n = {n})")
            continue
        lower, upper = (np.asarray(b, dtype=np.float64) for b in dataset.bounds)
        out(f"{label}: n = {n} of {dataset.data.shape[0]}, d = {d}")
        per_method = run_config(label, X, k, (lower, upper), run_methods, seeds,
                                reference_is_sklearn, out)
        summaries = {}
        for method, records in per_method.items():
            s = summaries[method] = summarise(records)
            failed |= bool(s["n_errors"] or s["n_problems"])
            line = (f"{label} {method}: median RSE {s['median']:.4f}, p90 {s['p90']:.4f}, "
                    f"median CPU {s['cpu']:.2f} s over {s['n_scored']}/{s['n_fits']} seeds")
            if s["extras"]:
                line += "; medians: " + _fmt_extras(s["extras"])
            out(line)
            if s["warnings"]:
                counts = ", ".join(f"{c} {w}" for w, c in sorted(s["warnings"].items()))
                out(f"    {method} warnings: {counts} (over {s['n_fits']} fits)")
        checks = targets(summaries, n, d)
        rows.append({"name": name, "k": k, "n": n, "d": d, "summaries": summaries,
                     "targets": checks})
        report.append({"name": name, "k": k, "n": n, "d": d, "n_total": dataset.data.shape[0],
                       "methods": {m: {"summary": summaries[m], "seeds": per_method[m]}
                                   for m in per_method},
                       "targets": checks})

    if rows:
        print_table(rows, run_methods, reference_name, out)
        out("")
        for row in rows:
            out(f"{row['name']} k={row['k']} targets: "
                + "; ".join(f"{check} {status}" for check, status in row["targets"].items()))
        wins, total = cell_summary(rows)
        if total:
            status = PASS if 4 * wins >= 3 * total else FAIL
            out(f"(data set, epsilon) cells with pysketch at or below the best peer: {wins} of {total} "
                f"(target: 3 of every 4): {status}")
        cleans = [row["summaries"]["pysketch-clean"]["median"] for row in rows
                  if "pysketch-clean" in row["summaries"]
                  and np.isfinite(row["summaries"]["pysketch-clean"]["median"])]
        if cleans:
            good = sum(c <= 1.05 for c in cleans)
            status = PASS if 2 * good >= len(cleans) else FAIL
            out(f"clean median <= 1.05 on {good} of {len(cleans)} configurations "
                f"(target: at least half): {status}")
    else:
        out("no configuration ran")

    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(_jsonable({"argv": sys.argv[1:] if argv is None else list(argv),
                                 "seeds": seeds, "max_rows": max_rows, "threads": threads,
                                 "versions": _versions(), "reference": reference_name,
                                 "skipped_methods": {m: reasons[METHODS[m][1]] for m in methods
                                                     if m not in available},
                                 "configurations": report}), f, indent=1)
        out(f"per-seed results written to {a.json}")

    if a.quick and failed:
        out("quick: FAILED (a method raised an exception or returned bad centres)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
