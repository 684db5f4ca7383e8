"""Principal subspaces from a sketch of the whole second-moment matrix: the eigen decoder.

A 'second_moment' sketch's mean holds the coordinates of C, the records' second-moment
matrix about the map's centre, in an orthonormal basis of the symmetric matrices
(pysketch.features.SecondMomentMap). The decoder rebuilds C (noisy for a private release)
and returns its top-k eigenvectors: exact PCA of a clean sketch, Analyze Gauss (Dwork,
Talwar, Thakurta & Zhang, STOC 2014) or the Laplace covariance method of a private one.
The eigenvalues of a noisy C are biased upwards by the noise (its spectral norm); the
components are what the release is for.
"""

import math

import numpy as np

from .._state import FEATURE_MAPS
from .base import DECODERS, Decoder
from .problem import check_count_and_noise
from .subspace import SubspaceSolution, check_subspace_args, signed_components

__all__ = ["CovarianceProblem", "EigenDecoder"]


class CovarianceProblem:
    """The d x d matrix C of a 'second_moment' sketch's mean (the second moments about the
    map's centre; with an offset, the covariance about the records' mean, read from the same
    sketch), the count and the noise variance per coordinate of the mean (0 when clean).
    `mean` is the records' mean when the map has an offset, else the map's centre (zeros
    without one).

    Parameters
    ----------
    feature_map : SecondMomentMap
        A map with ``moments`` (kind 'second_moment').
    mean : ndarray of shape (m,)
        The sketch's mean (its sum over the count).
    count : None or int >= 1, optional
        The sketch's number of records.
    noise_variance : float >= 0, default 0
        The release noise's variance per coordinate of the mean; > 0 makes the problem
        `private`.

    Raises
    ------
    TypeError
        When `feature_map` is not a FeatureMap.
    ValueError
        When the map is not a second-moment map, or count or noise_variance is outside
        its range.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.decoders import CovarianceProblem
    >>> from pysketch.features import SecondMomentMap
    >>> X = np.random.default_rng(0).normal(size=(2000, 3)) + 5.0
    >>> problem = CovarianceProblem.from_sketch(SecondMomentMap(3, offset=1.0).sketch(X))  # offset: the mean too
    >>> problem.C.shape, bool(np.allclose(problem.mean, 5.0, atol=0.1))
    ((3, 3), True)
    >>> bool(np.allclose(problem.C, np.cov(X.T, bias=True)))  # the covariance about the mean
    True
    """

    def __init__(self, feature_map, mean, *, count=None, noise_variance=0.0):
        FEATURE_MAPS.check(feature_map, "feature_map")
        moments = getattr(feature_map, "moments", None)
        if moments is None:
            raise ValueError(f"the eigen decoder needs a sketch of 'second_moment' features, not {feature_map.kind!r}")
        check_count_and_noise(count, noise_variance)
        self.C, mu = moments(mean)
        self.d = feature_map.d
        self.m = feature_map.m
        self.count = count
        self.noise_variance = float(noise_variance)
        self.private = self.noise_variance > 0
        centre = getattr(feature_map, "centre", None)
        self.centre = np.zeros(self.d) if centre is None else np.array(centre, dtype=np.float64)
        self.mean = self.centre + mu

    @classmethod
    def from_sketch(cls, sketch):
        """The problem of a Sketch or PrivateSketch (as SubspaceProblem.from_sketch). With an
        offset, a private sketch's n is pooled from its two estimates, the noisy count and the
        sum's last coordinate over a^2, weighted by the inverse of their noise variances
        (post-processing; the count's variance is 2 t^2 for a discrete Laplace of scale t, the
        exact value's bound)."""
        n = max(int(sketch.count), 1)
        record = getattr(sketch, "privacy", None)
        fm = sketch.feature_map
        var_sum = 0.0 if record is None else record.sum_noise_variance
        if record is not None and getattr(fm, "offset", None) is not None:
            a2 = fm.offset * fm.offset
            from_sum, var_from_sum = fm.count_from_sum(sketch.sum), var_sum / (a2 * a2)
            t = float(record.noise_scale_count)
            var_count = 2.0 * t * t
            if var_count > 0 and var_from_sum > 0:
                w = var_from_sum / (var_from_sum + var_count)  # the count's weight
                pooled = w * sketch.count + (1.0 - w) * from_sum
            elif var_count > 0:
                pooled = from_sum
            else:
                pooled = float(sketch.count)
            n = max(pooled, 1.0)
        noise = var_sum / (n * n)
        return cls(fm, np.asarray(sketch.sum, dtype=np.float64) / n, count=max(int(round(n)), 1), noise_variance=noise)

    def total_variance(self):
        """tr(C), never below 0."""
        return max(float(np.trace(self.C)), 0.0)


