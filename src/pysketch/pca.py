"""Compressive PCA: principal subspaces from a quadratic sketch, with scikit-learn's PCA API.

Two sketches, one estimator (``method``): the compressive quadratic sketch below, or the
whole second-moment matrix as a sketch (pysketch.features.SecondMomentMap: d (d + 1) / 2
coordinates in an orthonormal basis of the symmetric matrices; exact PCA when clean,
Analyze Gauss or the Laplace covariance method when private; pysketch.decoders.eigen).
'auto' takes the second where its d x d memory fits the budget and it is the better
release (the rule in `CompressivePCA`).

The records are sketched once with random quadratic features (omega_j^T (x - c))^2 over a
union of orthonormal bases (dense, or R3 blocks on the fast Walsh-Hadamard transform), so
the mean sketch is z = M(C), rank-one measurements of the second moments C about the
centre c (Chatalic et al. 2022, Def. 6). The Burer-Monteiro decoder (pysketch.decoders.subspace)
fits a rank-k factor plus an isotropic floor to z and returns the components. Memory is
O(kd + m) throughout: no d x d matrix is formed, so d = 2^15 works where a covariance
(8.6 GB in float64) does not.
"""

import math
import numbers
import time
import warnings

import numpy as np

from ._base import BUDGET_SHARES, RENAMED, BaseEstimator, TransformerMixin, not_fitted_error
from ._checks import check_array, check_size
from ._params import Array, DType, Interval, Options
from ._random import as_generator
from .accumulate import SketchAccumulator
from .blocks import check_records, is_dask_collection, map_blocks, map_reduce
from .decoders import DECODERS, SubspaceTask
from .features import SecondMomentMap, make_feature_map
from .frequencies import OrthonormalBasesLaw
from .privacy.mechanisms import PRIVACY_PARAMETERS
from .sketch import Sketch

__all__ = ["CompressivePCA"]

_OPERATORS = ("auto", "dense", "r3")
#: method -> (the map's kind, the subspace decoder that reads it, the estimator's parameters
#: the decoder takes)
_METHODS = {"sketch": ("quadratic", "burer_monteiro", ("max_iter",)), "covariance": ("second_moment", "eigen", ())}
#: Bytes per d^2 of a covariance fit: the sketch and its noise (d (d + 1) / 2 float64 and
#: int64 each), a batch's y^T y and its upper triangle, the rebuilt matrix and the eigen
#: solver's copy (d^2 float64 each), with room to spare.
COVARIANCE_BYTES_PER_D2 = 48
#: The default memory budget of method='auto' (bytes).
DEFAULT_MEMORY_BUDGET = 1 << 30
#: The count's share of the sketch's epsilon under add/remove: the count only rescales z
#: (and so the explained variances), never the subspace, so it gets little.
COUNT_SHARE = 0.05
#: A self-centred covariance sketch appends a = OFFSET_SHARE * R to every record (R the public
#: radius), so that one release holds the first moment too (SecondMomentMap's offset). The
#: subspace error is about (R^2 + a^2) sqrt(1 + |mu|^2 / (k a^2)): the noise of the whole
#: matrix grows with the sensitivity R^2 + a^2, and that of the rank-two mean correction
#: mu mu^T (the last column's noise over a) weighs like |mu|^2 / (k a^2) against the noise
#: inside the k top directions. For the worst mean |mu| = R it is smallest at
#: a^2 / R^2 = (sqrt(1 + 8 k) - 1) / (4 k) (k = 1: 0.71 R, k = 10: 0.45 R, k = 50: 0.31 R);
#: a = R / 2 stays within 8% of that optimum for k = 1 ... 50, and k is not known when a
#: sketch is made (the command line's).
OFFSET_SHARE = 0.5


def self_centring_offset(data_norm):
    """The offset a self-centred covariance sketch appends for records of public radius
    data_norm: OFFSET_SHARE * data_norm (see above)."""
    return OFFSET_SHARE * float(data_norm)


def covariance_fits(d, memory_budget=None):
    """Whether a covariance fit of d features (d + 1 when self-centred) fits memory_budget
    bytes (default DEFAULT_MEMORY_BUDGET): the memory half of the rule of method='auto'."""
    budget = DEFAULT_MEMORY_BUDGET if memory_budget is None else memory_budget
    return COVARIANCE_BYTES_PER_D2 * (d + 1) ** 2 <= budget


