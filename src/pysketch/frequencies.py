r"""Frequency laws: the distribution of the columns of :math:`\Omega`.

A sketch is the sum over records of :math:`f(\Omega^T x)` with
:math:`\Omega = [\omega_1, \dots, \omega_m] \in \mathbb{R}^{d \times m}` (columns are
frequencies) and i.i.d. columns drawn from a *frequency law*.

Every law here is separable (Chatalic 2020 thesis, sec. 5.2.1 and footnote 6):

.. math::

    \omega = R \, \varphi, \qquad \varphi \sim \mathcal{U}(S^{\mathrm{dim}-1}),
    \qquad R \sim p_R \ \text{independent of}\ \varphi,

so a dense :math:`\Omega` is a matrix of uniform directions with its columns scaled by
radii (:meth:`FrequencyLaw.sample`), and a structured operator, which makes its own
orthonormal directions from Hadamard blocks, only needs the radii
(:meth:`FrequencyLaw.radii`).

Padding. A structured operator works in the padded dimension
:math:`d_p = 2^{\lceil \log_2 d \rceil}` and keeps only the first :math:`d` coordinates of
each :math:`\omega` (thesis sec. 5.2.3). Its radii must then follow the law of the
:math:`d_p`-dimensional frequency, so that the first :math:`d` coordinates follow the
:math:`d`-dimensional law: for the Gaussian law :math:`R \sim \chi_{d_p} / \sigma`, not
:math:`\chi_d / \sigma` (thesis Lemma 5.6). Call ``law.radii(m, d_p, random_state, d=d)``:
the used coordinates then have the second moments of the :math:`d`-dimensional law (the
exact law for the Gaussian laws; for other radial laws the projection of a
:math:`d_p`-dimensional law is not the :math:`d`-dimensional one, and only the scale is
matched).

Laws of random Fourier features (:class:`KernelLaw`, with a kernel scale ``sigma``):
:class:`GaussianLaw`, :class:`AdaptedRadiusLaw`, :class:`FoldedGaussianLaw`. Laws of
random quadratic features (compressive PCA): :class:`QuadraticGaussianLaw`,
:class:`OrthonormalBasesLaw`. :func:`make_law` builds a law from a name and a ``sigma``
(for estimators); :meth:`FrequencyLaw.to_dict` / :meth:`FrequencyLaw.from_dict` describe
a law as JSON-serializable data.

Randomness: ``random_state`` follows scikit-learn (see :func:`pysketch._random.as_generator`).
The same int seed gives the same draws; pass one :class:`numpy.random.Generator` through
several calls to get independent draws.
"""

import abc
import math
import numbers
from collections.abc import Mapping

import numpy as np
from scipy import special

from ._checks import check_int as _check_int
from ._checks import check_size
from ._random import as_generator

__all__ = [
    "ADAPTED_RADIUS_MEAN",
    "ADAPTED_RADIUS_NORMALIZER",
    "ADAPTED_RADIUS_SECOND_MOMENT",
    "AdaptedRadiusLaw",
    "FoldedGaussianLaw",
    "FrequencyLaw",
    "GaussianLaw",
    "KernelLaw",
    "LogUniformLaw",
    "OrthonormalBasesLaw",
    "QuadraticGaussianLaw",
    "make_law",
]

# ---------------------------------------------------------------------------------------
# Adapted radius constants.
#
# Density (Chatalic 2020 thesis eq. (4.15); Keriven et al. 2017, "Sketching for large-scale
# learning of mixture models", sec. 3.3.1), unnormalized:
#     p_AR(R) = (R^2 + R^4 / 4)^(1/2) exp(-R^2 / 2),   R >= 0.
# Closed forms (derived here, checked against scipy.integrate.quad in the tests):
# with u = R^2 / 2 (du = R dR), p_AR(R) dR = sqrt(1 + u/2) exp(-u) du, and with t = 2 + u
# the integrals are upper incomplete gamma functions Gamma(s, 2), giving
#     Z       = int p_AR        = 1 + e^2 sqrt(pi / 8) erfc(sqrt(2))       ~ 1.21068
#     E[R^2]  = int R^2 p_AR / Z = 4 / Z - 1                                ~ 2.30392
# (from Gamma(5/2, x) = 3/2 Gamma(3/2, x) + x^(3/2) e^(-x)), and with R = 2 sinh(s/2)
#     E[R]    = int R p_AR / Z  = e K_1(1) / Z                              ~ 1.35143
# from K_1(z) = z int_0^inf exp(-z cosh s) sinh(s)^2 ds (DLMF sec. 10.32); the tests
# check the three values by quadrature.
# ---------------------------------------------------------------------------------------

