r"""Private sketches: the sum of features and the count, released with calibrated noise.

:func:`make_private` turns a clean :class:`~pysketch.Sketch` into a
:class:`PrivateSketch` ([P] Lemmas 4 and 10; thesis Lemmas 8.2 and 8.10; notes seed000
sec. 3.3):

- ``neighbouring='add_remove'`` (unbounded DP, n private): the sum gets noise for
  ``gamma * epsilon`` and the count discrete Laplace noise of scale
  ``1 / ((1 - gamma) epsilon)`` (sensitivity 1; delta is not split, the count needs
  none); gamma minimizes the noise-to-signal ratio numerically at a public size
  (:func:`~pysketch.privacy.nsr.budget_split`). The estimate of the mean sketch is
  ``(sum + xi) / max(n + zeta, 1)``.
- ``neighbouring='replace'`` (bounded DP, n public): the whole epsilon goes to the sum,
  with the doubled sensitivity; the mean is ``(sum + xi) / n``.

The mechanism is Laplace for delta = 0 and the analytic Gaussian for delta > 0
(``mechanism='auto'``). A PrivateSketch never holds the clean sum: it is a Sketch whose
``sum`` and ``count`` are the noisy ones, with a record of epsilon, delta, the relation,
the mechanism and its scales. It saves and loads like a sketch (format
``pysketch.private_sketch``), and decoders and ``fit_sketch`` take it as they take a
Sketch.
"""

import numbers

import numpy as np

from ..sketch import Sketch, SketchFileError, _map_from
from .accountant import charge
from fractions import Fraction

from .mechanisms import Gaussian, Laplace, _check_delta, _check_epsilon, _discrete_laplace_one, noise_source
from .nsr import DEFAULT_C0, budget_split, n0
from .sensitivity import NEIGHBOURING, sum_sensitivity

__all__ = ["PrivateSketch", "make_private", "PRIVATE_FORMAT_NAME"]

PRIVATE_FORMAT_NAME = "pysketch.private_sketch"
#: NSR_max used to pick the public size at which the budget split is optimized when no
#: lower bound on n is given (notes sec. 5: n0 = m max(1/NSR_max, 1/(eps sqrt NSR_max))).
DEFAULT_NSR_MAX = 0.01


class PrivateSketch(Sketch):
    """A differentially private sketch (noisy sum and count) with its privacy record.

    Attributes
    ----------
    sum : ndarray
        Sum of the features plus noise.
    count : int
        Noisy count (add/remove) or the public count (replace).
    privacy : dict
        epsilon, delta, neighbouring, mechanism, epsilon_sum, epsilon_count,
        sensitivity_sum, noise_scale_sum (b or sigma per real coordinate),
        noise_scale_count, secure_noise.
    """

    def __init__(self, feature_map, sum, count, privacy, *, subsampling=None):
        if isinstance(count, (bool, np.bool_)) or not isinstance(count, numbers.Integral):
            raise ValueError(f"count must be an integer, got {count!r}")
        Sketch.__init__(self, feature_map, sum, 0, subsampling=subsampling)
        self.count = int(count)  # may be <= 0 after noise
        self.privacy = dict(privacy)

    @property
    def epsilon(self):
        return self.privacy["epsilon"]

    @property
    def delta(self):
        return self.privacy["delta"]

    def mean(self):
        """(sum + xi) / max(n + zeta, 1)."""
        return self.sum / max(self.count, 1)

    def __add__(self, other):
        raise TypeError("private sketches are not merged by '+': merge the clean parts before make_private, "
                        "or combine private releases explicitly (their noises add up)")

    __radd__ = __add__

    def __repr__(self):
        p = self.privacy
        return (f"PrivateSketch(count~{self.count}, epsilon={p['epsilon']:g}, delta={p['delta']:g}, "
                f"{p['neighbouring']}, {p['mechanism']}, {self.feature_map!r})")

    _FORMAT = PRIVATE_FORMAT_NAME

    def _extra_meta(self):
        return {"privacy": self.privacy}

    @classmethod
    def _from_contents(cls, path, meta, contents):
        try:
            return cls(_map_from(meta, contents), contents["sum"], meta["count"], meta["privacy"],
                       subsampling=meta.get("subsampling"))
        except (KeyError, TypeError, ValueError) as exc:
            raise SketchFileError(f"{path}: inconsistent private sketch file ({exc})") from exc