class CompressivePCA(TransformerMixin, BaseEstimator):
    """Principal component analysis from a quadratic sketch (optionally private).

    Parameters
    ----------
    n_components : int, optional
        k, the number of components (default: min(n_samples, n_features)).
    method : {'auto', 'sketch', 'covariance'}, default 'auto'
        What is sketched (and released, when private). 'sketch': the compressive quadratic
        sketch of m features (memory O(kd + m), any d). 'covariance': the whole
        second-moment matrix as a sketch of d (d + 1) / 2 coordinates (memory O(d^2), time
        O(n d^2); exact PCA when clean; private: Analyze Gauss with delta > 0, the Laplace
        covariance method with delta = 0), decoded by its top eigenvectors. 'auto' takes
        'covariance' when its memory (COVARIANCE_BYTES_PER_D2 (d + 1)^2 bytes) fits
        `memory_budget`, no sketch_size is given, and either the fit is not private (it is
        exact), or delta > 0 (with the Gaussian mechanism the sketch's least-squares error
        is about d^2 / (2m) = d / (4k) times Analyze Gauss's at the same (epsilon, delta),
        and for d < 4k the sketch is no smaller than the matrix), or the sketch would hold
        no fewer numbers than the matrix; 'sketch' otherwise (pure epsilon: the sketch
        measured at or above the Laplace covariance at every epsilon of the PCA
        benchmark's real sets; or d too large). The method used is `method_`.
    memory_budget : int, default 2**30
        Bytes 'auto' may give a covariance fit (public: the rule reads d, k, epsilon,
        delta and this budget, never the data).
    sketch_size : int, optional
        m, the number of quadratic features, rounded up to whole orthonormal bases (a
        multiple of d for 'dense', of the padded d_p for 'r3'). Default: 10 k d without
        privacy (captured variance above 0.99 of exact PCA on the tested sets), 2 k d with
        epsilon (fewer, less noisy measurements; see the issue-16 note).
    operator : {'auto', 'dense', 'r3'}
        The orthonormal bases: dense (BLAS; 'auto' below d = 64) or R3 blocks (H D3 H D2 H D1,
        the fast transform, O(m log d) per record; 'auto' from d = 64).
    epsilon : float, optional
        Differential privacy: the fit is (epsilon, delta)-DP under `neighbouring` (see below).
    delta : float, default 0
        0: Laplace noise (pure epsilon-DP); > 0: the analytic Gaussian mechanism.
    neighbouring : {'add_remove', 'replace'}
    data_norm : float, optional
        A public radius R: every record is taken with ||x - centre||_2 <= R (records outside
        are rescaled onto that sphere, counted and warned about; never dropped). Needed for
        privacy; without it a private fit reads R from the data with a PrivacyLeakWarning.
        With centre=None and epsilon, R bounds ||x|| (the ball of the private mean), and the
        sketch about the private mean m uses R + ||m||, which holds every such record.
    centre : None, float or array of shape (d,)
        A public centre (0.0: none, the second moments about the origin). None: the data's
        mean. Without privacy, the exact mean of an array (two passes), or, for a stream
        with method 'covariance', the mean read from the sketch itself (below). With
        epsilon and method 'covariance': self-centred, the records (in the ball ||x|| <=
        data_norm) get the public constant a = data_norm / 2 appended
        (SecondMomentMap's offset, OFFSET_SHARE), so that the one release holds their
        sum and count too, and the mean and the covariance about it are post-processing
        (no share of the budget, n pooled from the count and the sketch). With epsilon and
        method 'sketch': a private mean of the records in the ball, for ``budget_shares['mean']`` of
        the budget, and the sketch about it.
    budget_shares : dict or None, default None
        Shares of (epsilon, delta) by part: ``{'mean': 0.2}`` (the default) is spent on the
        private mean when centre is None and the method is 'sketch'; the rest on the sketch.
    mean_share : float in (0, 1)
        Deprecated name of ``budget_shares={'mean': ...}`` (FutureWarning; removed in the
        next version).
    n_init : int, default 3
        Decoder starts (the best residual is kept).
    max_iter : int, default 3000
        L-BFGS iterations per start (d = 2^15, k = 20, m = 2kd converged in 1984; d <= 8192
        in 200-500).
    random_state : None, int or Generator
        Draws the frequencies and the decoder's starts (public). Never the noise.
    accountant : BudgetAccountant (pysketch or diffprivlib), optional
    batch_size : int, optional
        Records per sketching batch.
    dtype : float32 or float64, default float64
        The sketching precision (the sums are float64 either way).

    Attributes
    ----------
    components_ : (k, d) array
        Orthonormal rows, by decreasing explained variance.
    explained_variance_ : (k,) array
        The variance along each component, from the sketch (the population variance,
        divided by n, unlike scikit-learn's n - 1).
    explained_variance_ratio_ : (k,) array
        ``explained_variance_ / total_variance_`` (or / the fitted model's total, components
        plus floor, when that is larger: noisy sketches).
    total_variance_ : float
        tr(C) estimated from the sketch (exact for orthonormal bases).
    noise_variance_ : float
        The isotropic floor s of the fit (the average variance outside the components, as
        scikit-learn's ``noise_variance_``).
    mean_ : (d,) array
        The centre (exact mean, private mean, the mean read from a self-centred covariance
        sketch, or the given one).
    n_components_, n_features_in_ : int
    n_samples_ : float
        The count, noisy under add/remove privacy.
    sketch_ : Sketch or PrivateSketch
        The sketch decoded.
    sketch_size_ : int
    residual_ : float
        Relative.
    n_iter_ : int
    timings_ : dict
        Seconds per stage.

    Notes
    -----
    .. rubric:: Differential privacy

    With epsilon, the released quantities are the sketch's sum (Laplace or Gaussian noise
    at the quadratic map's sensitivity on the ball of radius data_norm: L1 = R^2 m / d
    exactly for unions of orthonormal bases, L2 from the Riesz-Thorin bound; Chatalic et al.
    2022, Lemmas 9 and 13), the record count (add/remove: discrete Laplace for COUNT_SHARE of the
    sketch's epsilon; replace: public) and, when centre is None with the 'sketch' method,
    the private mean (`pysketch.privacy.moments.private_ball_mean`) for budget_shares['mean'] of
    (epsilon, delta); a covariance sketch's sum at SecondMomentMap's sensitivities (with the
    offset a = R / 2 when self-centred: L2 = R^2 + a^2). By
    sequential composition the fit is (epsilon, delta)-DP; everything else (the components,
    variances, transform) is post-processing. The frequencies and starts come from
    random_state, the noise from the OS (pysketch.privacy.mechanisms).

    .. rubric:: Data scale

    `fit` (arrays, dask collections and streams) and `fit_sketch` work at any data scale
    s whose records' squares stay inside float64 (spread about the centre and data_norm
    in [2^-504, 2^504], and sum of squared norms below about 1.8e308) and give the
    components of the data at scale 1 (``explained_variance_``, ``noise_variance_`` and
    ``total_variance_`` times s^2, ``mean_`` times s). Nothing is copied or read again: the
    quadratic sketch is taken as it is, and the Burer-Monteiro decoder runs in a
    power-of-two unit near the sketch's own per-coordinate spread (post-processing; see
    pysketch.decoders.subspace), so that its starts and tolerances mean the same at every
    scale. Refused with a ValueError naming the data's magnitude: a data_norm or centre
    beyond [2^-504, 2^504] (before anything is read or charged), records whose mean is
    nonzero and below 2^-504 (their squares would vanish), squares that overflow the
    sketch, and a sketched spread beyond the range.

    Raises
    ------
    ValueError
        From `fit`, `fit_sketch` and `release_sketch`: a parameter that is not valid
        (checked before anything is read or charged), n_components above n_features, fewer
        than 2 records for PCA about the data's mean, a private fit of a stream without
        data_norm, a stream with method 'sketch' and no centre, records or bounds outside
        the supported range of magnitudes, an empty sketch or one that is not quadratic;
        from `transform` and `inverse_transform`, records of another width. A BudgetError
        (a ValueError) when the accountant cannot pay (epsilon, delta).
    TypeError
        If `fit_sketch` or `release_sketch` is given something other than a (clean) Sketch.
    sklearn.exceptions.NotFittedError
        From `transform` and `inverse_transform` before `fit` (a ValueError without
        scikit-learn).

    Warns
    -----
    pysketch.privacy.PrivacyLeakWarning
        From a private fit without data_norm (the radius is then read from the data).
    RuntimeWarning
        When records with ||x - centre|| > data_norm are rescaled onto that sphere.

    Examples
    --------
    >>> import numpy as np
    >>> import pysketch
    >>> X = np.random.default_rng(0).normal(size=(2000, 5)) * [5.0, 2.0, 1.0, 0.5, 0.1]
    >>> pca = pysketch.CompressivePCA(2, random_state=0).fit(X)
    >>> pca.method_, np.allclose(np.abs(pca.components_), np.eye(5)[:2], atol=0.1)
    ('covariance', True)
    >>> sketched = pysketch.CompressivePCA(2, method="sketch", random_state=0).fit(X)
    >>> sketched.sketch_size_, np.allclose(np.abs(sketched.components_), np.eye(5)[:2], atol=0.1)
    (100, True)
    >>> private = pysketch.CompressivePCA(2, epsilon=1.0, delta=1e-6, data_norm=40.0).fit(X)
    >>> private.transform(X).shape  # the noise is drawn from the OS: values vary
    (2000, 2)
    """

    _renamed_params = {"mean_share": ("budget_shares", lambda share: {"mean": share})}
    _budget_parts = {"mean": 0.2}

    def __init__(self, n_components=None, *, method="auto", memory_budget=DEFAULT_MEMORY_BUDGET, sketch_size=None,
                 operator="auto", epsilon=None, delta=0.0, neighbouring="add_remove", data_norm=None, centre=None,
                 budget_shares=None, n_init=3, max_iter=3000, random_state=None, accountant=None, batch_size=None,
                 dtype=np.float64, mean_share=RENAMED):
        self.n_components = n_components
        self.method = method
        self.memory_budget = memory_budget
        self.sketch_size = sketch_size
        self.operator = operator
        self.epsilon = epsilon
        self.delta = delta
        self.neighbouring = neighbouring
        self.data_norm = data_norm
        self.centre = centre
        self.budget_shares = budget_shares
        self.mean_share = mean_share
        self.n_init = n_init
        self.max_iter = max_iter
        self.random_state = random_state
        self.accountant = accountant
        self.batch_size = batch_size
        self.dtype = dtype

    # ------------------------------------------------------------------ checks

    _parameter_constraints = {
        "n_components": [Interval(numbers.Integral, 1, None), None],
        "method": [Options(("auto", *_METHODS))],
        "memory_budget": [Interval(numbers.Integral, 1, None)],
        "sketch_size": [Interval(numbers.Integral, 1, None), None],
        "operator": [Options(_OPERATORS)],
        "data_norm": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "centre": [Interval(numbers.Real), Array((None,), text="an array of shape (d,) of finite numbers"), None],
        "budget_shares": BUDGET_SHARES,
        "n_init": [Interval(numbers.Integral, 1, None)],
        "max_iter": [Interval(numbers.Integral, 1, None)],
        "random_state": ["random_state"],
        "batch_size": [Interval(numbers.Integral, 1, None), None],
        "dtype": [DType(np.float32, np.float64)],
        **PRIVACY_PARAMETERS,
    }

    def _check_param_relations(self):
        """sketch_size against the method, and the decoders against a private fit."""
        if self.sketch_size is not None and self.method == "covariance":
            raise ValueError("sketch_size applies to method='sketch' only (a covariance sketch has d (d + 1) / 2 "
                             "coordinates)")
        for _, decoder, _ in _METHODS.values():
            DECODERS.get(decoder).check(task="subspace", private=self.epsilon is not None)

    def _centre_array(self, d):
        c = np.asarray(self.centre, dtype=np.float64)
        if c.ndim == 0:
            c = np.full(d, float(c))
        if c.shape != (d,):
            raise ValueError(f"centre must be None, a number or an array of shape ({d},), got shape {c.shape}")
        if not np.isfinite(c).all():
            raise ValueError("centre must be finite")
        return c

    def _k(self, d, n=None):
        if self.n_components is None:
            return d if n is None else min(d, n)
        if self.n_components > d:
            raise ValueError(f"n_components={self.n_components} must be <= n_features={d}")
        return self.n_components

    def _method(self, d, k):
        """The method for d features and k components (the rule under `method`)."""
        if self.method != "auto":
            return self.method
        if self.sketch_size is not None or not covariance_fits(d, self.memory_budget):
            return "sketch"
        if self.epsilon is None or self.delta > 0:
            return "covariance"
        return "covariance" if self._quadratic_size(d, k) >= d * (d + 1) // 2 else "sketch"

    def _operator(self, d):
        if self.operator == "auto":
            return "r3" if d >= 64 else "dense"
        return self.operator

    def _sketch_size(self, d, k):
        """m of the method's sketch: D (D + 1) / 2 for the covariance (D = d, or d + 1 when
        self-centred), else `_quadratic_size`."""
        if self._method(d, k) == "covariance":
            D = d + self._self_centred(d, k)
            return D * (D + 1) // 2
        return self._quadratic_size(d, k)

    def _self_centred(self, d, k, stream=False):
        """Whether the centre is read from the sketch itself (an offset coordinate): a
        covariance fit about the data's mean (centre=None) that is private, or that reads
        a stream once. A clean fit of an array takes the exact mean instead (no rounding
        from subtracting mu mu^T)."""
        return self.centre is None and self._method(d, k) == "covariance" and (self.epsilon is not None or stream)

    def _quadratic_size(self, d, k):
        """m of the quadratic sketch, rounded up to whole orthonormal bases."""
        op = self._operator(d)
        block = d if op == "dense" else 1 << max(0, math.ceil(math.log2(d)))
        m = self.sketch_size if self.sketch_size is not None else (2 if self.epsilon is not None else 10) * k * d
        return -(-m // block) * block

    def _check_sizes(self, d, k, m=None, method=None):
        """sketch_size (when given; m: the size of a given sketch) and n_components against
        the memory they imply for d features, refused before anything is charged: the
        operator, the sketch and the decoder's products Omega^T U of m frequencies with k
        components, its L-BFGS history of kd floats."""
        from .operators import operator_bytes

        given = m is not None
        if (method if given else self._method(d, k)) == "covariance":
            check_size(d, "n_features", nbytes=lambda v: COVARIANCE_BYTES_PER_D2 * v * v,
                       what="for a covariance fit (its d x d matrices)")
            return

        def fit_bytes(k, m):
            drawn = 0 if given else operator_bytes(d, m, self._operator(d), np.dtype(self.dtype))
            return drawn + 8 * m * (k + 4) + 8 * k * d * 24

        if self.sketch_size is not None and not given:
            check_size(self.sketch_size, "sketch_size", nbytes=lambda v: fit_bytes(1, v),
                       what=f"for its frequencies and the decoding, d = {d}")
        sketch = ("the sketch's" if given else "sketch_size =" if self.sketch_size is not None else
                  "the default sketch_size of") + f" {m if given else self._quadratic_size(d, k)} frequencies"
        check_size(k, "n_components", nbytes=lambda v: fit_bytes(v, m if given else self._quadratic_size(d, v)),
                   what=f"for the decoding of {sketch}, d = {d}")

    def _make_map(self, d, k, centre, data_norm, rng, offset=None):
        if self._method(d, k) == "covariance":
            return SecondMomentMap(d, data_norm=data_norm, centre=centre, offset=offset)
        return make_feature_map(d, self._sketch_size(d, k), "quadratic", operator=self._operator(d),
                                law=OrthonormalBasesLaw(), random_state=rng, dtype=np.dtype(self.dtype),
                                data_norm=data_norm, centre=centre)

    # ------------------------------------------------------------------ fitting

    def fit(self, X, y=None):
        """Sketch X and learn the components from the sketch.

        X : array of shape (n, d), or an iterable of 2-D batches (a generator, a stream)
            read once; a stream needs a given `centre` (there is no second pass for a mean).
        """
        self._validate_params()
        stream = not (hasattr(X, "shape") or isinstance(X, (list, tuple))) and hasattr(X, "__iter__")
        if stream:
            if self.epsilon is not None and self.data_norm is None:
                raise ValueError("a private fit of an iterable of batches needs a public data_norm")
        else:
            X = check_records(X)  # a dask collection stays lazy: every pass runs blockwise where it lives
            if X.shape[0] < 2 and self.centre is None:
                raise ValueError(f"n_samples={X.shape[0]}: PCA about the data's mean needs at least 2 records "
                                 "(give a public centre to sketch a single record)")
        self._check_public_scale()
        rng = as_generator(self.random_state)
        timings = {}
        if self.epsilon is not None:
            sketch = self._sketch_private(X, stream, rng, timings)
        else:
            sketch = self._sketch_clean(X, stream, rng, timings)
        self._decode(sketch, rng, timings)
        return self

    def _check_public_scale(self):
        """ValueError about the data's scale (pysketch._checks.check_data_magnitude)
        when the public data_norm, or the centre, lies beyond [2^-504, 2^504]: refused
        before anything is read or charged."""
        from ._checks import check_data_magnitude

        if self.data_norm is not None:
            check_data_magnitude(self.data_norm, "data_norm (a bound on the records' norms)")
            if self.epsilon is not None:
                _check_private_norm(float(self.data_norm), "data_norm (a bound on the records' norms)")
        if self.centre is not None:
            try:
                c = np.asarray(self.centre, dtype=np.float64)
            except (TypeError, ValueError):
                return  # not numbers: refused by _centre_array, naming centre
            if c.size and np.isfinite(c).all():
                check_data_magnitude(float(np.max(np.abs(c))), "the centre")

    def _first_batch(self, X):
        """(d, an iterable giving every batch) of a stream, reading its first batch."""
        it = iter(X)
        try:
            first = next(it)
        except StopIteration:
            raise ValueError("X is an empty iterable") from None
        first = check_array(first, "a batch of X")

        def chain():
            yield first
            yield from it

        return first.shape[1], chain()

    def _sketch_clean(self, X, stream, rng, timings):
        if stream:
            d, batches = self._first_batch(X)
        else:
            d, batches = X.shape[1], X
        k = self._k(d, None if stream else X.shape[0])
        offset = None
        if stream and self.centre is None:
            if not self._self_centred(d, k, stream=True):
                raise ValueError("fitting an iterable of batches with method='sketch' needs a public centre (e.g. "
                                 "centre=0.0): the mean would take a second pass (method='covariance' reads it from "
                                 "the sketch)")
            mean = np.zeros(d)
            offset = self_centring_offset(self.data_norm) if self.data_norm is not None else 1.0
        else:
            with np.errstate(over="ignore", invalid="ignore"):  # a lazy X is checked for NaN by the sketch's pass
                mean = np.asarray(X.mean(axis=0)) if self.centre is None else self._centre_array(d)
        if self.centre is None and offset is None and np.isfinite(mean).all():
            from ._checks import check_data_magnitude  # tiny data: their squares would vanish from the sketch

            check_data_magnitude(float(np.max(np.abs(mean))), "X (its mean)")
        self._check_sizes(d, k)
        fm = self._make_map(d, k, mean, self.data_norm, rng, offset=offset)
        t = time.perf_counter()
        acc = SketchAccumulator(fm, batch_size=self.batch_size)
        _update(acc, batches)
        sketch = _sketch_of(acc)
        timings["sketch"] = time.perf_counter() - t
        return sketch

    def _sketch_private(self, X, stream, rng, timings):
        from .privacy import PrivacyLeakWarning
        from .privacy.budget import Budget
        from .privacy.moments import private_ball_mean
        from .privacy.release import plan_release

        eps, delta = float(self.epsilon), float(self.delta)
        if stream:
            d, batches = self._first_batch(X)
        else:
            d, batches = X.shape[1], X
        k = self._k(d, None if stream else X.shape[0])
        self._check_sizes(d, k)
        self_centred = self._self_centred(d, k, stream)
        private_mean = self.centre is None and not self_centred
        share = self._budget_shares()["mean"] if private_mean else 0.0
        # the sketch's plan (validates everything) before anything is read or charged
        plan = plan_release(self._sketch_size(d, k), eps * (1 - share), delta * (1 - share),
                            neighbouring=self.neighbouring, split=1 - COUNT_SHARE)
        R = self.data_norm
        if R is None:
            warnings.warn("data_norm was not given: the radius of the records is read from the data, which is not "
                          "differentially private. Pass data_norm=<public bound on ||x - centre||>.",
                          PrivacyLeakWarning, stacklevel=3)
            c = np.zeros(d) if self.centre is None else self._centre_array(d)
            with np.errstate(over="ignore"):
                R = float(np.sqrt(np.max(np.einsum("ij,ij->i", X - c, X - c))))
            if not math.isfinite(R):
                raise ValueError("the magnitude of X is outside the supported range: the squared norms of its "
                                 "records overflow float64; rescale the data (and any data_norm or centre) by a "
                                 "constant")
            R = R if R > 0 else 1.0
            _check_private_norm(R, "X (the largest norm of its records)")
        # the whole epsilon; delta as the sketch's plan spends it, plus the mean's share when
        # that is Gaussian
        budget = Budget(eps, plan.delta + (delta * share if plan.mechanism == "gaussian" else 0.0),
                        neighbouring=self.neighbouring, what=type(self).__name__ + ".fit")
        budget.charge(self.accountant)  # once, before any noise
        count_part = budget.part("count", plan.epsilon_count) if plan.epsilon_count > 0 else None
        t = time.perf_counter()
        extra = {}
        if private_mean:
            n = X.shape[0]
            count = count_part.count(n) if count_part is not None else n
            Xb = _into_ball(X, R, "||x||_2", "the private mean")
            # post-processing of the released count: a noisy count below 0 (a few records, a small
            # epsilon) is clamped to 0, so that the mean divides by max(count, 1)
            mean_part = budget.part("mean", share * eps, share * delta if delta > 0 else 0.0)
            source = mean_part.source("gaussian" if mean_part.delta > 0 else "laplace", what="mean in the ball")
            mean, _ = private_ball_mean(Xb, R, max(count, 0), mean_part.epsilon, mean_part.delta,
                                        neighbouring=self.neighbouring, insecure_seed=source)
            extra["epsilon_pilot"] = share * eps
            # ||x - mean|| <= R + ||mean|| for every record of the ball: none is rescaled again
            R_sketch = R + float(np.linalg.norm(mean))
        else:
            # a given centre, or none (zeros) with the mean read from the release itself
            mean = np.zeros(d) if self_centred else self._centre_array(d)
            count = None
            R_sketch = R
        fm = self._make_map(d, k, mean, R_sketch, rng, offset=self_centring_offset(R) if self_centred else None)
        acc = SketchAccumulator(fm, batch_size=self.batch_size)
        _update(acc, batches)
        sketch = _sketch_of(acc)
        if count is None:
            count = count_part.count(sketch.count) if count_part is not None else sketch.count
        private = budget.part("sketch", plan.epsilon_sum, plan.delta).release(
            sketch, count=count_part or count, mechanism=plan.mechanism, epsilon=eps, delta=delta, **extra)
        self.privacy_ = budget.record(private)
        timings["sketch"] = time.perf_counter() - t
        return private

    def release_sketch(self, sketch):
        """Release a clean self-centred covariance sketch (SecondMomentMap with an offset, as
        `pysketch sketch --map pca` makes) by this estimator's rule, and return the
        PrivateSketch to decode with `fit_sketch`: what `fit` would release from the
        records themselves, computed from their sufficient statistics.

        Needs epsilon, n_components and data_norm (R, a public bound on ||x - centre||; at
        least the map's own). Where the rule (`method`) picks 'covariance', the sketch is
        released as it is, its offset first rescaled to self_centring_offset(R)
        (SecondMomentMap.reoffset). Where it picks 'sketch' (pure epsilon, k < about d / 4),
        the records' sum is read from the sketch and released as a private mean for
        `mean_share` of epsilon (privacy.moments.private_mean_of_sum, as fit's
        private_ball_mean), and the compressive quadratic sketch about that mean is the exact
        image of the clean second moments about it (sum_i (omega^T (y_i - c))^2 = omega^T
        M_c omega, M_c from the eigen-decomposition of the sketch's matrix), released for the
        rest at the quadratic map's sensitivity on radius R + ||c||. The budget is charged
        once (`accountant`); the noise comes from the OS."""
        from .privacy.budget import Budget
        from .privacy.moments import private_mean_of_sum
        from .privacy.release import plan_release

        self._validate_params()
        if self.epsilon is None:
            raise ValueError("release_sketch needs epsilon (a private release)")
        if self.n_components is None:
            raise ValueError("release_sketch needs n_components: the rule reads k")
        fm = getattr(sketch, "feature_map", None)
        if not isinstance(sketch, Sketch) or getattr(sketch, "privacy", None) is not None:
            raise TypeError(f"sketch must be a clean pysketch.Sketch, got {type(sketch).__name__}")
        if getattr(fm, "offset", None) is None or not hasattr(fm, "moments"):
            raise ValueError(f"release_sketch reads a self-centred second_moment sketch (made with an offset), not "
                             f"{fm!r}")
        if self.centre is not None:
            raise ValueError("release_sketch centres by the sketch's own mean: centre must be None")
        R = self.data_norm if self.data_norm is not None else fm.data_norm
        if R is None:
            raise ValueError("release_sketch needs data_norm: a public bound R on ||x - centre|| of every record")
        R = float(R)
        _check_private_norm(R, "data_norm (a bound on the records' norms)")
        d, k = fm.d, self._k(fm.d)
        eps, delta = float(self.epsilon), float(self.delta)
        what = type(self).__name__ + ".release_sketch"
        if self._method(d, k) == "covariance":
            moved = fm.reoffset(sketch, self_centring_offset(R))
            plan = plan_release(moved.feature_map.m, eps, delta, neighbouring=self.neighbouring,
                                split=1 - COUNT_SHARE)
            budget = Budget(eps, plan.delta, neighbouring=self.neighbouring, what=what).charge(self.accountant)
            return budget.part("sketch").release(moved, split=1 - COUNT_SHARE, mechanism=plan.mechanism,
                                                 data_norm=R, epsilon=eps, delta=delta)
        share = self._budget_shares()["mean"]
        m = self._quadratic_size(d, k)
        plan = plan_release(m, eps * (1 - share), delta * (1 - share), neighbouring=self.neighbouring,
                            split=1 - COUNT_SHARE)
        budget = Budget(eps, plan.delta + (delta * share if plan.mechanism == "gaussian" else 0.0),
                        neighbouring=self.neighbouring, what=what).charge(self.accountant)
        count_part = budget.part("count", plan.epsilon_count) if plan.epsilon_count > 0 else None
        M = fm.second_moment_matrix(np.asarray(sketch.sum, dtype=np.float64))  # sums, with the offset row
        a = fm.offset
        n = int(sketch.count)
        S, total = M[:d, :d], M[:d, d] / a
        count = count_part.count(n) if count_part is not None else n
        mean_part = budget.part("mean", share * eps, share * delta if delta > 0 else 0.0)
        source = mean_part.source("gaussian" if mean_part.delta > 0 else "laplace", what="mean of the sum")
        mean, _ = private_mean_of_sum(total, R, max(count, 0), mean_part.epsilon, mean_part.delta,
                                      neighbouring=self.neighbouring, insecure_seed=source)
        # the second moments about the private mean, M_c = S - s c^T - c s^T + n c c^T
        Mc = S - np.outer(total, mean) - np.outer(mean, total) + n * np.outer(mean, mean)
        lam, V = np.linalg.eigh(0.5 * (Mc + Mc.T))
        qmap = self._make_map(d, k, mean, R + float(np.linalg.norm(mean)), as_generator(self.random_state))
        op = qmap.operator
        qsum = np.zeros(qmap.m)
        rows = max(1, (1 << 22) // max(qmap.m, 1))  # at most 4M floats of Omega^T v at once
        for start in range(0, d, rows):
            T = op.apply(np.ascontiguousarray(V[:, start : start + rows].T)).astype(np.float64)
            qsum += lam[start : start + rows] @ (T * T)
        # the quadratic sketch's sum about the private mean (as fit's sketch about it), and the
        # count already released with it
        clean = Sketch(qmap, qsum, n)
        return budget.part("sketch", plan.epsilon_sum, plan.delta).release(
            clean, count=count_part or count, mechanism=plan.mechanism, epsilon=eps, delta=delta,
            epsilon_pilot=share * eps)

    def fit_sketch(self, sketch):
        """Learn the components from a quadratic Sketch (or PrivateSketch) made elsewhere: the
        data are never seen. ``mean_`` is the map's centre (zeros when it has none), or the mean
        read from the sketch when it is a covariance sketch with an offset (self-centred)."""
        self._validate_params()
        if not isinstance(sketch, Sketch):
            raise TypeError(f"sketch must be a pysketch.Sketch, got {type(sketch).__name__}")
        if sketch.count < 1:
            raise ValueError("the sketch is empty (count 0)")
        self._decode(sketch, as_generator(self.random_state), {})
        return self

    def _decode(self, sketch, rng, timings):
        t = time.perf_counter()
        if not np.isfinite(sketch.sum).all():  # squared records beyond float64 (the map's sums are float64)
            raise ValueError("the magnitude of the data is outside the supported range: the squares of the records "
                             "(about the centre) overflow float64 in the sketch; rescale the data (and any "
                             "data_norm or centre) by a constant")
        kind = sketch.feature_map.kind
        method = next((name for name, (map_kind, *_) in _METHODS.items() if map_kind == kind), None)
        if method is None:
            kinds = " or ".join(repr(v[0]) for v in _METHODS.values())
            raise ValueError(f"subspace decoders need quadratic features ({kinds}), not {kind!r}")
        _, name, options = _METHODS[method]
        cls = DECODERS.get(name)
        problem = cls.problem(sketch)
        k = self._k(problem.d)
        self._check_sizes(problem.d, k, m=problem.m, method=method)
        decoder = cls(n_init=self.n_init, random_state=rng, **{option: getattr(self, option) for option in options})
        sol = decoder.decode(SubspaceTask(problem, k))
        self.method_ = method
        timings["decode"] = time.perf_counter() - t
        self.components_ = sol.components
        self.explained_variance_ = sol.variances
        total = sol.total_variance
        self.total_variance_ = total
        # the fitted model's own total (components plus the floor in the other d - k
        # directions) when it exceeds the sketch's estimate (noisy sketches): ratios sum to <= 1
        model_total = float(sol.variances.sum()) + (problem.d - k) * sol.floor
        denom = max(total, model_total)
        self.explained_variance_ratio_ = sol.variances / denom if denom > 0 else np.full(k, np.nan)
        self.noise_variance_ = sol.floor
        self.mean_ = problem.mean
        self.n_components_ = k
        self.n_features_in_ = problem.d
        self.n_samples_ = int(sketch.count)
        self.sketch_ = sketch
        self.sketch_size_ = problem.m
        self.residual_ = sol.residual
        self.n_iter_ = sol.n_iter
        self.timings_ = timings

    # ------------------------------------------------------------------ using the components

    def _check_fitted(self):
        if not hasattr(self, "components_"):
            raise not_fitted_error(self)

    def transform(self, X):
        """``(X - mean_) @ components_.T``: the coordinates in the components, shape (n, k)."""
        self._check_fitted()
        X = check_array(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input")
        return (X - self.mean_) @ self.components_.T

    def inverse_transform(self, X):
        """``Z @ components_ + mean_``: back to the data space, shape (n, d)."""
        self._check_fitted()
        Z = check_array(X)
        if Z.shape[1] != self.n_components_:
            raise ValueError(f"X has {Z.shape[1]} columns, but {type(self).__name__} has "
                             f"{self.n_components_} components")
        return Z @ self.components_ + self.mean_


def _update(acc, batches):
    """acc.update(batches), a record with NaN or infinity named as X's."""
    try:
        acc.update(batches)
    except ValueError as exc:
        if "NaN or infinity" in str(exc):
            raise ValueError(f"X: {exc}") from None
        raise


def _sketch_of(acc):
    """The accumulator's sketch; ValueError about the data's magnitude when the sums of
    the squared records overflowed float64."""
    try:
        return acc.sketch()
    except ValueError as err:
        if "finite" not in str(err):
            raise
        raise ValueError("the magnitude of the data is outside the supported range: the squares of the records "
                         "(about the centre) overflow float64 in the sketch's sums; rescale the data (and any "
                         "data_norm or centre) by a constant") from err


#: A private fit needs data_norm within 2^+-PRIVATE_NORM_EXPONENT: its noise variance grows
#: like data_norm^4 (quadratic features) and is recorded in float64.
PRIVATE_NORM_EXPONENT = 240


def _check_private_norm(R, what):
    limit = math.ldexp(1.0, PRIVATE_NORM_EXPONENT)
    if not 1.0 / limit <= R <= limit:
        raise ValueError(f"the magnitude of {what} ({R:.3g}) is outside the supported range [{1.0 / limit:.3g}, "
                         f"{limit:.3g}] of a private fit: the noise variance of quadratic features grows like its "
                         "fourth power and over- or underflows float64; rescale the data (and data_norm, centre) "
                         "by a constant")


def _count_over_block(block, first_row, radius):
    return int(np.count_nonzero(np.einsum("ij,ij->i", block, block) > radius * radius))


def _ball_block(block, radius):
    block = np.array(block, dtype=np.float64)
    if not np.isfinite(block).all():  # a lazy X is checked here, by the pass that reads it
        raise ValueError("X contains NaN or infinity")
    norms = np.sqrt(np.einsum("ij,ij->i", block, block))
    over = norms > radius
    block[over] *= (radius / norms[over] * (1 - 1e-12))[:, None]
    return block


def _add(a, b):
    return a + b


def _into_ball(X, radius, what, purpose):
    """X with rows of norm above `radius` rescaled onto the sphere (a warning counts them);
    a dask array is rescaled lazily, block by block."""
    if is_dask_collection(X):
        over = map_reduce(X, _count_over_block, _add, args=(float(radius),))
        Y = map_blocks(X, _ball_block, float(radius), dtype=np.float64) if over else X
    else:
        norms = np.sqrt(np.einsum("ij,ij->i", X, X))
        over = int(np.count_nonzero(norms > radius))
        Y = X
        if over:
            Y = X.copy()
            Y[norms > radius] *= (radius / norms[norms > radius] * (1 - 1e-12))[:, None]
    if not over:
        return X
    warnings.warn(f"{over} of {X.shape[0]} records had {what} > data_norm = {radius:g} and were rescaled "
                  f"onto that sphere for {purpose} (the privacy guarantee holds for the rescaled records)",
                  RuntimeWarning, stacklevel=4)
    return Y
