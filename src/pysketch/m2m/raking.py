r"""M2M weights for a release of marginal tables (pysketch.features.MarginalMap): synthetic
records drawn from the release, then weights that match every table, by raking.

The ridge of [P] (pysketch.m2m.core) fits weights over records drawn uniformly from the
box. On real data, whose mass sits on a thin part of the box, few uniform records fall where
the data are, so the weights that match the tables rest on few records; and ridge weights
may be negative, so answers may leave [0, 1]. A release of two-way marginal tables says
more than any feature vector: it is a set of (noisy) contingency tables, and what to do
with those is classical. This module, all post-processing of the release (no privacy
cost):

1. `consistent_tables`: the noisy counts of each table projected onto the tables of n
   records (non-negative, summing to n; Euclidean projection onto the scaled simplex, the
   sort-based algorithm of Held, Wolfe & Crowder, "Validation of subgradient
   optimization", Math. Programming 1974), n pooled by inverse variance from the noisy
   count and every table's total; then every table raked to consensus one-way margins
   (each attribute's margin averaged over the tables that hold it), so that tables that
   share an attribute agree on it (the consistency step of PriView: Qardaji, Yang & Li,
   SIGMOD 2014, Sec. 4.2, there by least squares; raking keeps the cells non-negative).
2. `tree_sample`: synthetic records from a tree of the tables (the maximum spanning tree
   of the tables' mutual information: Chow & Liu, "Approximating discrete probability
   distributions with dependence trees", IEEE Trans. Inf. Theory 1968): the root's bin
   from its margin, each child's bin from its table given its parent's bin, uniform
   within the bins. Attributes in no table are drawn uniformly from the box.
3. `rake`: weights w >= 0 summing to 1 on the synthetic records whose totals in the
   cells of every table match the tables (iterative proportional fitting: Deming &
   Stephan, "On a least squares adjustment of a sampled frequency table when the expected
   marginal totals are known", Ann. Math. Statist. 1940). Of all weightings that match,
   it converges to the one closest in Kullback-Leibler divergence to the uniform weights
   (Csiszar, "I-divergence geometry of probability distributions", Ann. Probab. 1975), so
   what the tables do not fix (interactions of three attributes) is left as the tree
   sample has it.

Every answer is then an average over the synthetic records with non-negative weights
summing to 1: fractions lie in [0, 1], means inside the box.
"""

import math

import numpy as np

__all__ = ["simplex_projection", "pool", "consistent_tables", "tree_sample", "rake", "MAX_SWEEPS"]

#: Sweeps of iterative proportional fitting at most (each fits every table once).
MAX_SWEEPS = 100
#: Sweeps of the consistency step (raking each table to the consensus margins).
CONSISTENCY_SWEEPS = 50


def simplex_projection(v, total):
    """The Euclidean projection of v onto {t >= 0, sum t = total} (total >= 0): t = max(v -
    tau, 0) with the tau that makes the sum right (found by sorting; Held, Wolfe &
    Crowder 1974).

    Parameters
    ----------
    v : array_like of shape (m,)
        The values to project (e.g. the noisy counts of a table, flattened).
    total : float
        The sum of the projection; at most 0 (or an empty `v`) gives zeros.

    Returns
    -------
    numpy.ndarray of shape (m,)
        The projection, float64: non-negative, summing to `total` up to rounding.

    Examples
    --------
    >>> from pysketch.m2m.raking import simplex_projection
    >>> simplex_projection([1.0, 0.5, 0.0], 1.0).tolist()
    [0.75, 0.25, 0.0]
    """
    v = np.asarray(v, dtype=np.float64)
    if total <= 0 or v.size == 0:
        return np.zeros_like(v)
    u = np.sort(v)[::-1]
    excess = np.cumsum(u) - total
    k = np.arange(1, v.size + 1)
    rho = int(np.nonzero(u - excess / k > 0)[0][-1])
    tau = excess[rho] / (rho + 1)
    return np.maximum(v - tau, 0.0)


