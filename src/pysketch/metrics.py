r"""Metrics of clustering and mixture learning, and the k-means baseline they need.

k-means risk (Chatalic 2020 thesis, eq. (4.3), corrected: the thesis prints "arg min", the
risk is the min, as in Chatalic et al. 2022, Def. 2):

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

import numpy as np
from scipy import special

from ._checks import check_int as _check_int
from ._random import as_generator
from .cluster import (as_real_array, assign, check_chunk_size, check_data, check_matrix, chunk_rows, kmeans,
                      kmeans_plus_plus, rows_per_chunk, total_sse, work_buffers)

__all__ = [
    "adjusted_rand_index",
    "assign",
    "gaussian_mixture_log_likelihood",
    "gaussian_mixture_log_prob_components",
    "kmeans_plus_plus",
    "mse",
    "relative_sse",
    "sse",
]

#: Tolerance on |sum(weights) - 1| of mixture weights.
WEIGHTS_SUM_TOL = 1e-9


def sse(X, centers, *, chunk_size=None):
    r"""Sum of squared errors: :math:`\sum_i \min_j \|x_i - c_j\|_2^2`.

    Thesis eq. (4.3) times n, with min (the printed "arg min" is an erratum; Chatalic
    et al. 2022, Def. 2, has the min).

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

    Raises
    ------
    ValueError
        If X or `centers` is not 2-D with matching columns, is empty, or holds NaN or
        infinity, or their squared distances overflow float64.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 10.0], [10.0, 11.0]])
    >>> from pysketch.metrics import sse
    >>> sse(X, [[0.0, 0.5], [10.0, 10.5]])
    1.0
    """
    X, chunk_size = check_data(X), check_chunk_size(chunk_size)
    C = check_matrix(centers, X.shape[1], "centers")
    return total_sse(X, C, chunk_size)


def mse(X, centers, *, chunk_size=None):
    """Mean squared error, ``sse(X, centers) / n`` (thesis eq. (4.3), with min).

    Parameters
    ----------
    X : array_like of shape (n, d)
        Records, finite.
    centers : array_like of shape (k, d)
        Finite.
    chunk_size : int, optional
        Rows per chunk.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        As `sse`.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 10.0], [10.0, 11.0]])
    >>> from pysketch.metrics import mse
    >>> mse(X, [[0.0, 0.5], [10.0, 10.5]])
    0.25
    """
    X, chunk_size = check_data(X), check_chunk_size(chunk_size)
    C = check_matrix(centers, X.shape[1], "centers")
    return total_sse(X, C, chunk_size) / X.shape[0]


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
    [1, 20]). More baseline runs lower the baseline SSE and shift the ratio up,
    so report `n_init` with the result.

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

    Raises
    ------
    ValueError
        If the baseline must be computed and k > n, `baseline_centers` does not have k
        rows, X or a matrix is not 2-D, empty or not finite, or `n_init` or `chunk_size`
        is below 1.
    TypeError
        If `return_baseline` is not a bool, or `n_init` or `chunk_size` is not an integer.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 10.0], [10.0, 11.0]])
    >>> from pysketch.metrics import relative_sse
    >>> relative_sse(X, [[0.0, 0.5], [10.0, 10.5]], random_state=0)
    1.0
    >>> relative_sse(X, [[0.0, 0.0], [10.0, 10.0]], random_state=0)
    2.0
    """
    X = check_data(X)
    n, d = X.shape
    C = check_matrix(centers, d, "centers")
    k = C.shape[0]
    n_init = _check_int(n_init, "n_init")
    if not isinstance(return_baseline, (bool, np.bool_)):
        raise TypeError(f"return_baseline must be True or False; got {return_baseline!r}")
    chunk_size = check_chunk_size(chunk_size)
    if baseline_centers is None:
        if k > n:
            raise ValueError(
                f"centers has k={k} rows, more than the n={n} records: the k-means baseline "
                "needs k <= n (or pass baseline_centers)"
            )
        rng = as_generator(random_state)
        B, base = kmeans(X, k, n_init, 300, 1e-4, rng, chunk_size)
    else:
        B = check_matrix(baseline_centers, d, "baseline_centers")
        if B.shape[0] != k:
            raise ValueError(
                f"baseline_centers must have as many rows as centers (k={k}); got shape {B.shape}"
            )
        base = total_sse(X, B, chunk_size)
    num = total_sse(X, C, chunk_size)
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

    Raises
    ------
    ValueError
        If the two label arrays are not 1-D, differ in length, are empty, or hold NaN or
        infinity.
    TypeError
        If the labels are not an array or are not mutually comparable.

    Examples
    --------
    >>> from pysketch.metrics import adjusted_rand_index
    >>> adjusted_rand_index([0, 0, 1, 1], ["b", "b", "a", "a"])
    1.0
    >>> adjusted_rand_index([0, 0, 1, 1], [0, 1, 0, 1])
    -0.5
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
    w = as_real_array(weights, "weights").astype(np.float64, copy=False)
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

    Raises
    ------
    ValueError
        If the shapes do not match, a variance is not > 0 (or so small its inverse
        overflows), the weights are negative, not finite or do not sum to 1, or the data
        are so far from the mixture that the squared Mahalanobis distances overflow.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.metrics import gaussian_mixture_log_likelihood
    >>> ll = gaussian_mixture_log_likelihood(np.zeros((3, 1)), [1.0], [[0.0]], [[1.0]])
    >>> round(ll, 4)  # -log(2 pi) / 2: the standard normal density at its mean
    -0.9189
    """
    n, chunks = _component_log_probs(X, weights, means, covariances, chunk_size)
    out = None if average else np.empty(n)
    partial = []
    for start, stop, log_comp in chunks:
        log_p = special.logsumexp(log_comp, axis=1)
        if average:
            partial.append(float(np.sum(log_p)))
        else:
            out[start:stop] = log_p
    return math.fsum(partial) / n if average else out


def gaussian_mixture_log_prob_components(X, weights, means, covariances, *, chunk_size=None):
    """log(alpha_i) + log N(x; mu_i, diag(v_i)) for every record and component.

    The terms whose log-sum-exp over the components is
    :func:`gaussian_mixture_log_likelihood` (same arguments, same computation); the
    posterior probabilities of the components are their softmax.

    Parameters
    ----------
    X : array_like of shape (n, d)
        Records, finite.
    weights : array_like of shape (k,)
        Finite, >= 0, summing to 1 within 1e-9.
    means : array_like of shape (k, d)
    covariances : array_like of shape (k, d)
        The diagonal variances, finite and > 0.
    chunk_size : int, optional
        Rows per chunk.

    Returns
    -------
    numpy.ndarray
        (n, k) float64.

    Raises
    ------
    ValueError
        As `gaussian_mixture_log_likelihood`.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 10.0], [10.0, 11.0]])
    >>> from pysketch.metrics import gaussian_mixture_log_prob_components
    >>> L = gaussian_mixture_log_prob_components(X, [0.5, 0.5], [[0, 0.5], [10, 10.5]], np.ones((2, 2)))
    >>> L.shape, L.argmax(axis=1)
    ((4, 2), array([0, 0, 1, 1]))
    """
    n, chunks = _component_log_probs(X, weights, means, covariances, chunk_size)
    out = None
    for start, stop, log_comp in chunks:
        if out is None:
            out = np.empty((n, log_comp.shape[1]))
        out[start:stop] = log_comp
    return out


def _component_log_probs(X, weights, means, covariances, chunk_size):
    """Validate; return n and an iterator of (start, stop, (rows, k) log-terms) chunk by
    chunk (the array is a work buffer, overwritten by the next chunk)."""
    X = check_data(X)
    n, d = X.shape
    mu = check_matrix(means, d, "means")
    k = mu.shape[0]
    var = check_matrix(covariances, d, "covariances")
    if var.shape[0] != k:
        raise ValueError(f"covariances must have shape (k={k}, d={d}) like means; got shape {var.shape}")
    if np.any(var <= 0.0):
        raise ValueError("covariances (the diagonal variances) must all be > 0")
    w = _check_mixture_weights(weights, k)
    chunk_size = check_chunk_size(chunk_size)

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

    rows = min(rows_per_chunk(chunk_size, 2 * k, d), n)

    def chunks():
        prec_t = np.ascontiguousarray(prec.T)
        mp2_t = np.ascontiguousarray(-2.0 * mp.T)
        b_read, b_shift, b_sq, b_maha, b_cross = work_buffers(rows, d, d, d, k, k)
        for start in range(0, n, rows):
            stop = min(start + rows, n)
            m = stop - start
            with np.errstate(over="ignore", invalid="ignore"):
                xs = np.subtract(chunk_rows(X, start, stop, b_read), shift, out=b_shift[:m])
                maha = np.matmul(np.multiply(xs, xs, out=b_sq[:m]), prec_t, out=b_maha[:m])
                maha += np.matmul(xs, mp2_t, out=b_cross[:m])
                maha += const
            if not np.isfinite(maha).all():
                raise ValueError("the magnitude of X (relative to the mixture's means and covariances) is outside the "
                                 "supported range: the squared Mahalanobis distances of its records overflow "
                                 "float64; rescale the data (and the mixture) by a constant")
            np.maximum(maha, 0.0, out=maha)
            maha *= -0.5
            maha += log_norm
            yield start, stop, maha

    return n, chunks()
