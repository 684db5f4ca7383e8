"""Private k-means baselines: DP-Lloyd (SuLQ k-means) and EUGkM (the noisy grid).

DP-Lloyd (Blum, Dwork, McSherry & Nissim, "Practical privacy: the SuLQ framework", PODS
2005; the DPLloyd of Su et al., "Differentially private k-means clustering", CODASPY
2016, which the thesis compares against in Fig. 9.4) runs Lloyd's algorithm for a fixed
number T of iterations; in each it releases, for every cluster, the noisy count and the
noisy sum of the records assigned to it, and moves the centre to their ratio.

Privacy (add/remove neighbours): in one iteration a record adds 1 to one count and
x - c0 to one sum (c0 the centre of the public box, records clipped to the box), so the
L1 sensitivity of the (counts, sums) vector is 1 + sum_l h_l with h_l the box's half
widths. Each iteration is (epsilon / T)-DP with Laplace noise of scale
T (1 + sum_l h_l) / epsilon on every entry, and T iterations compose to epsilon. The
noise comes from pysketch.privacy.mechanisms (exact discrete Laplace, OS entropy).
"""


import numpy as np

from .._checks import check_array, check_bounds, check_int, check_positive, check_relation, check_size
from .._random import as_generator
from ..cluster import CHUNK_VALUES
from .._base import not_fitted_error
from ..metrics import assign
from ..privacy.budget import Budget
from ..privacy.mechanisms import Laplace, check_epsilon
from ._common import _check_share, _clip_records

__all__ = ["DPLloyd", "EUGkM"]


def _check_centres(k, d):
    """n_clusters = k against the memory of k centres of d coordinates (their sums, noisy
    copies and counts) and a chunk of distances to them, before anything is charged."""
    check_size(k, "n_clusters", nbytes=lambda v: v * (d * 8 * 4 + 16) + 16 * CHUNK_VALUES,
               what=f"for centres of d = {d} coordinates")


class DPLloyd:
    """DP-Lloyd k-means (SuLQ), epsilon-DP under add/remove neighbours.

    Parameters
    ----------
    n_clusters : int
    epsilon : float > 0
    bounds : (lower, upper) or (d, 2) array
        Public box of the data; records outside are clipped (with a warning).
    n_iter : int, default 5
        T, fixed in advance (Su et al. 2016 recommend 5; each iteration gets epsilon/T).
    random_state : None, int or Generator
        Draws the initial centres (uniform in the box; public). Never the noise.
    accountant : BudgetAccountant (pysketch or diffprivlib), optional
    insecure_seed : None or int
        Reproducible, insecure noise (tests only).

    Attributes
    ----------
    cluster_centers_ : (n_clusters, d)
    noise_scale_ : float
        Laplace scale of every count and sum entry.
    sensitivity_ : float
        L1 sensitivity of one iteration's (counts, sums).

    Raises
    ------
    TypeError, ValueError
        In `fit`: an `n_clusters` or `n_iter` that is not an int >= 1 (TypeError for a
        non-integer; ValueError also for centres the machine's memory cannot hold), an
        epsilon out of range, an X that is not a finite 2-D array, `bounds` that are not a
        finite box of d coordinates, or an accountant whose budget would be exceeded
        (pysketch.privacy.BudgetError, a ValueError).

    Warns
    -----
    RuntimeWarning
        When records lie outside the box (clipped; the message counts them).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.uniform(0, 0.4, size=(1000, 2)), rng.uniform(0.6, 1, size=(1000, 2))])
    >>> from pysketch.baselines import DPLloyd
    >>> km = DPLloyd(2, 1.0, ([0, 0], [1, 1]), random_state=0).fit(X)
    >>> km.cluster_centers_.shape, km.sensitivity_, km.predict(X[:3]).shape  # 1 + sum of half widths
    ((2, 2), 2.0, (3,))
    """

    def __init__(self, n_clusters, epsilon, bounds, *, n_iter=5, random_state=None, accountant=None,
                 insecure_seed=None):
        self.n_clusters = n_clusters
        self.epsilon = epsilon
        self.bounds = bounds
        self.n_iter = n_iter
        self.random_state = random_state
        self.accountant = accountant
        self.insecure_seed = insecure_seed

    def fit(self, X, y=None):
        k = check_int(self.n_clusters, "n_clusters")
        T = check_int(self.n_iter, "n_iter")
        eps = check_epsilon(self.epsilon)
        X = check_array(X)
        n, d = X.shape
        _check_centres(k, d)
        lo, hi = check_bounds(self.bounds, d)
        X, _ = _clip_records(X, lo, hi)
        c0 = 0.5 * (lo + hi)
        Z = X - c0
        half = 0.5 * (hi - lo)
        sens = 1.0 + float(half.sum())
        source = Budget(eps, what="DPLloyd.fit", pure=True,
                        insecure_seed=self.insecure_seed).charge(self.accountant).source
        mech = Laplace(eps / T, sens, insecure_seed=source)
        rng = as_generator(self.random_state)
        C = rng.uniform(-half, half, size=(k, d))
        for _ in range(T):
            labels = assign(Z, C)
            counts = np.bincount(labels, minlength=k).astype(np.float64)
            sums = np.zeros((k, d))
            np.add.at(sums, labels, Z)
            noisy = mech.randomise(np.concatenate([counts, sums.ravel()]))
            nc, ns = noisy[:k], noisy[k:].reshape(k, d)
            C = np.clip(ns / np.maximum(nc, 1.0)[:, None], -half, half)
        self.cluster_centers_ = C + c0
        self.noise_scale_ = mech.effective_scale_
        self.sensitivity_ = sens
        self.n_features_in_ = d
        return self

    def predict(self, X):
        return _predict(self, X)


