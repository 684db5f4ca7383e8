"""k-means from a sketch through an over-complete mixture ("coreset" decoder).

CL-OMPR fits k atoms to the sketch by the sketch's own distance (an MMD), and that is
not the k-means cost: measured on real data (pysketch.datasets; benchmarks/quality/real_quality.py
and the note of issue 14) the k Diracs that fit the sketch best sit on the modes of
the density, miss far and small clusters (an MMD costs a missed cluster of weight w
about w^2, k-means w times its squared distance) and stop in local optima on continua
(image patches): RSE 1.3-90 where scikit-learn sets 1. This decoder separates the two
jobs:

1. decode the sketch into a mixture of K' = ``atoms_per_cluster * k`` isotropic Gaussians
   N(mu, s2 I), greedily: each new atom is the best of a few hundred candidate atoms (half
   drawn around the atoms found so far, a quarter around the data's bulk as the
   sketch's lowest frequencies locate it, a quarter uniform in the box, all with random
   widths), polished by L-BFGS-B on the normalized correlation with the residual; the
   weights by non-negative least squares; every few atoms, and at the end, the whole
   mixture is refined jointly (CL-OMPR's step 5). The mixture is a description of the
   density, not a clustering, so more atoms than clusters are welcome.
2. reduce the mixture to k centers by k-means on draws from it (pysketch.metrics.
   kmeans_plus_plus): post-processing, no data and no privacy budget involved.

Its median relative SSE on the real data sets of pysketch.datasets, against CL-OMPR's, is
what benchmarks/quality/real_quality.py prints (methods pysketch-coreset, pysketch-clean);
the figures at the time of writing are in the README.
"""

import dataclasses
import math

import numpy as np
import scipy.optimize

from .._random import as_generator
from .._threads import blas_single_thread
from .base import DECODERS, Decoder
from .problem import check_n_atoms
from .problem import (ALPHA_BOUNDS, DiracAtoms, IsotropicGaussianAtoms, MixtureSolution, atom_correlation,
                      atom_matrix, bulk_proposal, mixture_objective, nnls, refine_mixture, screen)

__all__ = ["ATOMS_PER_CLUSTER", "CoresetDecoder", "CoresetSolution", "coreset", "mixture_kmeans"]

#: Candidate atoms screened for each new atom.
N_CANDIDATES = 256
#: The whole mixture is refined jointly after every REFINE_EVERY new atoms.
REFINE_EVERY = 4


def _candidates(family, theta, alpha, bulk, rng, n):
    """n candidate atoms: half around the current atoms (drawn by weight, inside the
    atom, narrower), a quarter around the bulk, the rest uniform in the box."""
    d = family.problem.d
    parts = []
    n_mix = n // 2 if alpha.size else 0
    if n_mix:
        idx = rng.choice(alpha.size, size=n_mix, p=alpha / alpha.sum())
        s2 = theta[idx, d]
        mu = theta[idx, :d] + np.sqrt(s2)[:, None] * rng.standard_normal((n_mix, d))
        parts.append(np.column_stack([mu, s2 * rng.uniform(0.1, 1.0, n_mix)]))
    rest = family.random(rng, n - n_mix, proposal=bulk)
    parts.append(rest)
    C = np.concatenate(parts)
    C[:, :d] = np.clip(C[:, :d], family.lower, family.upper)
    C[:, d] = np.clip(C[:, d], family.s2_lower, family.s2_upper)
    return C


