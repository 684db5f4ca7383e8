r"""Sensitivities of the sum of features Sigma(X) = sum_i Phi(x_i), for every feature map.

The sensitivity of a query is the largest change of its value between two neighbouring
datasets, in the L1 norm (Laplace mechanism) or the L2 norm (Gaussian mechanism). Two
neighbouring relations (Chatalic et al., "Compressive learning with privacy guarantees",
Inf. Inference 2022 [P], Def. 9-10; notes seed000 sec. 1.4):

- ``'add_remove'`` (unbounded DP): the datasets differ by one record added or removed;
  the count n is private too and gets its own noise (sensitivity 1);
- ``'replace'`` (bounded DP): same size, one record replaced; n is public.

A complex sum is measured as the real vector of its real and imaginary parts (``||z||_1
= ||Re z||_1 + ||Im z||_1``, notes pitfall 1), which is also what the ``'real'`` map
[cos; sin] computes, so both have the same constants. With feature subsampling (each
record contributes exactly ``r`` of the m features, the sum rescaled by m/r; notes sec.
4) the values are those of [P] Table 2 / the thesis Table 8.2.

=================  ================  =================  =================  ==================
map                L1, add/remove    L1, replace        L2, add/remove     L2, replace
=================  ================  =================  =================  ==================
Fourier            sqrt(2) m         2 sqrt(2) m        sqrt(m)            2 sqrt(m)
 (r of m)          sqrt(2) m         2 sqrt(2) m        m / sqrt(r)        2 m / sqrt(r)
quadratic, |x|<=R  R^2 |Omega|_2^2   R^2 |Omega|_2^2    R^2 S4(Omega)      R^2 S4(Omega)
 (r of m)          R^2 (m/r)|Om|^2   same               R^2 (m/r) S4       same
=================  ================  =================  =================  ==================

Fourier maps ('complex', 'real', 'quantized'): [P] Lemma 7 (L1, equality for
nonresonant frequencies; for quantized features the L1 norm is sqrt(2) m for every
record), Lemma 11 (L2, exact), Lemma 12 and 17 (replace), Lemma 18 and 24
(subsampling). These hold for any frequencies and any data domain (|Phi_j(x)| = 1).

Quadratic map (compressive PCA; needs records in a public ball ||x||_2 <= R, given as
``data_norm``): [P] Lemma 9 (L1 = R^2 lambda_max(Omega Omega^T), exact; computed from
the d x d Gram matrix by a symmetric eigensolver and enlarged by a bound on its
rounding error, so it is a certified upper bound, never the under-estimate of a power
iteration, notes pitfall 12) and Lemma 13 (L2 = R^2 S4(Omega), NP-hard; bounded above by
Riesz-Thorin, S4^2 <= ||Omega||_2^2 max_j ||omega_j||^2, thesis eq. (8.9); lower bounds
would not be private, notes pitfall 13). With subsampling, sup over masks of
||Omega_h||_2 <= ||Omega||_2 (a sub-matrix), so the (m/r) bounds above hold.
"""

import math
import numbers

import numpy as np

from ..features import FeatureMap

__all__ = ["NEIGHBOURING", "sum_sensitivity", "count_sensitivity", "quadratic_spectral_bound",
           "quadratic_s4_bound"]

NEIGHBOURING = ("add_remove", "replace")
_EPS = 2.0 ** -52


def _check_relation(neighbouring):
    if neighbouring not in NEIGHBOURING:
        raise ValueError(f"neighbouring must be one of {NEIGHBOURING}, got {neighbouring!r}")


def _check_r(r, m):
    if r is None:
        return m
    if isinstance(r, (bool, np.bool_)) or not isinstance(r, numbers.Integral) or not 1 <= r <= m:
        raise ValueError(f"features_per_record must be an int in [1, m={m}], got {r!r}")
    return int(r)


def quadratic_spectral_bound(omega):
    """A certified upper bound on ||Omega||_2^2 = lambda_max(Omega Omega^T) (d x m
    Omega): the largest eigenvalue of the float64 Gram matrix plus bounds on the error of
    forming it (m u ||Omega||_F^2 entrywise, d times that in the spectral norm) and of
    the eigensolver (backward stable: a few d u ||G||_F)."""
    W = np.asarray(omega, dtype=np.float64)
    d, m = W.shape
    G = W @ W.T
    fro2 = float(np.sum(W * W))
    lam = float(np.linalg.eigvalsh(G)[-1])
    gram_err = (m + 2) * _EPS * fro2 * d
    eig_err = 64 * d * _EPS * float(np.linalg.norm(G))
    return lam + gram_err + eig_err


def quadratic_s4_bound(omega):
    """An upper bound on S4(Omega) = (sup_{|x|<=1} sum_j (omega_j^T x)^4)^(1/2) by
    Riesz-Thorin (thesis eq. (8.9)): S4^2 <= ||Omega||_2^2 max_j ||omega_j||_2^2."""
    W = np.asarray(omega, dtype=np.float64)
    col = float(np.max(np.sum(W * W, axis=0))) * (1 + 4 * W.shape[0] * _EPS)
    return math.sqrt(quadratic_spectral_bound(W) * col)


def sum_sensitivity(feature_map, norm, neighbouring="add_remove", *, features_per_record=None, data_norm=None):
    """Sensitivity of the sum of features of `feature_map` (see the module table).

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
    """
    if not isinstance(feature_map, FeatureMap):
        raise TypeError(f"feature_map must be a FeatureMap, got {type(feature_map).__name__}")
    if norm not in (1, 2):
        raise ValueError(f"norm must be 1 or 2, got {norm!r}")
    _check_relation(neighbouring)
    m = feature_map.m
    r = _check_r(features_per_record, m)
    factor = 2.0 if neighbouring == "replace" else 1.0
    if feature_map.kind in ("complex", "real", "quantized"):
        if norm == 1:
            return factor * math.sqrt(2.0) * m
        return factor * m / math.sqrt(r)
    # quadratic
    if data_norm is None:
        raise ValueError("quadratic features need data_norm: a public bound R on ||x||_2 of every record")
    if isinstance(data_norm, (bool, np.bool_)) or not isinstance(data_norm, numbers.Real) or not (
            math.isfinite(data_norm) and data_norm > 0):
        raise ValueError(f"data_norm must be a positive finite number, got {data_norm!r}")
    W = feature_map.operator.to_dense()
    base = quadratic_spectral_bound(W) if norm == 1 else quadratic_s4_bound(W)
    # Phi >= 0 and Phi(0) = 0 with 0 in the ball: replace is no worse than add/remove ([P] Table 1)
    return float(data_norm) ** 2 * (m / r) * base


def count_sensitivity(neighbouring="add_remove"):
    """Sensitivity of the count |X| (L1 = L2): 1 under add/remove, 0 under replace (n is
    public there)."""
    _check_relation(neighbouring)
    return 1.0 if neighbouring == "add_remove" else 0.0