#: Normalizer :math:`Z = \int_0^\infty p_{AR}(R)\,dR` of the adapted radius density (4.15).
ADAPTED_RADIUS_NORMALIZER = 1.0 + math.e**2 * math.sqrt(math.pi / 8.0) * math.erfc(math.sqrt(2.0))
#: Mean :math:`\mathbf{E}[R]` of the adapted radius law.
ADAPTED_RADIUS_MEAN = math.e * float(special.k1(1.0)) / ADAPTED_RADIUS_NORMALIZER
#: Second moment :math:`\mathbf{E}[R^2]` of the adapted radius law.
ADAPTED_RADIUS_SECOND_MOMENT = 4.0 / ADAPTED_RADIUS_NORMALIZER - 1.0

_NORMALIZATIONS = ("dimension", "none")


# ---------------------------------------------------------------------------------------
# Validation helpers
# ---------------------------------------------------------------------------------------




def _check_data_dim(d, dim):
    """The keyword `d` of radii/expected_sq_norm: None (means dim) or an int in [1, dim]."""
    if d is None:
        return dim
    d = _check_int(d, "d")
    if d > dim:
        raise ValueError(
            f"d (the number of coordinates used) must be <= dim={dim}; got d={d}"
        )
    return d


def _check_sigma(sigma):
    """sigma: a real number (not bool), finite, > 0, with 1/sigma**2 a finite float > 0."""
    if isinstance(sigma, (bool, np.bool_)) or not isinstance(sigma, numbers.Real):
        raise TypeError(
            "sigma (the kernel scale) must be a finite real number > 0; got "
            f"{sigma!r} of type {type(sigma).__name__}"
        )
    s = float(sigma)
    if not (math.isfinite(s) and s > 0.0):
        raise ValueError(f"sigma (the kernel scale) must be a finite real number > 0; got {sigma!r}")
    try:
        inv_sq = s**-2
    except OverflowError:
        inv_sq = math.inf
    if not (0.0 < inv_sq < math.inf):
        raise ValueError(
            f"sigma={sigma!r} is out of range: the frequency variance 1/sigma**2 must be a "
            "finite float > 0 (sigma within about [1.5e-154, 6.7e153]); the kernel scale is a length at "
            "the data's scale: at this magnitude of the data, rescale the data (and sigma) by a constant"
        )


def _check_normalization(normalization):
    if not isinstance(normalization, str):
        raise TypeError(
            f"normalization must be one of {_NORMALIZATIONS}; got {normalization!r} of type "
            f"{type(normalization).__name__}"
        )
    if normalization not in _NORMALIZATIONS:
        raise ValueError(f"normalization must be one of {_NORMALIZATIONS}; got {normalization!r}")


# ---------------------------------------------------------------------------------------
# Samplers (validated arguments, a Generator)
# ---------------------------------------------------------------------------------------


#: Bytes per frequency of a radius draw and its temporaries (the memory check of sizes).
_RADII_BYTES = 32


def _uniform_directions(rng, dim, m):
    """A (dim, m) array of i.i.d. columns uniform on the unit sphere S^{dim-1}.

    Normalized standard Gaussian vectors (the Gaussian law is rotation invariant); a column
    of norm 0 (probability 0 up to rounding) is drawn again.
    """
    g = rng.standard_normal((dim, m))
    norms = np.linalg.norm(g, axis=0)
    zero = np.flatnonzero(norms == 0.0)
    while zero.size:
        g[:, zero] = rng.standard_normal((dim, zero.size))
        norms[zero] = np.linalg.norm(g[:, zero], axis=0)
        zero = zero[norms[zero] == 0.0]
    g /= norms
    return g


def _chi(rng, dof, m):
    """m draws of the chi law with `dof` degrees of freedom: sqrt(2 Gamma(dof/2, 1))."""
    return np.sqrt(2.0 * rng.standard_gamma(0.5 * dof, size=m))