def coreset(problem, n_atoms, lower, upper, *, random_state=None, n_candidates=N_CANDIDATES,
            refine_every=REFINE_EVERY, step_maxiter=30, final_maxiter=200):
    """A mixture of up to `n_atoms` isotropic Gaussians fitted to the sketch greedily
    (see the module docstring). Returns a MixtureSolution whose theta rows are (mu, s2);
    atoms whose weight falls to 0 are dropped, so there can be fewer rows.

    On a private sketch (problem.noise_variance > 0) no atom is added once the residual's
    energy ||r||^2 is within the release's expected noise energy 2 m sigma^2 (sigma^2 the
    noise variance per real coordinate of the mean, public): what is left is noise, and
    atoms fitted to it land where there are no records (the discrepancy principle, as
    the subspace decoder stops its rank).

    Parameters
    ----------
    problem : DecodingProblem
        The sketch to decode.
    n_atoms : int
        The most atoms, in [1, 2^16].
    lower, upper : float or array_like of shape (d,)
        The box of the means, finite, upper > lower.
    random_state : None, int or numpy.random.Generator
        Draws the candidate atoms.
    n_candidates : int, default N_CANDIDATES (256)
        Candidate atoms screened for each new atom.
    refine_every : int, default REFINE_EVERY (4)
        The mixture is refined jointly after every `refine_every` new atoms.
    step_maxiter : int, default 30
        L-BFGS-B's iterations in those refinements.
    final_maxiter : int, default 200
        In the final refinement.

    Returns
    -------
    MixtureSolution
        theta rows (mu, s2); restart 0 and n_iter = n_atoms (the atoms asked for, also
        when the search stopped early).

    Raises
    ------
    ValueError
        For an n_atoms or a box outside its range.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.decoders import DecodingProblem, coreset
    >>> from pysketch.features import FeatureMap
    >>> from pysketch.operators import make_operator
    >>> X = np.repeat([[-3.0, -3.0], [3.0, 3.0]], 500, axis=0) + np.random.default_rng(0).normal(0, 0.5, (1000, 2))
    >>> problem = DecodingProblem.from_sketch(FeatureMap(make_operator(2, 40, random_state=0), "complex").sketch(X))
    >>> mixture = coreset(problem, 4, -5.0, 5.0, random_state=0)
    >>> mixture.theta.shape[0] <= 4, mixture.theta.shape[1], round(float(mixture.weights.sum()), 12)
    (True, 3, 1.0)
    """
    n_atoms = check_n_atoms(n_atoms)
    lower, upper = _check_box(lower, upper, problem.d)
    rng = as_generator(random_state)
    family = IsotropicGaussianAtoms(problem, lower, upper)
    bulk = bulk_proposal(DiracAtoms(problem, lower, upper))
    z = problem.z
    noise_energy = 2.0 * problem.m * problem.noise_variance
    theta = np.empty((0, family.n_params))
    alpha = np.empty(0)
    r = z.copy()
    for t in range(n_atoms):
        if noise_energy > 0 and float(np.vdot(r, r).real) <= noise_energy:
            break
        cand = _candidates(family, theta, alpha, bulk, rng, n_candidates)
        x0 = cand[int(np.argmax(screen(family, r, cand)))]
        rr, ri = np.ascontiguousarray(r.real), np.ascontiguousarray(r.imag)
        theta = np.vstack([theta, _polish(family, x0, rr, ri)])
        alpha = nnls(atom_matrix(family, theta), z)
        keep = alpha > 0
        theta, alpha = theta[keep], alpha[keep]
        if (t + 1) % refine_every == 0:
            theta, alpha = refine_mixture(family, problem, theta, alpha, 1e-6, step_maxiter)
        r = z - atom_matrix(family, theta) @ alpha
    if theta.shape[0] == 0:  # the whole sketch is within the noise: one atom, where it is most likely
        cand = _candidates(family, theta, alpha, bulk, rng, n_candidates)
        theta = cand[int(np.argmax(screen(family, z, cand)))][None, :]
        alpha = np.maximum(nnls(atom_matrix(family, theta), z), ALPHA_BOUNDS[0])
    theta, alpha = refine_mixture(family, problem, theta, alpha, 1e-9, final_maxiter)
    alpha = np.where(alpha <= ALPHA_BOUNDS[0], 0.0, alpha)
    keep = alpha > 0
    if not keep.any():  # every weight at its floor: keep the heaviest atom
        keep[int(np.argmax(alpha))] = True
        alpha = np.maximum(alpha, ALPHA_BOUNDS[0])
    theta, alpha = theta[keep], alpha[keep]
    residual = math.sqrt(mixture_objective(family, theta, alpha, problem, want_grad=False))
    return MixtureSolution(theta=theta, weights=alpha / alpha.sum(), residual=residual, restart=0, n_iter=n_atoms)


