r"""k-means: the chunked nearest-centre scan, k-means++ seeding and Lloyd's algorithm.

The one k-means library of the package: :mod:`pysketch.metrics` computes its SSE and the
relative SSE's baseline with it, and :mod:`pysketch.kernel_scale` (the separation estimate of
the kernel scale) runs it on its pilot. See :mod:`pysketch.metrics` for how distances
are computed accurately (a common shift, then the chosen centre's distance directly).

Memory. Every function works through the records in row chunks (``chunk_size`` rows;
by default about 2**20 float64 values per temporary), so its extra memory is O(chunk *
(k + d)) plus, for :func:`assign` and :func:`kmeans_plus_plus`, O(n) for the labels
and distances. Data may be a float32 or float64 array or memmap; each chunk is
converted to float64 on its own, and all arithmetic is float64.
"""

import math
import numbers

import numpy as np
from scipy import sparse

from . import _core
from ._checks import check_int as _check_int
from ._checks import check_size, real_array, real_rows
from ._random import as_generator

__all__ = ["CHUNK_VALUES", "assign", "check_chunk_size", "check_data", "check_matrix", "check_tol", "diagonal_gmm",
           "kmeans", "weighted_kmeans",
           "kmeans_plus_plus", "kmeans_pp_seed", "lloyd", "local_trials", "rows_per_chunk", "scan",
           "total_sse", "chunk_rows", "work_buffers", "as_real_array"]

#: Target number of float64 values in one chunk temporary (8 MiB).
CHUNK_VALUES = 1 << 20
FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


# ---------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------




def nearest_centers(X, C, labels, d2):
    """For every row of X (float32 or float64, n x d, C-contiguous): labels (int64, n) <-
    the first nearest row of C (float64, k x d, C-contiguous) and d2 (float64 or None) <-
    its squared distance, summed in float64 from the differences; multi-threaded C++, never
    an (n, k) matrix. The compiled core's entry for the estimators."""
    _core.nearest_centers(X, C, labels, d2)


def check_chunk_size(chunk_size):
    """`chunk_size` checked: None (the default chunking) or an int >= 1, returned as int.

    Parameters
    ----------
    chunk_size : int or None
        Rows per chunk of a pass, or None for the default (about CHUNK_VALUES values per
        temporary).

    Returns
    -------
    int or None

    Raises
    ------
    TypeError
        For anything that is not an integer (a bool or a float included).
    ValueError
        Below 1.

    Examples
    --------
    >>> from pysketch.cluster import check_chunk_size
    >>> check_chunk_size(None), check_chunk_size(4096)
    (None, 4096)
    """
    if chunk_size is None:
        return None
    return _check_int(chunk_size, "chunk_size")


def as_real_array(a, name):
    """An ndarray of real numbers for the chunked passes.

    float32 and float64 arrays (memmaps too) are returned as they are; other real or
    integer inputs are converted to float64. Complex, str or object data is refused.

    Parameters
    ----------
    a : array_like
        The numbers (any shape).
    name : str
        The argument's name, for messages.

    Returns
    -------
    numpy.ndarray
        float32 or float64.

    Raises
    ------
    TypeError
        If `a` is masked, complex, or not numeric (``pysketch._checks.real_array``).

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.cluster import as_real_array
    >>> as_real_array([1, 2], "x").dtype, as_real_array(np.ones(2, np.float32), "x").dtype
    (dtype('float64'), dtype('float32'))
    """
    if isinstance(a, np.ndarray) and a.dtype in FLOAT_DTYPES:
        return a
    arr = real_array(a, name)
    return arr if arr.dtype in FLOAT_DTYPES else arr.astype(np.float64)


def _all_finite(A, chunk):
    for start in range(0, A.shape[0], chunk):
        if not np.isfinite(A[start : start + chunk]).all():
            return False
    return True