def _adapted_radius(rng, m):
    """m exact draws of R from the adapted radius density (thesis (4.15)), by rejection.

    With u = R^2/2, u has the density proportional to g(u) = sqrt(2 + u) exp(-u) on u > 0
    (see the constants above). sqrt is concave, so it lies below its tangent at u = 0:
    sqrt(2 + u) <= (4 + u) / (2 sqrt 2), i.e. (4 + u)^2 - 8 (2 + u) = u^2 >= 0. The envelope
    (4 + u) exp(-u) is the mixture 4/5 Exp(1) + 1/5 Gamma(2, 1); a draw is accepted with
    probability g(u) / envelope = sqrt(8 (2 + u)) / (4 + u). The acceptance rate is
    4 Z / 5 ~ 0.969 and the tail is exact (nothing is truncated).
    """
    out = np.empty(m)
    filled = 0
    while filled < m:
        need = m - filled
        n = need + need // 16 + 16  # ~1.07 * need: one round is almost always enough
        u = rng.standard_exponential(n)
        second = rng.random(n) < 0.2
        u[second] += rng.standard_exponential(int(second.sum()))
        accept = rng.random(n) * (4.0 + u) <= np.sqrt(8.0 * (2.0 + u))
        kept = np.sqrt(2.0 * u[accept][:need])
        out[filled : filled + kept.size] = kept
        filled += kept.size
    return out


# ---------------------------------------------------------------------------------------
# Laws
# ---------------------------------------------------------------------------------------