def _check_box(lower, upper, d):
    """(lower, upper) as finite float arrays of shape (d,) with upper > lower."""
    from .problem import check_box

    return check_box(lower, upper, d)


def _polish(family, x0, rr, ri):
    """The local maximum of the normalized correlation with the residual from x0."""
    res = scipy.optimize.minimize(lambda th: atom_correlation(family, th, rr, ri), x0, jac=True, method="L-BFGS-B",
                                  bounds=family.bounds(), options={"maxiter": 50})
    return res.x


def mixture_kmeans(means, variances, weights, n_clusters, *, n_draws=50_000, n_init=3, random_state=None,
                   box=None):
    """k-means of the isotropic mixture sum_j w_j N(means_j, variances_j I), on `n_draws`
    draws from it. `means` is (n_atoms, d); `variances` and `weights` are n_atoms numbers
    >= 0; the weights are relative (divided by their sum, which must be > 0). Returns
    (centers, weights): the share of the mixture's draws nearest each center (the atoms
    themselves when n_atoms == n_clusters; fewer atoms than clusters are split by the
    k-means of their draws, or, Diracs, repeated).

    `box` (lower, upper): the draws are clipped to it (the records lie in it). An isotropic
    atom broad enough for the data's widest coordinate spreads its draws far outside the
    others' range; unclipped, such draws pulled centres into empty space (measured: RSE 85
    and 515 on a real table whose public box is 100 times wider in one coordinate).

    Parameters
    ----------
    means : array_like of shape (n_atoms, d)
        The atoms' means, real and finite.
    variances : array_like of shape (n_atoms,)
        Their variances (per coordinate), >= 0.
    weights : array_like of shape (n_atoms,)
        Their relative weights, >= 0, not all 0.
    n_clusters : int >= 1
        k.
    n_draws : int, default 50 000
        Draws of the mixture (at least n_clusters).
    n_init : int, default 3
        Restarts of the k-means (k-means++ seeding, 100 Lloyd iterations).
    random_state : None, int or numpy.random.Generator
        Draws the mixture's points and the k-means' seeds.
    box : (lower, upper), optional
        The box the draws are clipped to.

    Returns
    -------
    centers : ndarray of shape (n_clusters, d)
    weights : ndarray of shape (n_clusters,)
        The share of the draws nearest each center (of the atoms' weights when the
        atoms are the centers), summing to 1.

    Raises
    ------
    ValueError
        For means, variances or weights of the wrong shape, not finite or negative,
        weights all 0, magnitudes beyond the supported range, n_clusters below 1,
        n_draws below n_clusters or beyond the memory, or a box outside its range.
    TypeError
        For arrays that are not real numbers, or n_clusters or n_draws not an int.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.decoders import mixture_kmeans
    >>> centers, weights = mixture_kmeans([[0.0, 0.0], [10.0, 0.0], [10.0, 1.0]], [0.1, 0.1, 0.1], [1, 1, 3],
    ...                                   2, n_draws=2000, random_state=0)
    >>> order = np.argsort(centers[:, 0])
    >>> bool(np.allclose(centers[order], [[0, 0], [10, 0.75]], atol=0.1)), np.round(weights[order], 1)
    (True, array([0.2, 0.8]))
    """
    from ..metrics import kmeans_plus_plus

    from .._checks import check_int, check_size, real_array, real_rows
    from .._checks import check_data_magnitude

    # real numbers only: a complex array cast to float64 would lose its imaginary part silently
    means = np.asarray(real_rows(means, "means"), dtype=np.float64)
    if not np.isfinite(means).all():
        raise ValueError(f"means must be a finite (n_atoms, d) array with n_atoms >= 1, got shape {means.shape}")
    variances = np.asarray(real_array(variances, "variances"), dtype=np.float64)
    w = np.asarray(real_array(weights, "weights"), dtype=np.float64)
    for name, v in (("variances", variances), ("weights", w)):
        if v.shape != (means.shape[0],) or not np.isfinite(v).all() or (v < 0).any():
            raise ValueError(f"{name} must be {means.shape[0]} finite numbers >= 0, got shape {v.shape}")
    if not w.sum() > 0:
        raise ValueError("weights must not all be 0")
    # the draws' squared distances must not overflow: means and standard deviations within the
    # data's supported magnitude (as every entry point taking data)
    check_data_magnitude(np.abs(means).max(), "the means")
    check_data_magnitude(math.sqrt(variances.max()), "the variances' square roots")
    n_clusters = check_int(n_clusters, "n_clusters")
    d = means.shape[1]
    # the draws (at least one per cluster), their atoms, distances to the centres and labels
    n_draws = check_size(n_draws, "n_draws", minimum=n_clusters, nbytes=lambda v: v * (d * 24 + n_clusters * 8 + 32),
                         what=f"for draws of d = {d} coordinates")
    rng = as_generator(random_state)
    if means.shape[0] == n_clusters or (means.shape[0] < n_clusters and not variances.any()):
        # nothing to reduce: the atoms are the centers (the heaviest repeated, with weight 0,
        # when there are fewer Diracs than clusters)
        order = np.argsort(-w, kind="stable")
        extra = n_clusters - means.shape[0]
        centers = np.concatenate([means[order], np.repeat(means[order[:1]], extra, axis=0)])
        return centers, np.concatenate([w[order], np.zeros(extra)]) / w.sum()
    comp = rng.choice(w.size, size=n_draws, p=w / w.sum())
    Y = means[comp] + np.sqrt(variances[comp])[:, None] * rng.standard_normal((n_draws, means.shape[1]))
    if box is not None:
        lo, hi = _check_box(box[0], box[1], means.shape[1])
        np.clip(Y, lo, hi, out=Y)
    # 100 Lloyd iterations: draws of broad atoms form blobs on which Lloyd creeps for hundreds
    centers, _ = kmeans_plus_plus(Y, n_clusters, n_init=n_init, max_iter=100, random_state=rng)
    # nearest center by |y|^2 - 2 y.c + |c|^2 (the |y|^2 term does not change the argmin)
    labels = np.argmin(np.sum(centers * centers, axis=1)[None, :] - 2.0 * Y @ centers.T, axis=1)
    share = np.bincount(labels, minlength=n_clusters) / n_draws
    return centers, share


