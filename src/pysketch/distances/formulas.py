r"""Exact moments of the private squared-distance estimators (Stausholm, "Improved
differentially private Euclidean distance approximation", 2021, Sec. 5-6: Lemmas 3 and 10, Corollary 1).

For releases a = S x + eta and b = S y + mu with zero-mean i.i.d. noise of second and
fourth moments m2, m4 (the same law on both sides) and z = x - y, Z2 = ||z||_2^2,
Z4 = ||z||_4^4, Lemma 3 of the paper (exact) gives

    E[||a - b||^2] - 2 k m2 = Z2  (unbiased over S and the noise),
    Var = Var_S[||S z||^2] + 8 m2 Z2 + 2 k (m4 + m2^2),

with Var_S = (2/k)(Z2^2 - Z4) for the sparse JL transforms (the exact value behind
Lemma 10; any s), (2/k) Z2^2 for the Gaussian JL with N(0, 1/k) entries, and for the
normalized FJLT (2/k) Z2^2 + (3/(d k))(1/q - 1)(3 Z2^2 - 2 Z4) (derived from the
construction of Sec. 5.1, checked by Monte Carlo in the tests).
With unequal noise laws the correction is k (m2_a + m2_b) and the variance is the
heterogeneous form of the same derivation. The paper's Theorem 3 prints the Laplace correction as 2 k s /
epsilon^2; with Lap(sqrt(s)/epsilon), m2 = 2 s / epsilon^2 and the correction is 4 k s /
epsilon^2 (erratum; tests/test_distances.py shows the printed one biased by 2ks/eps^2).
"""

import math

__all__ = ["laplace_moments", "gaussian_moments", "estimator_variance", "conditional_variance", "jl_variance",
           "fjlt_input_variance", "optimal_k", "PRINTED_THEOREM3_CORRECTION"]


def laplace_moments(b):
    """(m2, m4) of Laplace noise of scale b: 2 b^2, 24 b^4.

    Parameters
    ----------
    b : float
        The Laplace scale (not checked).

    Returns
    -------
    (float, float)
        The second and fourth moments of one noise coordinate.

    Examples
    --------
    >>> from pysketch.distances.formulas import laplace_moments
    >>> laplace_moments(1.0)
    (2.0, 24.0)
    """
    return 2.0 * b * b, 24.0 * b ** 4


def gaussian_moments(sigma):
    """(m2, m4) of N(0, sigma^2): sigma^2, 3 sigma^4.

    Parameters
    ----------
    sigma : float
        The standard deviation (not checked).

    Returns
    -------
    (float, float)
        The second and fourth moments of one noise coordinate.

    Examples
    --------
    >>> from pysketch.distances.formulas import gaussian_moments
    >>> gaussian_moments(2.0)
    (4.0, 48.0)
    """
    return sigma * sigma, 3.0 * sigma ** 4


def jl_variance(construction, k, Z2, Z4, *, d=None, q=None):
    """Var_S[||S z||^2] over the draw of S: 'sjlt' (block or graph, any s), 'gaussian'
    (N(0, 1/k) entries) or 'fjlt' (normalized, pad length d and density q).

    Parameters
    ----------
    construction : {'sjlt', 'gaussian', 'fjlt'}
        The family of S.
    k : int
        The sketch length.
    Z2 : float
        ||z||_2^2, z = x - y.
    Z4 : float
        ||z||_4^4 (not used for 'gaussian').
    d : int, optional
        'fjlt' only: the pad length d_p (required there).
    q : float, optional
        'fjlt' only: the density of its sparse projection (required there).

    Returns
    -------
    float

    Raises
    ------
    ValueError
        For another construction.

    Examples
    --------
    >>> from pysketch.distances.formulas import jl_variance
    >>> round(jl_variance("sjlt", 100, 4.0, 2.0), 12), round(jl_variance("gaussian", 100, 4.0, 2.0), 12)
    (0.28, 0.32)
    """
    if construction == "sjlt":
        return 2.0 / k * (Z2 * Z2 - Z4)
    if construction == "gaussian":
        return 2.0 / k * Z2 * Z2
    if construction == "fjlt":
        return 2.0 / k * Z2 * Z2 + 3.0 / (d * k) * (1.0 / q - 1.0) * (3.0 * Z2 * Z2 - 2.0 * Z4)
    raise ValueError(f"construction must be 'sjlt', 'gaussian' or 'fjlt', got {construction!r}")


