r"""Random Fourier features for regression (Liao, Needell & Xue 2024, Sec. 2.2).

The frequencies are public randomness, drawn from ``random_state`` before any data is seen
(public randomness, independent of the data) and kept with the model: a prediction needs them. The features are
computed by the core's fused product-and-cos/sin kernel through an existing
:class:`~pysketch.features.FeatureMap` ('real': ``[cos(Omega^T x + u), sin(Omega^T x + u)]``),
so every operator of :mod:`pysketch.operators` (dense, or structured R3 / GR2 / Fastfood)
can carry them.

Two layouts:

``'cos'``
    ``phi_k(x) = sqrt(2/N) cos(omega_k^T x + b_k)``, k = 1..N, b uniform on [0, 2 pi): the
    the authors' public code, github.com/liaochunyang/DPRFM. ``||phi(x)||^2 <= 2`` for every x
    (about 1 on average); each ``|phi_k| <= sqrt(2/N)``.
``'unit'``
    ``phi(x) = [cos(Omega^T x), sin(Omega^T x), 1] / sqrt(N + 1)`` when
    ``intercept=True`` (without the last entry and over ``sqrt(N)`` otherwise): the
    complex features ``exp(i omega^T x) / sqrt(N)`` as reals (cos^2 + sin^2 = 1 per
    frequency), with a constant. Its norm is exactly 1 for *every* x and each entry is at
    most ``1 / sqrt(N + 1)`` (``1 / sqrt(N)``) in modulus, which is what the worst-case
    sensitivities of the sufficient statistics need (:mod:`pysketch.rfm.ssp`).

The frequency scale is stated as a standard deviation (``frequency_std``: omega ~ N(0,
frequency_std^2 I)) or as the kernel's length scale (``length_scale`` = 1 /
frequency_std; the Gaussian kernel exp(-||x - x'||^2 / (2 length_scale^2))): the paper
writes "sigma^2 = 40" while its code draws with standard deviation 40 (in its
experiments of Sec. 4.1), so the name says which.
"""

import math

import numpy as np

from .._checks import check_array, check_positive, check_size
from .._random import as_generator
from ..features import FeatureMap
from ..frequencies import GaussianLaw
from ..operators import STRUCTURED_KINDS, make_operator, operator_bytes

__all__ = ["RandomFeatures", "LAYOUTS"]

#: The layouts of the random features (see the module docstring).
LAYOUTS = ("cos", "unit")

#: Rows of X whose features are held at once by `iter_features`.
DEFAULT_CHUNK_BYTES = 1 << 24