#: Draws of the mixture whose k-means gives the centres: DRAWS_PER_CLUSTER per cluster, at
#: most MIXTURE_DRAWS (50 000 draws of one atom in d = 64 took 12 s of k-means for k = 10).
DRAWS_PER_CLUSTER = 2000
MIXTURE_DRAWS = 50_000

#: Atoms of the over-complete mixture per cluster (measured on the real data sets of
#: benchmarks/quality/real_quality.py: 2 per cluster left RSE 1.13-1.56, 4 1.07-1.44, 8 1.01-1.28 at 3-5x the time).
ATOMS_PER_CLUSTER = 4


@dataclasses.dataclass
class CoresetSolution(MixtureSolution):
    """The k centres and weights, and the over-complete mixture they came from (rows
    (mean, variance); its residual is the solution's).

    Parameters
    ----------
    theta, weights, residual, restart, n_iter
        As for :class:`~pysketch.decoders.MixtureSolution`: the k centres (k, d), their
        weights (shares of the mixture's draws), the mixture's residual, 0, and the
        mixture's n_iter.
    mixture : MixtureSolution, optional
        The over-complete mixture of isotropic Gaussians (rows (mean, variance)).

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.decoders import MixtureTask
    >>> from pysketch.decoders.coreset import CoresetDecoder
    >>> from pysketch.features import FeatureMap
    >>> from pysketch.operators import make_operator
    >>> X = np.repeat([[-3.0, -3.0], [3.0, 3.0]], 500, axis=0) + np.random.default_rng(0).normal(0, 0.5, (1000, 2))
    >>> decoder = CoresetDecoder(random_state=0)
    >>> problem = decoder.problem(FeatureMap(make_operator(2, 40, random_state=0), "complex").sketch(X))
    >>> solution = decoder.decode(MixtureTask(problem, 2, lower=-5.0, upper=5.0))
    >>> solution.theta.shape, solution.mixture.theta.shape[1], solution.residual == solution.mixture.residual
    ((2, 2), 3, True)
    """

    mixture: MixtureSolution = None


