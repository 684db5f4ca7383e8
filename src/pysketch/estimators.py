"""Compressive k-means and Gaussian mixtures with scikit-learn's API.

Both estimators sketch the data in one pass (or take a sketch made elsewhere, with
`fit_sketch`) and learn from the sketch alone with CL-OMPR (pysketch.decoders). The data
are read once more only for the pilot that chooses the kernel scale (when it is 'auto'),
for the bounding box of the centers (with `fit`), and for `labels_`.

`fit` also takes a dask array or data frame of numeric columns: every pass (bounding box,
pilot sums, sketch, inertia) then runs where the blocks live (pysketch.blocks), the noise of
a private fit is added once to the merged sketch, and `labels_` is a lazy dask array.
"""

import math
import numbers
import time
import warnings

import numpy as np

from ._base import BaseEstimator, ClusterMixin, DensityMixin, TransformerMixin, not_fitted_error
from ._checks import check_array, check_bounds, check_size
from ._params import Bounds, DType, InstanceOf, Interval, Options
from ._random import as_generator
from .accumulate import SketchAccumulator
from .blocks import (box_stats, check_records, column_bounds, is_dask_collection, map_blocks, map_reduce,
                     update_column_bounds)
from .cluster import nearest_centers
from .decoders import DECODERS, MixtureTask
from .features import make_feature_map
from .frequencies import FrequencyLaw, make_law
from .metrics import gaussian_mixture_log_likelihood, gaussian_mixture_log_prob_components
from .pilot import sample_pilot
from .privacy.mechanisms import PRIVACY_PARAMETERS
from .sketch import Sketch

__all__ = ["BoundsWarning", "CompressiveKMeans", "CompressiveGaussianMixture"]

_LAWS = ("auto", "gaussian", "adapted_radius", "folded_gaussian", "log_uniform")
#: Share of epsilon spent on the private kernel-scale pilot (k-means, kernel_scale='auto').
PRIVATE_PILOT_SHARE = 0.05
_OPERATORS = ("auto", "dense", "r3", "gr2", "fastfood")


# ------------------------------------------------------------------------------- shared