def pool(estimates, variances):
    """Inverse-variance pooling of independent unbiased estimates of one number (of n: the
    noisy counts and the totals of every table of several releases): sum_i e_i / v_i /
    sum_i 1 / v_i, of variance 1 / sum_i 1 / v_i (the least of any unbiased linear
    combination, Gauss-Markov); the first noiseless estimate when there is one.

    Parameters
    ----------
    estimates : array_like of float
        The independent unbiased estimates.
    variances : array_like of float
        Their variances, in the same order; a variance <= 0 marks a noiseless estimate.

    Returns
    -------
    estimate : float
        The pooled estimate.
    variance : float
        Its variance (0 when an estimate is noiseless).

    Examples
    --------
    >>> from pysketch.m2m.raking import pool
    >>> pool([100.0, 104.0], [4.0, 4.0])
    (102.0, 2.0)
    >>> pool([100.0, 104.0], [0.0, 4.0])  # a noiseless estimate wins
    (100.0, 0.0)
    """
    estimates = np.asarray(estimates, dtype=np.float64)
    variances = np.asarray(variances, dtype=np.float64)
    exact = variances <= 0
    if exact.any():
        return float(estimates[exact][0]), 0.0
    inv = 1.0 / variances
    return float(np.sum(inv * estimates) / np.sum(inv)), float(1.0 / np.sum(inv))


def consistent_tables(pairs, tables, n, *, noisy=True):
    """The noisy counts of two-way tables (a list of (n_i, n_j) arrays for the (i, j) of
    `pairs`) as fractions: each projected onto the non-negative tables summing to 1 (when
    `noisy`; n is the pooled count), then all raked to consensus one-way margins (module
    docstring, step 1).

    Parameters
    ----------
    pairs : sequence of (int, int)
        The attributes (i, j) of each table: rows are i's bins, columns j's.
    tables : list of arrays
        The (noisy) counts of each table, of shape (bins of i, bins of j).
    n : float
        The pooled count: the total each noisy table is projected onto before it is
        divided by its sum.
    noisy : bool, default True
        Whether the tables carry noise: True projects each onto the non-negative tables
        summing to n; False only sets negative counts to 0 (a clean release).

    Returns
    -------
    list of numpy.ndarray
        A new list of the tables as fractions (non-negative, each summing to 1; a table
        with no mass left becomes uniform), in the order of `pairs`, whose one-way margins
        agree on every shared attribute (to about 1e-9 in total variation, after at most
        CONSISTENCY_SWEEPS sweeps).

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.m2m.raking import consistent_tables
    >>> t01 = np.array([[30.0, 12.0], [-2.0, 60.0]])  # noisy counts of attributes (0, 1)
    >>> t12 = np.array([[25.0, 5.0], [40.0, 33.0]])   # and of (1, 2)
    >>> a, b = consistent_tables([(0, 1), (1, 2)], [t01, t12], n=100.0)
    >>> bool(np.allclose(a.sum(axis=0), b.sum(axis=1))), round(float(a.sum()), 9)
    (True, 1.0)
    """
    out = []
    for counts in tables:
        flat = np.asarray(counts, dtype=np.float64).reshape(-1)
        t = simplex_projection(flat, n) if noisy else np.maximum(flat, 0.0)
        total = t.sum()
        out.append((t / total if total > 0 else np.full(flat.size, 1.0 / flat.size)).reshape(np.shape(counts)))
    holders = {}
    for p, (i, j) in enumerate(pairs):
        holders.setdefault(int(i), []).append((p, 1))  # summing over axis 1 leaves attribute i
        holders.setdefault(int(j), []).append((p, 0))
    for _ in range(CONSISTENCY_SWEEPS):
        worst = 0.0
        for held in holders.values():
            if len(held) < 2:
                continue
            seen = [out[p].sum(axis=axis) for p, axis in held]
            target = np.mean(seen, axis=0)
            for (p, axis), margin in zip(held, seen):
                worst = max(worst, float(np.abs(margin - target).sum()))
                ratio = np.divide(target, margin, out=np.zeros_like(target), where=margin > 0)
                out[p] = out[p] * (ratio[:, None] if axis == 1 else ratio[None, :])
                total = out[p].sum()
                if total > 0:
                    out[p] /= total
        if worst < 1e-9:
            break
    return out


