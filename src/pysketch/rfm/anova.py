r"""Random features of an additive-plus-full ("first-order ANOVA") Gaussian kernel (issue 37).

An isotropic Gaussian kernel on d standardised coordinates spends its few affordable
random frequencies (a private release affords p = 2 N + 1 of order (n / sigma)^(2/3),
:func:`pysketch.rfm.estimators.auto_frequencies`) on d-dimensional waves; most real
tables are explained largely by smooth functions of single columns (a season, a dose, a
size), which such waves approximate poorly. The additive kernels of Duvenaud, Nickisch &
Rasmussen (2011, "Additive Gaussian processes", NeurIPS, eq. 2: the first-order term
``sum_j k_j(x_j, x'_j)``) are the classic remedy; this module mixes the first-order term
with the full kernel:

    k(x, x') = w * (1/d) sum_j exp(-(x_j - x'_j)^2 / (2 l_1^2))
               + (1 - w) * exp(-||x - x'||^2 / (2 l^2)),

and draws its random Fourier features (Rahimi & Recht 2007, "Random features for
large-scale kernel machines", NIPS, Algorithm 1) by drawing each frequency from the
mixture of the two spectral laws (Bochner): ``N_a = round(w N)`` *axis-aligned*
frequencies ``omega = g e_j`` with ``g ~ N(0, 1 / l_1^2)`` and the coordinates j taken in
turn, in a random order (a stratified draw of the uniform j; the magnitudes abs(g) of a coordinate stratified too,
at randomly shifted half-normal quantiles: randomised quasi-Monte Carlo features, Avron,
Sindhwani, Yang & Mahoney 2016, JMLR 17, sec. 3, which cut the variance of the kernel
approximation that a few frequencies per coordinate would have), and ``N - N_a`` frequencies from
``N(0, I / l^2)``. Everything is public: drawn from ``random_state`` before any data.

The features keep the 'unit' layout of :class:`~pysketch.rfm.RandomFeatures`,
``[cos(Omega^T x), sin(Omega^T x), 1] / sqrt(N + 1)``: the norm is exactly 1 for every x
and every entry is at most ``1 / sqrt(N + 1)`` in modulus whatever Omega is, so every
sensitivity of :mod:`pysketch.rfm.ssp` holds unchanged (they use only these two bounds).
"""

import numpy as np
from scipy import special

from .._checks import check_positive, check_size
from .._random import as_generator
from ..features import FeatureMap
from ..operators import DenseOperator, operator_bytes
from .features import RandomFeatures

__all__ = ["AnovaFeatures", "anova_frequencies"]


def anova_frequencies(d, n_frequencies, additive_length, length_scale, additive_share, random_state=None):
    """Omega (d, N): the first round(additive_share N) columns axis-aligned (column k on
    coordinate order[k mod d], order a random permutation; magnitudes stratified, module
    docstring), the rest N(0, I / length_scale^2).

    The arguments are not checked here (:class:`AnovaFeatures` checks them).

    Parameters
    ----------
    d : int
        The number of coordinates.
    n_frequencies : int
        N, the number of frequencies (columns of Omega).
    additive_length : float > 0
        l_1, the length scale of each one-coordinate kernel: the axis-aligned magnitudes
        are N(0, 1 / l_1^2) in law.
    length_scale : float > 0
        l, the length scale of the full kernel.
    additive_share : float in [0, 1]
        w: round(w N) frequencies are axis-aligned.
    random_state : None, int or numpy.random.Generator
        The public seed; drawn in this order: the coordinates' order, the shifts of the
        stratified magnitudes, the signs, then the full-kernel frequencies.

    Returns
    -------
    numpy.ndarray of shape (d, N)
        Omega, one frequency per column.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.rfm.anova import anova_frequencies
    >>> omega = anova_frequencies(3, 10, 0.5, 2.0, 0.6, random_state=0)
    >>> omega.shape, np.count_nonzero(omega[:, :6], axis=0).tolist()  # 6 axis-aligned columns
    ((3, 10), [1, 1, 1, 1, 1, 1])
    """
    rng = as_generator(random_state)
    n_add = int(round(additive_share * n_frequencies))
    omega = np.zeros((d, n_frequencies))
    cols = np.arange(n_add)
    # the coordinates in turn, in a random (public) order: with fewer axis-aligned frequencies
    # than coordinates, which columns get one does not depend on the columns' order
    order = rng.permutation(d)
    coord = order[cols % d]
    # stratified magnitudes: coordinate j's m_j frequencies at the half-normal quantiles
    # (i + U_j) / m_j, i = 0..m_j - 1, one uniform shift U_j per coordinate (randomised QMC:
    # each frequency is still N(0, 1 / l_1^2) in law up to its sign, which a cos / sin pair
    # does not see); a random sign each
    counts = np.bincount(coord, minlength=d)
    shift = rng.uniform(0.0, 1.0, d)
    rank = cols // d
    u = (rank + shift[coord]) / counts[coord]
    sign = np.where(rng.uniform(0.0, 1.0, n_add) < 0.5, -1.0, 1.0)
    omega[coord, cols] = sign * special.ndtri(0.5 + 0.5 * u) / additive_length
    omega[:, n_add:] = rng.standard_normal((d, n_frequencies - n_add)) / length_scale
    return omega