@DECODERS.register("eigen")
class EigenDecoder(Decoder):
    """The top-k eigenvectors of the rebuilt second-moment matrix (scipy.linalg.eigh, the
    requested eigenvalues only: O(d^3) time, O(d^2) memory).

    The solution's floor is the mean of the other d - k eigenvalues (from the trace, never
    below 0), its variances the top eigenvalues, and its residual the relative Frobenius
    distance from C to the model (top-k part plus floor times the identity); one direct
    solve counts as one iteration (n_iter = 1).

    Registered as 'eigen'; it reads a :class:`CovarianceProblem` and decodes private
    sketches too.

    Parameters
    ----------
    n_init, random_state
        Accepted for the decoder contract, not used (a direct solve).

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.decoders import EigenDecoder, SubspaceTask
    >>> from pysketch.features import SecondMomentMap
    >>> X = np.random.default_rng(0).normal(size=(2000, 8)) * [3.0, 2.0, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]
    >>> decoder = EigenDecoder()
    >>> solution = decoder.decode(SubspaceTask(decoder.problem(SecondMomentMap(8).sketch(X)), 2))
    >>> bool(np.allclose(np.abs(solution.components[:, :2]), np.eye(2), atol=0.1)), solution.n_iter
    (True, 1)
    >>> bool(np.allclose(solution.variances, [9, 4], rtol=0.1)), solution.floor < 0.1
    (True, True)
    """

    name = "eigen"
    task = "subspace"
    atoms = ()
    decodes_private = True
    problem_type = CovarianceProblem

    def decode(self, task):
        """A direct solve: n_init and random_state are not used."""
        from scipy import linalg

        self.check_task(task)
        problem = task.problem
        d, k = check_subspace_args(problem, CovarianceProblem, task.n_components)
        C = problem.C
        lam, V = linalg.eigh(C, subset_by_index=[d - k, d - 1], check_finite=False)
        order = np.argsort(lam)[::-1]
        lam, components = lam[order], signed_components(np.ascontiguousarray(V[:, order].T))
        trace = float(np.trace(C))
        floor = max((trace - float(lam.sum())) / (d - k), 0.0) if d > k else 0.0
        # ||C - model||_F^2 from the spectrum's pieces: the top k exactly, the other d - k
        # eigenvalues through their sum (the trace) and the sum of their squares (||C||_F^2
        # minus the top's), all in a power-of-two unit of C (exact) so that no square
        # overflows or underflows at any data scale
        top = float(np.max(np.abs(C))) if C.size else 0.0
        unit = math.ldexp(1.0, math.frexp(top)[1]) if top > 0 and math.isfinite(top) else 1.0
        Cu, lu, fu = C / unit, lam / unit, floor / unit
        fro2 = float(np.einsum("ij,ij->", Cu, Cu))
        rest_sq = max(fro2 - float(lu @ lu), 0.0)
        rest_sum = float(np.trace(Cu)) - float(lu.sum())
        resid2 = rest_sq - 2.0 * fu * rest_sum + (d - k) * fu * fu
        residual = math.sqrt(max(resid2, 0.0) / fro2) if fro2 > 0 else 0.0
        return SubspaceSolution(components=components, variances=np.maximum(lam, 0.0), floor=float(floor),
                                total_variance=problem.total_variance(), residual=residual, restart=0, n_iter=1)