class _CompressiveMixture(BaseEstimator):
    """The parts common to both estimators: sketching, kernel scale, decoding."""

    _task = None
    _sketch_factor = 10  # sketch size m = factor * k * d unless given

    def _n_atoms(self):
        raise NotImplementedError

    #: The parameters both estimators share (pysketch._params); each adds its number of
    #: atoms and its decoder.
    _shared_constraints = {
        "sketch_size": [Interval(numbers.Integral, 1, None), None],
        "kernel_scale": [Options(("auto", "sketch", "separation")), Interval(numbers.Real, 0, None, closed="neither")],
        "operator": [Options(_OPERATORS)],
        "frequency_law": [Options(_LAWS), InstanceOf(FrequencyLaw)],
        "n_init": [Interval(numbers.Integral, 1, None)],
        "dtype": [DType(np.float32, np.float64)],
        "pilot_size": [Interval(numbers.Integral, 2, None)],
        "batch_size": [Interval(numbers.Integral, 1, None), None],
        "random_state": ["random_state"],
        "bounds": [Bounds(), None],
        **PRIVACY_PARAMETERS,
    }

    def _check_param_relations(self):
        """The decoder against the atoms and a private fit (refused before anything is charged)."""
        if self.decoder != "auto":
            DECODERS.get(self.decoder).check(atoms=self._atoms, private=self.epsilon is not None)

    def _sketch_size(self, d):
        return self.sketch_size if self.sketch_size is not None else self._sketch_factor * self._n_atoms() * d

    def _check_sizes(self, d, n=None, m=None):
        """The sizes (validated) against the memory they imply for records of d features (n
        of them; m: the size of a given sketch), refused before anything is read, allocated
        or charged: the operator and the sketch of m frequencies, the decoder's k atoms on
        them (and the candidates of a new one), the restarts' results, the pilot."""
        from .operators import operator_bytes

        given = m is not None

        def fit_bytes(k, m):
            drawn = 0 if given else operator_bytes(d, m, self.operator, np.dtype(self.dtype))
            return drawn + 16 * m * (k + 8) + 32 * k * d

        def size(k):  # the sketch's size for k atoms
            return m if given else self.sketch_size if self.sketch_size is not None else self._sketch_factor * k * d

        if self.sketch_size is not None and not given:  # alone first: a huge sketch_size is named as such
            check_size(self.sketch_size, "sketch_size", nbytes=lambda v: fit_bytes(1, v),
                       what=f"for its frequencies and the decoding, d = {d}")
        if given:
            sketch = f"the sketch's {m} frequencies"
        elif self.sketch_size is not None:
            sketch = f"sketch_size = {self.sketch_size} frequencies"
        else:
            sketch = f"the default sketch_size ({self._sketch_factor} k d frequencies)"
        k = check_size(self._n_atoms(), self._n_atoms_name, nbytes=lambda v: fit_bytes(v, size(v)),
                       what=f"for the atoms of the decoder on {sketch}, d = {d}")
        check_size(self.n_init, "n_init", nbytes=lambda v: v * (8 + 8 * k * (d + 2)),
                   what=f"for the results of the restarts (k = {k}, d = {d})")
        if n is not None:
            check_size(self.pilot_size, "pilot_size", minimum=2, nbytes=lambda v: min(v, n) * d * 16,
                       what="for the pilot's records")

    def _scale(self, X, rng, pilot=None):
        ks = self.kernel_scale
        if not isinstance(ks, str):
            return float(ks)
        if ks == "auto" and self._scale_is_spread():
            return _pilot_spread(X, self.pilot_size, rng)
        from .kernel_scale import kernel_scale as auto_scale  # reads a pilot of the data

        method = "separation" if ks == "separation" else ("sketch" if ks == "sketch" else "auto")
        return float(auto_scale(X, self._n_atoms(), method=method, task=self._task, pilot_size=self.pilot_size,
                                pilot=pilot, random_state=rng))

    def _law(self, sigma):
        if isinstance(self.frequency_law, FrequencyLaw):
            return self.frequency_law
        return make_law(self._default_law() if self.frequency_law == "auto" else self.frequency_law, sigma)

    def _default_law(self):
        """The law that frequency_law='auto' stands for: the decoder's (its `frequency_law`),
        else the estimator's for its atoms."""
        return self._decoder_class().frequency_law or self._atoms_law

    def _scale_from_spread(self, spread, k, d):
        """The scale from the data's spread (the private pilot's release): the spread itself
        for a decoder whose `scale_rule` is 'spread'; else the thesis's separation rule
        (4.14) for the centers, 0.8 times the expected minimum separation of k centres of
        spread s in dimension d."""
        if self._scale_is_spread():
            return spread
        from .kernel_scale import KMEANS_SEPARATION_FACTOR, expected_separation

        return KMEANS_SEPARATION_FACTOR * expected_separation(k, d, spread)

    def _make_map(self, d, sigma, rng):
        _check_sigma(sigma, self.dtype)
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
        X = check_records(X)
        n, d = X.shape
        if n < self._n_atoms():
            raise ValueError(f"n_samples={n} should be >= {self._n_atoms_name}={self._n_atoms()}")
        self._check_sizes(d, n)
        if n < 2 and isinstance(self.kernel_scale, str):
            raise ValueError(f"n_samples={n}: estimating the kernel scale needs at least 2 records; pass a number "
                             "as kernel_scale to sketch a single record")
        if self.bounds is not None:  # public bounds beyond the supported scale: refused before any pass
            _decode_unit(check_bounds(self.bounds, d), "the bounds")
        rng = as_generator(self.random_state)
        timer = _Timer()
        if self.epsilon is not None:
            return self._fit_private(X, rng, timer)
        pilot = None
        with timer("pilot" if isinstance(self.kernel_scale, str) else None):
            if isinstance(self.kernel_scale, str) and self._selects_with_pilot():
                pilot = sample_pilot(X, self.pilot_size, rng, None)  # drawn once: the scale and the choice
            sigma = self._scale(X, rng, pilot)
        fm = self._make_map(d, sigma, rng)
        with timer("sketch"):
            sketch, lo, hi = self._sketch_data(X, fm)
        if pilot is None and self._selects_with_pilot():  # a given scale: drawn after the map, so that
            with timer("pilot"):                          # fit and partial_fit make the same map
                pilot = sample_pilot(X, self.pilot_size, rng, None)
        if self.bounds is not None:  # the decoder's box, given by the user: the data are not clipped
            lo, hi = check_bounds(self.bounds, d)
            outside = _count_outside(X, lo, hi)
            if outside:
                warnings.warn(f"{outside} of {n} records lie outside bounds: the sketch holds them as they are, "
                              "but the centers are searched inside the box only", RuntimeWarning, stacklevel=2)
        self.kernel_scale_ = sigma
        with timer("decode"):
            # with the pilot's choice to follow, the decoder runs once (the pilot's candidates are
            # the other starts): n_init restarts tripled the decode for the same result (measured
            # on 4x4 image patches, k = 10 and 20: 1.13 and 1.04 x scikit-learn's CPU, was 1.7 and 1.9)
            self._decode(sketch, (lo, hi), rng, "the bounds" if self.bounds is not None else "X (its bounding box)",
                         n_init=1 if pilot is not None else None)
            if pilot is not None:
                self._choose_with_pilot(pilot, sketch, (lo, hi), rng)
        self.timings_ = timer.seconds
        self._after_fit(X)
        return self

    def _selects_with_pilot(self):
        """Whether a clean fit draws a pilot to start and choose its centres (k-means with
        decoder='auto')."""
        return False

    def _choose_with_pilot(self, pilot, sketch, bounds, rng):
        """The clean fit's choice (decoder='auto'): the pilot is split in halves A and B; the
        decoder's result, the fit of A (``_pilot_fits``) and that fit refined on the sketch
        compete on B's loss (``_pilot_loss``, lower is better), B fitting none of them; the
        winner (``selected_``) is fitted again on the whole pilot when it is one of the last
        two. See the subclasses' docstrings."""
        k = self._n_atoms()
        P = np.asarray(pilot, dtype=np.float64)
        half = P.shape[0] // 2
        if half < max(k, PILOT_HALF_MIN):
            return
        order = rng.permutation(P.shape[0])
        A, B = P[order[:half]], P[order[half:]]
        lo, hi = check_bounds(bounds, P.shape[1])
        origin, unit = _box_frame(lo, hi)
        problem = self._decoder_class().problem(sketch).in_units(unit, origin)
        family = self._pilot_family(problem, (lo - origin) / unit, (hi - origin) / unit)
        frame = (family, problem, lo, hi, origin, unit)
        candidates = {"decoder": self._pilot_current()}
        candidates["pilot"], moved = self._pilot_fits(A, frame, rng)
        if moved is not None:
            candidates["pilot+sketch"] = moved
        scores = {name: self._pilot_loss(B, c) for name, c in candidates.items()}
        best = min(scores, key=lambda name: (scores[name], name))
        if best != "decoder":
            plain, moved = self._pilot_fits(P, frame, rng, refine=best != "pilot")
            chosen = plain if best == "pilot" or moved is None else moved
        else:
            chosen = candidates[best]
        self._pilot_set(chosen)
        self.selected_ = best

    def _fit_private(self, X, rng, timer):
        """fit with (epsilon, delta)-DP: see the class docstring ("Differential privacy")."""
        from .privacy import PrivacyLeakWarning, nsr
        from .privacy.budget import Budget
        from .privacy.release import plan_release

        n, d = X.shape
        k = self._n_atoms()
        # the whole budget's plan (validates epsilon, delta and neighbouring) before anything
        plan = plan_release(self._sketch_size(d), self.epsilon, self.delta, neighbouring=self.neighbouring,
                            nsr_max=nsr.nsr_max(self._sketch_size(d), k, d))
        eps, delta = plan.epsilon, plan.delta
        if self.bounds is None:
            warnings.warn(
                "bounds were not given: the box of the centers is computed from the data, which is not "
                "differentially private. Pass bounds=(lower, upper) from public knowledge.",
                PrivacyLeakWarning, stacklevel=3)
            lo, hi = _bounds(X)
            lo, hi = check_bounds((lo, hi), d)
        else:
            lo, hi = check_bounds(self.bounds, d)
            data_lo, data_hi, outside, _ = box_stats(X, lo, hi)  # one pass
            if outside:
                warnings.warn(f"{outside} of {n} records lie outside bounds and were clipped to the box "
                              "(the privacy guarantee holds for the clipped data)", RuntimeWarning, stacklevel=3)
                X = np.clip(X, lo, hi)  # a dask array: clipped lazily, block by block
                data_lo, data_hi = np.maximum(data_lo, lo), np.minimum(data_hi, hi)
            _warn_wide_box(data_lo, data_hi, lo, hi)
        what = "X (its bounding box)" if self.bounds is None else "the bounds"
        _decode_unit((lo, hi), what)  # the data's scale beyond the supported range: refused before the charge
        route = self._private_route(d)
        if route == "grid":
            return self._fit_private_grid(X, lo, hi, what, rng, timer)
        if route == "high":
            return self._fit_private_high(X, lo, hi, what, rng, timer)
        if not isinstance(self.kernel_scale, str):
            _check_sigma(float(self.kernel_scale), self.dtype)
        budget = Budget(eps, delta, neighbouring=self.neighbouring, what=type(self).__name__ + ".fit")
        budget.charge(self.accountant)
        pilot_eps = 0.0
        timer.start("pilot" if isinstance(self.kernel_scale, str) else None)
        if self.kernel_scale == "auto" and self._task == "kmeans":
            # private pilot: the data's spread from noisy moments (a share of epsilon), then
            # the scale from it (_scale_from_spread)
            from .privacy.moments import private_mean_and_spread

            pilot = budget.part("pilot", PRIVATE_PILOT_SHARE * eps)
            pilot_eps = pilot.epsilon
            _, spread = private_mean_and_spread(X, pilot_eps, lo, hi,
                                                insecure_seed=pilot.source("laplace", what="mean and spread"))
            spread = max(spread, 1e-3 * float(np.mean(hi - lo)))
            sigma = self._scale_from_spread(spread, k, d)
        else:
            if isinstance(self.kernel_scale, str):
                warnings.warn(
                    f"kernel_scale={self.kernel_scale!r} reads a pilot of the raw records without privacy "
                    "protection (a private pilot exists only for k-means with 'auto'); pass "
                    "kernel_scale=<number> from public knowledge to keep the whole fit private.",
                    PrivacyLeakWarning, stacklevel=3)
            sigma = self._scale(X, rng)
        timer.stop()
        # the rest of the budget: the split optimized at the public size from which the
        # default sketch size is useful (Chatalic et al. 2022, eq. (26)); the count first, its 95%
        # lower confidence bound then sets the sketch size by the rule
        # 2kd <= m <= n^2 eps^2 / (10^3 kd), capped at the default
        if pilot_eps:
            plan = plan_release(self._sketch_size(d), eps - pilot_eps, delta, neighbouring=self.neighbouring,
                                nsr_max=nsr.nsr_max(self._sketch_size(d), k, d))
        count_part = budget.part("count", plan.epsilon_count) if plan.epsilon_count > 0 else None
        count = count_part.count(n) if count_part is not None else n
        n_low = max(count - math.log(20.0) / plan.epsilon_count, 1.0) if plan.epsilon_count > 0 else float(n)
        m = self.sketch_size if self.sketch_size is not None else nsr.choose_sketch_size(
            k, d, n_low, plan.epsilon_sum, delta=delta, factor=self._sketch_factor)
        _check_sigma(sigma, self.dtype)
        fm = make_feature_map(d, m, "complex", operator=self.operator, law=self._law(sigma), random_state=rng,
                              dtype=np.dtype(self.dtype))
        with timer("sketch"):
            acc = SketchAccumulator(fm, batch_size=self.batch_size)
            acc.update(X)
            private = budget.part("sketch", plan.epsilon_sum, plan.delta).release(
                acc.sketch(), count=count_part or count, mechanism=plan.mechanism, epsilon=eps, epsilon_pilot=pilot_eps)
        self.privacy_ = budget.record(private)
        self.kernel_scale_ = sigma
        with timer("decode"):
            self._decode(private, (lo, hi), rng, what)
        self.timings_ = timer.seconds
        self._after_fit(X)
        return self

    def _private_route(self, d):
        """'grid' or 'fourier': the sketch a private fit releases (see the estimators)."""
        return "fourier"

    def _fit_private_grid(self, X, lo, hi, what, rng, timer):
        """The private fit through a grid sketch (CompressiveKMeans, low dimension): a noisy
        count (GRID_COUNT_SHARE of epsilon) sets the grid (grid_bins), whose counts are
        released with Laplace noise for the rest, then decoded (pysketch.decoders.grid).
        Pure epsilon-DP: a delta given is not spent."""
        from .features import GridMap
        from .privacy.budget import Budget
        from .privacy.release import plan_release

        d = X.shape[1]
        plan = plan_release(1, self.epsilon, 0.0, neighbouring=self.neighbouring, mechanism="laplace",
                            split=1.0 - GRID_COUNT_SHARE if self.neighbouring == "add_remove" else None)
        budget = Budget(plan.epsilon, neighbouring=self.neighbouring, what=type(self).__name__ + ".fit", pure=True)
        budget.charge(self.accountant)
        count_part = budget.part("count", plan.epsilon_count) if plan.epsilon_count > 0 else None
        count = count_part.count(X.shape[0]) if count_part is not None else X.shape[0]
        bins = grid_bins(count, plan.epsilon_sum, d)
        fm = GridMap(lo, hi, bins)
        with timer("sketch"):
            acc = SketchAccumulator(fm, batch_size=self.batch_size)
            acc.update(X)
            private = budget.part("grid", plan.epsilon_sum).release(acc.sketch(), count=count_part or count,
                                                                    mechanism="laplace", epsilon=plan.epsilon)
        self.privacy_ = budget.record(private)
        self.kernel_scale_ = None
        with timer("decode"):
            self._decode(private, (lo, hi), rng, what, decoder="grid")
        self.timings_ = timer.seconds
        self._after_fit(X)
        return self

    def _fit_private_high(self, X, lo, hi, what, rng, timer):
        """The private fit above GRID_MAX_D (decoder='auto'): a noisy count (HIGH_COUNT_SHARE
        of epsilon) first; then, by the public rule `projection_noise` <= PROJECTION_RHO,
        (and box_anisotropy <= PROJECTION_ANISOTROPY) either the projected route (private
        second moments, the grid of the records' projection on the top GRID_MAX_D principal
        directions, its k-means lifted back, one private Lloyd step) or the mixture route (a multi-scale Fourier sketch decoded by
        the noise-aware over-complete decoder). See the class docstring."""
        from .privacy.budget import Budget

        n, d = X.shape
        budget = Budget(self.epsilon, self.delta, neighbouring=self.neighbouring, what=type(self).__name__ + ".fit")
        budget.charge(self.accountant)
        eps, delta = budget.epsilon, budget.delta
        add_remove = self.neighbouring == "add_remove"
        eps_count = HIGH_COUNT_SHARE * eps if add_remove else 0.0
        count_part = budget.part("count", eps_count) if add_remove else None
        count = count_part.count(n) if add_remove else n
        n_low = max(count - math.log(20.0) / eps_count, 1.0) if add_remove else float(n)
        rest = eps - eps_count
        if projection_noise(lo, hi, n_low, rest) <= PROJECTION_RHO and box_anisotropy(lo, hi) <= PROJECTION_ANISOTROPY:
            self._fit_projected(X, lo, hi, what, rng, timer, budget, count_part or count, n_low, rest, delta)
        else:
            self._fit_mixture(X, lo, hi, what, rng, timer, budget, count_part or count, n_low, rest, delta)
        self.privacy_ = budget.record(self.sketch_)
        self.timings_ = timer.seconds
        self._after_fit(X)
        return self

    def _fit_projected(self, X, lo, hi, what, rng, timer, budget, count, n_low, rest, delta):
        """count: the count's Part (add/remove) or the public n (replace)."""
        from .features import GridMap
        from .privacy.moments import private_cluster_means, private_second_moments

        d = X.shape[1]
        n_count = count.value if not isinstance(count, int) else count
        p = min(GRID_MAX_D, d)
        e_pca, e_grid, e_step = (share * rest for share in projected_shares(lo, hi, n_low, rest, self.n_clusters,
                                                                            delta))
        d_moments = 0.5 * delta  # the Gaussian releases, when delta > 0; the grid is Laplace
        moments_law = "gaussian" if d_moments > 0 else "laplace"
        with timer("pilot"):
            source = budget.part("moments", e_pca, d_moments).source(moments_law, what="second moments")
            S, _ = private_second_moments(X, lo, hi, e_pca, d_moments, neighbouring=self.neighbouring,
                                          insecure_seed=source)
            _, vectors = np.linalg.eigh(S)
            U = np.ascontiguousarray(vectors[:, ::-1][:, :p])
            c0, h = 0.5 * lo + 0.5 * hi, 0.5 * hi - 0.5 * lo
            g = np.abs(U).T @ h  # the projected box: |U^T (x - c0)| <= |U|^T h, public
        fm = GridMap(-g, g, grid_bins(n_count, e_grid, p), projection=U, centre=c0)
        with timer("sketch"):
            acc = SketchAccumulator(fm, batch_size=self.batch_size)
            acc.update(X)
            private = budget.part("grid", e_grid).release(acc.sketch(), count=count, mechanism="laplace",
                                                          epsilon=float(self.epsilon), delta=float(self.delta),
                                                          epsilon_pilot=e_pca + e_step)
        self.kernel_scale_ = None
        with timer("decode"):
            self._decode(private, (lo, hi), rng, what, decoder="grid")
        with timer("pilot"):  # the refinement: one more private pass
            source = budget.part("refinement", e_step, d_moments).source(moments_law, what="cluster means")
            C, counts = private_cluster_means(X, self.cluster_centers_, lo, hi, e_step, d_moments,
                                              neighbouring=self.neighbouring, insecure_seed=source)
        self.cluster_centers_ = C
        mass = np.maximum(counts, 0.0)
        self.weights_ = mass / mass.sum() if mass.sum() > 0 else np.full(C.shape[0], 1.0 / C.shape[0])

    def _fit_mixture(self, X, lo, hi, what, rng, timer, budget, count, n_low, rest, delta):
        """count: the count's Part (add/remove) or the public n (replace)."""
        from .frequencies import LogUniformLaw

        n, d = X.shape
        k = self._n_atoms()
        mechanism = "laplace" if delta == 0 else "gaussian"
        m = private_sketch_size(k, d, n_low, rest, delta, factor=self._sketch_factor)
        sigma = float(np.max(0.5 * hi - 0.5 * lo))
        _check_sigma(sigma, self.dtype)
        fm = make_feature_map(d, m, "complex", operator=self.operator, law=LogUniformLaw(sigma, *PRIVATE_BAND),
                              random_state=rng, dtype=np.dtype(self.dtype))
        with timer("sketch"):
            acc = SketchAccumulator(fm, batch_size=self.batch_size)
            acc.update(X)
            private = budget.part("sketch", rest, delta).release(acc.sketch(), count=count, mechanism=mechanism)
        self.kernel_scale_ = sigma
        with timer("decode"):
            self._decode(private, (lo, hi), rng, what, decoder="coreset")

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
            (CompressiveKMeans with decoder='auto' reads a Fourier sketch here with the
            over-complete decoder, 'coreset': see its class docstring.)
        """
        self._validate_params()
        if not isinstance(sketch, Sketch):
            raise TypeError(f"sketch must be a pysketch.Sketch, got {type(sketch).__name__}")
        if sketch.count < 1:
            raise ValueError("the sketch is empty (count 0)")
        self._check_sizes(sketch.feature_map.d, m=sketch.feature_map.m)
        rng = as_generator(self.random_state)
        operator = getattr(sketch.feature_map, "operator", None)  # None: a grid sketch
        self.kernel_scale_ = getattr(getattr(operator, "law", None), "sigma", None)
        timer = _Timer()
        with timer("decode"):
            self._decode(sketch, check_bounds(bounds, sketch.feature_map.d), rng, "bounds", alone=True)
        self.timings_ = timer.seconds
        return self

    def partial_fit(self, X, y=None):
        """Add X to the sketch and learn again from the whole sketch so far (the kernel
        scale and the map are fixed at the first call, from its data)."""
        self._validate_params()
        if self.epsilon is not None:
            raise ValueError("partial_fit does not release private sketches (each call would spend the budget "
                             "again): accumulate with pysketch.SketchAccumulator, release once with "
                             "pysketch.privacy.make_private, then call fit_sketch")
        X = check_records(X)
        if not hasattr(self, "_accumulator"):
            self._check_sizes(X.shape[1], X.shape[0])
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
            self._decode(sketch, check_bounds((self._lo, self._hi), X.shape[1]), self._rng, "X (its bounding box)",
                         alone=True)
        return self

    def _scale_is_spread(self):
        """True when kernel_scale='auto' means the data's spread (the decoder's `scale_rule`:
        multi-scale laws)."""
        return self._decoder_class().scale_rule == "spread"

    def _decode(self, sketch, bounds, rng, what="bounds", decoder=None, alone=False, n_init=None):
        """Decode in the frame of the box (see "Data scale" in the class docstring; `what`
        names the box in the refusal beyond the supported scale) with `decoder` (default:
        the estimator's; `alone`: the sketch is all there is, fit_sketch and partial_fit)."""
        fm = sketch.feature_map
        lo, hi = check_bounds(bounds, fm.d)
        unit = _decode_unit((lo, hi), what)
        origin, half = _box_frame(lo, hi)
        decoder = DECODERS.get(decoder or self._decoder_name(sketch, alone))(
            n_init=self.n_init if n_init is None else n_init, random_state=rng)
        try:
            problem = decoder.problem(sketch)
        except ValueError as exc:
            raise ValueError(f"decoder {decoder.name!r} cannot read a sketch of {sketch.feature_map!r}: {exc}") from None
        problem = problem.in_units(half, origin)
        sol = decoder.decode(MixtureTask(problem, self._n_atoms(), (lo - origin) / half, (hi - origin) / half,
                                         atoms=self._atoms))
        sol = problem.to_data_units(sol)
        self.data_unit_ = unit
        self.decoder_ = decoder.name
        self.sketch_ = sketch
        self.sketch_size_ = fm.m
        self.bounds_ = (lo, hi)
        self.n_features_in_ = fm.d
        self.residual_ = sol.residual
        self.n_iter_ = sol.n_iter
        self._set_solution(sol)

    def _decoder_name(self, sketch=None, alone=False):
        """The decoder of a sketch: the one named, CL-OMPR for decoder='auto'."""
        return "clompr" if self.decoder == "auto" else self.decoder

    def _decoder_class(self):
        """The class of the decoder that reads a fit's Fourier sketch (decoder='auto': the
        one `fit` decodes with), whose declarations set that sketch (`frequency_law`,
        `scale_rule`: pysketch.decoders.base)."""
        return DECODERS.get(self._decoder_name())

    def _check_fitted(self):
        if not hasattr(self, "weights_"):
            raise not_fitted_error(self)

    def _check_X(self, X):
        self._check_fitted()
        X = check_array(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input")
        return X


class _Timer:
    """Wall-clock seconds per stage of a fit: ``with timer("sketch"): ...``, or
    start/stop around code with early exits. Stages not run stay at 0."""

    def __init__(self):
        self.seconds = {"pilot": 0.0, "sketch": 0.0, "decode": 0.0}
        self._stage = None

    def start(self, stage):
        self._stage, self._t0 = stage, time.perf_counter()

    def stop(self):
        if self._stage is not None:  # None: a stage that is skipped (e.g. no pilot for a given scale)
            self.seconds[self._stage] += time.perf_counter() - self._t0
        self._stage = None

    def __call__(self, stage):
        self.start(stage)
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False


def _decode_unit(bounds, what):
    """The power of two the decoder works in for the box `bounds` (pysketch.kernel_scale.
    data_unit of its largest |coordinate|); ValueError naming `what`'s magnitude beyond the
    supported range [2^-504, 2^504]."""
    from ._checks import data_unit

    lo, hi = bounds
    return data_unit(max(float(np.max(np.abs(lo))), float(np.max(np.abs(hi)))), what)


def _box_frame(lo, hi):
    """(origin, unit) of the frame the decoders work in for the box [lo, hi]: its centre and
    its largest half-width, so that the box becomes [-1, 1] along its widest coordinate at
    any scale and offset of the data (DecodingProblem.in_units). Computed by halves: no
    overflow for boxes within the supported magnitude."""
    origin = 0.5 * lo + 0.5 * hi
    half = float(np.max(0.5 * hi - 0.5 * lo))
    return origin, half


#: decoder='auto' reads a Fourier sketch alone (fit_sketch, partial_fit) with the over-complete
#: decoder up to this dimension, with CL-OMPR above (see CompressiveKMeans._decoder_name).
SKETCH_ALONE_MIXTURE_MAX_D = 16
#: The clean fit's choice with the pilot (decoder='auto') needs halves of at least this many records.
PILOT_HALF_MIN = 50

#: Private k-means releases a grid sketch (the joint histogram, pysketch.features.GridMap)
#: instead of Fourier features up to this dimension (decoder='auto').
GRID_MAX_D = 3
#: Share of epsilon the grid route spends on the noisy count that sets the grid.
GRID_COUNT_SHARE = 0.05
#: The grid route's bins: GRID_BIN_FACTOR times Su et al.'s (n epsilon / GRID_THETA)^(2 / (2 + d)).
GRID_BIN_FACTOR = 1.5
GRID_THETA = 10.0
#: The most cells the grid route releases (its noise is drawn in Python, about 4 10^4 cells a
#: second; the count's bins are lowered to stay within it).
GRID_ROUTE_MAX_CELLS = 1 << 17


def grid_bins(count, epsilon_sum, d):
    """Bins per coordinate of the private grid of `count` (the released count) records in
    dimension d with epsilon_sum for the counts: GRID_BIN_FACTOR times the uniform-grid rule
    of Su, Cao, Li, Bertino & Jin (CODASPY 2016, after Qardaji, Yang & Li, ICDE 2013),
    m = (N epsilon / theta)^(2 / (2 + d)) bins per coordinate with theta = 10, rounded to an
    even number >= 2 (the decoder also reads the grid coarsened by two) with at most
    GRID_ROUTE_MAX_CELLS cells. The factor 1.5 (a grid finer than the rule, whose noise the
    decoder's denoisers remove) measured better on three real sets at epsilon = 0.1 and 1
    (maps of cities at k = 10 and 30, the 3-d colours of a photograph)."""
    base = (max(float(count), 1.0) * epsilon_sum / GRID_THETA) ** (2.0 / (2.0 + d))
    bins = max(2, 2 * int(round(GRID_BIN_FACTOR * base / 2.0)))
    while bins > 2 and bins ** d > GRID_ROUTE_MAX_CELLS:
        bins -= 2
    return bins


#: Private k-means above GRID_MAX_D (decoder='auto'): the share of epsilon on the count.
HIGH_COUNT_SHARE = 0.05
#: The projected route's shares of the rest: the second moments, the grid, the Lloyd step
#: (where the step's noise is low: see projected_shares).
PROJECTED_SHARES = (0.2, 0.5, 0.3)
#: The Lloyd step's largest share, and the range of its relative noise (projected_shares)
#: over which its share grows from PROJECTED_SHARES[2] to it.
PROJECTED_STEP_MAX = 0.7
PROJECTED_STEP_NOISE = (0.015, 0.03)
#: The projected route is taken when projection_noise(...) is at most PROJECTION_RHO and
#: box_anisotropy(...) at most PROJECTION_ANISOTROPY.
PROJECTION_RHO = 1.0  # on even boxes the projected route beat the mixture route at every rho measured
                      # (up to 0.37: digits at epsilon 0.1, 5.9 against 6.8; 8x8 patches at 0.01: 3.1
                      # against 15): the rule leaves the mixture route to anisotropic boxes, and to
                      # even ones only where n epsilon is below d (nothing is learnt there)
PROJECTION_ANISOTROPY = 2.0


def box_anisotropy(lower, upper):
    """sum_l h_l / (d median(h)) for the half widths h of the public box: 1 for a cube, large
    when a few coordinates' ranges dwarf the others'. The second moments about the box's
    centre are then dominated by the data's offset in those coordinates (measured: blobs of
    spread 0.6 in a box 50 times wider in one coordinate, RSE 2.5-9.9 through the projected
    route), so the projected route needs an even box."""
    h = 0.5 * np.asarray(upper, dtype=np.float64) - 0.5 * np.asarray(lower, dtype=np.float64)
    return float(h.sum()) / (h.size * float(np.median(h)))


def projected_shares(lower, upper, n, epsilon, k, delta=0.0):
    """The projected route's shares of epsilon (second moments, grid, Lloyd step), from
    the Lloyd step's relative noise r: the noise's standard deviation per coordinate of a
    centre of n / k records, were the step given all of epsilon (Laplace at the L1
    sensitivity 1 + sum_l h_l for delta = 0; the Gaussian's classical sigma at the L2 one
    sqrt(1 + sum_l h_l^2) and delta / 2 otherwise; pysketch.privacy.moments.
    cluster_sums_sensitivity), over the box's RMS half width. The step's share is
    PROJECTED_SHARES[2] for r <= PROJECTED_STEP_NOISE[0], PROJECTED_STEP_MAX from
    PROJECTED_STEP_NOISE[1], log-linear between; the rest is shared as PROJECTED_SHARES.
    A noisy step needs more of the budget (its SSE excess falls as its share squared),
    more than the principal directions and the grid, which only start it. Measured on
    image patches (d = 48, 192) and Gaussian blobs (d = 16-64): at epsilon = 0.1 the
    larger share took the median RSE from 2.37 to 1.59 and 3.6 to 2.0 on patches, 3.9 to
    3.5 and 5.9 to 4.4 on blobs; at r below 0.015 the shares of 30% did as well."""
    h = 0.5 * np.asarray(upper, dtype=np.float64) - 0.5 * np.asarray(lower, dtype=np.float64)
    if delta > 0:
        std = math.sqrt(2.0 * math.log(2.5 / delta)) * math.sqrt(1.0 + float((h * h).sum())) / epsilon
    else:
        std = math.sqrt(2.0) * (1.0 + float(h.sum())) / epsilon
    r = std * k / max(float(n), 1.0) / math.sqrt(float(np.mean(h * h)))
    lo_r, hi_r = PROJECTED_STEP_NOISE
    t = min(max(math.log(r / lo_r) / math.log(hi_r / lo_r), 0.0), 1.0) if r > 0 else 0.0
    step = PROJECTED_SHARES[2] + t * (PROJECTED_STEP_MAX - PROJECTED_SHARES[2])
    head = PROJECTED_SHARES[0] + PROJECTED_SHARES[1]
    return (PROJECTED_SHARES[0] / head * (1 - step), PROJECTED_SHARES[1] / head * (1 - step), step)


def projection_noise(lower, upper, n, epsilon):
    """rho = (sum_l h_l)^2 / (epsilon n d median(h)^2) for the half widths h of the public
    box: the Laplace noise of the second moments (L1 sensitivity about (sum_l h_l)^2 / 2)
    per record, relative to the square of the box's typical half width. It is small for
    boxes of even widths and many records (the projected route's moments are then
    accurate) and large for boxes whose few wide coordinates dwarf the rest (the
    documented physical boxes of standardised tabular data), where only the Fourier
    sketch, whose sensitivity does not depend on the box, keeps its accuracy."""
    h = 0.5 * np.asarray(upper, dtype=np.float64) - 0.5 * np.asarray(lower, dtype=np.float64)
    med = float(np.median(h))
    return float(h.sum()) ** 2 / (epsilon * max(float(n), 1.0) * h.size * med * med)


#: The band of the private multi-scale sketch (the mixture route): radii log-uniform in
#: [low, high] / h, h the box's largest half-width, from wavelengths of about 20 box widths
#: (the bulk's place in the box) to details 10^4 times finer than the box (public boxes
#: of standardised real data are 10-100 times the data's spread, and more in a coordinate).
PRIVATE_BAND = (0.3, 3000.0)
#: The signal-to-noise ratio the private sketch size keeps for an atom of weight 1 / k.
PRIVATE_SNR = 20.0


def private_sketch_size(k, d, n_low, epsilon_sum, delta, factor=10):
    """The size m of a private multi-scale sketch for k clusters. Laplace noise (delta = 0)
    on the sum of m complex features has scale sqrt(2) m / epsilon per real coordinate, so
    the correlation of an atom of weight w with the release has a signal-to-noise ratio of
    about w n epsilon / (2 sqrt(m)) (the atom's sketch has norm sqrt(m), the noise's
    projection on it the standard deviation sqrt(2) b): m = (n_low epsilon_sum /
    (PRIVATE_SNR k))^2 keeps it at PRIVATE_SNR / 2 for w = 1 / k, within [4 (d + 1),
    factor k d]. With delta > 0 (Gaussian noise of L2 sensitivity sqrt(m)) the ratio does not
    depend on m: factor k d."""
    cap = factor * k * d
    if delta > 0:
        return int(cap)
    m = (float(n_low) * epsilon_sum / (PRIVATE_SNR * k)) ** 2
    return int(min(cap, max(4 * (d + 1), math.floor(m))))


#: float32 sketches hold frequencies up to about 3.4e38 (2^128) and records of that size:
#: kernel scales (lengths at the data's scale) beyond 2^+-FLOAT32_SCALE_EXPONENT need float64.
FLOAT32_SCALE_EXPONENT = 120


def _mixture_decoders(atoms):
    """The names of the registered decoders of mixtures of `atoms` (by their declarations)."""
    return tuple(name for name in DECODERS.names()
                 if DECODERS.get(name).task == "mixture" and atoms in DECODERS.get(name).atoms)


def _check_sigma(sigma, dtype):
    """ValueError about the data's scale when the kernel scale sigma (a length at the
    data's scale) lies beyond the supported range (pysketch.kernel_scale.
    check_data_magnitude) or, for float32 sketches, beyond 2^+-FLOAT32_SCALE_EXPONENT."""
    from ._checks import check_data_magnitude

    check_data_magnitude(sigma, "the kernel scale (a length at the data's scale)")
    limit = math.ldexp(1.0, FLOAT32_SCALE_EXPONENT)
    if np.dtype(dtype) == np.float32 and not 1.0 / limit <= sigma <= limit:
        raise ValueError(f"the data's scale (kernel scale {sigma:.3g}) is beyond the range of float32 sketches "
                         f"[{1.0 / limit:.3g}, {limit:.3g}]: pass dtype='float64' (or rescale the data by a constant)")


def _pilot_spread(X, pilot_size, rng):
    """The root of the average per-coordinate variance of a pilot of at most
    `pilot_size` records drawn without replacement (the scale of multi-scale laws)."""
    P = sample_pilot(X, pilot_size, rng, None)
    spread = float(np.sqrt(np.mean(np.var(P, axis=0))))
    if not spread > 0:
        raise ValueError("kernel_scale='auto': the pilot's records are all equal (spread 0); pass a number")
    return spread


def _count_outside(X, lo, hi):
    """Records with a coordinate outside [lo, hi]."""
    if is_dask_collection(X):
        return box_stats(X, lo, hi)[2]
    return int(np.count_nonzero(((X < lo) | (X > hi)).any(axis=1)))



#: A private fit warns when the data fill less than this fraction of the box's width on
#: average over coordinates (range of the records / width of the box). The real data sets
#: of pysketch.datasets, with their documented boxes, fill 0.44-1.0.
WIDE_BOX_FILL = 0.25


def _warn_wide_box(data_lo, data_hi, lo, hi):
    """Warn (to the caller, who holds the data: nothing is released) when the public box
    [lo, hi] is much wider than the records' box [data_lo, data_hi]: the private pilot's
    noise and the decoder's search grow with the box, so a box far too wide costs accuracy."""
    fill = float(np.mean((data_hi - data_lo) / (hi - lo)))
    if fill < WIDE_BOX_FILL:
        warnings.warn(f"bounds are much wider than the data: the records span {fill:.0%} of the box's width on "
                      "average over coordinates; noise and decoding scale with the box, so a tighter public box "
                      "gives better centers", BoundsWarning, stacklevel=4)


class BoundsWarning(UserWarning):
    """The public box given as ``bounds`` is much wider than the data.

    Emitted by a private `fit` when the records span under WIDE_BOX_FILL (25%) of the box's
    width on average over the coordinates: the noise and the decoder's search grow with the
    box, so a tighter public box gives better centres. The warning goes to the caller, who
    holds the data; nothing about it is released.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> import pysketch
    >>> X = np.random.default_rng(0).uniform(0, 1, size=(2000, 2))
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = pysketch.CompressiveKMeans(2, epsilon=1.0, bounds=([-10, -10], [10, 10])).fit(X)
    >>> any(w.category is pysketch.BoundsWarning for w in caught)
    True
    """


def _bounds(X, lo=None, hi=None):
    """The per-column min and max of X (float64 (n, d), finite), merged into lo/hi when
    given (in place); one multi-threaded pass in C++."""
    if lo is None:
        lo, hi = np.full(X.shape[1], np.inf), np.full(X.shape[1], -np.inf)
    if is_dask_collection(X):
        blo, bhi = column_bounds(X)
        np.minimum(lo, blo, out=lo)
        np.maximum(hi, bhi, out=hi)
    else:
        update_column_bounds(X, lo, hi)
    return lo, hi


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
        must be charged to the budget, or the scale given). With decoder='coreset', 'auto'
        is the data's spread (root of the average per-coordinate variance) of the pilot,
        and a number is taken as that spread.
    operator : {'auto', 'dense', 'r3', 'gr2', 'fastfood'}, default 'auto'
        'auto': dense below 64 features, R3 blocks from 64 on.
    frequency_law : {'auto', 'gaussian', 'adapted_radius', 'folded_gaussian', 'log_uniform'} or FrequencyLaw
        'auto' (default): 'gaussian' for CL-OMPR and CL-AMP (measured better than adapted
        radius for k-means here; benchmarks/quality/kmeans_quality.py), 'log_uniform' (multi-scale,
        pysketch.LogUniformLaw over the spread) for the coreset decoder.
    decoder : {'auto', 'clompr', 'cl_amp', 'coreset', 'grid'} or another registered decoder, default 'auto'
        'auto': a private fit with the Fourier settings (kernel_scale, sketch_size,
        operator, frequency_law) at their defaults takes one of three routes chosen from
        public quantities (see "Differential privacy"); a grid sketch given to `fit_sketch`
        is read with 'grid'; every other fit uses CL-OMPR.
        'grid' (pysketch.decoders.grid) reads grid sketches (kind 'grid') only.
        CL-OMPR (greedy with replacement; Theta(k^3)), CL-AMP ('cl_amp', also accepted as
        'clamp'; SHyGAMP message passing, pysketch.decoders.cl_amp; Theta(k^2) per
        iteration, works from sketches of 2kd), or 'coreset' (pysketch.decoders.coreset: an
        over-complete mixture of up to ATOMS_PER_CLUSTER * k isotropic Gaussians fitted to the sketch, then
        k-means of that mixture; on a private sketch it stops adding atoms at the release's noise level). CL-OMPR matches blobs best; on real data
        (clusters of unequal size and spread, heavy tails, continua such as image patches)
        'coreset' is far more robust (median RSE 1.06-1.41 on six real data sets where
        CL-OMPR gives 1.31-24.9), except on digits (1.22 against 1.04): see
        benchmarks/quality/real_quality.py.
    n_init : int, default 3
        Restarts (CL-OMPR) or random initializations (CL-AMP); the one whose mixture is closest to the sketch is kept.
        A clean `fit` with decoder='auto' runs CL-OMPR once: the pilot's candidates are its other starts.
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
        The box in which the decoder searches the centers. Private fit: the public box
        of the data (required; without it the box is read from the data with a
        PrivacyLeakWarning); records outside are clipped, with a warning, and a box much
        wider than the data (records spanning under WIDE_BOX_FILL = 25% of its width on
        average) gives a BoundsWarning. Without privacy: optional (default the data's own
        box); records outside are kept as they are in the sketch, with a warning.
    neighbouring : {'add_remove', 'replace'}, default 'add_remove'
    accountant : pysketch.privacy.BudgetAccountant or diffprivlib BudgetAccountant, optional
        Charged (epsilon, delta) before anything is released.

    Notes
    -----
    .. rubric:: Differential privacy

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
    of spread s in dimension d (thesis eq. (4.14); pysketch.kernel_scale.expected_separation);
    a number given as kernel_scale costs nothing; 'separation' or 'sketch' read a raw
    pilot and warn with a PrivacyLeakWarning. `labels_` and `inertia_` are computed from
    the raw data for the caller and are not private.

    Routes of decoder='auto' (Fourier settings at their defaults), chosen from d, the public
    box, epsilon and the released count; measured on the real data sets of
    benchmarks/quality/real_quality.py against diffprivlib, EUGkM and Google's DP LSH:

    - grid (d <= GRID_MAX_D = 3): a grid sketch has sensitivity 1 whatever its number of
      cells, where a Fourier sketch's grows with its size, so in low dimension it carries
      far more per unit of privacy. The count is released with GRID_COUNT_SHARE (5%) of
      epsilon; it sets the grid, ``grid_bins`` bins per coordinate of the public box; the
      cells' counts are released with Laplace noise (L1 sensitivity 1, doubled under
      'replace') for the rest, and decoded by pysketch.decoders.grid (denoised cells,
      weighted k-means, the candidate of lowest estimated cost). Pure epsilon-DP: a delta
      given is not spent (Laplace beats the Gaussian mechanism on a histogram, whose L1
      and L2 sensitivities are equal).
    - projected (d > 3, a box of even widths and enough records: ``projection_noise`` <=
      PROJECTION_RHO and ``box_anisotropy`` <= PROJECTION_ANISOTROPY): after the count
      (HIGH_COUNT_SHARE, 5%), the rest is shared (``projected_shares``: 20 / 50 / 30% where
      the Lloyd step's noise is low, up to 9 / 21 / 70% where it is high) between
      the second moments of the records about the box's centre
      (pysketch.privacy.moments.private_second_moments), whose top 3 eigenvectors U
      project the records; the grid sketch of the projections U^T (x - c0) in their public
      box abs(U)^T h, decoded as above and lifted back (a projected GridMap); and one private
      Lloyd step from those centres (private_cluster_means). Real data of many
      coordinates (image patches) lie close to a few principal directions, where k-means
      of the projection is nearly k-means of the data.
    - mixture (d > 3 otherwise: boxes whose few coordinates dwarf the rest, or few
      records): after the count, a Fourier sketch whose radii are log-uniform over
      PRIVATE_BAND in units of the inverse of the box's largest half width (no pilot: the
      band spans the scales such a box allows), of size ``private_sketch_size``, decoded
      by the noise-aware over-complete decoder ('coreset'). Its sensitivity does not depend
      on the box, which defeats moment-based methods there.

    Without privacy, decoder='auto' reads the clean sketch with CL-OMPR and then uses the
    pilot (at most ``pilot_size`` records drawn uniformly in the same pass, as the issue's
    design allows a clean fit): split in halves A and B, it fits the k-means of A and the
    same centres moved by the sketch (CL-OMPR's joint refinement started from them), and
    keeps whichever of the three candidates has the lowest SSE on B (``selected_``); a
    candidate from the pilot is then fitted again on the whole pilot. Measured on the real
    sets, the pilot's k-means is chosen most often (median RSE 0.98-1.02 where CL-OMPR alone
    reached 1.1-1.7). `fit_sketch` and `partial_fit` read no record: decoder='auto' reads
    their Fourier sketch with the over-complete decoder ('coreset') up to d =
    SKETCH_ALONE_MIXTURE_MAX_D (16) and with CL-OMPR above (on the real sets of d <= 10,
    with the data's box, 1.04-1.19 where CL-OMPR reached 1.26-3.8; on 4x4 image patches
    CL-OMPR 1.07 where the over-complete decoder stalled at 6.3).

    Every release draws its noise from OS entropy; the sketch's record (``sketch_.privacy``)
    holds the total epsilon and delta, and as ``epsilon_pilot`` what was spent besides its
    sum and count (the moments and the Lloyd step of the projected route).

    .. rubric:: Data scale

    `fit`, `fit_sketch` and `partial_fit` work at any data scale whose box (the public
    bounds, or the data's own) has its largest abs(coordinate) in [2^-504, 2^504] (about
    2e-152 to 5e151) and give s times the model of the data at scale 1 (to the decoder's
    randomness). Nothing is copied or read again: the sketch is scale-equivariant (the
    kernel scale follows the data, and the frequencies its inverse), and the decoder
    works in the frame of the box (DecodingProblem.in_units): centres and means relative
    to the box's centre in units of its largest half-width, variances in units of its
    square, so that its random starts, bounds and tolerances see the same numbers at
    every scale and offset of the data; the results are mapped back after. The frame
    comes from the public bounds when they are given (a private fit stays private) and
    is post-processing otherwise. Beyond that range the fit raises ValueError naming the data's magnitude
    (their squares would over- or underflow float64): public bounds before anything is
    read or charged, a kernel scale (given, or estimated by the pilot) before the sketch,
    the data's own box when it is decoded. float32 sketches (the default dtype) hold
    records and frequencies up to about 3.4e38: a kernel scale beyond 2^+-120 is refused
    with a ValueError asking for dtype='float64', and records beyond float32's range are
    refused by the map. ``inertia_`` and score are summed in the unit; a total beyond float64
    raises ValueError. CompressiveGaussianMixture does the same (``covariances_`` scale by s^2).

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
    sketch_size_ : int
        Number of frequencies m of the sketch decoded (with privacy it can be below the
        default, see above).
    kernel_scale_ : float
    timings_ : dict
        Wall-clock seconds of the last fit per stage: "pilot" (kernel scale, private or
        not), "sketch" (the pass over the data, with the release when private) and
        "decode"; 0 for a stage that did not run (fit_sketch only decodes).
    residual_ : float
        ||z - sum alpha_k a(c_k)||, the distance of the decoded mixture to the sketch
        (decoder='coreset': of the over-complete mixture).
    mixture_ : MixtureSolution
        decoder='coreset' only: the over-complete mixture, rows (mean, variance).
    n_features_in_, n_iter_
    bounds_ : (ndarray (n_features,), ndarray (n_features,))
        The box the centres were searched in: `bounds` when given, else the records'
        bounding box (a clean `fit`; a private fit without bounds warns that this box is
        read from the data).
    privacy_ : PrivacyRecord
        A private fit only: the budget spent (epsilon, delta, neighbouring) and its parts.
    decoder_ : str
        The decoder that read the sketch (decoder='auto' resolved).
    selected_ : str
        Where the centres come from: 'decoder' (the sketch alone), or, for a clean `fit`
        with decoder='auto', 'pilot' (the k-means of the pilot) or 'pilot+sketch' (those
        moved by the sketch); see "Routes of decoder='auto'".
    data_unit_ : float
        The power of two in which ``inertia_`` and score are summed (see "Data scale"; 1 for a
        box whose largest abs(coordinate) is within 2^+-6).

    Raises
    ------
    ValueError
        From `fit`, `fit_sketch` and `partial_fit`: a parameter that is not valid (checked
        before anything is read or charged), fewer records than n_clusters, records that are not
        2-D, hold NaN or infinity, or lie outside the supported range of magnitudes, a
        sketch that is empty or that the decoder cannot read, `partial_fit` with epsilon,
        or (from `predict` and the like) records of another number of features. A
        BudgetError (a ValueError) when the accountant cannot pay (epsilon, delta).
    TypeError
        If a size parameter is not an integer, or `fit_sketch` is given something other
        than a Sketch.
    sklearn.exceptions.NotFittedError
        From the methods that need a fitted model, before `fit` (a ValueError without
        scikit-learn).

    Warns
    -----
    BoundsWarning
        From a private `fit`, when the public box is much wider than the data.
    pysketch.privacy.PrivacyLeakWarning
        From a private `fit` that reads the data where the guarantee wants public
        knowledge (no bounds, or a kernel scale estimated from a raw pilot).
    RuntimeWarning
        When records lie outside the bounds (kept in a clean sketch, clipped in a private
        one).

    Examples
    --------
    >>> import numpy as np
    >>> import pysketch
    >>> rng = np.random.default_rng(0)
    >>> X = np.concatenate([rng.normal(0, 1, (500, 2)), rng.normal(8, 1, (500, 2))])
    >>> km = pysketch.CompressiveKMeans(2, random_state=0).fit(X)
    >>> km.sketch_size_, np.allclose(np.sort(km.cluster_centers_, axis=0), [[0, 0], [8, 8]], atol=0.5)
    (40, True)
    >>> private = pysketch.CompressiveKMeans(2, epsilon=1.0, bounds=([-4, -4], [12, 12])).fit(X)
    >>> private.cluster_centers_.shape  # the noise is drawn from the OS: values vary
    (2, 2)
    """

    _task = "kmeans"
    _atoms = "dirac"
    _atoms_law = "gaussian"  # frequency_law='auto' with a decoder that declares none
    _n_atoms_name = "n_clusters"
    _parameter_constraints = {
        "n_clusters": [Interval(numbers.Integral, 1, None)],
        "decoder": [Options(lambda: ("auto", *DECODERS.names()),
                            text=lambda names: f"'auto' or one of {names[1:]}")],
        **_CompressiveMixture._shared_constraints,
    }

    def __init__(self, n_clusters=8, *, sketch_size=None, kernel_scale="auto", operator="auto",
                 frequency_law="auto", n_init=3, dtype="float32", pilot_size=5000, batch_size=None,
                 random_state=None, epsilon=None, delta=0.0, bounds=None,
                 neighbouring="add_remove", accountant=None, decoder="auto"):
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

    def _decoder_name(self, sketch=None, alone=False):
        """The decoder of a sketch: decoder='auto' reads grid sketches with 'grid', and
        Fourier sketches with CL-OMPR in `fit` (the pilot then chooses the centres) and
        with the over-complete decoder ('coreset') when the sketch is read alone
        (`fit_sketch`, `partial_fit`) in dimension d <= SKETCH_ALONE_MIXTURE_MAX_D, with
        CL-OMPR above: on the real sets of benchmarks/quality/real_quality.py, with the
        data's box, the over-complete decoder reached 1.04-1.19 where CL-OMPR reached
        1.26-3.8 (d = 2-10); above, its greedy atoms stall on continua (4x4 image patches,
        d = 48, k = 10: 6.3 against CL-OMPR's 1.07; digits, d = 64: 1.05 either way).
        CL-OMPR is also better on well-separated blobs in a box five times wider than the
        data (1.01 against 1.1-1.4): pass decoder='clompr' there."""
        if self.decoder != "auto":
            return self.decoder
        from .features import GridMap

        if sketch is not None and isinstance(sketch.feature_map, GridMap):
            return "grid"
        d = sketch.feature_map.d if sketch is not None else 0
        return "coreset" if alone and d <= SKETCH_ALONE_MIXTURE_MAX_D else "clompr"

    def _private_route(self, d):
        """'grid' for decoder='auto' when d <= GRID_MAX_D and no setting of a Fourier sketch
        is given (kernel_scale, sketch_size, operator and frequency_law at their defaults),
        else 'fourier'."""
        fourier_given = (self.kernel_scale != "auto" or self.sketch_size is not None or self.operator != "auto"
                         or not (isinstance(self.frequency_law, str) and self.frequency_law == "auto"))
        if self.decoder != "auto" or fourier_given:
            return "fourier"
        return "grid" if d <= GRID_MAX_D else "high"

    def _set_solution(self, sol):
        self.cluster_centers_ = sol.theta.copy()
        self.weights_ = sol.weights.copy()
        self.selected_ = "decoder"
        if getattr(sol, "mixture", None) is not None:  # decoder='coreset': the over-complete mixture
            self.mixture_ = sol.mixture

    def _selects_with_pilot(self):
        return self.decoder == "auto" and self.pilot_size >= 2 * PILOT_HALF_MIN

    def _pilot_family(self, problem, lower, upper):
        from .decoders.problem import DiracAtoms

        return DiracAtoms(problem, lower, upper)

    def _pilot_current(self):
        return self.cluster_centers_, self.weights_

    def _pilot_fits(self, rows, frame, rng, refine=True):
        """The k-means of rows (pysketch.cluster.kmeans_plus_plus, 3 runs, brought into the
        box) with its shares, and those centres moved by the sketch (CL-OMPR's joint
        refinement of the k atoms and their weights on the whole sketch) or None (also
        when `refine` is false). The
        choice on B is not biased towards A's k-means (whose SSE on A is optimistic by
        about k d / |A|)."""
        from .cluster import kmeans_plus_plus
        from .decoders.problem import atom_matrix, nnls, refine_mixture

        family, problem, lo, hi, origin, unit = frame
        k = self.n_clusters
        C, _ = kmeans_plus_plus(rows, k, n_init=3, random_state=rng)
        C = np.clip(C, lo, hi)  # centres stay in the decoder's box, as the decoder's own do
        share = np.bincount(_nearest(rows, C)[0], minlength=k) / rows.shape[0]
        if not refine:
            return (C, share), None
        theta = np.clip((C - origin) / unit, family.lower, family.upper)
        alpha = nnls(atom_matrix(family, theta), problem.z)
        theta, alpha = refine_mixture(family, problem, theta, np.maximum(alpha, 1e-9), 1e-9, 300)
        moved = (theta * unit + origin, alpha / alpha.sum()) if alpha.sum() > 0 else None
        return (C, share), moved

    def _pilot_loss(self, B, candidate):
        from .metrics import sse

        return sse(B, candidate[0])

    def _pilot_set(self, chosen):
        self.cluster_centers_, self.weights_ = (np.array(a, dtype=np.float64) for a in chosen)

    def _after_fit(self, X):
        C = self.cluster_centers_
        u2 = self.data_unit_ ** 2  # sums in the decode unit: no overflow before the total itself
        if is_dask_collection(X):  # labels_ stays lazy; the inertia is one more pass
            self.labels_ = map_blocks(X, _nearest_block, C, drop_axis=1, dtype=np.intp)
            self.inertia_ = _scaled_total(map_reduce(X, _inertia_block, _add, args=(C, u2)), u2, "the inertia")
            return
        self.labels_, d2 = _nearest(X, C)
        self.inertia_ = _scaled_total(np.sum(d2 / u2), u2, "the inertia")

    def predict(self, X):
        """Index of the nearest center of every record."""
        X = self._check_X(X)
        return _nearest(X, self.cluster_centers_)[0]

    def transform(self, X):
        """Euclidean distances of every record to every center (n_samples, n_clusters)."""
        X = self._check_X(X)
        return np.sqrt(_sq_distances(X, self.cluster_centers_))

    def score(self, X, y=None):
        """Minus the sum of squared distances to the nearest center (scikit-learn's sign)."""
        X = self._check_X(X)
        u2 = getattr(self, "data_unit_", 1.0) ** 2
        return -_scaled_total(np.sum(_nearest(X, self.cluster_centers_)[1] / u2), u2, "the score")

    def _check_fitted(self):
        if not hasattr(self, "cluster_centers_"):
            raise not_fitted_error(self)


def _nearest_block(block, C):
    return _nearest(np.asarray(block, dtype=np.float64), C)[0]


def _inertia_block(block, first_row, C, u2=1.0):
    return float(np.sum(_nearest(np.asarray(block, dtype=np.float64), C)[1] / u2))


def _scaled_total(total, u2, what):
    """A sum of squared distances computed in units (total) times the squared unit u2;
    ValueError about the data's scale when it overflows float64."""
    with np.errstate(over="ignore"):
        value = float(total) * u2
    if not math.isfinite(value):
        raise ValueError(f"{what} (a sum of squared distances) overflows float64 at the data's scale (unit "
                         f"{math.sqrt(u2):.3g}): rescale the data (and any bounds or kernel scale) by a constant")
    return value


def _add(a, b):
    return a + b


def _nearest(X, C):
    """The index of the nearest row of C for every row of X (the first on ties, as
    np.argmin) and its squared distance, summed in float64 from the differences: one pass
    in the compiled core (both cores), never an (n, k) matrix."""
    X = np.asarray(X)
    if X.dtype != np.float32 and X.dtype != np.float64:
        X = X.astype(np.float64)
    if (X.ndim == 2 and X.shape[1] > 1 and X.strides[1] != X.itemsize) or not X.flags.aligned:
        X = np.require(X, requirements=["C", "A"])  # e.g. an unpickled block
    labels = np.empty(X.shape[0], dtype=np.int64)
    d2 = np.empty(X.shape[0])
    if X.shape[0] == 0:
        return labels.astype(np.intp, copy=False), d2
    nearest_centers(X, np.require(C, np.float64, ["C", "A"]), labels, d2)
    return labels.astype(np.intp, copy=False), d2


def _sq_distances(X, C):
    """Squared Euclidean distances (n, k), exact differences in chunks."""
    out = np.empty((X.shape[0], C.shape[0]))
    step = max(1, (1 << 20) // max(1, C.shape[0] * X.shape[1]))  # 8 MB of differences at a time
    for s in range(0, X.shape[0], step):
        diff = X[s : s + step, None, :] - C[None, :, :]
        out[s : s + step] = np.einsum("nkd,nkd->nk", diff, diff)
    return out


# ------------------------------------------------------------------------------- GMM


class CompressiveGaussianMixture(DensityMixin, _CompressiveMixture):
    """Gaussian mixture with diagonal covariances learned from a sketch (CL-OMPR with
    Gaussian atoms; Keriven et al. 2017).

    The parameters are those of CompressiveKMeans with n_components for n_clusters; the
    default frequency law is 'adapted_radius' and kernel_scale 'auto' estimates the
    cluster scale from a pilot sketch (Keriven et al.'s fit of the sketch's decay).

    Parameters
    ----------
    n_components : int, default 1
        The number of Gaussians k.
    sketch_size, kernel_scale, operator, n_init, dtype, pilot_size, batch_size
        As for `CompressiveKMeans`.
    random_state, epsilon, delta, bounds, neighbouring, accountant
        As for `CompressiveKMeans`.
    frequency_law : str or FrequencyLaw, default 'adapted_radius'
        The law of the frequencies: 'auto', 'gaussian', 'adapted_radius',
        'folded_gaussian', 'log_uniform' or a law instance (the library's convention
        E||omega||^2 = d / sigma^2).
    decoder : {'auto', 'clompr'} or another registered decoder of 'diagonal_gaussian' atoms, default 'auto'
        'clompr': the mixture decoded from the sketch alone. 'auto' (a clean `fit` only;
        private fits, `fit_sketch` and `partial_fit` decode with CL-OMPR): the pilot (at
        most ``pilot_size`` records, drawn uniformly in the same pass) is split in halves A
        and B; the decoded mixture, the EM fit of A (pysketch.cluster.diagonal_gmm) and
        that fit refined on the sketch (CL-OMPR's joint refinement from it) compete on
        B's log-likelihood, and the winner (``selected_``) is fitted again on the whole
        pilot when it is one of the last two. Measured on us_cities (k = 10, held-out
        log-likelihood per record, benchmarks/quality/real_gmm.py): the sketch alone
        was 0.50 nats below scikit-learn's diagonal GaussianMixture.

    Attributes
    ----------
    weights_ : (n_components,)
    means_ : (n_components, n_features)
    covariances_ : (n_components, n_features) (diagonals)
    sketch_, sketch_size_, kernel_scale_, timings_, residual_, n_features_in_, n_iter_, decoder_, selected_
        As in CompressiveKMeans.

    Raises
    ------
    ValueError
        From `fit`, `fit_sketch` and `partial_fit`: a parameter that is not valid (checked
        before anything is read or charged), fewer records than n_components, records that are not
        2-D, hold NaN or infinity, or lie outside the supported range of magnitudes, a
        sketch that is empty or that the decoder cannot read, `partial_fit` with epsilon,
        or (from `predict` and the like) records of another number of features. A
        BudgetError (a ValueError) when the accountant cannot pay (epsilon, delta).
    TypeError
        If a size parameter is not an integer, or `fit_sketch` is given something other
        than a Sketch.
    sklearn.exceptions.NotFittedError
        From the methods that need a fitted model, before `fit` (a ValueError without
        scikit-learn).

    Examples
    --------
    >>> import numpy as np
    >>> import pysketch
    >>> rng = np.random.default_rng(0)
    >>> X = np.concatenate([rng.normal(0, 1, (500, 2)), rng.normal(8, 1, (500, 2))])
    >>> gmm = pysketch.CompressiveGaussianMixture(2, random_state=0).fit(X)
    >>> gmm.covariances_.shape, np.allclose(gmm.weights_.sum(), 1.0)
    ((2, 2), True)
    >>> np.allclose(np.sort(gmm.means_, axis=0), [[0, 0], [8, 8]], atol=0.5)
    True
    """

    _task = "gmm"
    _atoms = "diagonal_gaussian"
    _atoms_law = "adapted_radius"  # frequency_law='auto' with a decoder that declares none
    _n_atoms_name = "n_components"
    _parameter_constraints = {
        "n_components": [Interval(numbers.Integral, 1, None)],
        # the registered decoders of its atoms (CL-OMPR's Gaussian atoms), by their declarations
        "decoder": [Options(lambda: ("auto", *_mixture_decoders("diagonal_gaussian")),
                            text=lambda names: " or ".join(map(repr, names)),
                            message="{label} must be {allowed}, got {value}")],
        **_CompressiveMixture._shared_constraints,
    }

    def __init__(self, n_components=1, *, sketch_size=None, kernel_scale="auto", operator="auto",
                 frequency_law="adapted_radius", n_init=3, dtype="float32", pilot_size=5000, batch_size=None,
                 random_state=None, epsilon=None, delta=0.0, bounds=None,
                 neighbouring="add_remove", accountant=None, decoder="auto"):
        self.decoder = decoder
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

    def _set_solution(self, sol):
        d = sol.theta.shape[1] // 2
        self.means_ = sol.theta[:, :d].copy()
        self.covariances_ = sol.theta[:, d:].copy()
        self.weights_ = sol.weights.copy()
        self.selected_ = "decoder"

    def _selects_with_pilot(self):
        return self.decoder == "auto" and self.pilot_size >= 2 * PILOT_HALF_MIN

    def _pilot_family(self, problem, lower, upper):
        from .decoders.problem import DiagonalGaussianAtoms

        return DiagonalGaussianAtoms(problem, lower, upper)

    def _pilot_current(self):
        return self.weights_, self.means_, self.covariances_

    def _pilot_fits(self, rows, frame, rng, refine=True):
        """The EM fit of rows (pysketch.cluster.diagonal_gmm), and that fit refined on the
        sketch or None (also when `refine` is false), each (weights, means, variances)."""
        from .cluster import diagonal_gmm
        from .decoders.problem import atom_matrix, nnls, refine_mixture

        family, problem, lo, hi, origin, unit = frame
        w, mu, var, _ = diagonal_gmm(rows, self.n_components, n_init=2, random_state=rng)
        if not refine:
            return (w, mu, var), None
        theta = np.column_stack([np.clip((mu - origin) / unit, family.lower, family.upper),
                                 np.clip(var / unit ** 2, family.s2_lower, family.s2_upper)])
        alpha = np.maximum(nnls(atom_matrix(family, theta), problem.z), 1e-9)
        theta, alpha = refine_mixture(family, problem, theta, alpha, 1e-9, 300)
        d = rows.shape[1]
        moved = ((alpha / alpha.sum(), theta[:, :d] * unit + origin, theta[:, d:] * unit ** 2)
                 if alpha.sum() > 0 else None)
        return (w, mu, var), moved

    def _pilot_loss(self, B, candidate):
        """Minus the mean log-likelihood of B (NaN counts as the worst)."""
        ll = gaussian_mixture_log_likelihood(B, *candidate)
        return -ll if ll == ll else np.inf

    def _pilot_set(self, chosen):
        self.weights_, self.means_, self.covariances_ = (np.array(a, dtype=np.float64) for a in chosen)

    def _after_fit(self, X):
        pass

    def score_samples(self, X):
        """Log-likelihood of every record under the mixture."""
        X = self._check_X(X)
        return gaussian_mixture_log_likelihood(X, self.weights_, self.means_, self.covariances_, average=False)

    def score(self, X, y=None):
        """Mean log-likelihood per record."""
        return float(self.score_samples(X).mean())

    def predict_proba(self, X):
        """Posterior probability of every component for every record."""
        X = self._check_X(X)
        lp = gaussian_mixture_log_prob_components(X, self.weights_, self.means_, self.covariances_)
        lp -= lp.max(axis=1, keepdims=True)
        p = np.exp(lp)
        return p / p.sum(axis=1, keepdims=True)

    def predict(self, X):
        """The most probable component of every record."""
        return np.argmax(self.predict_proba(X), axis=1)

    def fit_predict(self, X, y=None):
        return self.fit(X).predict(X)
