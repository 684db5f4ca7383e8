"""k-means from a grid sketch (the joint histogram of kind 'grid'), clean or private.

A grid sketch counts the records in every cell of a uniform grid of the public box
(pysketch.features.GridMap). In low dimension it is the best private synopsis for
k-means that this library knows: its sensitivity is 1 whatever the number of cells
(a Fourier sketch's grows with its size), so its noise per cell is that of a single
count. The grid methods of private clustering (EUGkM: Su, Cao, Li, Bertino & Jin,
"Differentially private k-means clustering", CODASPY 2016) run a weighted k-means on the
noisy counts with the negative ones set to 0; where most cells are empty (always, in
practice: records fill a small part of the box) the positive noise of the empty cells
is a mass spread over the whole box, which pulls the centres (measured: up to a third of
the records' weight in the 3-d colour grid of a photograph at epsilon = 1).

This decoder removes that mass before the k-means, by post-processing alone:

1. denoisers: cells kept when their count exceeds 2.12 noise standard deviations
   (``hard``; for Laplace noise 3 b: a fraction e^-3 / 2 of the empty cells passes);
   cells whose (3^d) neighbourhood sum exceeds 3 standard deviations of that sum
   (``smooth``: the records' cells are neighbours, the noise is not); or either a
   neighbourhood sum above sqrt(2 ln N) of its standard deviations or a single count
   above the noise's 1 - e^-2 / N quantile (``tested``: thresholds that grow with the
   number N of cells, so that about e^-2 empty cells pass in all); each also on the
   grid coarsened by two (2^d cells merged, four times the signal for twice the noise
   in 2-d);
2. a weighted k-means of the kept cells' centres (pysketch.cluster.weighted_kmeans)
   for every denoiser;
3. of these candidate centres, the one with the lowest estimate of the records' k-means
   cost on the grid, sum_c y_c min_j ||p_c - mu_j||^2 with the noisy counts y_c as they
   were released (negative ones included): for given centres an unbiased estimate of the
   cost of the records moved to their cells' centres (the noise has mean 0).

No denoiser is best everywhere (measured: isolated groups of records, such as islands
in a map, are lost by the neighbourhood tests; a sparse surface in a fine 3-d grid is
swamped by the single-cell one); the estimated cost picks the one that fits the data.
A clean sketch has no noise: its counts are the weights, and only the k-means runs.
"""

import dataclasses
import math

import numpy as np
from scipy import ndimage, special

from .._random import as_generator
from ..cluster import weighted_kmeans
from .base import DECODERS, Decoder
from .problem import MixtureSolution, check_n_atoms

__all__ = ["GridProblem", "GridKMeansDecoder", "GridSolution", "grid_denoisers", "grid_kmeans"]

#: Standard deviations a single count must exceed in the ``hard`` denoiser (3 b for Laplace
#: noise of scale b, whose standard deviation is sqrt(2) b).
HARD_Z = 3.0 / math.sqrt(2.0)
#: Standard deviations a neighbourhood sum must exceed in the ``smooth`` denoiser.
SMOOTH_Z = 3.0
#: Restarts of the weighted k-means of each candidate.
KMEANS_INIT = 3


