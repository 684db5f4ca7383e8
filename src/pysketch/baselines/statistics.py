"""Direct-release baselines of M2M: statistics, each from its own private release.

Direct-release baselines of M2M (issue 17; Houssiau et al., "M2M: a general method to
perform various data analysis tasks from a differentially private sketch", 2022,
Sec. 3.4 and 4): each spends the whole budget on one task and answers it from
noisy statistics of the data, the comparison points of M2M's answers from one sketch.

- :func:`laplace_moments`: column moments E[x_j^k];
- :func:`laplace_histogram`: 1-D histograms of every column, as counts, fractions and CDF
  values;
- :func:`laplace_covariance`: the 1/n covariance matrix;
- :func:`laplace_counting_queries`: a batch of box counting queries, each with its share
  epsilon / q of the budget

(the model, :func:`pysketch.baselines.objective_perturbation_logistic`, is in
pysketch.baselines.erm). They release a vector of sums with the Laplace mechanism of
pysketch.privacy.mechanisms (exact discrete Laplace on a fine grid, OS entropy) and, under
add/remove neighbours, a noisy count (a share ``1 - split`` of epsilon) to divide by; each
docstring gives the vector's L1 sensitivity on the public box. They return a
:class:`DirectRelease` (a dict whose keys are also attributes).
"""

import numbers

import numpy as np

from .._checks import check_array, check_bounds, check_int, check_relation, check_size
from ..privacy.budget import Budget
from ..privacy.mechanisms import Laplace, check_epsilon, noisy_count
from ._common import _clip_records

__all__ = ["DirectRelease", "SUM_SHARE", "laplace_counting_queries", "laplace_covariance", "laplace_histogram",
           "laplace_moments"]


# =======================================================================================
# Direct-release baselines of M2M (issue 17): statistics and a model, each from its own
# private release
# =======================================================================================

#: Default share of epsilon for the noisy sums when a noisy count is released too (add/remove
#: neighbours): the 0.98 / 0.02 split of the M2M paper's experiments (Houssiau et al. 2022, Sec. 4).
SUM_SHARE = 0.98

# Records per block when the counting queries are evaluated (the block's (rows, q) mask is
# kept below about this many entries).
_QUERY_BLOCK_ENTRIES = 1 << 22


class DirectRelease(dict):
    """What a direct-release baseline returns: a dict whose keys are also attributes
    (``r["moments"]`` or ``r.moments``). The keys are listed in each function's docstring.

    Parameters
    ----------
    *args, **kwargs
        The entries, as for ``dict``.

    Raises
    ------
    AttributeError
        Reading an attribute that is neither a key nor a dict attribute.

    Examples
    --------
    >>> from pysketch.baselines import DirectRelease
    >>> release = DirectRelease(count=100, sensitivity=2.0)
    >>> release.count, release["sensitivity"]
    (100, 2.0)
    """

    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self))