class FrequencyLaw(abc.ABC):
    r"""Base class of frequency laws: :math:`\omega = R\,\varphi`, :math:`\varphi` uniform on
    the sphere, :math:`R` an independent radius.

    Subclasses set ``name`` (the key of :meth:`to_dict`), ``_param_names`` and implement
    ``_radii(m, dim, d, rng)`` and ``expected_sq_norm``. Laws are immutable values: their
    parameters are read-only properties, stored as given, and two laws are equal when they
    are of the same class with equal parameters.

    Raises
    ------
    TypeError
        From `from_dict`, when the description is not a mapping or a parameter has a wrong
        type; from `radii` and `sample`, when a size is not an integer.
    ValueError
        From `from_dict`, when the name is missing or unknown, a key is not a parameter of
        that law, a value is invalid, or the law is not of the class it is called on; from
        `radii`, `sample` and `expected_sq_norm`, when a size is below 1, d > dim, or the
        draw would not fit in the machine's memory.

    Examples
    --------
    >>> import pysketch
    >>> law = pysketch.FrequencyLaw.from_dict({"name": "gaussian", "sigma": 2.0})
    >>> law, law.expected_sq_norm(4)
    (GaussianLaw(sigma=2.0), 1.0)
    >>> law.sample(4, 100, random_state=0).shape
    (4, 100)
    """

    name = None
    _param_names = ()

    # -- public API ----------------------------------------------------------------------

    def radii(self, m, dim, random_state=None, *, d=None):
        r"""Draw `m` i.i.d. radii for directions uniform on :math:`S^{\mathrm{dim}-1}`.

        ``radii[j] * phi_j``, with `phi_j` uniform on the sphere of dimension `dim`, has the
        law of the `dim`-dimensional frequency. A structured operator in the padded
        dimension ``dim = d_p`` that keeps the first `d` coordinates passes ``d=d``: then
        those `d` coordinates have the second moments of a `d`-dimensional frequency, and
        for :class:`GaussianLaw` exactly its law (the radii are :math:`\chi_{d_p}/\sigma`,
        thesis Lemma 5.6, not :math:`\chi_d/\sigma`).

        Parameters
        ----------
        m : int
            Number of radii, >= 1.
        dim : int
            Dimension of the directions, >= 1 (the padded dimension for a structured operator).
        random_state : None, int, SeedSequence, Generator or RandomState, optional
            See :func:`pysketch._random.as_generator`.
        d : int, optional
            Number of leading coordinates of each frequency that are used (the data
            dimension), ``1 <= d <= dim``; default `dim`. Only laws whose per-coordinate
            variance depends on the dimension depend on `d`:
            :class:`QuadraticGaussianLaw` (variance 1/d) and ``normalization="none"``
            (variance :math:`\mathbf{E}[R^2]/(d\sigma^2)`, radii multiplied by
            :math:`\sqrt{\mathrm{dim}/d}`).

        Returns
        -------
        ndarray of shape (m,), float64
        """
        m = check_size(m, "m", nbytes=lambda v: v * _RADII_BYTES, what="for the radii")
        dim = _check_int(dim, "dim")
        d = _check_data_dim(d, dim)
        rng = as_generator(random_state)
        return self._radii(m, dim, d, rng)

    def sample(self, d, m, random_state=None):
        r"""Draw a dense :math:`\Omega` of shape (d, m): i.i.d. columns ``R_j * phi_j``.

        The radii are drawn first, then the directions, from one generator: with the same
        int seed, the column norms are exactly ``self.radii(m, d, seed)``.

        Parameters
        ----------
        d : int
            Data dimension, >= 1.
        m : int
            Number of frequencies, >= 1.
        random_state : None, int, SeedSequence, Generator or RandomState, optional
            See :func:`pysketch._random.as_generator`.

        Returns
        -------
        ndarray of shape (d, m), float64
        """
        d = check_size(d, "d", nbytes=lambda v: v * 16 + _RADII_BYTES, what="for the frequencies")
        m = check_size(m, "m", nbytes=lambda v: v * (d * 16 + _RADII_BYTES),
                       what=f"for the ({d}, m) matrix of frequencies")
        rng = as_generator(random_state)
        radii = self._radii(m, d, d, rng)
        omega = _uniform_directions(rng, d, m)
        omega *= radii
        return omega

    def expected_sq_norm(self, dim, *, d=None):
        r""":math:`\mathbf{E}\|\omega\|_2^2` in closed form for the `dim`-dimensional frequency.

        This is ``E[radii(m, dim, d=d)**2]`` (directions have unit norm); with ``d=None`` it
        is also the mean squared column norm of ``sample(dim, m)``. The first `d`
        coordinates of a padded frequency have ``E||omega_{1:d}||^2 =
        expected_sq_norm(dim, d=d) * d / dim = expected_sq_norm(d)``.

        Parameters
        ----------
        dim : int
            Dimension of the frequency, >= 1.
        d : int, optional
            As in :meth:`radii`.

        Returns
        -------
        float
        """
        dim = _check_int(dim, "dim")
        d = _check_data_dim(d, dim)
        return self._expected_sq_norm(dim, d)

    def get_params(self):
        """The parameters, as given to the constructor (a new dict)."""
        return {name: getattr(self, name) for name in self._param_names}

    def to_dict(self):
        """A JSON-serializable description: ``{"name": ..., <parameters>}``.

        :meth:`FrequencyLaw.from_dict` rebuilds an equal law from it. Real parameters are
        converted to Python floats.
        """
        out = {"name": self.name}
        for key, value in self.get_params().items():
            out[key] = float(value) if isinstance(value, numbers.Real) else value
        return out

    @classmethod
    def from_dict(cls, description):
        """Rebuild a law from :meth:`to_dict` output.

        Raises
        ------
        TypeError
            If `description` is not a mapping, or a parameter has a wrong type.
        ValueError
            If the name is missing or unknown, a key is not a parameter of that law, or a
            parameter value is invalid (or, when called on a subclass, the described law is
            not of that subclass).
        """
        if not isinstance(description, Mapping):
            raise TypeError(
                "description must be a mapping (the output of FrequencyLaw.to_dict); got "
                f"{type(description).__name__}"
            )
        if "name" not in description:
            raise ValueError(f"description has no 'name' key: {dict(description)!r}")
        name = description["name"]
        law_cls = _LAWS.get(name) if isinstance(name, str) else None
        if law_cls is None:
            raise ValueError(
                f"description['name'] must be one of {sorted(_LAWS)}; got {name!r}"
            )
        if not issubclass(law_cls, cls):
            raise ValueError(f"description is of a {law_cls.__name__}, not a {cls.__name__}")
        params = {key: value for key, value in description.items() if key != "name"}
        unknown = sorted(set(params) - set(law_cls._param_names), key=str)
        if unknown:
            raise ValueError(
                f"description has keys {unknown} that are not parameters of "
                f"{law_cls.__name__} (its parameters: {list(law_cls._param_names)})"
            )
        return law_cls(**params)

    def __repr__(self):
        args = ", ".join(f"{key}={value!r}" for key, value in self.get_params().items())
        return f"{type(self).__name__}({args})"

    def __eq__(self, other):
        if not isinstance(other, FrequencyLaw):
            return NotImplemented
        return type(self) is type(other) and self.get_params() == other.get_params()

    def __hash__(self):
        return hash((type(self).__name__, tuple(self.get_params().values())))

    # -- to implement --------------------------------------------------------------------

    @abc.abstractmethod
    def _radii(self, m, dim, d, rng):
        """m radii for validated ints m, dim, d (1 <= d <= dim) and a Generator rng."""

    @abc.abstractmethod
    def _expected_sq_norm(self, dim, d):
        """E||omega||^2 for validated ints dim, d."""