class GridProblem:
    """What the grid decoder reads: the counts of a grid sketch (noisy or not), the grid
    (n_bins per coordinate of the box [lower, upper]), the record count and the noise:
    its mechanism ('laplace', 'gaussian' or None for a clean sketch) and its standard
    deviation per cell. Positions are in a frame of the data (`in_units`), as in
    DecodingProblem.

    Parameters
    ----------
    feature_map : GridMap
        The map of the sketch (kind 'grid').
    counts : array_like of shape (m,)
        The cells' counts, finite (noisy for a private sketch).
    count : int, optional
        The sketch's number of records (recorded, not used by the decoder).
    mechanism : {None, 'laplace', 'gaussian'}, default None
        The release's mechanism; None for a clean sketch.
    noise_sd : float >= 0, default 0
        The noise's standard deviation per cell: > 0 with a mechanism, 0 without.

    Raises
    ------
    ValueError
        When the map is not a GridMap, counts are not m finite numbers, the mechanism is
        unknown, noise_sd does not match it (> 0 with a mechanism, 0 without); from
        ``in_units``, for a unit that is not a positive finite number.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.decoders import GridProblem
    >>> from pysketch.features import GridMap
    >>> from pysketch.privacy import make_private
    >>> X = np.random.default_rng(0).uniform(-4, 4, size=(1000, 2))
    >>> sketch = GridMap([-5.0, -5.0], [5.0, 5.0], n_bins=16).sketch(X)
    >>> problem = GridProblem.from_sketch(sketch)
    >>> problem.m, problem.centers().shape, float(problem.counts.sum()), problem.private
    (256, (256, 2), 1000.0, False)
    >>> GridProblem.from_sketch(make_private(sketch, 1.0)).mechanism
    'laplace'
    """

    unit = 1.0
    origin = None

    def __init__(self, feature_map, counts, *, count=None, mechanism=None, noise_sd=0.0):
        from ..features import GridMap

        if not isinstance(feature_map, GridMap):
            raise ValueError(f"the grid decoder reads grid sketches (kind 'grid'), not {feature_map.kind!r}")
        y = np.asarray(counts, dtype=np.float64)
        if y.shape != (feature_map.m,) or not np.isfinite(y).all():
            raise ValueError(f"counts must be {feature_map.m} finite numbers (one per cell), got shape {y.shape}")
        if mechanism not in (None, "laplace", "gaussian"):
            raise ValueError(f"mechanism must be None, 'laplace' or 'gaussian', got {mechanism!r}")
        if not (math.isfinite(noise_sd) and noise_sd >= 0) or (mechanism is None) != (noise_sd == 0):
            raise ValueError(f"noise_sd must be a finite number > 0 with a mechanism, 0 without; got {noise_sd!r} "
                             f"with mechanism {mechanism!r}")
        self.feature_map = feature_map
        self.counts = y
        self.count = count
        self.mechanism = mechanism
        self.noise_sd = float(noise_sd)
        self.private = mechanism is not None
        self.d = feature_map.d  # the records' dimension
        self.grid_dim = feature_map.grid_dim  # the grid's (the projection's, if any)
        self.n_bins = feature_map.n_bins
        self.m = feature_map.m
        self._centers = None

    @classmethod
    def from_sketch(cls, sketch):
        """The problem of a grid Sketch or PrivateSketch (the noise from its privacy record)."""
        record = getattr(sketch, "privacy", None)
        n = max(int(sketch.count), 1)
        if record is None:
            return cls(sketch.feature_map, sketch.sums["sum"], count=n)
        return cls(sketch.feature_map, sketch.sums["sum"], count=n, mechanism=record.mechanism,
                   noise_sd=math.sqrt(record.sum_noise_variance))

    def in_units(self, unit, origin=None):
        """The same problem with positions (x - origin) / unit (see DecodingProblem.in_units)."""
        import copy

        u = float(unit)
        if not (math.isfinite(u) and u > 0):
            raise ValueError(f"unit must be a positive finite number, got {unit!r}")
        out = copy.copy(self)
        out.unit = u
        out.origin = None if origin is None else np.asarray(origin, dtype=np.float64).copy()
        out._centers = None
        return out

    def _grid_origin(self):
        """The frame's origin in the grid's space: the origin itself without a projection;
        0 with one (the projection is an isometry onto its subspace, so the k-means of the
        cells in the grid's space is the k-means of their lifted points)."""
        return self.origin if self.origin is not None and self.feature_map.projection is None else None

    def centers(self, level=0):
        """The cell centres (N, p) of the grid coarsened `level` times by two, in the grid's
        space and the frame (`to_data_units` maps the decoder's centres to the records'
        space)."""
        fm = self.feature_map
        bins = self.n_bins >> level
        mids = (np.arange(bins) + 0.5) / bins
        grids = np.meshgrid(*([mids] * self.grid_dim), indexing="ij")
        unit_pts = np.stack([g.reshape(-1) for g in grids], axis=1)
        pts = fm.lower + unit_pts * (fm.upper - fm.lower)
        o = self._grid_origin()
        if o is not None:
            pts = pts - o
        return pts / self.unit

    def counts_at(self, level):
        """The counts summed over blocks of 2^level cells per coordinate (the grid must hold
        whole blocks: n_bins divisible by 2^level)."""
        if level == 0:
            return self.counts
        b = self.n_bins >> level
        f = 1 << level
        Y = self.counts.reshape((b, f) * self.grid_dim)
        return Y.sum(axis=tuple(range(1, 2 * self.grid_dim, 2))).reshape(-1)

    def to_data_units(self, solution):
        """The decoder's centres (in the grid's space and the frame) in the records' space."""
        o = self._grid_origin()
        theta = solution.theta * self.unit + (0.0 if o is None else o)
        return dataclasses.replace(solution, theta=self.feature_map.lift(theta))