class EUGkM:
    """EUGkM k-means (Su, Cao, Li, Bertino & Jin, "Differentially private k-means
    clustering", CODASPY 2016; the grid method the thesis compares with on Gowalla),
    epsilon-DP.

    The records, clipped to the public box, are counted on a uniform grid of M bins per
    coordinate, M = round((N epsilon / theta)^(2 / (2 + d))) with theta = 10 (their
    extension to d dimensions of the uniform grid of Qardaji, Yang & Li, ICDE 2013); the
    counts are released with Laplace noise, the negative ones set to 0, and the k-means of
    the cells' centres weighted by the noisy counts is the result (post-processing; here
    pysketch.cluster.weighted_kmeans, best of 3 greedy k-means++ runs).

    Privacy: the histogram is the sum of one-hot features of one block (pysketch.features.
    GridMap): adding or removing a record moves one count by one (L1 sensitivity 1),
    replacing one moves two (2), whatever the data. N is not public under add/remove: a
    share ``count_share`` (5%) of epsilon releases a noisy count (discrete Laplace,
    sensitivity 1) that sets M, and the rest noises the cells (the release path of the
    library, pysketch.privacy.release; noise from OS entropy). Under 'replace' N is public
    and the whole epsilon goes to the cells. M^d is capped at MAX_GRID_CELLS (M lowered).

    Parameters
    ----------
    n_clusters : int
    epsilon : float > 0
    bounds : (lower, upper) or (d, 2) array
        Public box; records outside are clipped (with a warning).
    theta : float > 0, default 10
    count_share : float in (0, 1), default 0.05
    neighbouring : {'add_remove', 'replace'}
    random_state : None, int or Generator
        The k-means's seeding (public). Never the noise.
    accountant : BudgetAccountant (pysketch or diffprivlib), optional
    insecure_seed : None or int
        Reproducible, insecure noise (tests only).

    Attributes
    ----------
    cluster_centers_ : (n_clusters, d)
    n_bins_ : int
        M, the bins per coordinate.
    sketch_ : PrivateSketch
        The released grid (noisy counts and count).
    sensitivity_ : float
        L1 sensitivity of the counts (1, or 2 under 'replace').

    Raises
    ------
    TypeError, ValueError
        In `fit`: an `n_clusters` that is not an int >= 1, an epsilon out of range, a
        `theta` that is not a positive finite number, a `count_share` outside (0, 1), an
        unknown `neighbouring`, an X that is not a finite 2-D array, `bounds` that are not
        a finite box of d coordinates, or an accountant whose budget would be exceeded
        (pysketch.privacy.BudgetError, a ValueError).

    Warns
    -----
    RuntimeWarning
        When records lie outside the box (clipped; the message counts them).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.uniform(0, 0.4, size=(1000, 2)), rng.uniform(0.6, 1, size=(1000, 2))])
    >>> from pysketch.baselines import EUGkM
    >>> km = EUGkM(2, 1.0, ([0, 0], [1, 1]), random_state=0).fit(X)
    >>> km.cluster_centers_.shape, km.sensitivity_  # (the noise is not seeded: n_bins_ varies)
    ((2, 2), 1.0)
    """

    def __init__(self, n_clusters, epsilon, bounds, *, theta=10.0, count_share=0.05, neighbouring="add_remove",
                 random_state=None, accountant=None, insecure_seed=None):
        self.n_clusters = n_clusters
        self.epsilon = epsilon
        self.bounds = bounds
        self.theta = theta
        self.count_share = count_share
        self.neighbouring = neighbouring
        self.random_state = random_state
        self.accountant = accountant
        self.insecure_seed = insecure_seed

    @staticmethod
    def grid_bins(count, epsilon, d, theta=10.0):
        """M = round((count epsilon / theta)^(2 / (2 + d))), at least 1, with M^d <=
        MAX_GRID_CELLS (Su et al. 2016)."""
        from ..features import MAX_GRID_CELLS

        bins = max(1, int(round((max(float(count), 1.0) * epsilon / theta) ** (2.0 / (2.0 + d)))))
        while bins > 1 and bins ** d > MAX_GRID_CELLS:
            bins -= 1
        return bins

    def fit(self, X, y=None):
        from ..cluster import weighted_kmeans
        from ..features import GridMap
        from ..privacy.release import plan_release, release

        k = check_int(self.n_clusters, "n_clusters")
        eps = check_epsilon(self.epsilon)
        theta = check_positive(self.theta, "theta")
        share = _check_share(self.count_share)
        relation = check_relation(self.neighbouring)
        X = check_array(X)
        n, d = X.shape
        _check_centres(k, d)
        lo, hi = check_bounds(self.bounds, d)
        X, _ = _clip_records(X, lo, hi)
        plan = plan_release(1, eps, 0.0, neighbouring=relation, mechanism="laplace",
                            split=1.0 - share if relation == "add_remove" else None)
        source = Budget(eps, neighbouring=relation, what="EUGkM.fit", pure=True,
                        insecure_seed=self.insecure_seed).charge(self.accountant).source
        count = plan.release_count(n, source)
        bins = self.grid_bins(count, plan.epsilon_sum, d, theta)
        fm = GridMap(lo, hi, bins)
        private = release(fm.sketch(X), plan, source, count=count)
        weights = np.maximum(private.sum, 0.0)
        rng = as_generator(self.random_state)
        if weights.sum() > 0:
            C, _, _ = weighted_kmeans(fm.cell_centers(), weights, k, n_init=3, random_state=rng)
        else:  # every noisy count <= 0: nothing to cluster, the box's centre
            C = np.repeat(0.5 * (lo + hi)[None, :], k, axis=0)
        self.cluster_centers_ = C
        self.n_bins_ = bins
        self.sketch_ = private
        self.sensitivity_ = private.privacy.sensitivity_sum
        self.n_features_in_ = d
        return self

    def predict(self, X):
        return _predict(self, X)


def _predict(model, X):
    """The index of the nearest centre of every record of X; scikit-learn's NotFittedError
    before fit (it was an AttributeError)."""
    if not hasattr(model, "cluster_centers_"):
        raise not_fitted_error(model)
    return assign(check_array(X), model.cluster_centers_)