def _check_fraction(value, name):
    """A real number strictly between 0 and 1 (not bool), as float."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) or not (0.0 < value < 1.0):
        raise ValueError(f"{name} must be a number in (0, 1), got {value!r}")
    return float(value)


def _budget(eps, relation, split, needs_count=True):
    """(epsilon of the sums, epsilon of the count or 0.0): the count is released only under
    add/remove neighbours when a divisor is needed; otherwise the sums get everything.
    ``split`` is checked in every case."""
    share = _check_fraction(split, "split")
    if relation == "add_remove" and needs_count:
        return eps * share, eps * (1.0 - share)
    return eps, 0.0


def _divisor(n, relation, eps_count, source):
    """(count, divisor): the public n under replace (or when no count was paid for), else
    the discrete noisy count n + Laplace(1 / eps_count) and max(count, 1)."""
    if relation == "replace" or eps_count == 0.0:
        return n, n
    count = noisy_count(n, eps_count, insecure_seed=source)
    return count, max(count, 1)


# ----------------------------------------------------------------------- moments

def _check_orders(orders):
    """A non-empty tuple of distinct ints >= 1."""
    if isinstance(orders, numbers.Integral) and not isinstance(orders, (bool, np.bool_)):
        orders = (orders,)
    try:
        items = tuple(orders)
    except TypeError:
        raise TypeError(f"orders must be a sequence of ints >= 1, got {orders!r}") from None
    if not items:
        raise ValueError("orders must hold at least one int >= 1")
    out = tuple(check_int(k, "orders") for k in items)
    if len(set(out)) != len(out):
        raise ValueError(f"orders must be distinct, got {out}")
    return out


def _power_range(lo, hi, k):
    """(min, max) of x^k over each interval [lo_j, hi_j]: at an end point, or at 0 when the
    interval holds 0 (x^k is monotone on each side of 0)."""
    ends = np.stack([lo ** k, hi ** k])
    mn, mx = ends.min(axis=0), ends.max(axis=0)
    holds_zero = (lo <= 0.0) & (hi >= 0.0)
    mn = np.where(holds_zero, np.minimum(mn, 0.0), mn)
    mx = np.where(holds_zero, np.maximum(mx, 0.0), mx)
    return mn, mx


def _moments_sensitivity(lo, hi, orders, relation):
    """L1 sensitivity of the sums (sum_i x_ij^k) over k in orders and all columns j, on the
    box [lo, hi] (see laplace_moments)."""
    total = 0.0
    for k in orders:
        if relation == "add_remove":
            total += float(np.maximum(np.abs(lo) ** k, np.abs(hi) ** k).sum())
        else:
            mn, mx = _power_range(lo, hi, k)
            total += float((mx - mn).sum())
    return total


def _moment_sums(X, orders):
    """(len(orders), d): row t holds sum_i x_ij^orders[t]."""
    return np.stack([np.sum(X ** k, axis=0) for k in orders])


def laplace_moments(X, bounds, epsilon, orders=(1, 2), *, neighbouring="add_remove", split=SUM_SHARE,
                    accountant=None, insecure_seed=None):
    r"""Private column moments (1/n) sum_i x_ij^k for every column j and every k in
    ``orders``, from one Laplace release of the sums: epsilon-DP.

    The M2M task "moments" (Houssiau et al. 2022, Sec. 3.4 item 1) answered directly: the vector of
    sums S_kj = sum_i x_ij^k (all orders and columns at once) gets Laplace noise of scale
    Delta_1 / epsilon_S, and the moments are S_kj / max(c, 1) with c the divisor below.

    **Privacy.** Records are clipped to the public box [lower, upper] (with a
    RuntimeWarning giving how many). On the box one record changes S by (x_j^k)_{k,j}, so:

    - ``neighbouring='add_remove'`` (default): Delta_1 = sum_k sum_j max(abs(lower_j)^k,
      abs(upper_j)^k), exact (attained at the corner where every abs(x_j) is largest, the same
      corner for every k). epsilon_S = split * epsilon, and c = n + Laplace(1 /
      ((1 - split) epsilon)) is the discrete noisy count (sensitivity 1;
      pysketch.privacy.mechanisms.noisy_count). epsilon-DP by sequential composition; the
      division is post-processing.
    - ``neighbouring='replace'``: n is public (c = n), epsilon_S = epsilon, Delta_1 =
      sum_k sum_j (max - min of x^k over [lower_j, upper_j]): exact when every interval
      lies on one side of 0 (x^k is then monotone, and the pair (upper, lower) attains every
      term at once), an upper bound otherwise. epsilon-DP under replace-one neighbours.

    The noise is exact discrete Laplace on a grid (pysketch.privacy.mechanisms.Laplace; OS
    entropy unless ``insecure_seed``); its scale on each sum is Delta_1 / epsilon_S
    (enlarged by the grid rounding, relative change below 2^-30). delta = 0.

    Parameters
    ----------
    X : (n, d) array
    bounds : (lower, upper) or (d, 2) array
        The public box.
    epsilon : float > 0
    orders : sequence of distinct ints >= 1, default (1, 2)
    neighbouring : {'add_remove', 'replace'}, default 'add_remove'
    split : float in (0, 1), default 0.98
        Share of epsilon for the sums under add/remove (the rest goes to the count);
        ignored under replace.
    accountant : BudgetAccountant (pysketch or diffprivlib), optional
        Charged (epsilon, 0) before any noise is drawn.
    insecure_seed : None or int
        Reproducible, insecure noise (tests and experiments only).

    Returns
    -------
    DirectRelease with keys
        ``moments`` (len(orders), d): row t estimates the mean of x_j^orders[t];
        ``orders``; ``sums`` (len(orders), d), the noisy sums; ``count``: the noisy count
        (add/remove; may be <= 0) or n (replace); ``sensitivity``; ``noise_scale`` (the
        Laplace scale of each sum); ``epsilon_sums``, ``epsilon_count`` (0 under
        replace); ``neighbouring``; ``n_clipped``; ``secure_noise``.

    Raises
    ------
    TypeError, ValueError
        For an epsilon out of range, an unknown `neighbouring`, a `split` outside (0, 1),
        an X that is not a finite 2-D array, `bounds` that are not a finite box of d coordinates, `orders` that are
        not distinct ints >= 1, or an accountant whose budget would be
        exceeded (pysketch.privacy.BudgetError, a ValueError).

    Warns
    -----
    RuntimeWarning
        When records lie outside the box (clipped; the message counts them).

    Examples
    --------
    >>> import numpy as np
    >>> U = np.random.default_rng(0).uniform(size=(5000, 2))
    >>> from pysketch.baselines import laplace_moments
    >>> release = laplace_moments(U, ([0, 0], [1, 1]), 1.0, orders=(1, 2))
    >>> release.moments.shape, release.sensitivity  # (the noise is not seeded)
    ((2, 2), 4.0)
    """
    eps = check_epsilon(epsilon)
    relation = check_relation(neighbouring)
    ks = _check_orders(orders)
    X = check_array(X)
    n, d = X.shape
    lo, hi = check_bounds(bounds, d)
    eps_sum, eps_count = _budget(eps, relation, split)
    X, clipped = _clip_records(X, lo, hi)
    sens = _moments_sensitivity(lo, hi, ks, relation)
    source = Budget(eps, neighbouring=relation, what="laplace_moments", pure=True,
                    insecure_seed=insecure_seed).charge(accountant).source
    mech = Laplace(eps_sum, sens, insecure_seed=source)
    sums = mech.randomise(_moment_sums(X, ks))
    count, div = _divisor(n, relation, eps_count, source)
    return DirectRelease(moments=sums / div, orders=ks, sums=sums, count=count, sensitivity=sens,
                         noise_scale=mech.effective_scale_, epsilon_sums=eps_sum, epsilon_count=eps_count,
                         neighbouring=relation, n_clipped=clipped, secure_noise=source.secure)


# ----------------------------------------------------------------------- histograms

def _check_edges(edges, d):
    """A tuple of d float64 arrays, each strictly increasing, finite, of length >= 2."""
    if isinstance(edges, np.ndarray) and edges.ndim == 2:
        edges = list(edges)
    try:
        items = list(edges)
    except TypeError:
        raise TypeError(f"edges must be a sequence of d = {d} arrays of bin edges, got "
                        f"{type(edges).__name__}") from None
    if len(items) != d:
        raise ValueError(f"edges must hold one array of bin edges per column (d = {d}), got {len(items)}")
    out = []
    for j, e in enumerate(items):
        e = np.asarray(e, dtype=np.float64)
        if e.ndim != 1 or e.size < 2 or not np.isfinite(e).all() or not (np.diff(e) > 0).all():
            raise ValueError(f"edges[{j}] must be a strictly increasing 1-D array of at least 2 finite "
                             f"numbers, got {e!r}")
        out.append(e)
    return tuple(out)


def _check_bins(bins, d):
    """A tuple of d ints >= 1 from an int or a sequence of d ints."""
    def check(b):  # the edges, counts, noisy counts, fractions and their sums of one column
        return check_size(b, "bins", nbytes=lambda v: (v + 1) * 8 * 6, what="for the edges and counts of a column")

    if isinstance(bins, numbers.Integral) and not isinstance(bins, (bool, np.bool_)):
        return (check(bins),) * d
    try:
        items = list(bins)
    except TypeError:
        raise TypeError(f"bins must be an int >= 1 or a sequence of d = {d} such ints, got {bins!r}") from None
    if len(items) != d:
        raise ValueError(f"bins must be an int or hold one int per column (d = {d}), got {len(items)}")
    return tuple(check(b) for b in items)


def _bin_indices(x, e):
    """The bin of each value in the edges e: b with e[b] <= x < e[b + 1], the last bin
    closed on the right (x = e[-1] goes in it); x must lie in [e[0], e[-1]]."""
    return np.searchsorted(e[1:-1], x, side="right")


def _histogram_counts(X, edges):
    """The exact counts of every column's bins, concatenated (column 0 first)."""
    return np.concatenate([np.bincount(_bin_indices(X[:, j], e), minlength=e.size - 1).astype(np.float64)
                           for j, e in enumerate(edges)])