def _mutual_information(table):
    """I(A; B) of a joint distribution table (b, b) summing to 1."""
    a = table.sum(axis=1)
    b = table.sum(axis=0)
    outer = a[:, None] * b[None, :]
    mask = table > 0
    return float(np.sum(table[mask] * np.log(table[mask] / outer[mask])))


def _spanning_tree(d, pairs, weights):
    """The edges (p, i, j) of a maximum spanning forest of the graph on d attributes whose
    edges are the pairs (Kruskal's algorithm with union-find)."""
    parent = list(range(d))

    def root(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    chosen = []
    for p in sorted(range(len(pairs)), key=lambda q: -weights[q]):
        i, j = int(pairs[p][0]), int(pairs[p][1])
        ri, rj = root(i), root(j)
        if ri != rj:
            parent[ri] = rj
            chosen.append((p, i, j))
    return chosen


def tree_sample(d, pairs, tables, bin_sampler, n, rng):
    """n synthetic records (n, d) from a tree of the two-way tables (module docstring, step
    2): their bins, then their values, `bin_sampler(j, bins, rng)` giving the values of
    attribute j for records in the given bins of it (bins=None for an attribute in no
    table: it then draws from the attribute's own margin).

    Parameters
    ----------
    d : int
        The number of attributes.
    pairs : sequence of (int, int)
        The attributes (i, j) of each table.
    tables : list of arrays
        The tables as joint fractions (each summing to 1), table p of shape (bins of i,
        bins of j) for the pair (i, j) of `pairs`.
    bin_sampler : callable
        ``bin_sampler(j, bins, rng)`` returns the n values of attribute j, given its bin
        for each record (an int array of n entries), or ``bins=None`` for an attribute in
        no table.
    n : int
        The number of records.
    rng : numpy.random.Generator
        The (public) randomness of the bins, passed on to `bin_sampler`.

    Returns
    -------
    numpy.ndarray of shape (n, d)
        The synthetic records.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.m2m.raking import tree_sample
    >>> table = np.array([[0.5, 0.0], [0.0, 0.5]])  # attribute 1 in the bin of attribute 0
    >>> def uniform_in_bin(j, bins, rng):  # bin b holds the values [b, b + 1)
    ...     return bins + rng.random(bins.size)
    >>> X = tree_sample(2, [(0, 1)], [table], uniform_in_bin, 1000, np.random.default_rng(0))
    >>> X.shape, bool((np.floor(X[:, 0]) == np.floor(X[:, 1])).all())
    ((1000, 2), True)
    """
    bins = np.full((n, d), -1, dtype=np.int64)
    edges = _spanning_tree(d, pairs, [_mutual_information(t) for t in tables])
    neighbours = {}
    for p, i, j in edges:
        neighbours.setdefault(i, []).append((j, p, 0))  # i is axis 0 of table p
        neighbours.setdefault(j, []).append((i, p, 1))
    for start in range(d):
        if bins[0, start] >= 0 or start not in neighbours:
            continue
        j, p, axis = neighbours[start][0]
        bins[:, start] = _draw(tables[p].sum(axis=1 - axis), n, rng)  # the root's margin
        stack = [start]
        while stack:
            a = stack.pop()
            for c, p, axis in neighbours.get(a, []):
                if bins[0, c] >= 0:
                    continue
                joint = tables[p] if axis == 0 else tables[p].T  # rows: a's bins, columns: c's
                bins[:, c] = _draw_conditional(joint, bins[:, a], rng)
                stack.append(c)
    X = np.empty((n, d))
    for j in range(d):
        X[:, j] = bin_sampler(j, bins[:, j] if bins[0, j] >= 0 else None, rng)
    return X


def _draw(probabilities, n, rng):
    p = np.asarray(probabilities, dtype=np.float64)
    c = np.cumsum(p)
    if not c[-1] > 0:
        return rng.integers(0, p.size, n)
    return np.minimum(np.searchsorted(c, rng.random(n) * c[-1], side="right"), p.size - 1)


def _draw_conditional(joint, given, rng):
    """For each entry a of `given`, a column drawn with probabilities joint[a] (uniform for
    a row of zeros)."""
    b = joint.shape[1]
    c = np.cumsum(joint, axis=1)
    totals = c[:, -1]
    u = rng.random(given.size)
    out = np.empty(given.size, dtype=np.int64)
    for a in np.unique(given):
        rows = np.nonzero(given == a)[0]
        if totals[a] > 0:
            out[rows] = np.minimum(np.searchsorted(c[a], u[rows] * totals[a], side="right"), b - 1)
        else:
            out[rows] = np.minimum((u[rows] * b).astype(np.int64), b - 1)
    return out


def rake(cells, sizes, targets, *, max_sweeps=MAX_SWEEPS, tol=1e-10):
    """Weights (n_s,) >= 0 summing to 1 whose total in every cell of every table matches
    the targets (module docstring, step 3). cells: (n_s, P) each record's cell within table
    p (0 <= cells[:, p] < sizes[p]); targets: a list of P arrays of fractions. Cells with a
    target but no synthetic record cannot be matched: their mass is spread over the
    table's other cells; a table whose target has no mass left where the weights are is
    left unmatched (its distance is in the gap returned). Stops when the largest total
    variation distance of a table to its target moves by at most `tol` from one sweep to
    the next or is at most `tol`, or after max_sweeps.

    Parameters
    ----------
    cells : int array of shape (n_s, P)
        The cell of each synthetic record in each of the P tables (flattened index).
    sizes : sequence of P ints
        The number of cells of each table.
    targets : list of P arrays
        The target fractions of each table's cells (flattened, ``sizes[p]`` entries).
    max_sweeps : int, default MAX_SWEEPS (100)
        The most sweeps; each fits every table once, in order.
    tol : float, default 1e-10
        The stopping tolerance on the largest total variation distance.

    Returns
    -------
    weights : numpy.ndarray of shape (n_s,)
        Non-negative, summing to 1.
    sweeps : int
        The sweeps done.
    gap : float
        The largest total variation distance of a table's weighted totals to its target,
        each measured in the last sweep just before that table was fitted.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.m2m.raking import rake
    >>> cells = np.array([[0], [0], [1], [1]])  # 4 records, one table of 2 cells
    >>> weights, sweeps, gap = rake(cells, [2], [np.array([0.25, 0.75])])
    >>> weights.tolist(), gap
    ([0.125, 0.125, 0.375, 0.375], 0.0)
    """
    n_s, P = cells.shape
    w = np.full(n_s, 1.0 / n_s)
    reach = []
    for p in range(P):
        t = np.asarray(targets[p], dtype=np.float64).reshape(-1)
        present = np.bincount(cells[:, p], minlength=sizes[p]) > 0
        t = np.where(present, t, 0.0)
        total = t.sum()
        reach.append(t / total if total > 0 else present / max(present.sum(), 1))
    gap = math.inf
    sweeps = 0
    previous = math.inf
    for sweeps in range(1, max_sweeps + 1):
        gap = 0.0
        for p in range(P):
            current = np.bincount(cells[:, p], weights=w, minlength=sizes[p])
            gap = max(gap, 0.5 * float(np.abs(current - reach[p]).sum()))
            ratio = np.divide(reach[p], current, out=np.zeros(sizes[p]), where=current > 0)
            scaled = w * ratio[cells[:, p]]
            total = scaled.sum()
            if total > 0:
                w = scaled / total
            # else: noisy tables clipped at zero can leave table p's target no mass on any
            # cell the weights still reach; matching it would zero every weight, so this
            # sweep leaves it unmatched and its distance stays in the gap returned
        if abs(previous - gap) <= tol or gap <= tol:
            break
        previous = gap
    return w, sweeps, gap