def estimator_variance(k, Z2, m2, m4, var_s, m2_other=None, m4_other=None):
    """Var of ||a - b||^2 - k (m2 + m2_other) over S and the noise (Lemma 3; the
    heterogeneous form when the other release's moments differ).

    Parameters
    ----------
    k : int
        The sketch length (the number of noised coordinates).
    Z2 : float
        ||x - y||_2^2.
    m2, m4 : float
        The noise moments of the first release (:func:`laplace_moments`,
        :func:`gaussian_moments`).
    var_s : float
        Var_S[||S z||^2] (:func:`jl_variance`); 0 for the noise terms alone.
    m2_other, m4_other : float, optional
        The other release's moments; None (both): the same law as the first.

    Returns
    -------
    float

    Examples
    --------
    >>> from pysketch.distances.formulas import estimator_variance, jl_variance, laplace_moments
    >>> m2, m4 = laplace_moments(1.0)
    >>> round(estimator_variance(100, 4.0, m2, m4, jl_variance("sjlt", 100, 4.0, 2.0)), 6)
    5664.28
    """
    if m2_other is None:
        return var_s + 8.0 * m2 * Z2 + 2.0 * k * (m4 + m2 * m2)
    s2 = m2 + m2_other
    return var_s + 4.0 * s2 * Z2 + k * (m4 + m4_other + 4.0 * m2 * m2_other - m2 * m2 - m2_other * m2_other)


def conditional_variance(k, SZ2, m2, m4):
    """Var over the noise only, S fixed: 8 m2 ||S z||^2 + 2 k (m4 + m2^2); the mean is
    then ||S z||^2.

    Parameters
    ----------
    k : int
        The sketch length.
    SZ2 : float
        ||S (x - y)||^2 for the fixed S.
    m2, m4 : float
        The noise moments (one law for both releases).

    Returns
    -------
    float

    Examples
    --------
    >>> from pysketch.distances.formulas import conditional_variance, laplace_moments
    >>> conditional_variance(100, 4.0, *laplace_moments(1.0))
    5664.0
    """
    return 8.0 * m2 * SZ2 + 2.0 * k * (m4 + m2 * m2)


def fjlt_input_variance(k, d, q, Z2, Z4, sigma):
    """Exact variance of the input-perturbed FJLT estimator (1/k)||Phi(x + eta) -
    Phi(y + mu)||^2 - 2 d sigma^2 (input perturbation, Stausholm 2021, Lemma 8;
    the variance derived here, checked by Monte Carlo in the tests).

    Parameters
    ----------
    k : int
        The sketch length.
    d : int
        The number of noised input coordinates (d_p for noise on the rotated input).
    q : float
        The density of the FJLT's sparse projection.
    Z2, Z4 : float
        ||x - y||_2^2 and ||x - y||_4^4.
    sigma : float
        The Gaussian noise's standard deviation per input coordinate.

    Returns
    -------
    float

    Examples
    --------
    >>> from pysketch.distances.formulas import fjlt_input_variance
    >>> round(fjlt_input_variance(64, 128, 0.1, 4.0, 2.0, 0.5), 6)
    264.45752
    """
    tau2 = 2.0 * sigma * sigma
    c1 = 2.0 / k + 9.0 / (d * k) * (1.0 / q - 1.0)
    c2 = 6.0 / (d * k) * (1.0 / q - 1.0)
    A = Z2 + d * tau2
    V = 4.0 * tau2 * Z2 + 2.0 * d * tau2 * tau2
    E4 = Z4 + 6.0 * tau2 * Z2 + 3.0 * d * tau2 * tau2
    return c1 * (V + A * A) - c2 * E4 + V


def optimal_k(Z2, m2, m4):
    """k* = Z2 / sqrt(m4 + m2^2), minimizing (2/k) Z2^2 + 2 k (m4 + m2^2) (Stausholm 2021,
    Sec. 6.2.1):
    no single k is optimal for every distance; Z2 is a typical squared distance.

    Parameters
    ----------
    Z2 : float
        A typical squared distance ||x - y||^2.
    m2, m4 : float
        The noise moments.

    Returns
    -------
    float
        k*, not rounded.

    Examples
    --------
    >>> from pysketch.distances.formulas import laplace_moments, optimal_k
    >>> round(optimal_k(100.0, *laplace_moments(1.0)), 2)
    18.9
    """
    return Z2 / math.sqrt(m4 + m2 * m2)


def PRINTED_THEOREM3_CORRECTION(k, s, epsilon):
    """The bias correction as printed in the paper's Theorem 3, 2 k s / epsilon^2 (wrong by
    a factor 2 for Lap(sqrt(s)/epsilon); kept for the regression test only).

    Parameters
    ----------
    k : int
        The sketch length.
    s : int
        The nonzeros per column of S.
    epsilon : float
        The release's epsilon.

    Returns
    -------
    float

    Examples
    --------
    >>> from pysketch.distances.formulas import PRINTED_THEOREM3_CORRECTION, laplace_moments
    >>> k, s, epsilon = 100, 4, 1.0
    >>> PRINTED_THEOREM3_CORRECTION(k, s, epsilon), 2 * k * laplace_moments(s ** 0.5 / epsilon)[0]  # printed, exact
    (800.0, 1600.0)
    """
    return 2.0 * k * s / epsilon ** 2