@dataclasses.dataclass
class GridSolution(MixtureSolution):
    """The k centres and weights from a grid sketch, and which candidate was chosen
    ('counts' for a clean sketch, else 'denoiser/level'); residual is NaN (no sketch
    distance is fitted).

    Parameters
    ----------
    theta, weights, residual, restart, n_iter
        As for :class:`~pysketch.decoders.MixtureSolution`: the centres (k, d) in the
        records' space, their weights (fractions of the kept mass), NaN, 0 and 1.
    candidate : str, default ''
        'counts' (clean sketch), 'none' (no cell stands out of the noise: k copies of the
        box's centre) or 'denoiser/level' (e.g. 'smooth/1').

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.decoders import GridKMeansDecoder, MixtureTask
    >>> from pysketch.features import GridMap
    >>> X = np.repeat([[-3.0, -3.0], [3.0, 3.0]], 500, axis=0) + np.random.default_rng(0).normal(0, 0.5, (1000, 2))
    >>> decoder = GridKMeansDecoder(random_state=0)
    >>> problem = decoder.problem(GridMap([-5.0, -5.0], [5.0, 5.0], n_bins=16).sketch(X))
    >>> solution = decoder.decode(MixtureTask(problem, 2, lower=-5.0, upper=5.0))
    >>> solution.candidate, solution.weights.tolist(), solution.residual
    ('counts', [0.5, 0.5], nan)
    """

    candidate: str = ""


def _tail(problem, q, cells):
    """The threshold t with P(noise > t) = q for the sum of `cells` cells' noise: exact for
    one Laplace count (b ln(1 / (2q))), the normal approximation otherwise."""
    s = problem.noise_sd
    if cells == 1 and problem.mechanism == "laplace":
        b = s / math.sqrt(2.0)
        return b * math.log(1.0 / (2.0 * q))
    return math.sqrt(cells) * s * float(special.ndtri(1.0 - q))


def grid_denoisers(problem, level):
    """{name: weights} of the cells of the grid coarsened `level` times (see the module
    docstring); every weight >= 0.

    Parameters
    ----------
    problem : GridProblem
        A private problem (noise_sd > 0).
    level : int >= 0
        The grid coarsened `level` times by two (n_bins divisible by 2^level).

    Returns
    -------
    dict of str to ndarray
        'hard', 'smooth' and 'tested': the weights of the (n_bins / 2^level)^p cells,
        the positive counts of the cells kept and 0 elsewhere.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.decoders import GridProblem
    >>> from pysketch.decoders.grid import grid_denoisers
    >>> from pysketch.features import GridMap
    >>> from pysketch.privacy import make_private
    >>> X = np.repeat([[-3.0, -3.0], [3.0, 3.0]], 500, axis=0) + np.random.default_rng(0).normal(0, 0.5, (1000, 2))
    >>> problem = GridProblem.from_sketch(make_private(GridMap([-5.0, -5.0], [5.0, 5.0], n_bins=16).sketch(X), 1.0))
    >>> weights = grid_denoisers(problem, 1)
    >>> sorted(weights), weights["hard"].shape, all(bool((w >= 0).all()) for w in weights.values())
    (['hard', 'smooth', 'tested'], (64,), True)
    """
    y = problem.counts_at(level)
    d = problem.grid_dim
    K = 1 << (d * level)  # released cells per coarse cell
    s = math.sqrt(K) * problem.noise_sd
    N = y.size
    bins = problem.n_bins >> level
    hood = 3 ** d
    S = ndimage.uniform_filter(y.reshape((bins,) * d), size=3, mode="constant").reshape(-1) * hood
    s_hood = math.sqrt(hood) * s
    pos = np.maximum(y, 0.0)
    single = _tail(problem, math.exp(-2.0) / N, K)
    return {
        "hard": np.where(y > HARD_Z * s, pos, 0.0),
        "smooth": np.where(S > SMOOTH_Z * s_hood, pos, 0.0),
        "tested": np.where((S > math.sqrt(2.0 * math.log(max(N, 2))) * s_hood) | (y > single), pos, 0.0),
    }