def _check_relation(neighbouring):
    if neighbouring not in NEIGHBOURING:
        raise ValueError(f"neighbouring must be one of {NEIGHBOURING}, got {neighbouring!r}")


def make_private(sketch, epsilon, delta=0.0, *, neighbouring="add_remove", mechanism="auto", split=None,
                 n_lower=None, sensitivity=None, features_per_record=None, data_norm=None, accountant=None,
                 data_fraction=None, insecure_seed=None):
    """Release `sketch` with (epsilon, delta)-differential privacy.

    Parameters
    ----------
    sketch : Sketch
        The clean sketch (never stored in the result).
    epsilon : float > 0
    delta : float in [0, 1)
    neighbouring : {'add_remove', 'replace'}
    mechanism : {'auto', 'laplace', 'gaussian'}
        'auto': Laplace if delta == 0, else the analytic Gaussian.
    split : float in (0, 1), optional
        Share gamma of epsilon for the sum under add/remove (the count gets 1 - gamma).
        Default: minimize the NSR at n = n_lower (or at n0(m, epsilon), notes sec. 5).
    n_lower : float, optional
        A public lower bound on n, used only to choose the split.
    sensitivity : float, optional
        Your own bound on the sum's sensitivity (L1 for Laplace, L2 for Gaussian) under
        `neighbouring`, for custom maps; default: the closed form of
        :func:`~pysketch.privacy.sensitivity.sum_sensitivity`.
    features_per_record, data_norm : see ``sum_sensitivity``.
    accountant : BudgetAccountant or diffprivlib BudgetAccountant, optional
        Charged (epsilon, delta) before any noise is drawn; refuses an overspend.
    data_fraction : float in (0, 1], optional
        The sketch was made from a secret Poisson subsample of the data keeping each record
        with this probability (pysketch.privacy.subsampling.poisson_subsample): the noise is
        calibrated at eps' = log(1 + (e^eps - 1)/beta), delta' = delta/beta, so that the
        release is (epsilon, delta)-DP for the whole dataset (amplification, add/remove
        only). The mean is that of the subsample.
    insecure_seed : None or int
        None: noise from OS entropy. An int: reproducible, **insecure** noise (tests).
    """
    if isinstance(sketch, PrivateSketch):
        raise TypeError("sketch is already private")
    if not isinstance(sketch, Sketch):
        raise TypeError(f"sketch must be a pysketch.Sketch, got {type(sketch).__name__}")
    epsilon = _check_epsilon(epsilon)
    delta = _check_delta(delta, positive=False)
    _check_relation(neighbouring)
    if mechanism not in ("auto", "laplace", "gaussian"):
        raise ValueError(f"mechanism must be 'auto', 'laplace' or 'gaussian', got {mechanism!r}")
    if mechanism == "auto":
        mechanism = "laplace" if delta == 0 else "gaussian"
    if mechanism == "gaussian" and delta == 0:
        raise ValueError("mechanism='gaussian' needs delta > 0")
    if mechanism == "laplace":
        delta = 0.0  # Laplace is pure epsilon-DP: no delta is spent
    fm = sketch.feature_map
    m = fm.m
    if split is not None:
        if isinstance(split, (bool, np.bool_)) or not isinstance(split, numbers.Real) or not 0 < split < 1:
            raise ValueError(f"split must be a number in (0, 1), got {split!r}")
    if n_lower is not None and (not isinstance(n_lower, numbers.Real) or not n_lower >= 1):
        raise ValueError(f"n_lower must be a number >= 1, got {n_lower!r}")
    norm = 1 if mechanism == "laplace" else 2
    sub = sketch.subsampling
    if sub is not None and features_per_record is None:
        features_per_record = sub["r"]
    if sub is not None and sub["scheme"] == "bernoulli" and sensitivity is None:
        # a random number of features per record: [P] Lemma 15 gives more noise than the
        # exactly-r tables (notes sec. 4.4); not implemented as a closed form here
        raise ValueError("sketches with Bernoulli feature masks need an explicit sensitivity (the exactly-r "
                         "closed forms do not apply); use scheme='uniform' or 'blocks'")
    if sensitivity is None:
        sensitivity = sum_sensitivity(fm, norm, neighbouring, features_per_record=features_per_record,
                                      data_norm=data_norm)
    if neighbouring == "replace":
        gamma = 1.0
    elif split is not None:
        gamma = float(split)
    else:
        n_ref = n_lower if n_lower is not None else n0(m, epsilon, DEFAULT_NSR_MAX)
        gamma = budget_split(m, epsilon, n_ref, delta=delta, mechanism=mechanism,
                             features_per_record=features_per_record, c0=DEFAULT_C0)
    charge(accountant, epsilon, delta, "make_private")
    source = noise_source(insecure_seed)
    target_epsilon, target_delta = epsilon, delta
    if data_fraction is not None:
        from .subsampling import epsilon_before_subsampling

        if neighbouring != "add_remove":
            raise ValueError("data_fraction (Poisson subsampling amplification) is for neighbouring='add_remove'")
        epsilon = epsilon_before_subsampling(epsilon, data_fraction)
        delta = delta / data_fraction
        if delta >= 1:
            raise ValueError(f"delta / data_fraction = {delta} must be < 1")
    eps_count = epsilon - gamma * epsilon if neighbouring == "add_remove" else 0.0
    count = noisy_count(sketch.count, eps_count, source) if eps_count > 0 else sketch.count
    out = release_sum(sketch, count, epsilon=epsilon, delta=delta, neighbouring=neighbouring, mechanism=mechanism,
                      epsilon_sum=epsilon - eps_count, epsilon_count=eps_count, sensitivity=sensitivity,
                      features_per_record=features_per_record, source=source)
    if data_fraction is not None:  # the guarantee for the whole dataset, after amplification
        out.privacy.update(epsilon=float(target_epsilon), delta=float(target_delta), data_fraction=float(data_fraction),
                           epsilon_before_amplification=float(epsilon), delta_before_amplification=float(delta))
    return out


