r"""A private synopsis of a table for counting queries over several attributes, CDFs and
moments: fine one-way histograms, then two-way marginal tables on bins chosen from them.

Sums of one-dimensional features (HIST) cannot see how attributes depend on each other,
and kernel features (RFF, RACE) on a public box see it blurred at the box's scale; on real
tables both answer two-attribute counting queries far worse than the data allow (issue 37:
mean absolute errors of 0.03-0.04 of n at epsilon = 1 on 3 x 10^5 flights). This synopsis
releases what those queries need, in two stages, each an ordinary private sketch:

1. the pilot's share (``budget_shares['pilot']``) of the budget: a histogram of every attribute on ``fine_bins``
   equal-width bins of its public range (pysketch.features.HistogramMap, L1 sensitivity
   d). Post-processing: n pooled from the count and every histogram's total (inverse
   variance), each histogram projected onto the non-negative ones summing to n
   (pysketch.m2m.raking), and the edges of `n_bins` bins of equal estimated mass per
   attribute read from its cumulative sum (on the fine edges).
2. The rest: the two-way marginal tables of the chosen pairs on those bins
   (pysketch.features.MarginalMap, L1 sensitivity P, the number of pairs), projected,
   made consistent and pooled the same way.

Equal-mass bins put the resolution where the data are: on a real table most of a public
box is empty (flight delays span [-90, 360] minutes, half of them lie within 20 minutes of
zero), and equal-width bins of the box left two-attribute answers off by 0.02-0.04 even
without noise. This is the adaptive-grid idea of Qardaji, Yang & Li ("Differentially
private grids for geospatial data", ICDE 2013: a coarse private pass chooses the cells of
the second), with the one-way histograms as the first pass.

Answers (post-processing only):

- a counting query that constrains one attribute: the fine histogram, linear within a
  fine bin;
- one that constrains the two attributes of a released pair: sum_ab T_ab F_i(a) F_j(b),
  T the pair's table and F_i(a) the fine histogram's share of coarse bin a inside the
  query's interval (within a cell the attributes are taken as independent given their
  bins);
- anything else (three or more attributes, an arbitrary f): an average over synthetic
  records drawn from a tree of the tables and raked to all of them, fine histograms
  included (pysketch.m2m.raking).

Every answer is a fraction in [0, 1] (counts: times the pooled n); means lie inside the box;
CDFs are non-decreasing from 0 to 1.
"""

import math
import numbers
import warnings

import numpy as np

from .._base import BUDGET_SHARES, RENAMED, BaseEstimator
from .._checks import check_array, check_bounds, check_size
from .._params import Bounds, InstanceOf, Interval, Options
from .._random import as_generator
from . import raking
from ..privacy.mechanisms import PRIVACY_PARAMETERS
from .core import NoisyAnswerWarning, pooled_count

__all__ = ["MarginalSynopsis", "marginal_bins"]

#: The fewest and most equal-mass bins per attribute of the two-way tables (`n_bins='auto'`).
MIN_BINS, MAX_BINS = 2, 64
#: `n_bins='auto'`: a cell of a two-way table should hold about this many times the noise's
#: standard deviation on it (see `marginal_bins`). The error of a two-attribute query is a
#: bias of about 1/b (independence within the cells its edges cut) plus noise growing with b,
#: so the best b goes as sqrt(n / sd) and only the constant is chosen. On four real tables of
#: 2*10^4 to 3*10^5 rows (benchmarks/quality/queries_quality.py --bins-sweep, q = 300), 6 was
#: within 3 % of the best b on weather, diamonds and storms (held out while choosing) and 12 %
#: above it on flights; 16 was 9-30 % above the best on all four.
CELL_SIGNAL_TO_NOISE = 6.0
#: `fine_bins='auto'`: the same for a bin of the first stage's histograms, and its range.
FINE_SIGNAL_TO_NOISE = 4.0
MIN_FINE_BINS, MAX_FINE_BINS = 16, 4096
#: `fine_bins='auto'` without n_lower: the share of epsilon of a first release of the count
#: alone (its noise, about 28 records at epsilon = 1, only sets the resolution).
COUNT_SHARE = 0.05