def grid_kmeans(problem, k, *, n_init=KMEANS_INIT, random_state=None):
    """k centres from a GridProblem (see the module docstring). Returns (centers, weights
    (fractions of the kept mass), the name of the chosen candidate, {name: estimated cost}).

    Parameters
    ----------
    problem : GridProblem
        The grid sketch, clean or private.
    k : int
        The number of centres, in [1, 2^16].
    n_init : int, default KMEANS_INIT (3)
        Restarts of each weighted k-means.
    random_state : None, int or numpy.random.Generator
        Seeds the k-means.

    Returns
    -------
    centers : ndarray of shape (k, p)
        In the grid's space and the problem's frame (``problem.to_data_units`` maps them
        to the records' space).
    weights : ndarray of shape (k,)
    candidate : str
        'counts' (clean), 'none' (nothing stands out of the noise) or 'denoiser/level'.
    costs : dict of str to float
        The estimated cost of every candidate (empty for 'counts' and 'none').

    Raises
    ------
    ValueError
        When k is outside its range, or a clean sketch has no positive count (the
        weighted k-means refuses weights that are all 0).

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.decoders import GridProblem, grid_kmeans
    >>> from pysketch.features import GridMap
    >>> from pysketch.privacy import make_private
    >>> X = np.repeat([[-3.0, -3.0], [3.0, 3.0]], 500, axis=0) + np.random.default_rng(0).normal(0, 0.5, (1000, 2))
    >>> problem = GridProblem.from_sketch(make_private(GridMap([-5.0, -5.0], [5.0, 5.0], n_bins=16).sketch(X), 1.0))
    >>> centers, weights, candidate, costs = grid_kmeans(problem, 2, random_state=0)
    >>> bool(np.allclose(np.sort(centers[:, 0]), [-3, 3], atol=0.5)), candidate in costs
    (True, True)
    """
    k = check_n_atoms(k)
    rng = as_generator(random_state)
    P0 = problem.centers(0)
    y0 = problem.counts
    if not problem.private:
        C, mass, _ = weighted_kmeans(P0, np.maximum(y0, 0.0), k, n_init=n_init, random_state=rng)
        return C, mass / mass.sum(), "counts", {}
    p_sq = np.einsum("ij,ij->i", P0, P0)
    fits, costs = {}, {}
    for level in (0, 1):
        if level and (problem.n_bins % 2 or problem.n_bins < 4):
            continue
        P = problem.centers(level)
        for name, w in grid_denoisers(problem, level).items():
            if not w.sum() > 0:
                continue
            key = f"{name}/{level}"
            fits[key] = weighted_kmeans(P, w, k, n_init=n_init, random_state=rng)
            C = fits[key][0]
            D = p_sq[:, None] - 2.0 * (P0 @ C.T) + np.einsum("ij,ij->i", C, C)[None, :]
            costs[key] = float(y0 @ np.maximum(D.min(axis=1), 0.0))
    if not fits:  # no cell stands out of the noise: the box's centre, k times
        C = np.repeat(P0.mean(axis=0, keepdims=True), k, axis=0)
        return C, np.full(k, 1.0 / k), "none", {}
    # (measured: the estimate over the cells some denoiser kept, which drops the noise of
    # the empty cells far from the records, always chose the most inclusive denoiser,
    # whose centres were fitted to its own false cells: 1.3-1.7x worse on a 3-d colour grid)
    best = min(costs, key=lambda name: (costs[name], name))
    C, mass, _ = fits[best]
    return C, mass / mass.sum(), best, costs


@DECODERS.register("grid")
class GridKMeansDecoder(Decoder):
    """k-means of a grid sketch (kind 'grid'), clean or private: denoised cells, weighted
    k-means, the candidate of lowest estimated cost (pysketch.decoders.grid).

    Registered as 'grid'; Dirac atoms (k-means) only. It reads a :class:`GridProblem`;
    the task's box is not used (the grid's own box is).

    Parameters
    ----------
    n_init : int, default 1
        The restarts of each weighted k-means, raised to KMEANS_INIT (3) when smaller.
    random_state : None, int or numpy.random.Generator
        Seeds the k-means.

    Raises
    ------
    ValueError
        From ``decode``, when the task's problem is not a GridProblem (and from
        ``check_task``).

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.decoders import GridKMeansDecoder, MixtureTask
    >>> from pysketch.features import GridMap
    >>> from pysketch.privacy import make_private
    >>> X = np.repeat([[-3.0, -3.0], [3.0, 3.0]], 500, axis=0) + np.random.default_rng(0).normal(0, 0.5, (1000, 2))
    >>> private = make_private(GridMap([-5.0, -5.0], [5.0, 5.0], n_bins=16).sketch(X), epsilon=1.0)
    >>> decoder = GridKMeansDecoder(random_state=0)
    >>> solution = decoder.decode(MixtureTask(decoder.problem(private), 2, lower=-5.0, upper=5.0))
    >>> bool(np.allclose(np.sort(solution.theta[:, 0]), [-3, 3], atol=0.5))
    True
    """

    name = "grid"
    atoms = ("dirac",)
    problem_type = GridProblem

    def decode(self, task):
        self.check_task(task)
        if not isinstance(task.problem, GridProblem):
            raise ValueError("the grid decoder reads a GridProblem (a sketch of kind 'grid')")
        C, w, chosen, _ = grid_kmeans(task.problem, task.n_atoms, n_init=max(int(self.n_init), KMEANS_INIT),
                                      random_state=self.random_state)
        return GridSolution(theta=C, weights=w, residual=float("nan"), restart=0, n_iter=1, candidate=chosen)