class KernelLaw(FrequencyLaw):
    """Base class of the laws of random Fourier features, with a kernel scale `sigma`.

    `sigma` is the spatial scale of the kernel (a standard deviation, in data units): the
    frequencies scale as ``1/sigma``.

    Parameters
    ----------
    sigma : float
        Kernel scale, finite and > 0, with 1 / sigma**2 a finite float > 0 (sigma within
        about [1.5e-154, 6.7e153]).

    Raises
    ------
    TypeError
        If `sigma` is not a real number (a bool included).
    ValueError
        If `sigma` is not finite and > 0, or 1 / sigma**2 over- or underflows.

    Examples
    --------
    >>> import pysketch
    >>> from pysketch.frequencies import KernelLaw
    >>> law = pysketch.GaussianLaw(0.5)
    >>> isinstance(law, KernelLaw), law.sigma
    (True, 0.5)
    """

    _param_names = ("sigma",)

    def __init__(self, sigma):
        _check_sigma(sigma)
        self._sigma = sigma

    @property
    def sigma(self):
        """The kernel scale (spatial standard deviation), as given."""
        return self._sigma


class GaussianLaw(KernelLaw):
    r"""Gaussian frequencies :math:`\omega \sim \mathcal{N}(0, \sigma^{-2} I)`.

    They give the Gaussian kernel :math:`\exp(-\|x - y\|^2 / (2\sigma^2))` (thesis (2.24),
    (2.25), sec. 4.1.1). Separable form (thesis sec. 4.2.6): :math:`R \sim \chi_{\mathrm{dim}}
    / \sigma`; with padding, :math:`\chi_{d_p}` (thesis Lemma 5.6).
    :math:`\mathbf{E}\|\omega\|^2 = \mathrm{dim}/\sigma^2`.

    Parameters
    ----------
    sigma : float
        Kernel scale, finite and > 0.

    Examples
    --------
    >>> import pysketch
    >>> law = pysketch.GaussianLaw(sigma=0.5)
    >>> law.sample(3, 1000, random_state=0).shape
    (3, 1000)
    >>> law.expected_sq_norm(3)  # dim / sigma**2
    12.0
    """

    name = "gaussian"

    def _radii(self, m, dim, d, rng):
        return _chi(rng, dim, m) * (1.0 / float(self._sigma))

    def _expected_sq_norm(self, dim, d):
        return dim / float(self._sigma) ** 2


class _NormalizedKernelLaw(KernelLaw):
    """A kernel law with a `normalization` of its radius ("dimension" or "none").

    With a unit radius R of second moment E[R^2], "dimension" draws
    omega = R sqrt(dim) / (sigma sqrt(E[R^2])) phi: every coordinate has variance
    1/sigma^2, whatever the dimension, so the first d coordinates of a padded frequency
    (``radii(m, d_p, d=d)``) have the second moments of the d-dimensional law. "none" draws
    omega = R / sigma phi in dimension d, whose coordinates have variance
    E[R^2] / (d sigma^2): with padding, the radii are multiplied by sqrt(d_p / d) so that
    the first d coordinates keep that variance (E||omega_{1:d}||^2 = E[R^2] / sigma^2)
    instead of shrinking by d / d_p.
    """

    _param_names = ("sigma", "normalization")
    _unit_second_moment = None  # E[R^2] of the unit radius law (set by subclasses)

    def __init__(self, sigma, normalization="dimension"):
        super().__init__(sigma)
        _check_normalization(normalization)
        self._normalization = normalization

    @property
    def normalization(self):
        """The normalization of the radius, as given: "dimension" or "none"."""
        return self._normalization

    def _scale(self, dim, d):
        """The factor from the unit radius R to the radius of omega (see the class notes)."""
        if self._normalization == "dimension":
            return math.sqrt(dim / self._unit_second_moment) / float(self._sigma)
        return math.sqrt(dim / d) / float(self._sigma)

    def _expected_sq_norm(self, dim, d):
        if self._normalization == "dimension":
            return dim / float(self._sigma) ** 2
        return self._unit_second_moment * dim / (d * float(self._sigma) ** 2)