def fine_bins_for(n, epsilon, d, mechanism_std=math.sqrt(2.0)):
    """The first stage's equal-width bins per attribute for about n records (public n_lower
    or the released count) and its epsilon: B with n / B = FINE_SIGNAL_TO_NOISE x the noise's
    standard deviation per bin (sqrt 2 d / epsilon for Laplace: d histograms), in
    [MIN_FINE_BINS, MAX_FINE_BINS]. The histograms only shape the bins of the tables and the
    values within them, where data are dense; a finer grid than its noise allows is noise."""
    if not (n > 0 and epsilon > 0):
        return MIN_FINE_BINS
    b = n * epsilon / (FINE_SIGNAL_TO_NOISE * mechanism_std * d)
    return int(min(max(math.floor(b), MIN_FINE_BINS), MAX_FINE_BINS))


def marginal_bins(n, epsilon, n_pairs, mechanism_std=math.sqrt(2.0)):
    """The equal-mass bins per attribute of the two-way tables for n records (the pooled
    count of the first stage: already released, so free to use), the tables' epsilon and P
    pairs: b with n / b^2 = CELL_SIGNAL_TO_NOISE x the noise's standard deviation per cell
    (sqrt 2 P / epsilon for Laplace), in [MIN_BINS, MAX_BINS]. Finer bins cut the error of
    taking attributes as independent within a cell (about 1/b of the queries' mass sits in
    cells cut by a query's edge) and add noise (a query sums about b^2 / 4 cells).

    Parameters
    ----------
    n : float
        The (estimated) number of records.
    epsilon : float
        The epsilon of the two-way tables' release, per unit of L1 sensitivity of one
        table (MarginalSynopsis passes the tables' epsilon divided by 2 under 'replace').
    n_pairs : int
        P, the number of tables (taken as at least 1).
    mechanism_std : float, default sqrt(2)
        The noise's standard deviation at sensitivity 1 and epsilon 1 (Laplace: sqrt 2).

    Returns
    -------
    int
        b = floor(sqrt(n / (CELL_SIGNAL_TO_NOISE mechanism_std P / epsilon))), within
        [MIN_BINS, MAX_BINS] = [2, 64]; MIN_BINS when n or epsilon is not positive.

    Examples
    --------
    >>> from pysketch.m2m.synopsis import marginal_bins
    >>> marginal_bins(100_000, 1.0, n_pairs=3), marginal_bins(1_000, 1.0, n_pairs=3)
    (62, 6)
    """
    if not (n > 0 and epsilon > 0):
        return MIN_BINS
    sd = mechanism_std * max(n_pairs, 1) / epsilon
    b = math.sqrt(n / (CELL_SIGNAL_TO_NOISE * sd))
    return int(min(max(math.floor(b), MIN_BINS), MAX_BINS))


