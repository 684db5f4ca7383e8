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
    tau, 0) with the tau that makes the sum right (found by sorting)."""
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
    combination, Gauss-Markov); the first noiseless estimate when there is one. Returns
    (the estimate, its variance)."""
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
    docstring, step 1). Returns a new list."""
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
    table: it then draws from the attribute's own margin)."""
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
    left unmatched (its distance is in the gap returned). Stops when no table's total
    variation distance to its target moves by more than `tol` in a sweep, or after
    max_sweeps. Returns (weights, sweeps, the largest total variation distance left)."""
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