class AdaptedRadiusLaw(_NormalizedKernelLaw):
    r"""Adapted radius frequencies (thesis (4.15)-(4.16); Keriven et al. 2017 sec. 3.3.1).

    The unit radius :math:`R` has the density proportional to
    :math:`p_{AR}(R) = (R^2 + R^4/4)^{1/2} \exp(-R^2/2)` (thesis (4.15)), which puts more
    mass on low frequencies than :math:`\chi_d` does in high dimension. It is sampled
    exactly (rejection sampling, acceptance ~0.97, no truncation of the tail).

    Parameters
    ----------
    sigma : float
        Kernel scale, finite and > 0.
    normalization : {"dimension", "none"}, optional
        ``"dimension"`` (default): :math:`\omega = R\sqrt{\mathrm{dim}} / (\sigma
        \sqrt{\mathbf{E}[R^2]})\,\varphi`, so that :math:`\mathbf{E}\|\omega\|^2 =
        \mathrm{dim}/\sigma^2`, as for :class:`GaussianLaw` with the same `sigma`. This is
        thesis (4.16) corrected: as printed, (4.16) divides by :math:`\mathbf{E}[R^2]`, not
        its square root, which gives :math:`\mathbf{E}\|\omega\|^2 = \mathrm{dim} /
        (\sigma^2 \mathbf{E}[R^2])` instead of the stated :math:`\mathrm{dim}/\sigma^2`
        (a typo of the thesis). ``"none"``: :math:`\omega = R/\sigma\,\varphi`, the
        form of Keriven et al., with :math:`\mathbf{E}\|\omega\|^2 = \mathbf{E}[R^2]/\sigma^2
        \approx 2.304/\sigma^2` whatever the dimension (so its `sigma` is not comparable
        with the Gaussian law's); with padding (``radii(m, d_p, d=d)``) the radii are
        multiplied by :math:`\sqrt{d_p/d}` so that the first `d` coordinates keep it.

    Notes
    -----
    :math:`Z = 1 + e^2\sqrt{\pi/8}\,\mathrm{erfc}(\sqrt 2) \approx 1.21068`,
    :math:`\mathbf{E}[R] = e K_1(1)/Z \approx 1.35143`,
    :math:`\mathbf{E}[R^2] = 4/Z - 1 \approx 2.30392` (module constants
    ``ADAPTED_RADIUS_*``).

    Examples
    --------
    >>> import pysketch
    >>> law = pysketch.AdaptedRadiusLaw(sigma=1.0)
    >>> law.radii(5, 4, random_state=0).shape
    (5,)
    >>> law.expected_sq_norm(4), round(pysketch.AdaptedRadiusLaw(1.0, "none").expected_sq_norm(4), 3)
    (4.0, 2.304)
    """

    name = "adapted_radius"
    _unit_second_moment = ADAPTED_RADIUS_SECOND_MOMENT

    def _radii(self, m, dim, d, rng):
        return _adapted_radius(rng, m) * self._scale(dim, d)


class FoldedGaussianLaw(_NormalizedKernelLaw):
    r"""Folded Gaussian radius :math:`R = |\mathcal{N}(0, 1)|` (pycle
    ``drawFrequencies_FoldedGaussian``; not in the thesis).

    Parameters
    ----------
    sigma : float
        Kernel scale, finite and > 0.
    normalization : {"dimension", "none"}, optional
        ``"dimension"`` (default): :math:`\omega = R\sqrt{\mathrm{dim}}/\sigma\,\varphi`
        (:math:`\mathbf{E}[R^2] = 1`), so :math:`\mathbf{E}\|\omega\|^2 =
        \mathrm{dim}/\sigma^2`. ``"none"``: :math:`\omega = R/\sigma\,\varphi`,
        :math:`\mathbf{E}\|\omega\|^2 = 1/\sigma^2` (with padding, see
        :class:`AdaptedRadiusLaw`).

    Examples
    --------
    >>> import pysketch
    >>> law = pysketch.FoldedGaussianLaw(2.0)
    >>> law.to_dict()
    {'name': 'folded_gaussian', 'sigma': 2.0, 'normalization': 'dimension'}
    >>> pysketch.FrequencyLaw.from_dict(law.to_dict()) == law
    True
    """

    name = "folded_gaussian"
    _unit_second_moment = 1.0

    def _radii(self, m, dim, d, rng):
        return np.abs(rng.standard_normal(m)) * self._scale(dim, d)