def laplace_histogram(X, bounds, epsilon, *, bins=100, edges=None, neighbouring="add_remove", split=SUM_SHARE,
                      accountant=None, insecure_seed=None):
    r"""Private 1-D histograms of every column, all released together: epsilon-DP.

    The M2M tasks "histograms" and "CDF" (Houssiau et al. 2022, Sec. 4.1) answered
    directly: column j is cut into bins, equal-width ``bins`` bins over [lower_j,
    upper_j] (or the given ``edges[j]``); bin b of column j holds the records with
    e_b <= x_j < e_{b+1}, the last bin closed on the right. The vector of all counts gets
    Laplace noise of scale Delta_1 / epsilon_C.

    **Privacy.** Records are clipped to the box (the outer edges; RuntimeWarning with the
    count), so every record lies in exactly one bin of each column:

    - ``neighbouring='add_remove'`` (default): Delta_1 = d (one record adds 1 to one bin
      per column), exact. epsilon_C = split * epsilon; the fractions divide by
      max(c, 1), c = n + Laplace(1 / ((1 - split) epsilon)) (discrete noisy count).
      epsilon-DP by sequential composition.
    - ``neighbouring='replace'``: Delta_1 = 2 d (the record leaves one bin and enters
      another in each column; exact when every column has at least 2 bins), epsilon_C =
      epsilon, c = n public. epsilon-DP under replace-one neighbours.

    Exact discrete Laplace noise on a grid (pysketch.privacy.mechanisms.Laplace), delta = 0.

    Parameters
    ----------
    X : (n, d) array
    bounds : (lower, upper), (d, 2) array, or None with ``edges``
        The public box; the equal-width bins cover it.
    epsilon : float > 0
    bins : int >= 1 or sequence of d ints, default 100
        Bins per column (ignored when ``edges`` is given).
    edges : sequence of d strictly increasing arrays, optional
        The bin edges of each column (public), instead of ``bounds`` and ``bins``.
    neighbouring, split, accountant, insecure_seed
        As in :func:`laplace_moments`.

    Returns
    -------
    DirectRelease with keys
        ``edges`` (tuple of d arrays); ``counts`` (tuple of d arrays): the noisy counts;
        ``fractions``: counts / max(count, 1); ``cdf``: the cumulative sums of the
        fractions, ``cdf[j][b]`` estimating the fraction of records with
        x_j < edges[j][b + 1] (<= for the last edge; not forced monotone or into [0, 1]);
        ``count``; ``sensitivity``; ``noise_scale`` (the Laplace scale of each count);
        ``epsilon_counts``, ``epsilon_count``; ``neighbouring``; ``n_clipped``;
        ``secure_noise``.

    Raises
    ------
    ValueError
        If both `bounds` and `edges` are given.
    TypeError, ValueError
        For an epsilon out of range, an unknown `neighbouring`, a `split` outside (0, 1),
        an X that is not a finite 2-D array, `bounds` that are not a finite box of d coordinates, `bins` that are not
        ints >= 1 (one or d of them), `edges` that are not d strictly increasing arrays of
        at least 2 finite numbers, or an accountant whose budget would be
        exceeded (pysketch.privacy.BudgetError, a ValueError).

    Warns
    -----
    RuntimeWarning
        When records lie outside the box (clipped; the message counts them).

    Examples
    --------
    >>> import numpy as np
    >>> U = np.random.default_rng(0).uniform(size=(5000, 2))
    >>> from pysketch.baselines import laplace_histogram
    >>> release = laplace_histogram(U, ([0, 0], [1, 1]), 1.0, bins=4)
    >>> [f.shape for f in release.fractions], release.sensitivity  # (the noise is not seeded)
    ([(4,), (4,)], 2.0)
    """
    eps = check_epsilon(epsilon)
    relation = check_relation(neighbouring)
    X = check_array(X)
    n, d = X.shape
    if edges is not None:
        if bounds is not None:
            raise ValueError("give either bounds (with bins) or edges, not both")
        edges = _check_edges(edges, d)
        lo = np.array([e[0] for e in edges])
        hi = np.array([e[-1] for e in edges])
    else:
        lo, hi = check_bounds(bounds, d)
        edges = tuple(np.linspace(lo[j], hi[j], b + 1) for j, b in enumerate(_check_bins(bins, d)))
    eps_hist, eps_count = _budget(eps, relation, split)
    X, clipped = _clip_records(X, lo, hi)
    sens = float(d) if relation == "add_remove" else 2.0 * d
    source = Budget(eps, neighbouring=relation, what="laplace_histogram", pure=True,
                    insecure_seed=insecure_seed).charge(accountant).source
    mech = Laplace(eps_hist, sens, insecure_seed=source)
    noisy = mech.randomise(_histogram_counts(X, edges))
    count, div = _divisor(n, relation, eps_count, source)
    cuts = np.cumsum([e.size - 1 for e in edges])[:-1]
    counts = tuple(np.split(noisy, cuts))
    fractions = tuple(c / div for c in counts)
    return DirectRelease(edges=edges, counts=counts, fractions=fractions,
                         cdf=tuple(np.cumsum(f) for f in fractions), count=count, sensitivity=sens,
                         noise_scale=mech.effective_scale_, epsilon_counts=eps_hist, epsilon_count=eps_count,
                         neighbouring=relation, n_clipped=clipped, secure_noise=source.secure)