class AnovaFeatures(RandomFeatures):
    """'unit'-layout random Fourier features (with the constant) of the additive-plus-full
    Gaussian kernel of the module docstring.

    Parameters
    ----------
    d, n_frequencies : int
    length_scale : float
        l, of the full kernel.
    additive_length : float
        l_1, of each one-coordinate kernel.
    additive_share : float in [0, 1]
        w, the share of the frequencies that are axis-aligned.
    random_state : None, int or Generator
        The public seed of Omega.

    Raises
    ------
    ValueError
        For a `d` or `n_frequencies` that is not an int >= 1 whose frequencies the
        machine's memory can hold (TypeError for a non-integer); a `length_scale` or
        `additive_length` that is not a positive finite number; an `additive_share`
        outside [0, 1] (a bool, or a number that is not a Python int or float or a numpy
        float, is refused too). In `transform`, `iter_features` and `predict`, as
        :class:`~pysketch.rfm.RandomFeatures`.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.rfm import AnovaFeatures
    >>> features = AnovaFeatures(4, 32, length_scale=2.0, additive_length=0.5, random_state=0)
    >>> features.n_additive, features.transform(np.zeros((2, 4))).shape  # p = 2 N + 1
    (16, (2, 65))
    """

    def __init__(self, d, n_frequencies, *, length_scale, additive_length, additive_share=0.5, random_state=None):
        self.d = check_size(d, "d", nbytes=lambda v: operator_bytes(v, 1, "dense"), what="for the frequencies")
        self.n_frequencies = check_size(n_frequencies, "n_frequencies",
                                        nbytes=lambda v: operator_bytes(self.d, v, "dense") + 24 * v,
                                        what=f"for the frequencies of d = {self.d} coordinates")
        self.frequency_std = 1.0 / check_positive(length_scale, "length_scale")
        self.additive_length = check_positive(additive_length, "additive_length")
        w = additive_share
        if isinstance(w, bool) or not isinstance(w, (int, float, np.floating)) or not 0 <= w <= 1:
            raise ValueError(f"additive_share must be in [0, 1], got {additive_share!r}")
        self.additive_share = float(w)
        self.layout = "unit"
        self.intercept = True
        omega = anova_frequencies(self.d, self.n_frequencies, self.additive_length, 1.0 / self.frequency_std,
                                  self.additive_share, random_state)
        self.feature_map = FeatureMap(DenseOperator(omega), "real", dither=None)

    @property
    def n_additive(self):
        return int(round(self.additive_share * self.n_frequencies))

    def __repr__(self):
        return (f"AnovaFeatures(d={self.d}, n_frequencies={self.n_frequencies}, length_scale={self.length_scale:g}, "
                f"additive_length={self.additive_length:g}, additive_share={self.additive_share:g})")


def _register():
    # model files (pysketch.model_files) may hold these features: a fitted PrivateRFRegressor does
    from ..model_files import register_model_class

    register_model_class(AnovaFeatures)


_register()