class MarginalSynopsis(BaseEstimator):
    """A private synopsis for counting queries, CDFs, histograms and moments over any
    attributes of records in a public box (module docstring).

    Privacy: (epsilon, delta)-DP under `neighbouring` (add/remove or replace one record), by
    sequential composition of up to three releases, each charged to its share: the count
    alone (COUNT_SHARE epsilon, discrete Laplace, sensitivity 1; only when it sets the
    resolution, under add/remove), the one-way histograms (the pilot's share of the rest:
    make_private of a MarginalMap of order 1, L1 sensitivity d, L2 sqrt d; replace: twice /
    sqrt 2 times) and the two-way tables (the rest: L1 = P, L2 = sqrt P). The second
    release's bins are computed from the first release only (adaptive composition of
    post-processed outputs), never from the data; the bounds are public.

    Parameters
    ----------
    bounds : (lower, upper) or (d, 2) array
        The public box of the records (required: reading it from the data is not private).
        Values outside it are counted in the edge bins, with a warning.
    epsilon : float > 0 or None
        The whole release's budget (both stages, sequential composition); None: no noise.
    delta : float in [0, 1)
        With delta > 0 the analytic Gaussian mechanism, delta split as epsilon.
    neighbouring : {'add_remove', 'replace'}
    pairs : list of (i, j), optional
        The two-way tables (default: every pair of attributes).
    n_bins : int or 'auto'
        Equal-mass bins per attribute of the two-way tables ('auto': `marginal_bins`).
    fine_bins : int or 'auto'
        Equal-width bins per attribute of the first stage (for an integer attribute, at most
        one bin per value, each holding whole values); 'auto' (default): `fine_bins_for`
        at n_lower, or at a count released first with COUNT_SHARE of epsilon.
    n_lower : float, optional
        A public lower bound on n (for 'auto' bins; saves the count's release).
    integer : list of int, optional
        The attributes whose values are integers (public: the table's schema). Their bins
        hold whole values, answers count whole values inside a query (a threshold at a value
        counts all of it), and synthetic records take integer values.
    budget_shares : dict or None
        ``{'pilot': 0.3}`` (the default): the first stage's share of what the count (when
        released) leaves of epsilon (and delta); the tables get the rest.
    pilot_share : float in (0, 1)
        Deprecated name of ``budget_shares={'pilot': ...}`` (FutureWarning; removed in the
        next version).
    n_synthetic : int
        Synthetic records for the answers that need them (default 10^5).
    accountant : BudgetAccountant, optional
        Charged (epsilon, delta) once, before any noise.
    random_state : None, int or Generator
        Public randomness only (the synthetic records); the noise is never seeded.

    Attributes
    ----------
    count_ : float
        The pooled estimate of n (set by `fit`, as every attribute here).
    count_std_ : float
        Its standard deviation.
    fine_map_, marginal_map_ : FeatureMap
        The two stages' feature maps.
    fine_ : list of d arrays
        Fractions: the one-way histograms.
    tables_ : list of arrays
        The two-way tables as fractions, in the order of ``marginal_map_.pairs``.
    synthetic_, weights_ : arrays
        The synthetic records and their weights (non-negative, summing to 1).
    privacy_ : PrivacyRecord or None
        The record of the release (None without noise), its parts 'count' (when released),
        'pilot' and 'tables'.
    n_bins_ : int
        The bins of the two-way tables.

    Raises
    ------
    ValueError
        In `fit`: for an epsilon or delta out of range; `bounds` missing or not a box of
        the records' d coordinates; `n_bins` or `fine_bins` neither 'auto' nor an int >= 1
        whose tables the machine's memory can hold (TypeError for a non-integer that is
        not a string), the same for `n_synthetic`; an `n_lower` that is not a finite number
        >= 1; `integer` naming an index outside [-d, d) or an attribute whose bounds hold
        no integer; `budget_shares` naming an unknown part or a share outside (0, 1)
        (TypeError if it is not a dict); `pilot_share` and `budget_shares` given with
        different shares; an X that is not a 2-D array of at least one finite record; an
        accountant whose budget would be exceeded (pysketch.privacy.BudgetError, a
        ValueError). In the answers: a synopsis not fitted yet, query boxes that are not of
        shape (q, d) or (d,) or hold NaN, a column that is not an attribute index, NaN
        thresholds, edges that are not at least 2 increasing numbers, or an `f` whose
        values do not have n_s rows.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.m2m import MarginalSynopsis
    >>> X = np.random.default_rng(0).uniform(size=(20000, 3))
    >>> synopsis = MarginalSynopsis(bounds=([0, 0, 0], [1, 1, 1]), epsilon=1.0, n_synthetic=5000,
    ...                             random_state=0).fit(X)
    >>> share = synopsis.counting_queries([0, 0, 0], [0.5, 0.5, 1])  # x0, x1 <= 0.5: 1/4
    >>> bool(abs(share - 0.25) < 0.05), synopsis.privacy_.epsilon  # (the noise is not seeded)
    (True, 1.0)
    """

    _budget_parts = {"pilot": 0.3}
    _renamed_params = {"pilot_share": ("budget_shares", lambda share: {"pilot": share})}

    def __init__(self, bounds=None, *, epsilon=None, delta=0.0, neighbouring="add_remove", pairs=None, n_bins="auto",
                 fine_bins="auto", n_lower=None, integer=None, budget_shares=None, n_synthetic=100_000,
                 accountant=None, random_state=None, pilot_share=RENAMED):
        self.bounds = bounds
        self.epsilon = epsilon
        self.delta = delta
        self.neighbouring = neighbouring
        self.pairs = pairs
        self.n_bins = n_bins
        self.fine_bins = fine_bins
        self.n_lower = n_lower
        self.integer = integer
        self.budget_shares = budget_shares
        self.pilot_share = pilot_share
        self.n_synthetic = n_synthetic
        self.accountant = accountant
        self.random_state = random_state

    # ------------------------------------------------------------------ fit

    _parameter_constraints = {
        "bounds": [Bounds(), None],  # required: refused with the data (_check_with_data)
        "pairs": [InstanceOf(list, tuple, np.ndarray, text="a list of pairs (i, j) of attributes"), None],
        "n_bins": [Options(("auto",)), Interval(numbers.Integral, 1, None)],
        "fine_bins": [Options(("auto",)), Interval(numbers.Integral, 1, None)],
        "n_lower": [Interval(numbers.Real, 1, None), None],
        "integer": [InstanceOf(list, tuple, set, range, text="a list of attribute indices"), None],
        "budget_shares": BUDGET_SHARES,
        "n_synthetic": [Interval(numbers.Integral, 1, None)],
        "random_state": ["random_state"],
        **PRIVACY_PARAMETERS,
    }

    def _check_with_data(self, d):
        """The parameters against the records' d attributes: the memory of the tables,
        histograms and synthetic records, the box and the integer attributes."""
        n_pairs = max(len(self.pairs) if self.pairs is not None else d * (d - 1) // 2, 1)
        if self.n_bins != "auto":
            # the tables' counts and their projections, float64
            check_size(self.n_bins, "n_bins", nbytes=lambda v: 32 * v * v * n_pairs,
                       what=f"for {n_pairs} tables of n_bins x n_bins cells")
        if self.fine_bins != "auto":
            check_size(self.fine_bins, "fine_bins", nbytes=lambda v: 48 * v * d,
                       what=f"for {d} histograms of fine_bins bins (edges, counts, fractions)")
        # the records, their bins and cells, a uniform draw per value, and the weights
        check_size(self.n_synthetic, "n_synthetic", nbytes=lambda v: v * (40 * d + 16 * n_pairs + 64),
                   what=f"for synthetic records of {d} attributes")
        if self.bounds is None:
            raise ValueError("bounds are required: the public box (lower, upper) of the records (reading it from the "
                             "data would not be private)")
        lo, hi = check_bounds(self.bounds, d)
        integer = np.zeros(d, dtype=bool)
        for j in (self.integer or ()):
            if isinstance(j, (bool, np.bool_)) or not isinstance(j, numbers.Integral) or not -d <= j < d:
                raise ValueError(f"integer must list attribute indices in [0, {d}), got {self.integer!r}")
            integer[int(j) % d] = True
        if (integer & (np.floor(hi) < np.ceil(lo))).any():
            raise ValueError("integer: an integer attribute's bounds hold no integer")
        return lo, hi, integer

    def fit(self, X):
        """Release the synopsis of the rows of X (n, d) (two passes over X). Returns self."""
        from ..features import MarginalMap
        from ..privacy.budget import Budget

        self._validate_params()
        X = check_array(X, "X", np.float64)
        if X.ndim != 2 or X.shape[0] < 1:
            raise ValueError(f"X must be a 2-D array of at least one record, got shape {X.shape}")
        d = X.shape[1]
        lo, hi, integer = self._check_with_data(d)
        outside = int(np.count_nonzero(((X < lo) | (X > hi)).any(axis=1)))
        if outside:
            warnings.warn(f"{outside} record(s) had a value outside the public box and were counted in the edge bin "
                          "of that side; pass bounds that hold the data", RuntimeWarning, stacklevel=2)
        private = self.epsilon is not None
        share = self._budget_shares()["pilot"]
        # the count first, when it sets the first stage's resolution (add/remove: replace
        # neighbours keep n, which is then public)
        counted = private and self.fine_bins == "auto" and self.n_lower is None and self.neighbouring != "replace"
        estimates, variances = [], []
        if private:
            eps, delta = float(self.epsilon), float(self.delta)
            budget = Budget(eps, delta, neighbouring=self.neighbouring, what="MarginalSynopsis")
            budget.charge(self.accountant)  # once, before any noise
            rest = eps * (1 - COUNT_SHARE) if counted else eps
            stages = ((rest * share, delta * share), (rest * (1 - share), delta * (1 - share)))
        if counted:
            e0 = eps * COUNT_SHARE
            estimates.append(float(budget.part("count", e0).count(X.shape[0])))
            q = math.exp(-e0)  # the discrete Laplace of scale 1 / e0: variance 2 q / (1 - q)^2
            variances.append(2.0 * q / (1.0 - q) ** 2)
        if self.fine_bins != "auto":
            fine_bins = int(self.fine_bins)
        elif not private:
            fine_bins = MAX_FINE_BINS
        else:
            n0 = float(self.n_lower) if self.n_lower is not None else (
                estimates[0] if counted else float(X.shape[0]))
            fine_bins = fine_bins_for(n0, stages[0][0] / (2.0 if self.neighbouring == "replace" else 1.0), d)

        def release(sketch, stage):
            if not private:
                return sketch
            e, dl = stages[stage]
            return budget.part(("pilot", "tables")[stage], e, dl).release(sketch)

        # stage 1: fine one-way histograms
        fine_edges = [_fine_edges(lo[j], hi[j], fine_bins, integer[j]) for j in range(d)]
        flo = np.array([e[0] for e in fine_edges])
        fhi = np.array([e[-1] for e in fine_edges])
        with warnings.catch_warnings():  # (records outside the box: counted and warned above)
            warnings.simplefilter("ignore", RuntimeWarning)
            fine = MarginalMap(flo, fhi, edges=fine_edges, order=1)
            r1 = release(fine.sketch(X), 0)
        fine_counts = fine.tables(r1.sum)
        _add_parts(estimates, variances, r1)
        n1, _ = raking.pool(estimates, variances)
        fine_fracs = [_fractions(c, n1, private) for c in fine_counts]

        # stage 2: two-way tables on equal-mass bins
        pairs = None if self.pairs is None else [tuple(p) for p in self.pairs]
        n_pairs = len(pairs) if pairs is not None else d * (d - 1) // 2
        # the tables' L1 sensitivity per pair: 1 under add/remove, 2 under replace
        per_pair = 2.0 if self.neighbouring == "replace" else 1.0
        if self.n_bins == "auto":
            if private:
                b = marginal_bins(n1, stages[1][0] / per_pair, n_pairs)
            else:
                b = MAX_BINS
        else:
            b = int(self.n_bins)
        if private and d > 1:
            sd = math.sqrt(2.0) * per_pair * n_pairs / stages[1][0]  # (Laplace; the Gaussian's is of that order)
            per_cell = max(n1, 0.0) / (b * b)
            if per_cell < 2.0 * sd:
                warnings.warn(f"the release is too noisy for queries over two attributes: a cell of the {n_pairs} "
                              f"two-way tables ({b} x {b} bins) holds about {per_cell:.3g} records against a noise "
                              f"standard deviation of {sd:.3g} (n = {n1:.0f}, epsilon {stages[1][0]:.3g} for the "
                              "tables); give a larger epsilon, fewer pairs, or ask one-attribute questions",
                              NoisyAnswerWarning, stacklevel=2)
        edges = [_equal_mass_edges(fine.edges(j), fine_fracs[j], b) for j in range(d)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            tables_map = MarginalMap(flo, fhi, pairs=pairs, edges=edges, order=1 if d == 1 else 2)
            r2 = release(tables_map.sketch(X), 1)
        tables = tables_map.tables(r2.sum)
        _add_parts(estimates, variances, r2)
        n, n_var = raking.pool(estimates, variances)
        if tables_map.n_pairs:
            tables = raking.consistent_tables(tables_map.pairs, tables, n, noisy=private)
        else:
            tables = []
        self.box_ = (lo, hi)
        self.fine_bins_ = fine_bins
        self.integer_ = integer

        self.fine_map_, self.marginal_map_ = fine, tables_map
        self.fine_ = fine_fracs
        self.tables_ = tables
        self.n_bins_ = b
        self.count_ = max(n, 0.0)
        self.count_std_ = math.sqrt(n_var)
        self.privacy_ = budget.record() if private else None
        self._coarse = [self._coarse_of(j) for j in range(d)]
        self._synthesise(as_generator(self.random_state))
        return self

    def _coarse_of(self, j):
        """For attribute j: the fine bins [first[c], last[c]) of each coarse bin c."""
        fe = self.fine_map_.edges(j)
        ce = self.marginal_map_.edges(j)
        first = np.searchsorted(fe, ce[:-1])
        last = np.searchsorted(fe, ce[1:])
        return first, last

    def _synthesise(self, rng):
        d = self.fine_map_.d
        fine_edges = [self.fine_map_.edges(j) for j in range(d)]

        def sampler(j, bins, g):
            fe, f = fine_edges[j], self.fine_[j]
            if bins is None:  # in no table: its own fine histogram
                k = raking._draw(f, self.n_synthetic, g)
            else:
                first, last = self._coarse[j]
                k = np.empty(bins.size, dtype=np.int64)
                for c in np.unique(bins):
                    rows = np.nonzero(bins == c)[0]
                    k[rows] = raking._draw(f[first[c]:last[c]], rows.size, g) + first[c]
            if self.integer_[j]:  # a whole value of the bin (its edges are half-integers)
                a = fe[k] + 0.5
                count = np.rint(fe[k + 1] - fe[k]).astype(np.int64)
                return a + np.minimum((g.random(k.size) * count).astype(np.int64), count - 1)
            return np.minimum(fe[k] + g.random(k.size) * (fe[k + 1] - fe[k]), fe[-1])

        n_s = int(self.n_synthetic)
        if self.tables_:
            S = raking.tree_sample(d, self.marginal_map_.pairs, self.tables_, sampler, n_s, rng)
            cells = [self.marginal_map_.indices(S) - self.marginal_map_.block_offsets[None, :]]
            sizes = list(self.marginal_map_.block_sizes)
            targets = [t.reshape(-1) for t in self.tables_]
        else:
            S = np.column_stack([sampler(j, None, rng) for j in range(d)])
            cells, sizes, targets = [], [], []
        fine_cells = self.fine_map_.indices(S) - self.fine_map_.block_offsets[None, :]
        cells.append(fine_cells)
        sizes += list(self.fine_map_.block_sizes)
        targets += list(self.fine_)
        w, self.rake_sweeps_, self.rake_gap_ = raking.rake(np.column_stack(cells), sizes, targets)
        self.synthetic_ = S
        self.weights_ = w

    # ------------------------------------------------------------------ answers

    def _check_fitted(self):
        if not hasattr(self, "weights_"):
            raise ValueError("this MarginalSynopsis is not fitted yet: call fit(X) first")

    def _inside(self, j, low, high):
        """For attribute j: the share of each fine bin inside [low, high]: linear within a
        bin, or the share of its whole values for an integer attribute."""
        fe = self.fine_map_.edges(j)
        if self.integer_[j]:
            a, b = fe[:-1] + 0.5, fe[1:] - 0.5  # the bin's first and last values
            hits = np.minimum(b, math.floor(high) if math.isfinite(high) else b) - np.maximum(
                a, math.ceil(low) if math.isfinite(low) else a) + 1.0
            return np.clip(hits, 0.0, None) / (b - a + 1.0)
        return np.clip(np.minimum(fe[1:], high) - np.maximum(fe[:-1], low), 0.0, None) / np.diff(fe)

    def _margin(self, j):
        """Attribute j's coarse margin from the two-way tables (they agree on it after the
        consistency step; the less noisy source for intervals of many fine bins), or None."""
        for p, (a, b) in enumerate(self.marginal_map_.pairs):
            if a == j:
                return self.tables_[p].sum(axis=1)
            if b == j:
                return self.tables_[p].sum(axis=0)
        return None

    def _one_way(self, j, low, high):
        """The share of the records with low <= x_j <= high: the coarse margin of the tables
        times each coarse bin's share inside (from the fine histogram), or the fine
        histogram alone for an attribute in no table."""
        margin = self._margin(j)
        if margin is None:
            return float(self.fine_[j] @ self._inside(j, low, high))
        return float(margin @ self._coarse_inside(j, low, high))

    def _coarse_inside(self, j, low, high):
        """For attribute j: each coarse bin's share of its fine mass inside [low, high]."""
        ov = self._inside(j, low, high)
        first, last = self._coarse[j]
        f = self.fine_[j]
        mass = np.add.reduceat(f, first) if f.size else f
        inside = np.add.reduceat(f * ov, first)
        width_share = np.add.reduceat(ov, first) / np.maximum(last - first, 1)
        return np.where(mass > 0, inside / np.where(mass > 0, mass, 1.0), width_share)

    def counting_queries(self, lower, upper, *, as_count=False):
        """The fraction of the records inside each box [lower_q, upper_q] (arrays (q, d), or
        (d,) for one query), in [0, 1]; times the pooled count with as_count=True."""
        self._check_fitted()
        d = self.fine_map_.d
        L = np.atleast_2d(np.asarray(lower, dtype=np.float64))
        H = np.atleast_2d(np.asarray(upper, dtype=np.float64))
        if L.shape != H.shape or L.shape[1] != d:
            raise ValueError(f"lower and upper must be arrays of shape (q, {d}) (or ({d},)), got {np.shape(lower)} "
                             f"and {np.shape(upper)}")
        if np.isnan(L).any() or np.isnan(H).any():
            raise ValueError("lower and upper must not hold NaN")
        box_lo, box_hi = self.box_
        pair_of = {(int(i), int(j)): p for p, (i, j) in enumerate(self.marginal_map_.pairs)}
        out = np.empty(L.shape[0])
        S, w = self.synthetic_, self.weights_
        for q, (low, high) in enumerate(zip(L, H)):
            if (low > high).any():
                out[q] = 0.0
                continue
            cut = [j for j in range(d) if low[j] > box_lo[j] or high[j] < box_hi[j]]
            if not cut:
                out[q] = 1.0
            elif len(cut) == 1:
                j = cut[0]
                out[q] = self._one_way(j, low[j], high[j])
            elif len(cut) == 2 and tuple(cut) in pair_of:
                i, j = cut
                table = self.tables_[pair_of[(i, j)]]
                out[q] = float(self._coarse_inside(i, low[i], high[i]) @ table @ self._coarse_inside(j, low[j],
                                                                                                       high[j]))
            else:
                inside = np.all((S[:, cut] >= low[cut]) & (S[:, cut] <= high[cut]), axis=1)
                out[q] = float(w[inside].sum())
        np.clip(out, 0.0, 1.0, out=out)
        if as_count:
            out = out * self.count_
        return out[0] if np.ndim(lower) == 1 else out

    def cdf(self, column, thresholds):
        """The fraction of the records with x_column <= t for each threshold (non-decreasing
        in t, from 0 below the box to 1 at its top)."""
        self._check_fitted()
        j = self._column(column)
        t = np.asarray(thresholds, dtype=np.float64)
        if np.isnan(t).any():
            raise ValueError("thresholds must not hold NaN")
        flat = t.reshape(-1)
        order = np.argsort(flat, kind="stable")
        ts = flat[order]
        values = np.array([self._one_way(j, -math.inf, v) for v in ts])
        lo, hi = self.box_
        values[ts >= hi[j]] = 1.0  # (exactly: the sums of shares round)
        values[ts < lo[j]] = 0.0
        values = np.maximum.accumulate(np.clip(values, 0.0, 1.0)) if values.size else values
        out = np.empty(flat.size)
        out[order] = values
        return out.reshape(t.shape)

    def histogram(self, column, edges):
        """The fraction of the records in each bin [edges_k, edges_k+1] of x_column
        (non-negative; summing to the share of the records inside ``[edges[0], edges[-1]]``)."""
        e = np.asarray(edges, dtype=np.float64)
        if e.ndim != 1 or e.size < 2 or not (np.diff(e) > 0).all():
            raise ValueError("edges must be at least 2 increasing numbers")
        return np.diff(self.cdf(column, e))

    def estimate(self, f):
        """The weighted average of f over the synthetic records: an estimate of (1/n) sum_i
        f(x_i); f maps an (n_s, d) array to (n_s,) or (n_s, q)."""
        self._check_fitted()
        F = np.asarray(f(self.synthetic_), dtype=np.float64)
        if F.ndim not in (1, 2) or F.shape[0] != self.synthetic_.shape[0]:
            raise ValueError(f"f must return an array of shape (n_s,) or (n_s, q) with n_s = "
                             f"{self.synthetic_.shape[0]}, got {F.shape}")
        return self.weights_ @ F

    def _bin_moments(self, j):
        """For attribute j: each coarse bin's share of the records (the tables' margin, or the
        fine histogram's), and the first and second moments of x_j within it (from the fine
        histogram: uniform within a fine bin, or uniform on its whole values)."""
        fe = self.fine_map_.edges(j)
        if self.integer_[j]:  # whole values a..b: mean (a + b) / 2, variance ((b - a + 1)^2 - 1) / 12
            a, b = fe[:-1] + 0.5, fe[1:] - 0.5
            mid, var = 0.5 * (a + b), ((b - a + 1.0) ** 2 - 1.0) / 12.0
        else:
            mid, var = 0.5 * (fe[:-1] + fe[1:]), np.diff(fe) ** 2 / 12.0
        f = self.fine_[j]
        first, last = self._coarse[j]
        mass = np.add.reduceat(f, first)
        safe = np.where(mass > 0, mass, 1.0)
        m1 = np.where(mass > 0, np.add.reduceat(f * mid, first) / safe,
                      0.5 * (fe[first] + fe[last]))
        m2 = np.where(mass > 0, np.add.reduceat(f * (mid * mid + var), first) / safe, m1 * m1)
        margin = self._margin(j)
        return (mass if margin is None else margin), m1, m2

    def mean(self):
        """The mean of every attribute, from the one-way margins (inside the box)."""
        self._check_fitted()
        d = self.fine_map_.d
        out = np.empty(d)
        for j in range(d):
            share, m1, _ = self._bin_moments(j)
            out[j] = share @ m1 / max(share.sum(), 1e-300)
        lo, hi = self.box_
        return np.clip(out, lo, hi)

    def covariance(self):
        """The covariance matrix of the attributes: variances from the one-way margins,
        covariances of released pairs from their tables (the two attributes independent
        within a cell), of other pairs from the synthetic records; projected onto the
        positive semi-definite matrices."""
        self._check_fitted()
        d = self.fine_map_.d
        mu = self.mean()
        moments = [self._bin_moments(j) for j in range(d)]
        Z = self.synthetic_ - mu
        C = (Z * self.weights_[:, None]).T @ Z  # (the pairs of no table)
        for j, (share, m1, m2) in enumerate(moments):
            C[j, j] = share @ m2 / max(share.sum(), 1e-300) - mu[j] ** 2
        for (i, j), table in zip(self.marginal_map_.pairs, self.tables_):
            C[i, j] = C[j, i] = moments[i][1] @ table @ moments[j][1] - mu[i] * mu[j]
        C = 0.5 * (C + C.T)
        vals, vecs = np.linalg.eigh(C)
        return (vecs * np.maximum(vals, 0.0)) @ vecs.T

    def _column(self, column):
        d = self.fine_map_.d
        if isinstance(column, (bool, np.bool_)) or not isinstance(column, numbers.Integral) or not -d <= column < d:
            raise ValueError(f"column must be an attribute index in [0, {d}), got {column!r}")
        return int(column) % d


def _add_parts(estimates, variances, sketch):
    """The release's estimates of n (its count, every table's total) and their variances
    (pysketch.m2m.core.pooled_count), appended."""
    for _, e, v in pooled_count(sketch)[2]:
        estimates.append(e)
        variances.append(v)


def _fractions(counts, n, noisy):
    counts = np.asarray(counts, dtype=np.float64)
    t = raking.simplex_projection(counts, n) if noisy else np.maximum(counts, 0.0)
    total = t.sum()
    return t / total if total > 0 else np.full(counts.size, 1.0 / counts.size)


def _fine_edges(low, high, bins, integer):
    """The first stage's bin edges of one attribute: `bins` equal-width bins of [low, high],
    or for an integer attribute bins of w whole values each (edges at half-integers, w the
    fewest that need at most `bins` bins)."""
    if not integer:
        return np.linspace(low, high, bins + 1)
    first, last = math.ceil(low), math.floor(high)
    values = last - first + 1
    w = -(-values // bins)
    count = -(-values // w)
    return first - 0.5 + w * np.arange(count + 1, dtype=np.float64)


def _equal_mass_edges(fine_edges, fractions, b):
    """b bins of about equal mass of a fine histogram, on its edges (fewer when the mass sits
    on fewer fine bins)."""
    B = fractions.size
    cum = np.cumsum(fractions)
    cuts = np.searchsorted(cum, np.arange(1, b) / b) + 1  # the fine edge after each quantile
    cuts = np.unique(np.clip(cuts, 1, B - 1))
    return np.concatenate([[fine_edges[0]], fine_edges[cuts], [fine_edges[-1]]]) if B > 1 else fine_edges