# ----------------------------------------------------------------------- covariance

def _covariance_sensitivity(half, relation):
    """L1 sensitivity of (sum_i z_i, upper triangle of sum_i z_i z_i^T) for records z in
    the centred box [-half, half] (see laplace_covariance)."""
    s1 = float(half.sum())
    s2 = float((half * half).sum())
    if relation == "add_remove":
        return s1 + (s1 * s1 + s2) / 2.0
    return 2.0 * s1 + s1 * s1


def _covariance_vector(Z):
    """(sum_i z_i, upper triangle (diagonal included, row-major) of sum_i z_i z_i^T)."""
    rows, cols = np.triu_indices(Z.shape[1])
    return np.concatenate([Z.sum(axis=0), (Z.T @ Z)[rows, cols]])


def laplace_covariance(X, bounds, epsilon, *, neighbouring="add_remove", split=SUM_SHARE, accountant=None,
                       insecure_seed=None):
    r"""The private 1/n covariance matrix of the columns, from one Laplace release of the
    first and second moment sums: epsilon-DP.

    The M2M task "covariance" (Houssiau et al. 2022, Sec. 3.4 item 3) answered directly. The
    records are first centred on the middle of the public box, z = x - (lower + upper) / 2
    (the covariance does not change; the sums and their sensitivity shrink), then the
    vector v = (sum_i z_i, upper triangle of sum_i z_i z_i^T) of d + d (d + 1) / 2 entries
    gets Laplace noise of scale Delta_1 / epsilon_V. With c the divisor below, the mean
    is m = v_1 / max(c, 1) and the covariance is v_2 / max(c, 1) - m m^T (mirrored:
    symmetric, not forced positive semi-definite).

    **Privacy.** Records are clipped to the box (RuntimeWarning with the count); h =
    (upper - lower) / 2 are the half widths, so abs(z_j) <= h_j.

    - ``neighbouring='add_remove'`` (default): Delta_1 = sum_j h_j + ((sum_j h_j)^2 +
      sum_j h_j^2) / 2, exact: one record changes v by (z, z_i z_j for i <= j), whose L1
      norm sum_j abs(z_j) + sum_{i<=j} abs(z_i) abs(z_j) grows with every abs(z_j) and is largest at
      the corners. epsilon_V = split * epsilon, c the discrete noisy count with the rest.
    - ``neighbouring='replace'``: Delta_1 = 2 sum_j h_j + (sum_j h_j)^2, an upper bound
      (abs(z_j - z'_j) <= 2 h_j, abs(z_j^2 - z'_j^2) <= h_j^2, abs(z_i z_j - z'_i z'_j) <= 2 h_i
      h_j; below twice the add/remove value by sum_j h_j^2). epsilon_V = epsilon, c = n
      public.

    Exact discrete Laplace noise on a grid (pysketch.privacy.mechanisms.Laplace), delta = 0.

    Parameters
    ----------
    X : (n, d) array
    bounds : (lower, upper) or (d, 2) array
    epsilon : float > 0
    neighbouring, split, accountant, insecure_seed
        As in :func:`laplace_moments`.

    Returns
    -------
    DirectRelease with keys
        ``covariance`` (d, d) symmetric; ``mean`` (d,) (in the original coordinates);
        ``count``; ``sensitivity``; ``noise_scale`` (the Laplace scale of each entry of
        v); ``epsilon_sums``, ``epsilon_count``; ``neighbouring``; ``n_clipped``;
        ``secure_noise``.

    Raises
    ------
    TypeError, ValueError
        For an epsilon out of range, an unknown `neighbouring`, a `split` outside (0, 1),
        an X that is not a finite 2-D array, `bounds` that are not a finite box of d
        coordinates, or an accountant whose budget would be exceeded
        (pysketch.privacy.BudgetError, a ValueError).

    Warns
    -----
    RuntimeWarning
        When records lie outside the box (clipped; the message counts them).

    Examples
    --------
    >>> import numpy as np
    >>> U = np.random.default_rng(0).uniform(size=(5000, 2))
    >>> from pysketch.baselines import laplace_covariance
    >>> release = laplace_covariance(U, ([0, 0], [1, 1]), 1.0)
    >>> release.covariance.shape, release.sensitivity  # 1 + (1 + 0.5) / 2; (the noise is not seeded)
    ((2, 2), 1.75)
    """
    eps = check_epsilon(epsilon)
    relation = check_relation(neighbouring)
    X = check_array(X)
    n, d = X.shape
    lo, hi = check_bounds(bounds, d)
    eps_sum, eps_count = _budget(eps, relation, split)
    X, clipped = _clip_records(X, lo, hi)
    centre, half = 0.5 * (lo + hi), 0.5 * (hi - lo)
    sens = _covariance_sensitivity(half, relation)
    source = Budget(eps, neighbouring=relation, what="laplace_covariance", pure=True,
                    insecure_seed=insecure_seed).charge(accountant).source
    mech = Laplace(eps_sum, sens, insecure_seed=source)
    noisy = mech.randomise(_covariance_vector(X - centre))
    count, div = _divisor(n, relation, eps_count, source)
    mean_z = noisy[:d] / div
    second = np.empty((d, d))
    rows, cols = np.triu_indices(d)
    second[rows, cols] = noisy[d:] / div
    second[cols, rows] = second[rows, cols]
    cov = second - np.outer(mean_z, mean_z)
    cov = 0.5 * (cov + cov.T)
    return DirectRelease(covariance=cov, mean=mean_z + centre, count=count, sensitivity=sens,
                         noise_scale=mech.effective_scale_, epsilon_sums=eps_sum, epsilon_count=eps_count,
                         neighbouring=relation, n_clipped=clipped, secure_noise=source.secure)


