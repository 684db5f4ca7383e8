r"""Metrics of clustering and mixture learning, and the k-means baseline they need.

k-means risk (Chatalic 2020 thesis, eq. (4.3), with the notes' erratum: the thesis prints
"arg min", the risk is the min; seed003 pitfall 17 and seed000 sec. 1.1):

.. math::

    \mathrm{SSE}(X, C) = \sum_{i=1}^n \min_{1 \le j \le k} \|x_i - c_j\|_2^2,
    \qquad \mathrm{MSE}(X, C) = \mathrm{SSE}(X, C) / n.

Relative SSE (thesis eq. (4.4); "RSSE" in Chatalic et al.'s privacy paper):
:math:`\mathrm{RSE}(X, C) = \mathrm{SSE}(X, C) / \mathrm{SSE}(X, C_{\text{k-means}})`,
where :math:`C_{\text{k-means}}` is Lloyd's algorithm with k-means++ seeding, best of 3
runs (thesis ch. 4 footnote 10). The baseline here is this module's own Lloyd
(:func:`kmeans_plus_plus`), so scikit-learn is not needed.

Also: :func:`assign` (nearest center), :func:`adjusted_rand_index` (Hubert & Arabie 1985)
and :func:`gaussian_mixture_log_likelihood` (diagonal covariances).

Memory. Every function works through the records in row chunks (``chunk_size`` rows;
by default about 2**20 float64 values per temporary), so its extra memory is O(chunk *
(k + d)) plus, for :func:`assign` and :func:`kmeans_plus_plus`, O(n) for the labels
and distances. Data may be a float32 or float64 array or memmap; each chunk is
converted to float64 on its own, and all arithmetic is float64.

Accuracy of the distances. The nearest center of a record is found with one matrix
product per chunk, from :math:`\|c_j - s\|^2 - 2\langle x - s, c_j - s\rangle` (the
:math:`\|x - s\|^2` term does not change the arg min), where the common shift :math:`s`
(the mean of the centers, or of the data in k-means) removes most of the cancellation
when the data is far from the origin. The squared distance to the chosen center is then
computed directly from the difference :math:`x - c_{a(x)}` (relative error a few
:math:`d u`, :math:`u = 2^{-53}`; no clamp needed; exactly 0 when the record equals the
center). So the SSE is a sum of accurately computed squared distances; it can exceed
the true minimum only for a record whose two nearest centers are tied to within the
rounding error of the product, about :math:`4 u (\|x - s\|^2 + \|c - s\|^2)`, and then
by at most that much.
"""

import math
import numbers

import numpy as np
from scipy import sparse, special

from ._checks import check_int as _check_int
from ._random import as_generator

__all__ = [
    "adjusted_rand_index",
    "assign",
    "gaussian_mixture_log_likelihood",
    "kmeans_plus_plus",
    "mse",
    "relative_sse",
    "sse",
]

#: Target number of float64 values in one chunk temporary (8 MiB).
_CHUNK_VALUES = 1 << 20
#: Tolerance on |sum(weights) - 1| of mixture weights.
WEIGHTS_SUM_TOL = 1e-9
_FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


# ---------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------




def _check_chunk_size(chunk_size):
    if chunk_size is None:
        return None
    return _check_int(chunk_size, "chunk_size")


def _as_real_array(a, name):
    """An ndarray of real numbers: float32/float64 arrays (memmaps too) as they are, other
    real or integer inputs converted to float64. Complex, str or object data is refused."""
    if isinstance(a, np.ndarray) and a.dtype in _FLOAT_DTYPES:
        return a
    try:
        arr = np.asarray(a)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array of real numbers; got {type(a).__name__}") from exc
    if arr.dtype.kind in "biuf":
        return arr.astype(np.float64)
    if arr.dtype.kind == "O":
        try:
            return arr.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name} must be an array of real numbers; got an object array") from exc
    raise TypeError(f"{name} must be an array of real numbers; got dtype {arr.dtype}")


def _all_finite(A, chunk):
    for start in range(0, A.shape[0], chunk):
        if not np.isfinite(A[start : start + chunk]).all():
            return False
    return True