class RandomFeatures:
    """Gaussian random Fourier features, drawn once from a public seed.

    Parameters
    ----------
    d : int
        Input dimension.
    n_frequencies : int
        N, the number of frequencies omega_k.
    frequency_std : float, optional
        omega ~ N(0, frequency_std^2 I_d). Exactly one of `frequency_std` and
        `length_scale` must be given.
    length_scale : float, optional
        1 / frequency_std.
    layout : {'cos', 'unit'}
        See the module docstring.
    intercept : bool
        'unit' only: append the constant feature (the model's intercept).
    operator : {'dense', 'r3', 'gr2', 'fastfood', 'auto'}
        How Omega is represented (default 'dense'; 'auto' is
        :func:`pysketch.operators.make_operator`'s choice by d). Only 'dense' has i.i.d.
        Gaussian frequencies, which the published analysis assumes.
    random_state : None, int or numpy.random.Generator
        The public seed of Omega and the phases b.

    Raises
    ------
    ValueError
        For a `d` or `n_frequencies` that is not an int >= 1 whose frequencies the
        machine's memory can hold (TypeError for a non-integer); neither or both of
        `frequency_std` and `length_scale`, or one that is not a positive finite number or
        whose square over- or underflows float64; a `layout` not in LAYOUTS;
        ``intercept=True`` without ``layout='unit'``; an unknown `operator`. In
        `transform`, `iter_features` and `predict`: an X that is not a finite 2-D array
        with d columns, or (`predict`) a `coef` without output_dim rows.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.rfm import RandomFeatures
    >>> rf = RandomFeatures(3, 50, length_scale=1.0, layout="unit", intercept=True, random_state=0)
    >>> Phi = rf.transform(np.random.default_rng(1).standard_normal((4, 3)))
    >>> Phi.shape, bool(np.allclose(np.linalg.norm(Phi, axis=1), 1.0))  # 'unit': norm 1
    ((4, 101), True)
    """

    def __init__(self, d, n_frequencies, *, frequency_std=None, length_scale=None, layout="cos", intercept=False,
                 operator="dense", random_state=None):
        kind = operator if operator in STRUCTURED_KINDS else "dense"  # others: refused by make_operator

        def drawn(d, N):  # Omega, and the phases and dither
            return operator_bytes(d, N, kind) + 24 * N

        self.d = check_size(d, "d", nbytes=lambda v: drawn(v, 1), what="for the frequencies")
        self.n_frequencies = check_size(n_frequencies, "n_frequencies", nbytes=lambda v: drawn(self.d, v),
                                        what=f"for the frequencies of d = {self.d} coordinates")
        if (frequency_std is None) == (length_scale is None):
            raise ValueError("give exactly one of frequency_std and length_scale")
        if frequency_std is not None:
            self.frequency_std = check_positive(frequency_std, "frequency_std")
        else:
            self.frequency_std = 1.0 / check_positive(length_scale, "length_scale")
        from .._checks import check_data_magnitude

        # a length at the data's scale: its frequencies' variance 1 / length^2 must be a float
        with np.errstate(divide="ignore", over="ignore"):
            length = float(length_scale) if length_scale is not None else float(np.float64(1.0) / self.frequency_std)
        check_data_magnitude(length if length > 0 else 5e-324, "the length scale (a length at the data's scale)")
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
        if intercept and layout != "unit":
            raise ValueError("intercept=True needs layout='unit' (the 'cos' layout has no constant feature)")
        self.layout = layout
        self.intercept = bool(intercept)
        rng = as_generator(random_state)
        op = make_operator(self.d, self.n_frequencies, operator, GaussianLaw(1.0 / self.frequency_std),
                           random_state=rng)
        dither = "random" if layout == "cos" else None
        self.feature_map = FeatureMap(op, "real", dither=dither, random_state=rng)

    # ------------------------------------------------------------------ sizes and bounds

    @property
    def output_dim(self):
        """p, the length of phi(x)."""
        N = self.n_frequencies
        return N if self.layout == "cos" else 2 * N + int(self.intercept)

    @property
    def scale(self):
        """The constant each raw cos / sin value is multiplied by."""
        N = self.n_frequencies
        return math.sqrt(2.0 / N) if self.layout == "cos" else 1.0 / math.sqrt(N + int(self.intercept))

    @property
    def max_sq_norm(self):
        """A bound on ||phi(x)||^2 that holds for every x: 2 ('cos'), 1 ('unit', attained)."""
        return 2.0 if self.layout == "cos" else 1.0

    @property
    def max_abs(self):
        """A bound on every abs(phi_k(x)), for every x."""
        return self.scale

    @property
    def length_scale(self):
        return 1.0 / self.frequency_std

    # ------------------------------------------------------------------ features

    def transform(self, X):
        """phi of every row of X: (n, output_dim) float64."""
        X = check_array(X, "X", np.float64)
        if X.shape[1] != self.d:
            raise ValueError(f"X must have {self.d} columns, got shape {X.shape}")
        raw = self.feature_map.transform(X)  # (n, 2N): cos then sin
        N = self.n_frequencies
        if self.layout == "cos":
            out = np.ascontiguousarray(raw[:, :N], dtype=np.float64)
            out *= self.scale
            return out
        out = np.empty((X.shape[0], self.output_dim))
        out[:, : 2 * N] = raw
        if self.intercept:
            out[:, 2 * N] = 1.0
        out *= self.scale
        return out

    def iter_features(self, X, chunk_rows=None):
        """(start, stop, phi(X[start:stop])) a chunk of rows at a time, so that no (n, p)
        array is ever held."""
        X = check_array(X, "X", np.float64)
        if chunk_rows is None:
            chunk_rows = max(1, DEFAULT_CHUNK_BYTES // (8 * (self.output_dim + 2 * self.n_frequencies)))
        for start in range(0, X.shape[0], chunk_rows):
            stop = min(start + chunk_rows, X.shape[0])
            yield start, stop, self.transform(X[start:stop])

    def predict(self, X, coef):
        """phi(X) coef, a chunk of rows at a time; coef of shape (p,) or (p, k)."""
        coef = np.asarray(coef, dtype=np.float64)
        if coef.shape[0] != self.output_dim:
            raise ValueError(f"coef must have {self.output_dim} rows, got shape {coef.shape}")
        X = check_array(X, "X", np.float64)
        out = np.empty((X.shape[0],) + coef.shape[1:])
        for start, stop, F in self.iter_features(X):
            out[start:stop] = F @ coef
        return out

    def __repr__(self):
        return (f"RandomFeatures(d={self.d}, n_frequencies={self.n_frequencies}, "
                f"frequency_std={self.frequency_std:g}, layout={self.layout!r}, intercept={self.intercept})")