def noisy_count(n, epsilon_count, source):
    """n + discrete Laplace noise of scale 1/epsilon_count (sensitivity 1 under add/remove)."""
    t = Fraction(1) / Fraction(float(epsilon_count))
    return int(n) + _discrete_laplace_one(source, t.numerator, t.denominator)


def release_sum(sketch, count, *, epsilon, delta, neighbouring, mechanism, epsilon_sum, epsilon_count, sensitivity,
                features_per_record, source):
    """The PrivateSketch of `sketch` with its sum noised for `epsilon_sum` and the given
    (already noisy, or public) count. The caller has charged the budget."""
    if mechanism == "laplace":
        mech = Laplace(epsilon_sum, sensitivity, insecure_seed=source)
    else:
        mech = Gaussian(epsilon_sum, delta, sensitivity, insecure_seed=source)
    noisy = mech.randomise(sketch.sum)
    privacy = {
        "epsilon": float(epsilon), "delta": float(delta), "neighbouring": neighbouring, "mechanism": mechanism,
        "epsilon_sum": float(epsilon_sum), "epsilon_count": float(epsilon_count),
        "sensitivity_sum": float(sensitivity), "sensitivity_norm": 1 if mechanism == "laplace" else 2,
        "noise_scale_sum": float(mech.effective_scale_),
        "noise_scale_count": 1.0 / epsilon_count if epsilon_count > 0 else 0.0,
        "features_per_record": features_per_record, "secure_noise": bool(source.secure),
    }
    return PrivateSketch(sketch.feature_map, noisy, count, privacy, subsampling=sketch.subsampling)