def _check_data(X, name="X"):
    """A 2-D (n, d) array of finite reals with n, d >= 1 (float32/float64 kept as is)."""
    A = _as_real_array(X, name)
    if A.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array of shape (n, d); got shape {A.shape}")
    if A.shape[0] < 1 or A.shape[1] < 1:
        raise ValueError(f"{name} must have at least one row and one column; got shape {A.shape}")
    if not _all_finite(A, max(1, _CHUNK_VALUES // A.shape[1])):
        raise ValueError(f"{name} must be finite; it holds NaN or infinite values")
    return A


def _check_matrix(C, d, name, rows_name="k"):
    """A 2-D (rows, d) float64 array of finite reals with rows >= 1."""
    A = _as_real_array(C, name).astype(np.float64, copy=False)
    if A.ndim != 2 or A.shape[1] != d or A.shape[0] < 1:
        raise ValueError(
            f"{name} must be a 2-D array of shape ({rows_name}, d={d}) with {rows_name} >= 1; "
            f"got shape {A.shape}"
        )
    if not np.isfinite(A).all():
        raise ValueError(f"{name} must be finite; it holds NaN or infinite values")
    return A


def _check_tol(tol):
    if isinstance(tol, (bool, np.bool_)) or not isinstance(tol, numbers.Real):
        raise TypeError(f"tol must be a finite real number >= 0; got {tol!r} of type {type(tol).__name__}")
    t = float(tol)
    if not (math.isfinite(t) and t >= 0.0):
        raise ValueError(f"tol must be a finite real number >= 0; got {tol!r}")
    return t


def _rows_per_chunk(chunk_size, k, d):
    if chunk_size is not None:
        return chunk_size
    return max(1, _CHUNK_VALUES // (k + 2 * d))


# ---------------------------------------------------------------------------------------
# Nearest centers (chunks of validated data)
# ---------------------------------------------------------------------------------------


# Every chunk loop below writes into work buffers allocated once per pass (``out=``):
# allocating fresh (chunk, d) temporaries at every chunk costs page faults that, measured
# when this was written, made a pass several times slower than the arithmetic.


def _chunk(X, start, stop, buf):
    """Rows [start, stop) of X as float64: a view when X is float64, else converted into
    the (rows, d) float64 buffer `buf`."""
    if X.dtype == np.float64:
        return np.asarray(X[start:stop])
    out = buf[: stop - start]
    np.copyto(out, X[start:stop])
    return out


def _buffers(rows, *widths):
    """Work buffers of shape (rows, w) (or (rows,) for w None), float64."""
    return [np.empty(rows) if w is None else np.empty((rows, w)) for w in widths]


def _scan(X, centers, shift, rows, labels_out=None, dist_out=None, disp=None):
    """One pass over X: nearest centers, squared distances to them and their total.

    The nearest center of a record x is the arg min over j of
    ||c_j - s||^2 - 2 <x - s, c_j - s> (one matrix product per chunk, `shift` s making the
    numbers small); the squared distance to it is then recomputed from the difference
    x - c, in the original coordinates. Ties go to the lowest index.

    Optionally writes the labels and distances into (n,) arrays, and accumulates into
    `disp` (k, d) the sum over the records of each center of x - c (Lloyd's update is
    c + disp / count: a center whose records all equal it does not move, exactly).
    Returns (total squared distance, counts per center if `disp` is given, else None).
    """
    n, d = X.shape
    k = centers.shape[0]
    rows = min(rows, n)
    cs = centers - shift
    c_sq = np.einsum("ij,ij->i", cs, cs)
    cs_t = np.ascontiguousarray(cs.T)  # (d, k): BLAS is much faster on it than on cs.T
    b_read, b_shift, b_diff, b_scores, b_dist = _buffers(rows, d, d, d, k, None)
    partial = []
    counts = np.zeros(k, dtype=np.int64) if disp is not None else None
    for start in range(0, n, rows):
        stop = min(start + rows, n)
        m = stop - start
        xr = _chunk(X, start, stop, b_read)
        if k == 1:
            lab = np.zeros(m, dtype=np.intp)
        else:
            xs = np.subtract(xr, shift, out=b_shift[:m])
            scores = np.matmul(xs, cs_t, out=b_scores[:m])
            scores *= -2.0
            scores += c_sq
            lab = np.argmin(scores, axis=1)
        diff = np.take(centers, lab, axis=0, out=b_diff[:m], mode="clip")
        np.subtract(xr, diff, out=diff)
        dist = np.einsum("ij,ij->i", diff, diff, out=b_dist[:m])
        partial.append(float(np.sum(dist)))
        if labels_out is not None:
            labels_out[start:stop] = lab
        if dist_out is not None:
            dist_out[start:stop] = dist
        if disp is not None:
            # One-hot (k, m) sparse matrix times the differences: per-center sums.
            onehot = sparse.csr_matrix((np.ones(m), (lab, np.arange(m))), shape=(k, m))
            disp += onehot @ diff
            counts += np.bincount(lab, minlength=k)
    return math.fsum(partial), counts


def sse(X, centers, *, chunk_size=None):
    r"""Sum of squared errors: :math:`\sum_i \min_j \|x_i - c_j\|_2^2`.

    Thesis eq. (4.3) times n, with min (the printed "arg min" is an erratum; notes
    seed003 pitfall 17).

    Parameters
    ----------
    X : array_like of shape (n, d)
        Records, finite. float32 and float64 arrays and memmaps are read in chunks
        without a full copy; other inputs (lists, integer arrays) are converted to a
        float64 array first.
    centers : array_like of shape (k, d)
        Finite. Any k >= 1 (k > n is allowed).
    chunk_size : int, optional
        Rows per chunk (default: about 2**20 / (k + 2 d)). The result does not depend on
        it beyond the last bits of the sum.

    Returns
    -------
    float
        The SSE. Each term is the squared distance, computed from the differences, to
        the center chosen by a shifted matrix product (see the module docstring for the
        accuracy).
    """
    X, chunk_size = _check_data(X), _check_chunk_size(chunk_size)
    C = _check_matrix(centers, X.shape[1], "centers")
    return _sse(X, C, chunk_size)


def _sse(X, C, chunk_size):
    """SSE of validated data and centers."""
    total, _ = _scan(X, C, C.mean(axis=0), _rows_per_chunk(chunk_size, C.shape[0], X.shape[1]))
    return total


def mse(X, centers, *, chunk_size=None):
    """Mean squared error, ``sse(X, centers) / n`` (thesis eq. (4.3), with min)."""
    X, chunk_size = _check_data(X), _check_chunk_size(chunk_size)
    C = _check_matrix(centers, X.shape[1], "centers")
    return _sse(X, C, chunk_size) / X.shape[0]


def assign(X, centers, *, chunk_size=None, return_distances=False):
    """Index of the nearest center of every record.

    Parameters
    ----------
    X : array_like of shape (n, d)
    centers : array_like of shape (k, d)
    chunk_size : int, optional
        Rows per chunk.
    return_distances : bool, default False
        Also return the squared distances to the chosen centers (computed from the
        differences).

    Returns
    -------
    labels : ndarray of shape (n,), numpy.intp
        Ties (equal computed scores) go to the lowest index.
    distances : ndarray of shape (n,), float64, only if `return_distances`
    """
    X = _check_data(X)
    C = _check_matrix(centers, X.shape[1], "centers")
    chunk_size = _check_chunk_size(chunk_size)
    n = X.shape[0]
    labels = np.empty(n, dtype=np.intp)
    dist = np.empty(n) if return_distances else None
    _scan(X, C, C.mean(axis=0), _rows_per_chunk(chunk_size, C.shape[0], X.shape[1]), labels, dist)
    return (labels, dist) if return_distances else labels


# ---------------------------------------------------------------------------------------
# k-means: k-means++ seeding and Lloyd's iterations
# ---------------------------------------------------------------------------------------


def _mean_and_variance(X, rows):
    """Per-feature mean and the mean over features of the per-feature variance, in one
    chunked pass, with the data shifted by its first row to limit cancellation."""
    n, d = X.shape
    rows = min(rows, n)
    ref = np.asarray(X[0], dtype=np.float64)
    s1 = np.zeros(d)
    s2 = np.zeros(d)
    b_read, b_shift = _buffers(rows, d, d)
    ones = np.ones(rows)
    for start in range(0, n, rows):
        stop = min(start + rows, n)
        xs = np.subtract(_chunk(X, start, stop, b_read), ref, out=b_shift[: stop - start])
        s1 += ones[: stop - start] @ xs
        s2 += np.einsum("ij,ij->j", xs, xs)
    m1 = s1 / n
    var = np.maximum(s2 / n - m1 * m1, 0.0)
    return ref + m1, float(var.mean())


def _squared_distances_to(X, c, rows, out):
    """out[i] = ||x_i - c||^2 (from the differences), chunked."""
    n, d = X.shape
    rows = min(rows, n)
    b_read, b_diff = _buffers(rows, d, d)
    for start in range(0, n, rows):
        stop = min(start + rows, n)
        diff = np.subtract(_chunk(X, start, stop, b_read), c, out=b_diff[: stop - start])
        np.einsum("ij,ij->i", diff, diff, out=out[start:stop])


def _sample_d2(rng, weights, size, block):
    """`size` independent indices, each drawn with probability weights[i] / sum(weights)
    (weights >= 0 with a positive sum), by inversion of the cumulative sum, blockwise so
    that no (n,) cumulative sum is made."""
    n = weights.shape[0]
    starts = np.arange(0, n, block)
    block_sums = np.add.reduceat(weights, starts)
    cum = np.cumsum(block_sums)
    last_block = int(np.flatnonzero(block_sums > 0.0)[-1])
    out = np.empty(size, dtype=np.intp)
    for t, u in enumerate(rng.random(size) * cum[-1]):
        b = int(np.searchsorted(cum, u, side="right"))
        if b > last_block:  # u rounded up to the total: the last block with weight
            b = last_block
        before = cum[b - 1] if b > 0 else 0.0
        w = weights[starts[b] : starts[b] + block]
        i = int(np.searchsorted(np.cumsum(w), u - before, side="right"))
        if i >= w.shape[0] or w[i] <= 0.0:  # rounding at the block's end
            i = int(np.flatnonzero(w > 0.0)[-1])
        out[t] = starts[b] + i
    return out


def _local_trials(k, n_local_trials):
    """Candidates per greedy k-means++ step: 2 + floor(ln k) by default (the setting of
    scikit-learn's k-means++, a fact, not its code)."""
    if n_local_trials is None:
        return 2 + int(math.log(k))
    return n_local_trials


def _kmeans_pp_seed(X, k, shift, rng, rows, d2, n_local_trials):
    """Greedy k-means++ seeding.

    k-means++ (Arthur & Vassilvitskii 2007, "k-means++: the advantages of careful
    seeding", SODA, sec. 2.2): the first center is a record drawn uniformly; each next
    one is a record drawn with probability D(x)^2 / sum D^2, D(x) being the distance to
    the nearest center chosen so far. Greedy variant (described in the same paper and
    analysed by Grunau, Ozudogru, Rozhon & Tetek 2023, "A nearly tight analysis of greedy
    k-means++", SODA): each step draws `n_local_trials` candidates by D^2 sampling and
    keeps the one that gives the lowest potential sum_x min(D(x)^2, ||x - cand||^2).
    The candidates are ranked with the expanded distance ||x-s||^2 - 2 <x-s, c-s> +
    ||c-s||^2 (one matrix product; s = `shift`, the data mean); the distances D(x) kept
    for the next step come from the differences. With one trial this is plain
    k-means++. If every record coincides with a chosen center (sum D^2 = 0), candidates
    are drawn uniformly.

    Returns the (k, d) seeds (copies of records); `d2` (n,) is used as work space and
    ends up holding the squared distances to the nearest seed.
    """
    n, d = X.shape
    centers = np.empty((k, d))
    work = np.empty(n)
    centers[0] = np.asarray(X[int(rng.integers(n))], dtype=np.float64)
    _squared_distances_to(X, centers[0], rows, d2)
    block = max(1, min(n, 1 << 16))
    trials = n_local_trials
    trial_rows = max(1, _CHUNK_VALUES // (trials + d))
    if trials > 1:  # ||x - s||^2 of every record, for ranking the candidates
        x_sq = np.empty(n)
        _squared_distances_to(X, shift, rows, x_sq)
        trial_rows = min(trial_rows, n)
        ones = np.ones(trial_rows)
        b_read, b_shift, b_dist = _buffers(trial_rows, d, d, trials)
    for j in range(1, k):
        if np.any(d2 > 0.0):
            cand = _sample_d2(rng, d2, trials, block)
        else:
            cand = rng.integers(n, size=trials)
        if trials == 1:
            best = int(cand[0])
        else:
            cc = np.asarray(X[cand], dtype=np.float64) - shift
            cc_sq = np.einsum("ij,ij->i", cc, cc)
            cc_t = np.ascontiguousarray(cc.T)
            potential = np.zeros(trials)
            for start in range(0, n, trial_rows):
                stop = min(start + trial_rows, n)
                m = stop - start
                xs = np.subtract(_chunk(X, start, stop, b_read), shift, out=b_shift[:m])
                dist = np.matmul(xs, cc_t, out=b_dist[:m])
                dist *= -2.0
                dist += x_sq[start:stop, None]
                dist += cc_sq
                np.clip(dist, 0.0, d2[start:stop, None], out=dist)
                potential += ones[: stop - start] @ dist  # column sums (BLAS)
            best = int(cand[int(np.argmin(potential))])
        centers[j] = np.asarray(X[best], dtype=np.float64)
        _squared_distances_to(X, centers[j], rows, work)
        np.minimum(d2, work, out=d2)
    return centers


def _lloyd(X, centers, shift, max_iter, tol_abs, rows, labels, prev, dist):
    """Lloyd's iterations from `centers` ((k, d), modified in place).

    Each iteration assigns every record to its nearest center and moves each center to
    the mean of its records, computed as c + mean(x - c) (so a center whose records all
    equal it stays exactly where it is). A center left without records is re-seeded on
    the record farthest from its own center (the farthest records go to the empty
    centers, one each). Stops when the assignment no longer changes (a fixed point),
    when the centers move by at most `tol_abs` in total squared distance (the
    scikit-learn convention for `tol`), or after `max_iter` iterations. `shift` only
    serves the nearest-center products (see _scan).

    `labels`, `prev` (int32 (n,)) and `dist` (float64 (n,)) are work space.
    Returns (centers, SSE of these centers, iterations).
    """
    k, d = centers.shape
    have_prev = False
    it = 0
    for it in range(1, max_iter + 1):
        disp = np.zeros((k, d))
        total, counts = _scan(X, centers, shift, rows, labels, dist, disp)
        if have_prev and np.array_equal(labels, prev):
            return centers, total, it  # the centers are the means of this assignment
        step = np.zeros((k, d))
        filled = counts > 0
        step[filled] = disp[filled] / counts[filled, None]
        empty = np.flatnonzero(~filled)
        if empty.size:
            far = np.argpartition(dist, -empty.size)[-empty.size :]
            far = far[np.argsort(dist[far])[::-1]]
            for j, i in zip(empty, far):
                step[j] = np.asarray(X[i], dtype=np.float64) - centers[j]
        moved = float(np.sum(step * step))
        centers += step
        labels, prev = prev, labels
        have_prev = True
        if moved <= tol_abs:
            break
    total, _ = _scan(X, centers, shift, rows)
    return centers, total, it


def _kmeans(X, k, n_init, max_iter, tol, rng, chunk_size, n_local_trials=None):
    """Best of `n_init` runs of greedy k-means++ seeding + Lloyd, on validated data.
    Returns (centers, SSE) with the SSE computed exactly as sse(X, centers) does."""
    n, d = X.shape
    rows = _rows_per_chunk(chunk_size, k, d)
    mean, mean_var = _mean_and_variance(X, rows)
    tol_abs = tol * mean_var
    trials = _local_trials(k, n_local_trials)
    labels = np.empty(n, dtype=np.int32)
    prev = np.empty(n, dtype=np.int32)
    dist = np.empty(n)
    best_centers, best_sse = None, math.inf
    for _ in range(n_init):
        seeds = _kmeans_pp_seed(X, k, mean, rng, rows, dist, trials)
        centers, total, _ = _lloyd(X, seeds, mean, max_iter, tol_abs, rows, labels, prev, dist)
        if best_centers is None or total < best_sse:
            best_centers, best_sse = centers, total
    # Recomputed as sse() computes it, so that sse(X, centers) is the same number.
    return best_centers, _sse(X, best_centers, chunk_size)


def kmeans_plus_plus(
    X,
    k,
    *,
    n_init=3,
    max_iter=300,
    tol=1e-4,
    random_state=None,
    n_local_trials=None,
    chunk_size=None,
):
    """k-means by Lloyd's algorithm with k-means++ seeding, best of `n_init` runs.

    This is the baseline of the relative SSE (thesis eq. (4.4): Lloyd, k-means++
    initialization, 3 trials). It is this library's own implementation (scikit-learn is
    not needed): seeding by D^2 sampling (Arthur & Vassilvitskii 2007, sec. 2.2) in its
    greedy form (several candidates per step, the best kept; the variant scikit-learn
    uses), Lloyd's iterations in float64 with chunked assignment, and empty clusters
    re-seeded on the farthest records.

    Why greedy: on the thesis's benchmark model (k = d = 10, rho^2 = 9.9, n = 20000;
    4 datasets x 8 seeds, checked when this was written) plain k-means++ with 3 runs
    ended 13-22% above the best SSE found in 19 of 32 cases, the greedy form in 0 of 32
    (scikit-learn's KMeans(n_init=3): 1 of 32). A weak baseline would make every
    relative SSE look too good. Pass ``n_local_trials=1`` for the plain algorithm.

    Parameters
    ----------
    X : array_like of shape (n, d)
        Finite records; float32/float64 arrays and memmaps are read in chunks.
    k : int, 1 <= k <= n
        Number of centers.
    n_init : int >= 1, default 3
        Independent seedings; the run of lowest SSE is kept.
    max_iter : int >= 1, default 300
        Lloyd iterations per run.
    tol : float >= 0, default 1e-4
        A run stops when the total squared displacement of the centers in one iteration
        is at most ``tol`` times the mean per-feature variance of X (or when the
        assignment no longer changes, or after `max_iter` iterations).
    random_state : None, int, numpy.random.Generator, ...
        See :func:`pysketch._random.as_generator`.
    n_local_trials : int >= 1, optional
        Candidates drawn per seeding step; default ``2 + floor(ln k)``; 1 is plain
        k-means++.
    chunk_size : int, optional
        Rows per chunk.

    Returns
    -------
    centers : ndarray of shape (k, d), float64
    sse : float
        ``sse(X, centers)`` of the returned centers.
    """
    X = _check_data(X)
    n = X.shape[0]
    k = _check_int(k, "k")
    if k > n:
        raise ValueError(f"k must be <= n (the number of records, {n}); got k={k}")
    n_init = _check_int(n_init, "n_init")
    max_iter = _check_int(max_iter, "max_iter")
    tol = _check_tol(tol)
    if n_local_trials is not None:
        n_local_trials = _check_int(n_local_trials, "n_local_trials")
    chunk_size = _check_chunk_size(chunk_size)
    rng = as_generator(random_state)
    return _kmeans(X, k, n_init, max_iter, tol, rng, chunk_size, n_local_trials)


def relative_sse(
    X,
    centers,
    *,
    baseline_centers=None,
    n_init=3,
    random_state=None,
    return_baseline=False,
    chunk_size=None,
):
    r"""Relative SSE, thesis eq. (4.4): SSE(X, centers) / SSE(X, k-means baseline).

    The baseline is :func:`kmeans_plus_plus` (this library's Lloyd with greedy
    k-means++ seeding, best of `n_init` = 3 runs as in the thesis, ch. 4 footnote 10;
    its defaults max_iter=300, tol=1e-4) with as many centers as `centers`, unless
    `baseline_centers` is given. A value near 1 means the
    centers are as good as k-means; it can be below 1 when the centers beat the
    baseline's local optimum (no clipping is applied; the thesis's plots clip to
    [1, 20]). More baseline runs lower the baseline SSE and shift the ratio up (notes
    pitfall 17), so report `n_init` with the result.

    Parameters
    ----------
    X : array_like of shape (n, d)
    centers : array_like of shape (k, d)
    baseline_centers : array_like of shape (k, d), optional
        Precomputed baseline centers (e.g. shared by several comparisons, or from another
        k-means implementation).
    n_init : int >= 1, default 3
        Runs of the baseline (unused with `baseline_centers`).
    random_state : None, int, numpy.random.Generator, ...
        Seeds the baseline (unused with `baseline_centers`).
    return_baseline : bool, default False
        Also return the baseline centers and their SSE.
    chunk_size : int, optional
        Rows per chunk.

    Returns
    -------
    ratio : float
        SSE(X, centers) / SSE(X, baseline). If the baseline SSE is 0 (X has at most k
        distinct records), the ratio is 1.0 when SSE(X, centers) is 0 too, else +inf.
    baseline_centers : ndarray of shape (k, d), only if `return_baseline`
    baseline_sse : float, only if `return_baseline`
    """
    X = _check_data(X)
    n, d = X.shape
    C = _check_matrix(centers, d, "centers")
    k = C.shape[0]
    n_init = _check_int(n_init, "n_init")
    if not isinstance(return_baseline, (bool, np.bool_)):
        raise TypeError(f"return_baseline must be True or False; got {return_baseline!r}")
    chunk_size = _check_chunk_size(chunk_size)
    if baseline_centers is None:
        if k > n:
            raise ValueError(
                f"centers has k={k} rows, more than the n={n} records: the k-means baseline "
                "needs k <= n (or pass baseline_centers)"
            )
        rng = as_generator(random_state)
        B, base = _kmeans(X, k, n_init, 300, 1e-4, rng, chunk_size)
    else:
        B = _check_matrix(baseline_centers, d, "baseline_centers")
        if B.shape[0] != k:
            raise ValueError(
                f"baseline_centers must have as many rows as centers (k={k}); got shape {B.shape}"
            )
        base = _sse(X, B, chunk_size)
    num = _sse(X, C, chunk_size)
    if base == 0.0:
        ratio = 1.0 if num == 0.0 else math.inf
    else:
        ratio = num / base
    return (ratio, B, base) if return_baseline else ratio


# ---------------------------------------------------------------------------------------
# Adjusted Rand index
# ---------------------------------------------------------------------------------------


def _check_labels(labels, name):
    try:
        a = np.asarray(labels)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a 1-D array of labels; got {type(labels).__name__}") from exc
    if a.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of labels; got shape {a.shape}")
    if a.dtype.kind in "fc" and not np.isfinite(a).all():
        raise ValueError(f"{name} must not hold NaN or infinite labels")
    if a.dtype.kind == "O" and np.asarray(a != a, dtype=bool).any():  # only NaN != itself
        raise ValueError(f"{name} must not hold NaN labels")
    try:
        _, codes = np.unique(a, return_inverse=True)
    except TypeError as exc:
        raise TypeError(f"{name} must hold mutually comparable labels ({exc})") from exc
    return codes.reshape(-1).astype(np.int64, copy=False)


def _pairs(counts):
    """sum of C(c, 2) over an int64 array of counts, as a Python int (exact)."""
    c = counts.astype(np.int64, copy=False)
    return int(np.sum(c * (c - 1) // 2, dtype=np.int64))


def adjusted_rand_index(labels_true, labels_pred):
    r"""Adjusted Rand index of two partitions (Hubert & Arabie 1985, "Comparing
    partitions", J. Classification 2, eq. (5)).

    From the contingency table :math:`n_{ij}` with row sums :math:`a_i`, column sums
    :math:`b_j` and :math:`N = \binom{n}{2}`:

    .. math::

        \mathrm{ARI} = \frac{\sum_{ij}\binom{n_{ij}}{2} - S_a S_b / N}
                            {\tfrac12 (S_a + S_b) - S_a S_b / N},
        \qquad S_a = \sum_i \binom{a_i}{2},\quad S_b = \sum_j \binom{b_j}{2}.

    The four sums are exact integers; the ratio is formed from integers (numerator and
    denominator multiplied by 2N) and rounded once to float, so the result is the
    correctly rounded value of the formula (exact while n < 2**31).

    Edge cases. The denominator is 0 exactly when both partitions are a single cluster,
    or both are all singletons, or n = 1: the two partitions are then identical and the
    ARI is defined as 1.0 (the usual convention, as in scikit-learn). A single cluster
    against any other partition gives 0.0 from the formula. Label values are only
    compared for equality (names and their order do not matter).

    Parameters
    ----------
    labels_true, labels_pred : array_like of shape (n,)
        Labels of any comparable type (ints, strings, ...), n >= 1, no NaN.

    Returns
    -------
    float
        In [-1, 1]; 1.0 for identical partitions, about 0 in expectation for independent
        random ones (the permutation model).
    """
    a = _check_labels(labels_true, "labels_true")
    b = _check_labels(labels_pred, "labels_pred")
    n = a.shape[0]
    if b.shape[0] != n:
        raise ValueError(
            f"labels_true and labels_pred must have the same length; got {n} and {b.shape[0]}"
        )
    if n == 0:
        raise ValueError("labels_true and labels_pred must not be empty")
    kb = int(b.max()) + 1
    _, cells = np.unique(a * kb + b, return_counts=True)
    index = _pairs(cells)
    s_a = _pairs(np.bincount(a))
    s_b = _pairs(np.bincount(b))
    total = n * (n - 1) // 2
    # (index - s_a s_b / N) / ((s_a + s_b)/2 - s_a s_b / N), both multiplied by 2N.
    numerator = 2 * total * index - 2 * s_a * s_b
    denominator = total * (s_a + s_b) - 2 * s_a * s_b
    if denominator == 0:
        return 1.0
    return numerator / denominator  # int / int: correctly rounded


# ---------------------------------------------------------------------------------------
# Gaussian mixture log-likelihood
# ---------------------------------------------------------------------------------------


def _check_mixture_weights(weights, k):
    w = _as_real_array(weights, "weights").astype(np.float64, copy=False)
    if w.shape != (k,):
        raise ValueError(f"weights must have shape ({k},) (one per component); got shape {w.shape}")
    if not np.isfinite(w).all() or np.any(w < 0.0):
        raise ValueError(f"weights must be finite and >= 0; got {w.tolist()}")
    total = math.fsum(w.tolist())
    if abs(total - 1.0) > WEIGHTS_SUM_TOL:
        raise ValueError(f"weights must sum to 1 (within {WEIGHTS_SUM_TOL:g}); they sum to {total!r}")
    return w


def gaussian_mixture_log_likelihood(
    X, weights, means, covariances, *, average=True, chunk_size=None
):
    r"""Log-likelihood of records under a Gaussian mixture with diagonal covariances.

    .. math::

        \log p(x) = \operatorname{logsumexp}_i \Big( \log\alpha_i
            - \tfrac12 \big[ d \log 2\pi + \textstyle\sum_j \log v_{ij}
            + \sum_j (x_j - \mu_{ij})^2 / v_{ij} \big] \Big),

    computed with a log-sum-exp (scipy.special.logsumexp), so records far from every
    component give finite values instead of log(0).

    The Mahalanobis terms come from two matrix products per chunk after a common shift
    s (the mean of the means): :math:`\sum_j ((x-s)_j^2 - 2 (x-s)_j m_{ij} + m_{ij}^2)/v_{ij}`
    with :math:`m_i = \mu_i - s`, clamped at 0. Their absolute error is a few
    :math:`u \sum_j ((x-s)_j^2 + m_{ij}^2)/v_{ij}`, :math:`u = 2^{-53}`: negligible for
    comparing mixtures.

    Parameters
    ----------
    X : array_like of shape (n, d)
    weights : array_like of shape (k,)
        Finite, >= 0 (a zero weight drops its component), summing to 1 within 1e-9.
    means : array_like of shape (k, d)
    covariances : array_like of shape (k, d)
        The diagonal variances v_i, finite and > 0 (scikit-learn's 'diag' layout).
    average : bool, default True
        Return the mean over records (the usual score for comparing mixtures); False
        returns the (n,) array of per-record log-likelihoods.
    chunk_size : int, optional
        Rows per chunk.

    Returns
    -------
    float, or ndarray of shape (n,) if not `average`
    """
    X = _check_data(X)
    n, d = X.shape
    mu = _check_matrix(means, d, "means")
    k = mu.shape[0]
    var = _check_matrix(covariances, d, "covariances")
    if var.shape[0] != k:
        raise ValueError(f"covariances must have shape (k={k}, d={d}) like means; got shape {var.shape}")
    if np.any(var <= 0.0):
        raise ValueError("covariances (the diagonal variances) must all be > 0")
    w = _check_mixture_weights(weights, k)
    chunk_size = _check_chunk_size(chunk_size)

    shift = mu.mean(axis=0)
    m = mu - shift
    with np.errstate(over="ignore"):
        prec = 1.0 / var
    if not np.isfinite(prec).all():
        raise ValueError("covariances are too small: 1/variance overflows")
    mp = m * prec
    const = np.einsum("ij,ij->i", m, mp)  # sum_j m_ij^2 / v_ij
    with np.errstate(divide="ignore"):
        log_w = np.log(w)
    # log alpha_i - (d log 2 pi + sum_j log v_ij) / 2
    log_norm = log_w - 0.5 * (d * math.log(2.0 * math.pi) + np.log(var).sum(axis=1))

    rows = min(_rows_per_chunk(chunk_size, 2 * k, d), n)
    out = None if average else np.empty(n)
    partial = []
    prec_t = np.ascontiguousarray(prec.T)
    mp2_t = np.ascontiguousarray(-2.0 * mp.T)
    b_read, b_shift, b_sq, b_maha, b_cross = _buffers(rows, d, d, d, k, k)
    for start in range(0, n, rows):
        stop = min(start + rows, n)
        m = stop - start
        xs = np.subtract(_chunk(X, start, stop, b_read), shift, out=b_shift[:m])
        maha = np.matmul(np.multiply(xs, xs, out=b_sq[:m]), prec_t, out=b_maha[:m])
        maha += np.matmul(xs, mp2_t, out=b_cross[:m])
        maha += const
        np.maximum(maha, 0.0, out=maha)
        maha *= -0.5
        maha += log_norm
        log_p = special.logsumexp(maha, axis=1)
        if average:
            partial.append(float(np.sum(log_p)))
        else:
            out[start:stop] = log_p
    return math.fsum(partial) / n if average else out