@DECODERS.register("coreset")
class CoresetDecoder(Decoder):
    """k-means of the over-complete mixture of up to ATOMS_PER_CLUSTER * k isotropic
    Gaussians fitted to the sketch (`coreset`, then `mixture_kmeans`). On a private
    sketch the greedy search stops at the release's noise level (without that stop it fit
    the noise with atoms in empty parts of the box: RSE 1.06-2449 at epsilon = 1 on the
    real data sets of benchmarks/quality/real_quality.py).

    Registered as 'coreset'; Dirac atoms (k-means) only. Its frequency_law is
    'log_uniform' and its scale_rule 'spread' (module docstring of
    pysketch.decoders.base).

    Parameters
    ----------
    n_init : int, default 1
        The restarts of the mixture's k-means (`mixture_kmeans`), at least 1.
    random_state : None, int or numpy.random.Generator
        Draws the candidate atoms, the mixture's points and the k-means' seeds.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.decoders import MixtureTask
    >>> from pysketch.decoders.coreset import CoresetDecoder
    >>> from pysketch.features import FeatureMap
    >>> from pysketch.operators import make_operator
    >>> X = np.repeat([[-3.0, -3.0], [3.0, 3.0]], 500, axis=0) + np.random.default_rng(0).normal(0, 0.5, (1000, 2))
    >>> decoder = CoresetDecoder(random_state=0)
    >>> problem = decoder.problem(FeatureMap(make_operator(2, 40, random_state=0), "complex").sketch(X))
    >>> solution = decoder.decode(MixtureTask(problem, 2, lower=-5.0, upper=5.0))
    >>> bool(np.allclose(np.sort(solution.theta[:, 0]), [-3, 3], atol=0.5))
    True
    """

    name = "coreset"
    atoms = ("dirac",)
    decodes_private = True
    #: its over-complete atoms of several widths read a multi-scale sketch (pysketch.frequencies.
    #: LogUniformLaw), at the data's spread
    frequency_law = "log_uniform"
    scale_rule = "spread"

    def decode(self, task):
        self.check_task(task)
        problem, n_atoms = task.problem, task.n_atoms
        d = problem.d
        with blas_single_thread():
            mix = coreset(problem, ATOMS_PER_CLUSTER * n_atoms, task.lower, task.upper, random_state=self.random_state)
        centers, weights = mixture_kmeans(mix.theta[:, :d], mix.theta[:, d], mix.weights, n_atoms,
                                          n_draws=min(MIXTURE_DRAWS, DRAWS_PER_CLUSTER * n_atoms),
                                          n_init=max(self.n_init, 1), random_state=self.random_state)
        return CoresetSolution(theta=centers, weights=weights, residual=mix.residual, restart=0, n_iter=mix.n_iter,
                               mixture=mix)