# ----------------------------------------------------------------------- counting queries

def _check_query_box(lower, upper, d):
    """(lower, upper) as float64 arrays of shape (q, d), no NaN, lower <= upper."""
    out = []
    for name, a in (("lower", lower), ("upper", upper)):
        try:
            a = np.array(a, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"{name} must be a (q, d) array of numbers (-inf / +inf where unconstrained)") from None
        if a.ndim == 1:
            a = a[None, :]
        if a.ndim != 2 or a.shape[1] != d or a.shape[0] < 1:
            raise ValueError(f"{name} must have shape (q, d) with d = {d} and q >= 1, got {a.shape}")
        if np.isnan(a).any():
            raise ValueError(f"{name} must not hold NaN (use -inf / +inf where unconstrained)")
        out.append(a)
    lower, upper = out
    if lower.shape != upper.shape:
        raise ValueError(f"lower and upper must have the same shape, got {lower.shape} and {upper.shape}")
    if (lower > upper).any():
        raise ValueError("lower must be <= upper in every entry (an empty query is a bug, not a query)")
    return lower, upper


def _query_counts(X, lower, upper):
    """The exact count of every query: #{i : lower[t] <= x_i <= upper[t]} (q,), vectorised
    over records and queries, in blocks of records."""
    n, d = X.shape
    q = lower.shape[0]
    rows = max(1, _QUERY_BLOCK_ENTRIES // q)
    counts = np.zeros(q, dtype=np.int64)
    for start in range(0, n, rows):
        B = X[start:start + rows]
        inside = np.ones((B.shape[0], q), dtype=bool)
        for j in range(d):
            col = B[:, j:j + 1]
            inside &= (col >= lower[:, j]) & (col <= upper[:, j])
        counts += inside.sum(axis=0)
    return counts.astype(np.float64)


def laplace_counting_queries(X, lower, upper, epsilon, *, as_fraction=True, neighbouring="add_remove", split=None,
                             accountant=None, insecure_seed=None):
    r"""A batch of q counting queries, each answered with its share epsilon_Q / q of the
    budget: epsilon-DP.

    Query t counts the records in the box lower[t] <= x <= upper[t] (every inequality
    inclusive; -inf / +inf where an attribute is unconstrained): the M2M counting queries,
    conjunctions of 1-D predicates (Houssiau et al. 2022, Sec. 3.4 item 2). Each count gets Laplace
    noise of scale q / epsilon_Q: the "answer each query with its share of the budget"
    baseline.

    **Privacy.** One record changes each count by at most 1 (add/remove, and also replace:
    the record leaves one set and enters another, net change -1, 0 or 1). Each query is
    (epsilon_Q / q)-DP with scale 1 / (epsilon_Q / q), and the q queries compose
    sequentially to epsilon_Q; it is the same as Laplace noise of scale q / epsilon_Q on the
    vector of counts, whose L1 sensitivity is at most q (drawn that way here, exact
    discrete Laplace on a grid). No box and no clipping are needed: a count's sensitivity
    does not depend on the records' values.

    - ``as_fraction=False``: the noisy counts; epsilon_Q = epsilon, no count is released.
    - ``as_fraction=True`` (default) under ``'add_remove'``: the answers are fractions,
      noisy counts / max(c, 1), where c = n + Laplace(1 / epsilon_N) is the discrete noisy
      total count (a counting query itself, sensitivity 1). The budget is split:
      epsilon_Q = split * epsilon for the queries, epsilon_N = (1 - split) epsilon for c.
      The default ``split=None`` takes split = q^(2/3) / (q^(2/3) + 1) [derived]: for an
      answer near 1 the variance of a ratio (C + xi) / (n + zeta) is about
      (Var xi + Var zeta) / n^2 = 2 ((q / epsilon_Q)^2 + (1 / epsilon_N)^2) / n^2, which
      for epsilon_Q + epsilon_N = epsilon is smallest at epsilon_Q / epsilon_N = q^(2/3)
      (0.5 for q = 1, 0.96 for q = 100, 0.99 for q = 1000).
    - ``as_fraction=True`` under ``'replace'``: n is public, fractions = noisy counts / n,
      epsilon_Q = epsilon.

    delta = 0 in every case.

    Parameters
    ----------
    X : (n, d) array
    lower, upper : (q, d) arrays (a (d,) array is one query)
        The public query boxes; -inf / +inf where an attribute is unconstrained.
    epsilon : float > 0
    as_fraction : bool, default True
    neighbouring : {'add_remove', 'replace'}, default 'add_remove'
    split : None or float in (0, 1)
        Share of epsilon for the queries when a noisy count is released (see above).
    accountant, insecure_seed
        As in :func:`laplace_moments`.

    Returns
    -------
    DirectRelease with keys
        ``answers`` (q,): fractions or counts; ``counts`` (q,): the noisy counts;
        ``count``: the divisor's count (noisy, or n; None when as_fraction=False);
        ``noise_scale``: the Laplace scale of each count, q / epsilon_Q (enlarged by the
        grid rounding, relative change below 2^-30); ``epsilon_per_query`` (epsilon_Q /
        q); ``epsilon_queries``; ``epsilon_count``; ``neighbouring``; ``secure_noise``.

    Raises
    ------
    TypeError
        For an `as_fraction` that is not a bool, or `lower` / `upper` that are not arrays
        of numbers.
    TypeError, ValueError
        For an epsilon out of range, an unknown `neighbouring`, a `split` outside (0, 1),
        an X that is not a finite 2-D array, `lower` and `upper` that are not of one shape (q, d) or (d,), hold NaN,
        or have lower > upper somewhere, or an accountant whose budget would be
        exceeded (pysketch.privacy.BudgetError, a ValueError).

    Examples
    --------
    >>> import numpy as np
    >>> U = np.random.default_rng(0).uniform(size=(5000, 2))
    >>> from pysketch.baselines import laplace_counting_queries
    >>> release = laplace_counting_queries(U, [0, 0], [0.5, 0.5], 1.0)  # one query: x <= (1/2, 1/2)
    >>> release.answers.shape, release.epsilon_queries  # split = 1/2 for q = 1; (the noise is not seeded)
    ((1,), 0.5)
    """
    eps = check_epsilon(epsilon)
    relation = check_relation(neighbouring)
    if not isinstance(as_fraction, (bool, np.bool_)):
        raise TypeError(f"as_fraction must be True or False, got {as_fraction!r}")
    X = check_array(X)
    n, d = X.shape
    lower, upper = _check_query_box(lower, upper, d)
    q = lower.shape[0]
    if split is None:
        split = q ** (2.0 / 3.0) / (q ** (2.0 / 3.0) + 1.0)
    eps_q, eps_count = _budget(eps, relation, split, needs_count=bool(as_fraction))
    source = Budget(eps, neighbouring=relation, what="laplace_counting_queries", pure=True,
                    insecure_seed=insecure_seed).charge(accountant).source
    mech = Laplace(eps_q, float(q), insecure_seed=source)
    noisy = mech.randomise(_query_counts(X, lower, upper))
    if as_fraction:
        count, div = _divisor(n, relation, eps_count, source)
        answers = noisy / div
    else:
        count, answers = None, noisy
    return DirectRelease(answers=answers, counts=noisy, count=count, noise_scale=mech.effective_scale_,
                         epsilon_per_query=eps_q / q, epsilon_queries=eps_q, epsilon_count=eps_count,
                         neighbouring=relation, secure_noise=source.secure)