class LogUniformLaw(KernelLaw):
    r"""Multi-scale frequencies: :math:`\|\omega\|` log-uniform on
    :math:`[\mathrm{low}/\sigma, \mathrm{high}/\sigma]`, directions uniform.

    One Gaussian kernel sees one scale; data with clusters of very unequal spread, heavy
    tails or far-apart groups (real data: pysketch.datasets) need several, and a
    log-uniform radius spends the same number of frequencies on every octave between the
    data's spread and a fine detail. `sigma` is a reference scale in data units (the
    estimators use the data's spread, the root mean square of the coordinates' standard
    deviations); ``low`` and ``high`` bound the radius in units of ``1/sigma``. The
    default band [0.05, 20] is the one the coreset decoder was measured with (on the real
    data sets of benchmarks/quality/real_quality.py); the radii below about 0.3 carry
    little (abs(z) near 1) and above 10 little
    signal but cost nothing in privacy noise per entry.

    With padding (``radii(m, d_p, d=d)``) the radii are multiplied by
    :math:`\sqrt{d_p/d}` so that the first `d` coordinates keep the law of the
    `d`-dimensional frequency in the mean square.
    :math:`\mathbf{E}\|\omega\|^2 = (h^2 - l^2) / (2 \ln(h/l))\,\sigma^{-2}` (in
    dimension `d`).

    Parameters
    ----------
    sigma : float
        Reference scale in data units, finite and > 0.
    low, high : float, default 0.05 and 20.0
        The band of the radius, in units of 1 / sigma: positive, finite, high > low.

    Raises
    ------
    ValueError
        If `low` or `high` is not a positive finite number, or high <= low (and as
        `KernelLaw` for `sigma`).
    TypeError
        If `sigma` is not a real number.

    Examples
    --------
    >>> import pysketch
    >>> radii = pysketch.LogUniformLaw(sigma=1.0).radii(1000, 2, random_state=0)
    >>> bool(radii.min() >= 0.05 and radii.max() <= 20.0)
    True
    """

    name = "log_uniform"
    _param_names = ("sigma", "low", "high")

    def __init__(self, sigma, low=0.05, high=20.0):
        super().__init__(sigma)
        for nm, v in (("low", low), ("high", high)):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real) or not math.isfinite(v) or v <= 0:
                raise ValueError(f"{nm} must be a positive finite number, got {v!r}")
        if not high > low:
            raise ValueError(f"high must be > low, got low={low!r}, high={high!r}")
        self._low, self._high = low, high

    @property
    def low(self):
        """Lower end of the radius band, in units of 1/sigma."""
        return self._low

    @property
    def high(self):
        """Upper end of the radius band, in units of 1/sigma."""
        return self._high

    def _radii(self, m, dim, d, rng):
        lo, hi = math.log(float(self._low)), math.log(float(self._high))
        return np.exp(rng.uniform(lo, hi, m)) * (math.sqrt(dim / d) / float(self._sigma))

    def _expected_sq_norm(self, dim, d):
        lo, hi = float(self._low), float(self._high)
        return (hi * hi - lo * lo) / (2.0 * math.log(hi / lo)) * dim / (d * float(self._sigma) ** 2)


class QuadraticGaussianLaw(FrequencyLaw):
    r"""Gaussian frequencies for random quadratic features (compressive PCA):
    :math:`\omega \sim \mathcal{N}(0, I_d / d)`, so :math:`\mathbf{E}\|\omega\|^2 = 1`
    (thesis sec. 8.1.1; Chatalic et al. 2022 sec. 2.2).

    The scale is set by the data dimension `d`: radii are :math:`\chi_{\mathrm{dim}} /
    \sqrt{d}`. With padding (``radii(m, d_p, d=d)``) the first `d` coordinates are
    :math:`\mathcal{N}(0, I_d/d)` and the full padded frequency has
    :math:`\mathbf{E}\|\omega\|^2 = d_p/d`.

    Examples
    --------
    >>> import pysketch
    >>> law = pysketch.QuadraticGaussianLaw()
    >>> law.sample(10, 50, random_state=0).shape, law.expected_sq_norm(10)
    ((10, 50), 1.0)
    """

    name = "quadratic_gaussian"

    def _radii(self, m, dim, d, rng):
        return _chi(rng, dim, m) * (1.0 / math.sqrt(d))

    def _expected_sq_norm(self, dim, d):
        return dim / d


