"""Compressive k-means and Gaussian mixtures with scikit-learn's API.

Both estimators sketch the data in one pass (or take a sketch made elsewhere, with
`fit_sketch`) and learn from the sketch alone with CL-OMPR (pysketch.decoders). The data
are read once more only for the pilot that chooses the kernel scale (when it is 'auto'),
for the bounding box of the centers (with `fit`), and for `labels_`.
"""

import math
import numbers
import warnings

import numpy as np

from . import _core
from ._checks import check_int as _check_int
from ._base import BaseEstimator, ClusterMixin, DensityMixin, TransformerMixin
from ._random import as_generator
from ._threads import blas_single_thread
from .decoders import DecodingProblem, DiagonalGaussianAtoms, DiracAtoms, clompr
from .features import make_feature_map
from .frequencies import FrequencyLaw, make_law
from .sketch import Sketch, SketchAccumulator

__all__ = ["CompressiveKMeans", "CompressiveGaussianMixture"]

_LAWS = ("gaussian", "adapted_radius", "folded_gaussian")
#: Share of epsilon spent on the private kernel-scale pilot (k-means, kernel_scale='auto').
PRIVATE_PILOT_SHARE = 0.05
_OPERATORS = ("auto", "dense", "r3", "gr2", "fastfood")


# ------------------------------------------------------------------------------- validation




def _check_array(X, name="X", dtype=np.float64):
    """A 2-D finite float array (rows are records). The messages follow scikit-learn's
    wording (its estimator checks look for it) and name the argument."""
    if isinstance(X, np.ma.MaskedArray):
        raise TypeError(f"{name} must not be a masked array")
    if hasattr(X, "toarray") or type(X).__module__.startswith("scipy.sparse"):
        raise TypeError(f"{name}: sparse input is not supported; pass a dense array")
    A = np.asarray(X)
    if A.dtype.kind == "c":
        raise ValueError(f"Complex data not supported: {name} has dtype {A.dtype}; pass real numbers")
    if A.dtype.kind not in "biuf":
        try:
            A = A.astype(np.float64)
        except TypeError as exc:  # e.g. "float() argument must be a string or a real number, not 'dict'"
            raise TypeError(f"{name} must hold numbers: {exc}") from exc
        except ValueError as exc:
            raise ValueError(f"{name} must hold numbers: {exc}") from exc
    if A.ndim != 2:
        raise ValueError(
            f"Expected a 2-D array for {name} (n_samples, n_features), got {A.ndim} dimension(s) (shape {A.shape}). "
            "Reshape your data with X.reshape(-1, 1) if it has a single feature or X.reshape(1, -1) if it is a "
            "single sample."
        )
    if A.shape[0] < 1:
        raise ValueError(f"Found array with 0 sample(s) (shape={A.shape}) while a minimum of 1 is required ({name}).")
    if A.shape[1] < 1:
        raise ValueError(f"Found array with 0 feature(s) (shape={A.shape}) while a minimum of 1 is required ({name}).")
    A = np.ascontiguousarray(A, dtype=dtype)
    if not np.isfinite(A).all():
        raise ValueError(f"Input {name} contains NaN or infinity; remove or impute those values")
    return A


def _check_bounds(bounds, d):
    """(lower, upper) arrays of shape (d,) from (lower, upper) or a (d, 2) array."""
    if bounds is None:
        raise ValueError("bounds are required: (lower, upper) arrays of length d, or a (d, 2) array")
    if isinstance(bounds, tuple) and len(bounds) == 2:
        lo, hi = (np.broadcast_to(np.asarray(b, dtype=np.float64), (d,)).copy() for b in bounds)
    else:
        b = np.asarray(bounds, dtype=np.float64)
        if b.shape != (d, 2):
            raise ValueError(f"bounds must be (lower, upper) or a ({d}, 2) array, got shape {b.shape}")
        lo, hi = b[:, 0].copy(), b[:, 1].copy()
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        raise ValueError("bounds must be finite")
    if (hi < lo).any():
        raise ValueError("bounds: every upper bound must be >= the lower bound")
    flat = hi == lo  # a constant coordinate: give the box a small width
    pad = np.maximum(1e-6, 1e-6 * np.abs(lo))
    lo[flat] -= pad[flat]
    hi[flat] += pad[flat]
    return lo, hi


