r"""Sensitivities of the sum of features Sigma(X) = sum_i Phi(x_i), for every feature map.

The sensitivity of a query is the largest change of its value between two neighbouring
datasets, in the L1 norm (Laplace mechanism) or the L2 norm (Gaussian mechanism). Two
neighbouring relations (Chatalic et al., "Compressive learning with privacy guarantees",
Inf. Inference 2022 [P], Def. 7 and 9-10):

- ``'add_remove'`` (unbounded DP): the datasets differ by one record added or removed;
  the count n is private too and gets its own noise (sensitivity 1);
- ``'replace'`` (bounded DP): same size, one record replaced; n is public.

A complex sum is measured as the real vector of its real and imaginary parts (``||z||_1
= ||Re z||_1 + ||Im z||_1``), which is also what the ``'real'`` map
[cos; sin] computes, so both have the same constants. With feature subsampling (each
record contributes exactly ``r`` of the m features, the sum rescaled by m/r; [P]
Sec. 5) the values are those of [P] Table 2 / the thesis Table 8.2.

=====================  ==================  ===================  =================  ==================
map                    L1, add/remove      L1, replace          L2, add/remove     L2, replace
=====================  ==================  ===================  =================  ==================
Fourier                sqrt(2) m           2 sqrt(2) m          sqrt(m)            2 sqrt(m)
 (r of m)              sqrt(2) m           2 sqrt(2) m          m / sqrt(r)        2 m / sqrt(r)
quadratic, ||x||<=R    R^2 ||Omega||_2^2   2 R^2 ||Omega||_2^2  R^2 S4(Omega)      sqrt(2) R^2 S4
 (r of m)              R^2 (m/r)||Om||^2   2x that              R^2 (m/r) S4       sqrt(2)x that
=====================  ==================  ===================  =================  ==================

Fourier maps ('complex', 'real', 'quantized'): [P] Lemma 7 (L1, equality for
nonresonant frequencies; for quantized features the L1 norm is sqrt(2) m for every
record), Lemma 11 (L2, exact), Lemma 12 and 17 (replace), Lemma 18 and 24
(subsampling); pysketch.features.FourierMap states them. These hold for any frequencies and any data domain (abs(Phi_j(x)) = 1).

Quadratic map (compressive PCA; needs records in a public ball ||x||_2 <= R, given as
``data_norm``): [P] Lemma 9 (L1 = R^2 lambda_max(Omega Omega^T), exact; computed from
the d x d Gram matrix by a symmetric eigensolver and enlarged by a bound on its
rounding error, so it is a certified upper bound, never the under-estimate of a power
iteration) and Lemma 13 (L2 = R^2 S4(Omega), NP-hard; bounded above by
Riesz-Thorin, S4^2 <= ||Omega||_2^2 max_j ||omega_j||^2, thesis eq. (8.9); lower bounds
would not be private); pysketch.features.QuadraticMap states them,
with the bounds ``quadratic_spectral_bound`` and ``quadratic_s4_bound``. Replace: [P] Table 1
gives the add/remove values ("Phi >= 0 and Phi(0) = 0"), which is wrong: x = omega_1 and
y = omega_2 of one orthonormal basis move the sum by e_1 - e_2 (L1 = 2, L2 = sqrt 2 at R = 1);
for features >= 0 the replace values are at most 2x (L1) and sqrt(2)x (L2) the add/remove
ones (tests/test_quadratic.py). With subsampling, sup over masks of
||Omega_h||_2 <= ||Omega||_2 (a sub-matrix), so the (m/r) bounds above hold.
"""

from .._checks import NEIGHBOURING, check_relation
from .._state import FEATURE_MAPS
from ..features import quadratic_s4_bound, quadratic_spectral_bound

__all__ = ["NEIGHBOURING", "sum_sensitivity", "count_sensitivity", "quadratic_spectral_bound",
           "quadratic_s4_bound"]


def sum_sensitivity(feature_map, norm, neighbouring="add_remove", *, features_per_record=None, data_norm=None):
    """Sensitivity of the sum of features of `feature_map` (see the module table): the
    map's own (``FeatureMap.sensitivity``; each map states its sensitivities).

    Parameters
    ----------
    feature_map : FeatureMap
    norm : {1, 2}
    neighbouring : {'add_remove', 'replace'}
    features_per_record : int, optional
        r, with feature subsampling (each record contributes exactly r of the m
        features, rescaled by m/r). None: all m features.
    data_norm : float, optional
        R with ||x||_2 <= R for every record (public). Required for quadratic features,
        not used for Fourier features (their sensitivity does not depend on the data).

    Returns
    -------
    float
        The sensitivity in the norm `norm` under `neighbouring` (module table).

    Raises
    ------
    TypeError
        When `feature_map` is not a FeatureMap.
    ValueError
        From the map: `norm` not 1 or 2, an unknown relation, `features_per_record` not
        an int in [1, m], or a quadratic map with no public radius.

    Examples
    --------
    >>> from pysketch.features import FeatureMap
    >>> from pysketch.operators import make_operator
    >>> from pysketch.privacy import sum_sensitivity
    >>> fm = FeatureMap(make_operator(2, 100, random_state=0), "complex")
    >>> round(sum_sensitivity(fm, 1), 3), sum_sensitivity(fm, 2), sum_sensitivity(fm, 2, "replace")
    (141.421, 10.0, 20.0)
    >>> sum_sensitivity(fm, 2, features_per_record=25)  # m / sqrt(r)
    20.0
    """
    FEATURE_MAPS.check(feature_map, "feature_map")
    return feature_map.sensitivity(norm, neighbouring, features_per_record=features_per_record, data_norm=data_norm)


def count_sensitivity(neighbouring="add_remove"):
    """Sensitivity of the count n of X (L1 = L2): 1 under add/remove, 0 under replace (n is
    public there).

    Parameters
    ----------
    neighbouring : {'add_remove', 'replace'}, default 'add_remove'

    Returns
    -------
    float
        1.0 or 0.0.

    Raises
    ------
    ValueError
        For any other relation.

    Examples
    --------
    >>> from pysketch.privacy import count_sensitivity
    >>> count_sensitivity(), count_sensitivity("replace")
    (1.0, 0.0)
    """
    check_relation(neighbouring)
    return 1.0 if neighbouring == "add_remove" else 0.0