class OrthonormalBasesLaw(FrequencyLaw):
    r"""A union of independent random orthonormal bases, for quadratic features
    (compressive PCA; thesis sec. 8.1.1, sec. 9.3.2 footnote 24).

    ``sample(d, m)`` returns :math:`\Omega = [B_1, \dots, B_{m/d}]`, `m` a multiple of
    `d`, with :math:`B_i` independent Haar-distributed (uniformly random) orthogonal
    :math:`d \times d` matrices, so that :math:`\Omega\Omega^T = (m/d) I_d` (thesis (8.6))
    and every column has unit norm and is uniform on the sphere.

    ``radii`` returns ones: for a structured operator, the orthonormal blocks are its R3
    blocks (thesis Def. 5.1, orthonormal) with unit radii ("only the structured part of the
    fast transforms is required (radiuses can be fixed to 1)", thesis sec. 9.3.2). With
    padding, when `m` is a multiple of :math:`d_p`, the first `d` rows of such an
    :math:`\Omega` satisfy :math:`\Omega_{1:d}\Omega_{1:d}^T = (m/d_p) I_d`.

    Raises
    ------
    ValueError
        From `sample`, when m is not a multiple of d (or a size is below 1 or beyond the
        machine's memory).

    Examples
    --------
    >>> import numpy as np
    >>> import pysketch
    >>> omega = pysketch.OrthonormalBasesLaw().sample(4, 8, random_state=0)
    >>> omega.shape, np.allclose(omega @ omega.T, 2 * np.eye(4))  # (m / d) I
    ((4, 8), True)
    """

    name = "orthonormal_bases"

    def _radii(self, m, dim, d, rng):
        return np.ones(m)

    def _expected_sq_norm(self, dim, d):
        return 1.0

    def sample(self, d, m, random_state=None):
        r"""Draw :math:`\Omega = [B_1, \dots, B_{m/d}]` of shape (d, m), `m` a multiple of `d`.

        Each block is the Q factor of the QR decomposition of a standard Gaussian matrix,
        with its columns multiplied by the signs of the diagonal of R: this makes Q Haar
        distributed (the sign convention of LAPACK alone does not).
        """
        d = check_size(d, "d", nbytes=lambda v: v * v * 32, what="for one orthonormal basis and its QR factors")
        m = check_size(m, "m", nbytes=lambda v: v * d * 32, what=f"for the ({d}, m) bases and their QR factors")
        if m % d:
            raise ValueError(
                f"m must be a multiple of d for a union of orthonormal bases; got m={m}, d={d}"
            )
        rng = as_generator(random_state)
        q, r = np.linalg.qr(rng.standard_normal((m // d, d, d)))
        signs = np.sign(np.diagonal(r, axis1=-2, axis2=-1))
        signs[signs == 0.0] = 1.0
        q *= signs[:, np.newaxis, :]
        # q[b] is the block B_{b+1}: Omega[i, b*d + k] = q[b, i, k]
        return np.ascontiguousarray(q.transpose(1, 0, 2).reshape(d, m))


_LAWS = {
    law.name: law
    for law in (
        GaussianLaw,
        AdaptedRadiusLaw,
        FoldedGaussianLaw,
        LogUniformLaw,
        QuadraticGaussianLaw,
        OrthonormalBasesLaw,
    )
}
_KERNEL_LAW_NAMES = ("gaussian", "adapted_radius", "folded_gaussian", "log_uniform")


def make_law(law, sigma=None):
    """A frequency law from an instance or a name (for estimators).

    Parameters
    ----------
    law : FrequencyLaw or {"gaussian", "adapted_radius", "folded_gaussian", "log_uniform"}
        A law instance, returned as is, or the name of a kernel law, built with `sigma`
        (and its default normalization or band).
    sigma : float, optional
        The kernel scale: required with a name, and must be None with an instance (which
        carries its own parameters).

    Returns
    -------
    FrequencyLaw

    Raises
    ------
    TypeError
        If `law` is neither a FrequencyLaw nor a str.
    ValueError
        If `law` is an unknown name, a name comes without `sigma`, or an instance comes
        with one (and as `KernelLaw` for an invalid `sigma`).

    Examples
    --------
    >>> import pysketch
    >>> pysketch.make_law("adapted_radius", sigma=0.5)
    AdaptedRadiusLaw(sigma=0.5, normalization='dimension')
    >>> pysketch.make_law(pysketch.GaussianLaw(1.0))
    GaussianLaw(sigma=1.0)
    """
    if isinstance(law, FrequencyLaw):
        if sigma is not None:
            raise ValueError(
                f"sigma must be None when law is a FrequencyLaw instance ({law!r} carries its "
                f"own parameters); got sigma={sigma!r}"
            )
        return law
    if not isinstance(law, str):
        raise TypeError(
            f"law must be a FrequencyLaw instance or one of {_KERNEL_LAW_NAMES}; got {law!r} "
            f"of type {type(law).__name__}"
        )
    if law not in _KERNEL_LAW_NAMES:
        raise ValueError(
            f"law must be a FrequencyLaw instance or one of {_KERNEL_LAW_NAMES}; got {law!r}"
        )
    if sigma is None:
        raise ValueError(f"sigma (the kernel scale) is required with law={law!r}")
    return _LAWS[law](sigma)