def check_data(X, name="X"):
    """The records of a pass: a 2-D (n, d) array of finite reals with n, d >= 1.

    float32 and float64 arrays are kept as they are (memmaps are not copied); other inputs
    become float64. Finiteness is checked chunk by chunk.

    Parameters
    ----------
    X : array_like of shape (n, d)
        The records.
    name : str, default 'X'
        The argument's name, for messages.

    Returns
    -------
    numpy.ndarray
        float32 or float64, shape (n, d).

    Raises
    ------
    ValueError
        If X is not 2-D, has no row or no column, or holds NaN or infinity.
    TypeError
        If X is masked, complex or not numeric.

    Examples
    --------
    >>> from pysketch.cluster import check_data
    >>> check_data([[1, 2], [3, 4]]).dtype
    dtype('float64')
    """
    A = real_rows(as_real_array(X, name), name)
    if not _all_finite(A, max(1, CHUNK_VALUES // A.shape[1])):
        raise ValueError(f"{name} must be finite; it holds NaN or infinite values")
    return A


def check_matrix(C, d, name, rows_name="k"):
    """A 2-D (rows, d) float64 array of finite reals with rows >= 1 (centres, means,
    variances).

    Parameters
    ----------
    C : array_like
        The matrix.
    d : int
        The number of columns it must have.
    name : str
        The argument's name, for messages.
    rows_name : str, default 'k'
        What its number of rows is called, for messages.

    Returns
    -------
    numpy.ndarray
        float64, shape (rows, d).

    Raises
    ------
    ValueError
        If C is not 2-D with `d` columns and at least one row, or holds NaN or infinity.
    TypeError
        If C is masked, complex or not numeric.

    Examples
    --------
    >>> from pysketch.cluster import check_matrix
    >>> check_matrix([[0, 1], [2, 3]], 2, "centers").shape
    (2, 2)
    """
    A = as_real_array(C, name).astype(np.float64, copy=False)
    if A.ndim != 2 or A.shape[1] != d or A.shape[0] < 1:
        raise ValueError(
            f"{name} must be a 2-D array of shape ({rows_name}, d={d}) with {rows_name} >= 1; "
            f"got shape {A.shape}"
        )
    if not np.isfinite(A).all():
        raise ValueError(f"{name} must be finite; it holds NaN or infinite values")
    return A


def check_tol(tol):
    """`tol` as a float: a finite real number >= 0 (not bool).

    Parameters
    ----------
    tol : float
        A stopping tolerance.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        For anything that is not a real number.
    ValueError
        For a negative or non-finite number.

    Examples
    --------
    >>> from pysketch.cluster import check_tol
    >>> check_tol(1e-4), check_tol(0)
    (0.0001, 0.0)
    """
    if isinstance(tol, (bool, np.bool_)) or not isinstance(tol, numbers.Real):
        raise TypeError(f"tol must be a finite real number >= 0; got {tol!r} of type {type(tol).__name__}")
    t = float(tol)
    if not (math.isfinite(t) and t >= 0.0):
        raise ValueError(f"tol must be a finite real number >= 0; got {tol!r}")
    return t


def rows_per_chunk(chunk_size, k, d):
    """The rows of one chunk of a pass.

    Parameters
    ----------
    chunk_size : int or None
        A checked `chunk_size` (`check_chunk_size`); returned when given.
    k, d : int
        Distances and coordinates per row.

    Returns
    -------
    int
        `chunk_size`, else as many rows of k distances and 2 d coordinates as fit in
        CHUNK_VALUES (2**20) float64 values, at least one.

    Examples
    --------
    >>> from pysketch.cluster import rows_per_chunk
    >>> rows_per_chunk(None, 8, 2), rows_per_chunk(100, 8, 2)
    (87381, 100)
    """
    if chunk_size is not None:
        return chunk_size
    return max(1, CHUNK_VALUES // (k + 2 * d))


# ---------------------------------------------------------------------------------------
# Nearest centers (chunks of validated data)
# ---------------------------------------------------------------------------------------


# Every chunk loop below writes into work buffers allocated once per pass (``out=``):
# allocating fresh (chunk, d) temporaries at every chunk costs page faults that, measured
# when this was written, made a pass several times slower than the arithmetic.


def chunk_rows(X, start, stop, buf):
    """Rows [start, stop) of X as float64: a view when X is float64, else converted into the
    (rows, d) float64 buffer `buf`.

    Parameters
    ----------
    X : numpy.ndarray
        float32 or float64 records (a memmap is read only at these rows).
    start, stop : int
        The rows to read.
    buf : numpy.ndarray
        A float64 work buffer of at least stop - start rows and d columns (`work_buffers`),
        used only when X is not float64.

    Returns
    -------
    numpy.ndarray
        (stop - start, d) float64.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.cluster import chunk_rows, work_buffers
    >>> X = np.arange(8, dtype=np.float32).reshape(4, 2)
    >>> (buf,) = work_buffers(2, 2)
    >>> chunk_rows(X, 2, 4, buf)
    array([[4., 5.],
           [6., 7.]])
    """
    if X.dtype == np.float64:
        return np.asarray(X[start:stop])
    out = buf[: stop - start]
    np.copyto(out, X[start:stop])
    return out


def work_buffers(rows, *widths):
    """Work buffers of shape (rows, w) (or (rows,) for w None), float64, uninitialized.

    Parameters
    ----------
    rows : int
        Rows of every buffer.
    *widths : int or None
        One buffer per width.

    Returns
    -------
    list of numpy.ndarray

    Examples
    --------
    >>> from pysketch.cluster import work_buffers
    >>> [b.shape for b in work_buffers(16, 3, None)]
    [(16, 3), (16,)]
    """
    return [np.empty(rows) if w is None else np.empty((rows, w)) for w in widths]


def scan(X, centers, shift, rows, labels_out=None, dist_out=None, disp=None):
    """One pass over X: nearest centers, squared distances to them and their total.

    The nearest center of a record x is the arg min over j of
    ||c_j - s||^2 - 2 <x - s, c_j - s> (one matrix product per chunk, `shift` s making the
    numbers small); the squared distance to it is then recomputed from the difference
    x - c, in the original coordinates. Ties go to the lowest index.

    Parameters
    ----------
    X : numpy.ndarray
        Validated (n, d) records (`check_data`), float32 or float64.
    centers : numpy.ndarray
        Validated (k, d) float64 centers.
    shift : numpy.ndarray
        (d,) float64, subtracted from records and centers in the products (their mean).
    rows : int
        Rows per chunk (`rows_per_chunk`).
    labels_out, dist_out : numpy.ndarray, optional
        (n,) arrays that receive the labels and the squared distances.
    disp : numpy.ndarray, optional
        A (k, d) float64 array into which the sum over the records of each center of x - c
        is added (Lloyd's update is c + disp / count: a center whose records all equal it
        does not move, exactly).

    Returns
    -------
    total : float
        The sum of the squared distances (the SSE).
    counts : numpy.ndarray or None
        Records per center (int64, (k,)) when `disp` is given, else None.

    Raises
    ------
    ValueError
        If the squared distances overflow float64 (data or centers beyond about 1e154).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 10.0], [10.0, 11.0]])
    >>> from pysketch.cluster import scan
    >>> C = np.array([[0.0, 0.5], [10.0, 10.5]])
    >>> labels = np.empty(4, dtype=np.intp)
    >>> scan(X, C, C.mean(axis=0), 2, labels_out=labels), labels
    ((1.0, None), array([0, 0, 1, 1]))
    """
    n, d = X.shape
    k = centers.shape[0]
    rows = min(rows, n)
    cs = centers - shift
    c_sq = np.einsum("ij,ij->i", cs, cs)
    cs_t = np.ascontiguousarray(cs.T)  # (d, k): BLAS is much faster on it than on cs.T
    b_read, b_shift, b_diff, b_scores, b_dist = work_buffers(rows, d, d, d, k, None)
    partial = []
    counts = np.zeros(k, dtype=np.int64) if disp is not None else None
    for start in range(0, n, rows):
        stop = min(start + rows, n)
        m = stop - start
        xr = chunk_rows(X, start, stop, b_read)
        if k == 1:
            lab = np.zeros(m, dtype=np.intp)
        else:
            with np.errstate(over="ignore", invalid="ignore"):
                xs = np.subtract(xr, shift, out=b_shift[:m])
                scores = np.matmul(xs, cs_t, out=b_scores[:m])
                scores *= -2.0
                scores += c_sq
            if not np.isfinite(scores).all():
                raise _overflow()
            lab = np.argmin(scores, axis=1)
        diff = np.take(centers, lab, axis=0, out=b_diff[:m], mode="clip")
        with np.errstate(over="ignore", invalid="ignore"):
            np.subtract(xr, diff, out=diff)
            dist = np.einsum("ij,ij->i", diff, diff, out=b_dist[:m])
        if not np.isfinite(dist).all():
            raise _overflow()
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


def _overflow():
    return ValueError("the magnitude of X (or of the centers) is outside the supported range: the squared distances "
                      "between them overflow float64; rescale the data (and the centers) by a constant")


def total_sse(X, C, chunk_size):
    """SSE of validated data and centers: `scan`'s total, shifted by the centers' mean.

    Parameters
    ----------
    X : numpy.ndarray
        Validated (n, d) records (`check_data`).
    C : numpy.ndarray
        Validated (k, d) float64 centers (`check_matrix`).
    chunk_size : int or None
        Rows per chunk, or None for the default.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 10.0], [10.0, 11.0]])
    >>> from pysketch.cluster import total_sse
    >>> total_sse(X, np.array([[0.0, 0.5], [10.0, 10.5]]), None)
    1.0
    """
    total, _ = scan(X, C, C.mean(axis=0), rows_per_chunk(chunk_size, C.shape[0], X.shape[1]))
    return total


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

    Raises
    ------
    ValueError
        If X or `centers` is not 2-D with matching columns, is empty, or holds NaN or
        infinity, or `chunk_size` is below 1.
    TypeError
        If X or `centers` is not numeric, or `chunk_size` is not an integer.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 10.0], [10.0, 11.0]])
    >>> from pysketch.metrics import assign
    >>> assign(X, [[0.0, 0.5], [10.0, 10.5]])
    array([0, 0, 1, 1])
    """
    X = check_data(X)
    C = check_matrix(centers, X.shape[1], "centers")
    chunk_size = check_chunk_size(chunk_size)
    n = X.shape[0]
    labels = np.empty(n, dtype=np.intp)
    dist = np.empty(n) if return_distances else None
    scan(X, C, C.mean(axis=0), rows_per_chunk(chunk_size, C.shape[0], X.shape[1]), labels, dist)
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
    b_read, b_shift = work_buffers(rows, d, d)
    ones = np.ones(rows)
    for start in range(0, n, rows):
        stop = min(start + rows, n)
        xs = np.subtract(chunk_rows(X, start, stop, b_read), ref, out=b_shift[: stop - start])
        s1 += ones[: stop - start] @ xs
        s2 += np.einsum("ij,ij->j", xs, xs)
    m1 = s1 / n
    with np.errstate(over="ignore", invalid="ignore"):
        var = np.maximum(s2 / n - m1 * m1, 0.0)
    if not (np.isfinite(var).all() and np.isfinite(s2).all()):
        raise ValueError("the magnitude of X is outside the supported range: its squared distances (which k-means "
                         "minimizes) overflow float64; rescale the data by a constant")
    return ref + m1, float(var.mean())


def _squared_distances_to(X, c, rows, out):
    """out[i] = ||x_i - c||^2 (from the differences), chunked."""
    n, d = X.shape
    rows = min(rows, n)
    b_read, b_diff = work_buffers(rows, d, d)
    for start in range(0, n, rows):
        stop = min(start + rows, n)
        diff = np.subtract(chunk_rows(X, start, stop, b_read), c, out=b_diff[: stop - start])
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


def local_trials(k, n_local_trials):
    """Candidates per greedy k-means++ step: 2 + floor(ln k) by default (the setting of
    scikit-learn's k-means++, a fact, not its code).

    Parameters
    ----------
    k : int
        Number of centers.
    n_local_trials : int or None
        A checked number of candidates, returned as is; None for the default.

    Returns
    -------
    int

    Examples
    --------
    >>> from pysketch.cluster import local_trials
    >>> local_trials(8, None), local_trials(8, 1)
    (4, 1)
    """
    if n_local_trials is None:
        return 2 + int(math.log(k))
    return n_local_trials


def kmeans_pp_seed(X, k, shift, rng, rows, d2, n_local_trials):
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

    Parameters
    ----------
    X : numpy.ndarray
        Validated (n, d) records (`check_data`).
    k : int
        Number of seeds, 1 <= k <= n.
    shift : numpy.ndarray
        (d,) float64, the data mean (for ranking the candidates).
    rng : numpy.random.Generator
        Draws the seeds.
    rows : int
        Rows per chunk (`rows_per_chunk`).
    d2 : numpy.ndarray
        (n,) float64 work space; it ends up holding the squared distances to the nearest
        seed.
    n_local_trials : int
        Candidates per step (`local_trials`); 1 is plain k-means++.

    Returns
    -------
    numpy.ndarray
        The (k, d) float64 seeds (copies of records).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 10.0], [10.0, 11.0]])
    >>> from pysketch.cluster import kmeans_pp_seed
    >>> d2 = np.empty(4)
    >>> seeds = kmeans_pp_seed(X, 2, X.mean(axis=0), np.random.default_rng(0), 4, d2, 2)
    >>> np.sort(seeds[:, 0]), d2  # a seed in each group; the distances to the nearest
    (array([ 0., 10.]), array([0., 1., 1., 0.]))
    """
    n, d = X.shape
    centers = np.empty((k, d))
    work = np.empty(n)
    centers[0] = np.asarray(X[int(rng.integers(n))], dtype=np.float64)
    _squared_distances_to(X, centers[0], rows, d2)
    block = max(1, min(n, 1 << 16))
    trials = n_local_trials
    trial_rows = max(1, CHUNK_VALUES // (trials + d))
    if trials > 1:  # ||x - s||^2 of every record, for ranking the candidates
        x_sq = np.empty(n)
        _squared_distances_to(X, shift, rows, x_sq)
        trial_rows = min(trial_rows, n)
        ones = np.ones(trial_rows)
        b_read, b_shift, b_dist = work_buffers(trial_rows, d, d, trials)
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
                xs = np.subtract(chunk_rows(X, start, stop, b_read), shift, out=b_shift[:m])
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


def lloyd(X, centers, shift, max_iter, tol_abs, rows, labels, prev, dist):
    """Lloyd's iterations from `centers` ((k, d), modified in place).

    Each iteration assigns every record to its nearest center and moves each center to
    the mean of its records, computed as c + mean(x - c) (so a center whose records all
    equal it stays exactly where it is). A center left without records is re-seeded on
    the record farthest from its own center (the farthest records go to the empty
    centers, one each). Stops when the assignment no longer changes (a fixed point),
    when the centers move by at most `tol_abs` in total squared distance (the
    scikit-learn convention for `tol`), or after `max_iter` iterations. `shift` only
    serves the nearest-center products (see scan).

    Parameters
    ----------
    X : numpy.ndarray
        Validated (n, d) records (`check_data`).
    centers : numpy.ndarray
        (k, d) float64 starting centers, updated in place.
    shift : numpy.ndarray
        (d,) float64 (the data mean), for the products of `scan`.
    max_iter : int
        At most this many iterations (>= 1).
    tol_abs : float
        Stop when the centers move by at most this much in total squared distance.
    rows : int
        Rows per chunk (`rows_per_chunk`).
    labels, prev : numpy.ndarray
        (n,) int32 work space.
    dist : numpy.ndarray
        (n,) float64 work space.

    Returns
    -------
    centers : numpy.ndarray
        The (k, d) centers (the array passed in).
    sse : float
        The SSE of these centers.
    n_iter : int
        The iterations run.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 10.0], [10.0, 11.0]])
    >>> from pysketch.cluster import lloyd
    >>> C = np.array([[0.0, 0.0], [10.0, 10.0]])
    >>> work = np.empty(4, np.int32), np.empty(4, np.int32), np.empty(4)
    >>> lloyd(X, C, X.mean(axis=0), 300, 0.0, 4, *work)
    (array([[ 0. ,  0.5],
           [10. , 10.5]]), 1.0, 2)
    """
    k, d = centers.shape
    have_prev = False
    it = 0
    for it in range(1, max_iter + 1):
        disp = np.zeros((k, d))
        total, counts = scan(X, centers, shift, rows, labels, dist, disp)
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
    total, _ = scan(X, centers, shift, rows)
    return centers, total, it


def kmeans(X, k, n_init, max_iter, tol, rng, chunk_size, n_local_trials=None):
    """Best of `n_init` runs of greedy k-means++ seeding + Lloyd, on validated data.

    Parameters
    ----------
    X : numpy.ndarray
        Validated (n, d) records (`check_data`).
    k : int
        Number of centers, 1 <= k <= n.
    n_init : int
        Runs; the one of lowest SSE is kept.
    max_iter : int
        Lloyd iterations per run.
    tol : float
        Relative tolerance: a run stops when the centers move by at most `tol` times the
        mean per-feature variance of X (see `kmeans_plus_plus`).
    rng : numpy.random.Generator
        Draws the seeds.
    chunk_size : int or None
        Rows per chunk.
    n_local_trials : int, optional
        Candidates per seeding step (default ``2 + floor(ln k)``).

    Returns
    -------
    centers : numpy.ndarray
        (k, d) float64.
    sse : float
        Computed exactly as ``sse(X, centers)`` computes it.

    Raises
    ------
    ValueError
        If the squared distances of X overflow float64 (records beyond about 1e154).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 10.0], [10.0, 11.0]])
    >>> from pysketch.cluster import kmeans
    >>> centers, sse = kmeans(X, 2, 3, 300, 1e-4, np.random.default_rng(0), None)
    >>> np.sort(centers[:, 1]), sse
    (array([ 0.5, 10.5]), 1.0)
    """
    n, d = X.shape
    rows = rows_per_chunk(chunk_size, k, d)
    mean, mean_var = _mean_and_variance(X, rows)
    tol_abs = tol * mean_var
    trials = local_trials(k, n_local_trials)
    labels = np.empty(n, dtype=np.int32)
    prev = np.empty(n, dtype=np.int32)
    dist = np.empty(n)
    best_centers, best_sse = None, math.inf
    for _ in range(n_init):
        seeds = kmeans_pp_seed(X, k, mean, rng, rows, dist, trials)
        centers, total, _ = lloyd(X, seeds, mean, max_iter, tol_abs, rows, labels, prev, dist)
        if best_centers is None or total < best_sse:
            best_centers, best_sse = centers, total
    # Recomputed as sse() computes it, so that sse(X, centers) is the same number.
    return best_centers, total_sse(X, best_centers, chunk_size)


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

    Raises
    ------
    ValueError
        If k > n, an argument is below its minimum, or X is not 2-D, empty, or holds NaN
        or infinity.
    TypeError
        If k, n_init, max_iter, n_local_trials or chunk_size is not an integer, or tol is
        not a real number.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 10.0], [10.0, 11.0]])
    >>> from pysketch.metrics import kmeans_plus_plus
    >>> centers, sse = kmeans_plus_plus(X, 2, random_state=0)
    >>> np.sort(centers[:, 1]), sse
    (array([ 0.5, 10.5]), 1.0)
    """
    X = check_data(X)
    n = X.shape[0]
    k = _check_int(k, "k")
    if k > n:
        raise ValueError(f"k must be <= n (the number of records, {n}); got k={k}")
    n_init = _check_int(n_init, "n_init")
    max_iter = _check_int(max_iter, "max_iter")
    tol = check_tol(tol)
    if n_local_trials is not None:  # per step: the candidates, their potentials and a row of distances each
        n_local_trials = check_size(n_local_trials, "n_local_trials", nbytes=lambda v: v * 8 * 6,
                                    what="for the candidates of a seeding step")
    chunk_size = check_chunk_size(chunk_size)
    rng = as_generator(random_state)
    return kmeans(X, k, n_init, max_iter, tol, rng, chunk_size, n_local_trials)




# ---------------------------------------------------------------------------------------
# Weighted k-means of a small set of points (the reduction step of the decoders)
# ---------------------------------------------------------------------------------------


def _weighted_scores(P, C, p_sq):
    """Squared distances (n, k) of the rows of P to the rows of C, expanded (one matrix
    product) and clipped at 0; exact enough to rank centres and to weigh seeds."""
    D = p_sq[:, None] - 2.0 * (P @ C.T)
    D += np.einsum("ij,ij->i", C, C)[None, :]
    np.maximum(D, 0.0, out=D)
    return D


def weighted_kmeans(points, weights, k, *, n_init=3, max_iter=300, tol=1e-4, random_state=None,
                    n_local_trials=None):
    """k centres minimizing sum_i w_i min_j ||p_i - c_j||^2 for weighted points.

    Greedy k-means++ seeding with probabilities proportional to w D^2 (Arthur &
    Vassilvitskii 2007, sec. 2.2, with weights; the greedy form of `kmeans_pp_seed`), then
    Lloyd's iterations with weighted means, best of `n_init` runs.

    This is the reduction step of the decoders (the cells of a noisy histogram, the
    sigma points of a mixture): up to some 10^6 points held in memory. Points of weight 0
    are ignored; when at most k points have a positive weight, they are the centres (the
    heaviest repeated to make k, with weight 0 for the copies).

    Parameters
    ----------
    points : array_like of shape (n, d)
        Finite points.
    weights : array_like of shape (n,)
        Finite, >= 0, not all 0.
    k : int
        Number of centres, >= 1.
    n_init : int, default 3
        Runs; the one of lowest cost is kept.
    max_iter : int, default 300
        Lloyd iterations per run.
    tol : float, default 1e-4
        A run stops when the centres move by at most `tol` times the weighted mean
        per-coordinate variance of the points, in total squared distance (or when the
        assignment no longer changes).
    random_state : None, int or numpy.random.Generator
        Seeds the seeding.
    n_local_trials : int, optional
        Candidates per seeding step (default ``2 + floor(ln k)``).

    Returns
    -------
    centers : numpy.ndarray
        (k, d) float64.
    center_weights : numpy.ndarray
        (k,) float64, the weight of the points of each centre (summing to the total
        weight).
    cost : float
        sum_i w_i min_j ||p_i - c_j||^2.

    Raises
    ------
    ValueError
        If the weights are not n finite numbers >= 0, are all 0, or an argument is below
        its minimum (and as `check_data` for the points).
    TypeError
        If k, n_init or max_iter is not an integer, or tol is not a real number.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.cluster import weighted_kmeans
    >>> points = np.array([[0.0], [1.0], [10.0], [11.0]])
    >>> weighted_kmeans(points, [1, 3, 1, 1], 2, random_state=0)
    (array([[ 0.75],
           [10.5 ]]), array([4., 2.]), 1.25)
    """
    P = check_data(points, "points").astype(np.float64, copy=False)
    n, d = P.shape
    w = np.asarray(real_array(weights, "weights"), dtype=np.float64)
    if w.shape != (n,) or not np.isfinite(w).all() or (w < 0).any():
        raise ValueError(f"weights must be {n} finite numbers >= 0 (one per point), got shape {w.shape}")
    if not w.sum() > 0:
        raise ValueError("weights must not all be 0")
    # k centres, their weights and the distances of the points to them
    k = check_size(k, "k", nbytes=lambda v: v * (d * 8 * 3 + 16 + n * 8), what=f"for centres of d = {d} coordinates")
    n_init = _check_int(n_init, "n_init")
    max_iter = _check_int(max_iter, "max_iter")
    tol = check_tol(tol)
    rng = as_generator(random_state)
    keep = w > 0
    P, w = P[keep], w[keep]
    n = P.shape[0]
    if n <= k:
        order = np.argsort(-w, kind="stable")
        C = np.concatenate([P[order], np.repeat(P[order[:1]], k - n, axis=0)])
        cw = np.concatenate([w[order], np.zeros(k - n)])
        return C, cw, 0.0
    shift = (w @ P) / w.sum()
    Ps = P - shift
    p_sq = np.einsum("ij,ij->i", Ps, Ps)
    tol_abs = tol * float(w @ p_sq) / (w.sum() * d)
    trials = local_trials(k, n_local_trials)
    best = None
    for _ in range(n_init):
        C = np.empty((k, d))
        C[0] = Ps[rng.choice(n, p=w / w.sum())]
        d2 = np.maximum(p_sq - 2.0 * Ps @ C[0] + C[0] @ C[0], 0.0)
        for j in range(1, k):
            pr = w * d2
            tot = pr.sum()
            cand = rng.choice(n, size=trials, p=pr / tot) if tot > 0 else rng.choice(n, size=trials, p=w / w.sum())
            Dc = _weighted_scores(Ps, Ps[cand], p_sq)
            pot = w @ np.minimum(Dc, d2[:, None])
            c = int(np.argmin(pot))
            C[j] = Ps[cand[c]]
            d2 = np.minimum(d2, Dc[:, c])
        prev = None
        for _ in range(max_iter):
            D = _weighted_scores(Ps, C, p_sq)
            lab = np.argmin(D, axis=1)
            if prev is not None and np.array_equal(lab, prev):
                break
            prev = lab
            mass = np.bincount(lab, weights=w, minlength=k)
            sums = np.zeros((k, d))
            np.add.at(sums, lab, w[:, None] * Ps)
            newC = C.copy()
            filled = mass > 0
            newC[filled] = sums[filled] / mass[filled, None]
            empty = np.flatnonzero(~filled)
            if empty.size:  # re-seed on the points of largest weighted distance
                far = np.argsort(-(w * D[np.arange(n), lab]), kind="stable")[: empty.size]
                newC[empty] = Ps[far]
            moved = float(np.sum((newC - C) ** 2))
            C = newC
            if moved <= tol_abs:
                break
        D = _weighted_scores(Ps, C, p_sq)
        lab = np.argmin(D, axis=1)
        cost = float(w @ D[np.arange(n), lab])
        if best is None or cost < best[0]:
            best = (cost, C.copy(), np.bincount(lab, weights=w, minlength=k))
    cost, C, mass = best
    return C + shift, mass, cost


def diagonal_gmm(X, k, *, n_init=1, max_iter=200, tol=1e-6, var_floor=1e-6, random_state=None):
    """A mixture of k Gaussians with diagonal covariances fitted to the records X by EM.

    EM (Dempster, Laird & Rubin 1977), each run started from the k-means of X
    (kmeans_plus_plus, one seeding) and the run of highest likelihood kept.

    A run stops when the mean log-likelihood per record gains less than `tol` times its
    magnitude (or after `max_iter` iterations). Every variance is at least `var_floor`
    times the data's mean per-coordinate variance (added at each M step, as scikit-learn's
    reg_covar but relative, so the fit does not depend on the data's unit), which keeps
    the likelihood bounded on coordinates of few values. For the clean estimator's pilot
    (pysketch.CompressiveGaussianMixture); not a substitute for a full EM library.

    Parameters
    ----------
    X : array_like of shape (n, d)
        Finite records.
    k : int
        Number of components, 1 <= k <= n.
    n_init : int, default 1
        Runs.
    max_iter : int, default 200
        EM iterations per run.
    tol : float, default 1e-6
        Relative gain of the mean log-likelihood below which a run stops.
    var_floor : float, default 1e-6
        The variance floor, relative to the data's mean per-coordinate variance.
    random_state : None, int or numpy.random.Generator
        Seeds the k-means starts.

    Returns
    -------
    weights : numpy.ndarray
        (k,).
    means : numpy.ndarray
        (k, d).
    variances : numpy.ndarray
        (k, d), the diagonal covariances.
    log_likelihood : float
        The mean log-likelihood per record of X under the mixture.

    Raises
    ------
    ValueError
        If X is not 2-D, is empty or holds NaN or infinity, k > n, or k, n_init or
        max_iter is below 1.
    TypeError
        If X is not numeric, or k, n_init or max_iter is not an integer.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 10.0], [10.0, 11.0]])
    >>> from pysketch.cluster import diagonal_gmm
    >>> weights, means, variances, ll = diagonal_gmm(X, 2, random_state=0)
    >>> np.round(weights, 3), np.round(np.sort(means[:, 1]), 3)
    (array([0.5, 0.5]), array([ 0.5, 10.5]))
    """
    from scipy.special import logsumexp

    X = np.ascontiguousarray(real_rows(X, "X"), dtype=np.float64)
    if not np.isfinite(X).all():
        raise ValueError("X contains NaN or infinity")
    n, d = X.shape
    k = _check_int(k, "k")
    if k > n:
        raise ValueError(f"k = {k} is more than the {n} records")
    _check_int(n_init, "n_init")
    _check_int(max_iter, "max_iter")
    rng = as_generator(random_state)
    floor = float(var_floor) * max(float(np.mean(X.var(axis=0))), np.finfo(float).tiny)
    X2 = X * X
    best = None
    for _ in range(n_init):
        C, _ = kmeans_plus_plus(X, k, n_init=1, random_state=rng)
        lab = assign(X, C)
        resp = np.zeros((n, k))
        resp[np.arange(n), lab] = 1.0
        ll_old = -np.inf
        for _ in range(max_iter):
            mass = resp.sum(axis=0) + 10.0 * np.finfo(float).eps
            w = mass / n
            mu = (resp.T @ X) / mass[:, None]
            var = np.maximum((resp.T @ X2) / mass[:, None] - mu * mu, 0.0) + floor
            inv = 1.0 / var
            logp = (np.log(w) - 0.5 * (np.log(2.0 * np.pi * var).sum(axis=1) + (mu * mu * inv).sum(axis=1))
                    - 0.5 * (X2 @ inv.T) + X @ (mu * inv).T)
            norm = logsumexp(logp, axis=1)
            ll = float(norm.mean())
            resp = np.exp(logp - norm[:, None])
            done = ll - ll_old <= tol * abs(ll)
            ll_old = ll
            if done:
                break
        if best is None or ll > best[3]:
            best = (w, mu, var, ll)
    return best