# ------------------------------------------------------------------------------- shared


class _CompressiveMixture(BaseEstimator):
    """The parts common to both estimators: sketching, kernel scale, decoding."""

    _task = None
    _sketch_factor = 10  # sketch size m = factor * k * d unless given

    def _n_atoms(self):
        raise NotImplementedError

    def _validate_params(self):
        _check_int(self._n_atoms(), self._n_atoms_name)
        if self.sketch_size is not None:
            _check_int(self.sketch_size, "sketch_size")
        ks = self.kernel_scale
        if not (isinstance(ks, str) and ks in ("auto", "sketch", "separation")):
            if isinstance(ks, (bool, np.bool_)) or not isinstance(ks, numbers.Real) or not np.isfinite(ks) or ks <= 0:
                raise ValueError(
                    f"kernel_scale must be 'auto', 'sketch', 'separation' or a positive finite number, got {ks!r}"
                )
        if self.operator not in _OPERATORS:
            raise ValueError(f"operator must be one of {_OPERATORS}, got {self.operator!r}")
        if not (isinstance(self.frequency_law, FrequencyLaw) or self.frequency_law in _LAWS):
            raise ValueError(f"frequency_law must be one of {_LAWS} or a FrequencyLaw, got {self.frequency_law!r}")
        _check_int(self.n_init, "n_init")
        if np.dtype(self.dtype) not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise ValueError(f"dtype must be float32 or float64, got {self.dtype!r}")
        _check_int(self.pilot_size, "pilot_size", minimum=2)

    def _sketch_size(self, d):
        return self.sketch_size if self.sketch_size is not None else self._sketch_factor * self._n_atoms() * d

    def _scale(self, X, rng):
        ks = self.kernel_scale
        if not isinstance(ks, str):
            return float(ks)
        from .scale import kernel_scale as auto_scale  # reads a pilot of the data

        method = "separation" if ks == "separation" else ("sketch" if ks == "sketch" else "auto")
        return float(auto_scale(X, self._n_atoms(), method=method, task=self._task, pilot_size=self.pilot_size,
                                random_state=rng))

    def _law(self, sigma):
        if isinstance(self.frequency_law, FrequencyLaw):
            return self.frequency_law
        return make_law(self.frequency_law, sigma)

    def _make_map(self, d, sigma, rng):
        return make_feature_map(d, self._sketch_size(d), "complex", operator=self.operator, law=self._law(sigma),
                                random_state=rng, dtype=np.dtype(self.dtype))

    def _sketch_data(self, X, fm):
        """One pass: the sketch and the bounding box."""
        acc = SketchAccumulator(fm, batch_size=self.batch_size)
        acc.update(X)
        lo, hi = _bounds(X)
        return acc.sketch(), lo, hi

    def fit(self, X, y=None):
        """Sketch X (rows are records) and learn the mixture from the sketch.

        The data are read for the kernel-scale pilot (when kernel_scale is 'auto'), the
        sketch and the bounding box (one pass), and the labels (a second pass).
        """
        self._validate_params()
        X = _check_array(X)
        n, d = X.shape
        if n < self._n_atoms():
            raise ValueError(f"n_samples={n} should be >= {self._n_atoms_name}={self._n_atoms()}")
        if n < 2 and isinstance(self.kernel_scale, str):
            raise ValueError(f"n_samples={n}: estimating the kernel scale needs at least 2 records; pass a number "
                             "as kernel_scale to sketch a single record")
        rng = as_generator(self.random_state)
        if self.epsilon is not None:
            return self._fit_private(X, rng)
        if self.bounds is not None:
            raise ValueError("bounds is used only with epsilon (private fit); without it the data's own box is used")
        sigma = self._scale(X, rng)
        fm = self._make_map(d, sigma, rng)
        sketch, lo, hi = self._sketch_data(X, fm)
        self.kernel_scale_ = sigma
        self._decode(sketch, (lo, hi), rng)
        self._after_fit(X)
        return self

    def _fit_private(self, X, rng):
        """fit with (epsilon, delta)-DP: see the class docstring ("Differential privacy")."""
        from .privacy import PrivacyLeakWarning, nsr
        from .privacy.accountant import charge
        from .privacy.mechanisms import _check_delta, _check_epsilon, noise_source
        from .privacy.private_sketch import noisy_count, release_sum
        from .privacy.sensitivity import NEIGHBOURING, sum_sensitivity

        eps = _check_epsilon(self.epsilon)
        delta = _check_delta(self.delta, positive=False)
        if self.neighbouring not in NEIGHBOURING:
            raise ValueError(f"neighbouring must be one of {NEIGHBOURING}, got {self.neighbouring!r}")
        mechanism = "laplace" if delta == 0 else "gaussian"
        n, d = X.shape
        k = self._n_atoms()
        if self.bounds is None:
            warnings.warn(
                "bounds were not given: the box of the centers is computed from the data, which is not "
                "differentially private. Pass bounds=(lower, upper) from public knowledge.",
                PrivacyLeakWarning, stacklevel=3)
            lo, hi = _bounds(X)
            lo, hi = _check_bounds((lo, hi), d)
        else:
            lo, hi = _check_bounds(self.bounds, d)
            outside = int(np.count_nonzero(((X < lo) | (X > hi)).any(axis=1)))
            if outside:
                warnings.warn(f"{outside} of {n} records lie outside bounds and were clipped to the box "
                              "(the privacy guarantee holds for the clipped data)", RuntimeWarning, stacklevel=3)
                X = np.clip(X, lo, hi)
        charge(self.accountant, eps, delta, type(self).__name__ + ".fit")
        source = noise_source()
        pilot_eps = 0.0
        if self.kernel_scale == "auto" and self._task == "kmeans":
            # private pilot: the data's spread from noisy moments (a share of epsilon), then
            # the thesis's separation heuristic (4.14) with that spread for the centres'
            from .privacy.moments import private_mean_and_spread
            from .scale import KMEANS_SEPARATION_FACTOR, expected_separation

            pilot_eps = PRIVATE_PILOT_SHARE * eps
            _, spread = private_mean_and_spread(X, pilot_eps, lo, hi, insecure_seed=source)
            spread = max(spread, 1e-3 * float(np.mean(hi - lo)))
            sigma = KMEANS_SEPARATION_FACTOR * expected_separation(k, d, spread)
        else:
            if isinstance(self.kernel_scale, str):
                warnings.warn(
                    f"kernel_scale={self.kernel_scale!r} reads a pilot of the raw records without privacy "
                    "protection (a private pilot exists only for k-means with 'auto'); pass "
                    "kernel_scale=<number> from public knowledge to keep the whole fit private.",
                    PrivacyLeakWarning, stacklevel=3)
            sigma = self._scale(X, rng)
        eps_all, eps = eps, eps - pilot_eps
        # 1. the count (add/remove) with its share of epsilon, the split optimized at the
        #    public size from which this sketch size is useful (notes seed000 sec. 5)
        m_default = self._sketch_size(d)
        if self.neighbouring == "add_remove":
            n_ref = nsr.n0(m_default, eps, nsr.nsr_max(m_default, k, d))
            gamma = nsr.budget_split(m_default, eps, n_ref, delta=delta, mechanism=mechanism)
            eps_count = (1.0 - gamma) * eps
            count = noisy_count(n, eps_count, source)
            n_low = max(count - math.log(20.0) / eps_count, 1.0)  # 95% lower confidence bound on n
        else:
            gamma, eps_count, count, n_low = 1.0, 0.0, n, float(n)
        eps_sum = eps - eps_count
        # 2. the sketch size: the rule 2kd <= m <= n^2 eps^2 / (10^3 kd), capped at the default
        m = self.sketch_size if self.sketch_size is not None else nsr.choose_sketch_size(
            k, d, n_low, eps_sum, delta=delta, factor=self._sketch_factor)
        fm = make_feature_map(d, m, "complex", operator=self.operator, law=self._law(sigma), random_state=rng,
                              dtype=np.dtype(self.dtype))
        acc = SketchAccumulator(fm, batch_size=self.batch_size)
        acc.update(X)
        sens = sum_sensitivity(fm, 1 if mechanism == "laplace" else 2, self.neighbouring)
        private = release_sum(acc.sketch(), count, epsilon=eps_all, delta=delta, neighbouring=self.neighbouring,
                              mechanism=mechanism, epsilon_sum=eps_sum, epsilon_count=eps_count, sensitivity=sens,
                              features_per_record=None, source=source)
        private.privacy["epsilon_pilot"] = pilot_eps
        self.kernel_scale_ = sigma
        self._decode(private, (lo, hi), rng)
        self._after_fit(X)
        return self

    def fit_sketch(self, sketch, bounds):
        """Learn the mixture from a Sketch made elsewhere (the data are never seen).

        Parameters
        ----------
        sketch : Sketch
            Made with Fourier features ('complex', 'real' or 'quantized').
        bounds : (lower, upper) or array of shape (d, 2)
            A box that contains the data (public knowledge, or computed by the data
            holder): the centers are searched inside it. Each new center starts from the
            best of 64 points, half uniform in the box and half around the data's bulk
            as the sketch's lowest frequencies locate it (pysketch.decoders.clompr
            _bulk_proposal), so a box much wider than the data works too. Measured (k = 10
            unit clusters, centres N(0, 4 I), d = 10, data within about +-8, kernel scale
            3.3, 3 seeds): the data's own box and boxes of +-10, +-12, +-20 and +-50 all
            gave RSE 1.01-1.10; with uniform starts only, +-10 already failed (RSE 2.3-3.3).
        """
        self._validate_params()
        if not isinstance(sketch, Sketch):
            raise TypeError(f"sketch must be a pysketch.Sketch, got {type(sketch).__name__}")
        if sketch.count < 1:
            raise ValueError("the sketch is empty (count 0)")
        rng = as_generator(self.random_state)
        law = sketch.feature_map.operator.law
        self.kernel_scale_ = getattr(law, "sigma", None)
        self._decode(sketch, _check_bounds(bounds, sketch.feature_map.d), rng)
        return self

    def partial_fit(self, X, y=None):
        """Add X to the sketch and learn again from the whole sketch so far (the kernel
        scale and the map are fixed at the first call, from its data)."""
        self._validate_params()
        if self.epsilon is not None:
            raise ValueError("partial_fit does not release private sketches (each call would spend the budget "
                             "again): accumulate with pysketch.SketchAccumulator, release once with "
                             "pysketch.privacy.make_private, then call fit_sketch")
        X = _check_array(X)
        if not hasattr(self, "_accumulator"):
            rng = as_generator(self.random_state)
            sigma = self._scale(X, rng)
            self._rng = rng
            self.kernel_scale_ = sigma
            self._accumulator = SketchAccumulator(self._make_map(X.shape[1], sigma, rng), batch_size=self.batch_size)
            self._lo, self._hi = _bounds(X)
        elif X.shape[1] != self._accumulator.feature_map.d:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                             f"{self._accumulator.feature_map.d} features as input")
        else:
            _bounds(X, self._lo, self._hi)
        self._accumulator.update(X)
        sketch = self._accumulator.sketch()
        if sketch.count >= self._n_atoms():
            self._decode(sketch, _check_bounds((self._lo, self._hi), X.shape[1]), self._rng)
        return self

    def _decode(self, sketch, bounds, rng):
        fm = sketch.feature_map
        lo, hi = _check_bounds(bounds, fm.d)
        problem = DecodingProblem(fm, sketch.mean())
        if getattr(self, "decoder", "clompr") == "clamp":
            sol = self._decode_clamp(problem, sketch, lo, hi, rng)
        else:
            family = self._family(problem, lo, hi)
            with blas_single_thread():
                sol = clompr(family, self._n_atoms(), n_init=self.n_init, random_state=rng)
        self.sketch_ = sketch
        self.bounds_ = (lo, hi)
        self.n_features_in_ = fm.d
        self.residual_ = sol.residual
        self.n_iter_ = sol.n_iter
        self._set_solution(sol)

    def _check_fitted(self):
        if not hasattr(self, "weights_"):
            raise _not_fitted(self)

    def _check_X(self, X):
        self._check_fitted()
        X = _check_array(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input")
        return X


def _bounds(X, lo=None, hi=None):
    """The per-column min and max of X (float64 (n, d), finite), merged into lo/hi when
    given (in place); one multi-threaded pass in C++."""
    if lo is None:
        lo, hi = np.full(X.shape[1], np.inf), np.full(X.shape[1], -np.inf)
    _core.column_bounds(X, lo, hi)
    return lo, hi


def _not_fitted(est):
    try:
        from sklearn.exceptions import NotFittedError
    except ImportError:  # pragma: no cover
        NotFittedError = ValueError
    return NotFittedError(f"This {type(est).__name__} instance is not fitted yet. Call 'fit' with appropriate "
                          "arguments before using this estimator.")


# ------------------------------------------------------------------------------- k-means


class CompressiveKMeans(TransformerMixin, ClusterMixin, _CompressiveMixture):
    """k-means learned from a sketch (compressive k-means, CL-OMPR decoder).

    Parameters
    ----------
    n_clusters : int, default 8
    sketch_size : int, optional
        Number of frequencies m (default 10 * n_clusters * n_features).
    kernel_scale : 'auto', 'separation', 'sketch' or float, default 'auto'
        Scale sigma of the frequency law (the spatial width of the kernel). 'auto' and
        'separation' estimate the separation of the clusters on a pilot of `pilot_size`
        records (a small k-means); 'sketch' fits the decay of a pilot sketch (Keriven et al.);
        a number is used as given. The pilot reads the data (with differential privacy it
        must be charged to the budget, or the scale given).
    operator : {'auto', 'dense', 'r3', 'gr2', 'fastfood'}, default 'auto'
        'auto': dense below 64 features, R3 blocks from 64 on.
    frequency_law : {'gaussian', 'adapted_radius', 'folded_gaussian'} or FrequencyLaw
        Default 'gaussian' (measured better than adapted radius for k-means here; see the
        project notes).
    decoder : {'clompr', 'clamp'}, default 'clompr'
        CL-OMPR (greedy with replacement; Theta(k^3)), or CL-AMP (SHyGAMP message passing,
        pysketch.decoders.clamp; Theta(k^2) per iteration, works from sketches of 2kd).
    n_init : int, default 3
        Restarts (CL-OMPR) or random initializations (CL-AMP); the one whose mixture is closest to the sketch is kept.
        (Measured on the acceptance data, 10 seeds: 3 restarts give the same median RSE
        as 5, and a 90th percentile of 1.023 where one restart gives 1.087.)
    dtype : float32 or float64, default float32
        Precision of the sketching (the sums are float64 either way; decoding is float64).
    pilot_size : int, default 5000
    batch_size : int, optional
        Records sketched at a time.
    random_state : None, int or numpy Generator
        Draws the operator, the kernel-scale pilot and the decoder's starts (all
        public). Never the privacy noise.
    epsilon : float, optional
        Fit with differential privacy (see below). None: no privacy.
    delta : float, default 0
        0: pure epsilon-DP (Laplace noise); > 0: (epsilon, delta)-DP (analytic Gaussian).
    bounds : (lower, upper) or (n_features, 2) array, optional
        Public box of the data (required for privacy; without it the box is read from
        the data with a PrivacyLeakWarning). Records outside are clipped, with a warning.
    neighbouring : {'add_remove', 'replace'}, default 'add_remove'
    accountant : pysketch.privacy.BudgetAccountant or diffprivlib BudgetAccountant, optional
        Charged (epsilon, delta) before anything is released.

    Differential privacy
    --------------------
    With ``epsilon`` set, `fit` releases one private sketch and decodes it (decoding is
    post-processing; ``fit_sketch`` on the saved ``sketch_`` costs nothing more):
    under 'add_remove' a share of epsilon (numerically optimized,
    pysketch.privacy.nsr.budget_split) noises the count, whose 95% lower confidence
    bound sets the sketch size by the rule 2kd <= m <= n^2 eps^2 / (10^3 kd) (capped at
    the non-private default 10kd); the rest noises the sum of features (Laplace with L1
    sensitivity sqrt(2) m, or Gaussian with L2 sensitivity sqrt(m); doubled under
    'replace', where the count is public). Noise comes from OS entropy. With
    ``kernel_scale='auto'`` a share PRIVATE_PILOT_SHARE (5%) of epsilon first releases the
    data's spread s (pysketch.privacy.moments: noisy count, sum and sum of squares in the
    public box) and the scale is 0.8 times the expected minimum separation of k centres
    of spread s in dimension d (thesis eq. (4.14); pysketch.scale.expected_separation);
    a number given as kernel_scale costs nothing; 'separation' or 'sketch' read a raw
    pilot and warn with a PrivacyLeakWarning. `labels_` and `inertia_` are computed from
    the raw data for the caller and are not private.

    Attributes
    ----------
    cluster_centers_ : ndarray (n_clusters, n_features)
    weights_ : ndarray (n_clusters,)
        The fraction of the data at each center, as decoded from the sketch.
    labels_ : ndarray (n_samples,)
        Nearest center of each training record (after `fit`).
    inertia_ : float
        Sum of squared distances of the training records to their nearest center.
    sketch_ : Sketch
    kernel_scale_ : float
    residual_ : float
        ||z - sum alpha_k a(c_k)||, the distance of the decoded mixture to the sketch.
    n_features_in_, n_iter_
    """

    _task = "kmeans"
    _n_atoms_name = "n_clusters"

    def __init__(self, n_clusters=8, *, sketch_size=None, kernel_scale="auto", operator="auto",
                 frequency_law="gaussian", n_init=3, dtype="float32", pilot_size=5000, batch_size=None,
                 random_state=None, epsilon=None, delta=0.0, bounds=None,
                 neighbouring="add_remove", accountant=None, decoder="clompr"):
        self.decoder = decoder
        self.n_clusters = n_clusters
        self.sketch_size = sketch_size
        self.kernel_scale = kernel_scale
        self.operator = operator
        self.frequency_law = frequency_law
        self.n_init = n_init
        self.dtype = dtype
        self.pilot_size = pilot_size
        self.batch_size = batch_size
        self.random_state = random_state
        self.epsilon = epsilon
        self.delta = delta
        self.bounds = bounds
        self.neighbouring = neighbouring
        self.accountant = accountant

    def _n_atoms(self):
        return self.n_clusters

    def _validate_params(self):
        super()._validate_params()
        if self.decoder not in ("clompr", "clamp"):
            raise ValueError(f"decoder must be 'clompr' or 'clamp', got {self.decoder!r}")

    def _decode_clamp(self, problem, sketch, lo, hi, rng):
        from .decoders.clamp import clamp

        n = max(int(sketch.count), 1)
        noise_var = 1.0 / (2.0 * n)  # the finite-sample floor (CL-AMP's default)
        privacy = getattr(sketch, "privacy", None)
        if privacy is not None:  # add the mechanism's variance per real component of the mean
            scale = privacy["noise_scale_sum"]
            per_entry = 2.0 * scale * scale if privacy["mechanism"] == "laplace" else scale * scale
            noise_var += per_entry / (n * n)
        with blas_single_thread():
            return clamp(problem, n_clusters=self.n_clusters, bounds=(lo, hi), n_samples=n, noise_var=noise_var,
                         n_init=max(self.n_init, 1), random_state=rng)

    def _family(self, problem, lo, hi):
        return DiracAtoms(problem, lo, hi)

    def _set_solution(self, sol):
        self.cluster_centers_ = sol.theta.copy()
        self.weights_ = sol.weights.copy()

    def _after_fit(self, X):
        d2 = _sq_distances(X, self.cluster_centers_)
        self.labels_ = np.argmin(d2, axis=1)
        self.inertia_ = float(d2[np.arange(X.shape[0]), self.labels_].sum())

    def predict(self, X):
        """Index of the nearest center of every record."""
        X = self._check_X(X)
        return np.argmin(_sq_distances(X, self.cluster_centers_), axis=1)

    def transform(self, X):
        """Euclidean distances of every record to every center (n_samples, n_clusters)."""
        X = self._check_X(X)
        return np.sqrt(_sq_distances(X, self.cluster_centers_))

    def score(self, X, y=None):
        """Minus the sum of squared distances to the nearest center (scikit-learn's sign)."""
        X = self._check_X(X)
        return -float(_sq_distances(X, self.cluster_centers_).min(axis=1).sum())

    def _check_fitted(self):
        if not hasattr(self, "cluster_centers_"):
            raise _not_fitted(self)


def _sq_distances(X, C):
    """Squared Euclidean distances (n, k), exact differences in chunks."""
    out = np.empty((X.shape[0], C.shape[0]))
    step = max(1, (1 << 22) // max(1, C.shape[0] * X.shape[1]))
    for s in range(0, X.shape[0], step):
        diff = X[s : s + step, None, :] - C[None, :, :]
        out[s : s + step] = np.einsum("nkd,nkd->nk", diff, diff)
    return out


# ------------------------------------------------------------------------------- GMM


class CompressiveGaussianMixture(DensityMixin, _CompressiveMixture):
    """Gaussian mixture with diagonal covariances learned from a sketch (CL-OMPR with
    Gaussian atoms; Keriven et al. 2017).

    Parameters are those of CompressiveKMeans with n_components for n_clusters; the
    default frequency law is 'adapted_radius' and kernel_scale 'auto' estimates the
    cluster scale from a pilot sketch (Keriven et al.'s fit of the sketch's decay).

    Attributes
    ----------
    weights_ : (n_components,)
    means_ : (n_components, n_features)
    covariances_ : (n_components, n_features) (diagonals)
    sketch_, kernel_scale_, residual_, n_features_in_, n_iter_
    """

    _task = "gmm"
    _n_atoms_name = "n_components"

    def __init__(self, n_components=1, *, sketch_size=None, kernel_scale="auto", operator="auto",
                 frequency_law="adapted_radius", n_init=3, dtype="float32", pilot_size=5000, batch_size=None,
                 random_state=None, epsilon=None, delta=0.0, bounds=None,
                 neighbouring="add_remove", accountant=None):
        self.n_components = n_components
        self.sketch_size = sketch_size
        self.kernel_scale = kernel_scale
        self.operator = operator
        self.frequency_law = frequency_law
        self.n_init = n_init
        self.dtype = dtype
        self.pilot_size = pilot_size
        self.batch_size = batch_size
        self.random_state = random_state
        self.epsilon = epsilon
        self.delta = delta
        self.bounds = bounds
        self.neighbouring = neighbouring
        self.accountant = accountant

    def _n_atoms(self):
        return self.n_components

    def _family(self, problem, lo, hi):
        return DiagonalGaussianAtoms(problem, lo, hi)

    def _set_solution(self, sol):
        d = sol.theta.shape[1] // 2
        self.means_ = sol.theta[:, :d].copy()
        self.covariances_ = sol.theta[:, d:].copy()
        self.weights_ = sol.weights.copy()

    def _after_fit(self, X):
        pass

    def _log_prob_components(self, X):
        """log(weight_k) + log N(x; mean_k, diag(cov_k)), (n, k)."""
        var = self.covariances_
        d = X.shape[1]
        out = np.empty((X.shape[0], var.shape[0]))
        const = -0.5 * (d * np.log(2 * np.pi) + np.log(var).sum(axis=1)) + np.log(np.maximum(self.weights_, 1e-300))
        for j in range(var.shape[0]):
            diff = X - self.means_[j]
            out[:, j] = const[j] - 0.5 * np.einsum("nd,nd->n", diff, diff / var[j])
        return out

    def score_samples(self, X):
        """Log-likelihood of every record under the mixture."""
        X = self._check_X(X)
        lp = self._log_prob_components(X)
        mx = lp.max(axis=1, keepdims=True)
        return (mx + np.log(np.exp(lp - mx).sum(axis=1, keepdims=True)))[:, 0]

    def score(self, X, y=None):
        """Mean log-likelihood per record."""
        return float(self.score_samples(X).mean())

    def predict_proba(self, X):
        """Posterior probability of every component for every record."""
        X = self._check_X(X)
        lp = self._log_prob_components(X)
        lp -= lp.max(axis=1, keepdims=True)
        p = np.exp(lp)
        return p / p.sum(axis=1, keepdims=True)

    def predict(self, X):
        """The most probable component of every record."""
        return np.argmax(self.predict_proba(X), axis=1)

    def fit_predict(self, X, y=None):
        return self.fit(X).predict(X)
