r"""The one private-release path: a budget plan, the noisy count, the noisy sums, the record.

Every private sketch is released here, by :func:`~pysketch.privacy.make_private` (in
:mod:`pysketch.privacy.budget`, a budget of one part) and by the estimators alike ([P] Lemmas 4 and 10; thesis Lemmas 8.2 and 8.10;
[P] eq. (26) for the size n0):

1. :func:`plan_release` fixes the mechanism (Laplace for delta = 0, the analytic
   Gaussian otherwise) and the budget split: under ``'add_remove'`` (n private) the sum
   gets ``gamma * epsilon`` and the count the rest, gamma minimizing the noise-to-signal
   ratio at a public size (:func:`~pysketch.privacy.nsr.budget_split`); under
   ``'replace'`` (n public) the whole epsilon goes to the sum;
2. :meth:`ReleasePlan.release_count` noises the count (discrete Laplace, sensitivity 1),
   or returns the public count;
3. :func:`release` noises the sums with the mechanism calibrated by the map's
   sensitivity (:func:`sketch_sensitivity`) and returns the
   :class:`~pysketch.privacy.PrivateSketch` with its :class:`PrivacyRecord`.

The caller charges the accountant before step 2.
"""

import dataclasses
import math
import numbers

import numpy as np

from .._checks import check_relation
from ..sketch import Sketch
from .mechanisms import (EPSILON_EXPONENT, Gaussian, Laplace, check_delta, check_epsilon,
                         noisy_count)
from .nsr import DEFAULT_C0, budget_split, budget_split_one_hot, n0
from .private_sketch import PrivacyRecord, PrivateSketch

__all__ = ["PrivacyRecord", "ReleasePlan", "plan_release", "plan_sketch_release", "release",
           "sketch_sensitivity", "DEFAULT_NSR_MAX"]

#: NSR_max used to pick the public size at which the budget split is optimized when no
#: lower bound on n is given ([P] eq. (26): n0 = m max(1/NSR_max, 1/(eps sqrt NSR_max))).
DEFAULT_NSR_MAX = 0.01
MECHANISMS = ("auto", "laplace", "gaussian")


@dataclasses.dataclass(frozen=True)
class ReleasePlan:
    """How a budget (epsilon, delta) is spent on a sketch under `neighbouring`: the
    mechanism and the split between the sum and the count.

    Made by :func:`plan_release` (which checks every value); frozen.

    Parameters
    ----------
    epsilon, delta : float
        The whole budget of the release (delta 0 for Laplace).
    neighbouring : {'add_remove', 'replace'}
    mechanism : {'laplace', 'gaussian'}
        The mechanism of the sum.
    epsilon_sum, epsilon_count : float
        The sum's and the count's shares of epsilon (epsilon_count 0 under 'replace').
    split : float in (0, 1]
        gamma, the sum's share of epsilon (1 under 'replace').

    Raises
    ------
    ValueError
        From ``with_budget``, when the sum's or the count's share of the new epsilon falls
        outside [2**-100, 2**100].

    Examples
    --------
    >>> from pysketch.privacy.release import plan_release
    >>> plan = plan_release(100, 1.0, neighbouring="replace")
    >>> plan.mechanism, plan.epsilon_sum, plan.epsilon_count, plan.sensitivity_norm
    ('laplace', 1.0, 0.0, 1)
    >>> plan.with_budget(2.0, 0.0).epsilon_sum
    2.0
    """

    epsilon: float
    delta: float
    neighbouring: str
    mechanism: str
    epsilon_sum: float
    epsilon_count: float
    split: float  # gamma: the sum's share of epsilon (1 under replace)

    def with_budget(self, epsilon, delta):
        """The same mechanism and split for another (epsilon, delta)."""
        eps_count = epsilon - self.split * epsilon if self.neighbouring == "add_remove" else 0.0
        eps_sum = epsilon - eps_count
        for part, value in (("sum", eps_sum), ("count", eps_count)):
            if value > 0 or part == "sum":
                try:
                    check_epsilon(value)
                except ValueError:  # a share outside the mechanisms' range: named by the user's arguments
                    raise ValueError(f"epsilon={epsilon!r} with split {self.split:.6g} gives the {part} an "
                                     f"epsilon of {value:.3g}, outside the supported range "
                                     f"[2**-{EPSILON_EXPONENT}, 2**{EPSILON_EXPONENT}]: use a larger epsilon "
                                     f"or a split nearer 1/2") from None
        return dataclasses.replace(self, epsilon=epsilon, delta=delta, epsilon_sum=eps_sum,
                                   epsilon_count=eps_count)

    @property
    def sensitivity_norm(self):
        return 1 if self.mechanism == "laplace" else 2

    def release_count(self, n, source):
        """The count to publish: n with discrete Laplace noise for epsilon_count under
        add/remove, n itself (public) under replace."""
        return noisy_count(n, self.epsilon_count, source) if self.epsilon_count > 0 else int(n)


def plan_sketch_release(sketch, epsilon, delta=0.0, *, neighbouring="add_remove", mechanism="auto", split=None,
                        n_lower=None, nsr_max=DEFAULT_NSR_MAX, features_per_record=None):
    """The ReleasePlan of `sketch` (make_private's): plan_release at its map's size, with the
    default split of a one-hot map of several blocks from that map's own sensitivity.

    Parameters
    ----------
    sketch : Sketch
        The clean sketch; its map's size m (and, for a one-hot map of several blocks, its
        number of blocks) sets the default split.
    epsilon, delta, neighbouring, mechanism, split, n_lower, nsr_max, features_per_record
        As for :func:`plan_release`.

    Returns
    -------
    ReleasePlan

    Raises
    ------
    ValueError
        As :func:`plan_release`.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.features import FeatureMap
    >>> from pysketch.operators import make_operator
    >>> from pysketch.privacy.release import plan_sketch_release
    >>> X = np.random.default_rng(0).normal(size=(1000, 2))
    >>> sketch = FeatureMap(make_operator(2, 50, random_state=0), "complex").sketch(X)
    >>> plan = plan_sketch_release(sketch, 1.0, n_lower=1000)
    >>> plan.mechanism, round(plan.split, 2)
    ('laplace', 0.97)
    """
    split = _one_hot_split(sketch.feature_map, epsilon, delta, neighbouring, mechanism, split, n_lower)
    return plan_release(sketch.feature_map.m, epsilon, delta, neighbouring=neighbouring, mechanism=mechanism,
                        split=split, n_lower=n_lower, nsr_max=nsr_max, features_per_record=features_per_record)


def _one_hot_split(fm, epsilon, delta, neighbouring, mechanism, split, n_lower):
    """The default split of a one-hot map of M2M (several blocks: HIST, RACE, MARGINALS) under
    add/remove: nsr.budget_split_one_hot, from the map's own sensitivity, for maps that set
    `one_hot_split` (the grid map of k-means keeps `budget_split`). Anything else, or a given split: unchanged (the
    arguments are checked by plan_release)."""
    blocks = getattr(fm, "n_blocks", None)
    if split is not None or neighbouring != "add_remove" or not getattr(fm, "one_hot_split", False) or blocks < 2:
        return split
    check_epsilon(epsilon)
    delta = check_delta(delta, positive=False)
    gaussian = mechanism == "gaussian" or (mechanism == "auto" and delta > 0)
    if n_lower is not None and (isinstance(n_lower, (bool, np.bool_)) or not isinstance(n_lower, numbers.Real)
                                or not 1 <= n_lower < math.inf):
        raise ValueError(f"n_lower must be a finite number >= 1, got {n_lower!r}")
    if gaussian and delta == 0:
        return split  # plan_release names the error
    return budget_split_one_hot(blocks, fm.m, epsilon, n_lower, delta=delta,
                                mechanism="gaussian" if gaussian else "laplace")


def plan_release(m, epsilon, delta=0.0, *, neighbouring="add_remove", mechanism="auto", split=None, n_lower=None,
                 nsr_max=DEFAULT_NSR_MAX, features_per_record=None):
    """The ReleasePlan of a sketch of m frequencies (arguments as in make_private; nsr_max
    sets the public size n0(m, epsilon, nsr_max) at which the split is optimized when
    n_lower is not given).

    Parameters
    ----------
    m : int
        The number of frequencies of the sketch.
    epsilon : float > 0
        Within [2**-100, 2**100].
    delta : float in [0, 1), default 0
    neighbouring : {'add_remove', 'replace'}, default 'add_remove'
    mechanism : {'auto', 'laplace', 'gaussian'}, default 'auto'
        'auto': Laplace when delta = 0, else the analytic Gaussian. Laplace spends no
        delta (the plan's delta is then 0).
    split : float in (0, 1), optional
        The sum's share of epsilon under 'add_remove'; default: the share that minimizes
        the noise-to-signal ratio (:func:`~pysketch.privacy.nsr.budget_split`). Checked,
        not used, under 'replace'.
    n_lower : float >= 1, optional
        A public lower bound on n, at which the default split is optimized.
    nsr_max : float > 0, default DEFAULT_NSR_MAX
        Without n_lower, the split is optimized at n0(m, epsilon, nsr_max)
        (:func:`~pysketch.privacy.nsr.n0`).
    features_per_record : int, optional
        r with feature subsampling (for the default split).

    Returns
    -------
    ReleasePlan

    Raises
    ------
    ValueError
        For an epsilon, delta, relation, mechanism, split or n_lower outside its range,
        'gaussian' with delta = 0, or a split that leaves the sum or the count an epsilon
        below 2**-100.

    Examples
    --------
    >>> from pysketch.privacy.release import plan_release
    >>> plan = plan_release(100, 1.0, 1e-6, n_lower=10_000)
    >>> plan.mechanism, round(plan.split, 2), round(plan.epsilon_sum + plan.epsilon_count, 12)
    ('gaussian', 0.96, 1.0)
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, positive=False)
    check_relation(neighbouring)
    if mechanism not in MECHANISMS:
        raise ValueError(f"mechanism must be 'auto', 'laplace' or 'gaussian', got {mechanism!r}")
    if mechanism == "auto":
        mechanism = "laplace" if delta == 0 else "gaussian"
    if mechanism == "gaussian" and delta == 0:
        raise ValueError("mechanism='gaussian' needs delta > 0")
    if mechanism == "laplace":
        delta = 0.0  # Laplace is pure epsilon-DP: no delta is spent
    if split is not None:
        if isinstance(split, (bool, np.bool_)) or not isinstance(split, numbers.Real) or not 0 < split < 1:
            raise ValueError(f"split must be a number in (0, 1), got {split!r}")
    if n_lower is not None and (isinstance(n_lower, (bool, np.bool_)) or not isinstance(n_lower, numbers.Real)
                                or not 1 <= n_lower < math.inf):
        raise ValueError(f"n_lower must be a finite number >= 1, got {n_lower!r}")
    if neighbouring == "replace":
        gamma = 1.0
    elif split is not None:
        gamma = float(split)
    else:
        n_ref = n_lower if n_lower is not None else n0(m, epsilon, nsr_max)
        gamma = budget_split(m, epsilon, n_ref, delta=delta, mechanism=mechanism,
                             features_per_record=features_per_record, c0=DEFAULT_C0)
    plan = ReleasePlan(epsilon=epsilon, delta=delta, neighbouring=neighbouring, mechanism=mechanism,
                       epsilon_sum=epsilon, epsilon_count=0.0, split=gamma)
    return plan.with_budget(epsilon, delta)


def sketch_sensitivity(sketch, norm, neighbouring, *, data_norm=None):
    """The sensitivity of `sketch`'s sum: its map's, with the features per record of its
    subsampling. Bernoulli masks (a random number of features per record) have no closed
    form here: ValueError (give the sensitivity yourself).

    Parameters
    ----------
    sketch : Sketch
        The clean sketch.
    norm : {1, 2}
        L1 (Laplace) or L2 (Gaussian).
    neighbouring : {'add_remove', 'replace'}
    data_norm : float, optional
        A public radius of the records, for maps that need one (quadratic).

    Returns
    -------
    float

    Raises
    ------
    ValueError
        For a sketch with Bernoulli feature masks, and from the map's ``sensitivity``
        (a norm or relation outside its values, a quadratic map without a radius).

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.features import FeatureMap
    >>> from pysketch.operators import make_operator
    >>> from pysketch.privacy.release import sketch_sensitivity
    >>> X = np.random.default_rng(0).normal(size=(1000, 2))
    >>> sketch = FeatureMap(make_operator(2, 50, random_state=0), "complex").sketch(X)
    >>> round(sketch_sensitivity(sketch, 1, "add_remove"), 4), round(sketch_sensitivity(sketch, 2, "replace"), 4)
    (70.7107, 14.1421)
    """
    sub = sketch.subsampling
    if sub is not None and sub["scheme"] == "bernoulli":
        # a random number of features per record: [P] Lemma 15 gives more noise than the
        # exactly-r tables ([P] Sec. 5); not implemented as a closed form here
        raise ValueError("sketches with Bernoulli feature masks need an explicit sensitivity (the exactly-r "
                         "closed forms do not apply); use scheme='uniform' or 'blocks'")
    r = None if sub is None else sub["r"]
    return sketch.feature_map.sensitivity(norm, neighbouring, features_per_record=r, data_norm=data_norm)


def release(sketch, plan, source, *, count=None, sensitivity=None, data_norm=None, features_per_record=None,
            **record):
    """The PrivateSketch of `sketch` under `plan`: the count released first (unless the
    already released `count` is given), then the sum with the plan's mechanism at its
    epsilon_sum for `sensitivity` (default: `sketch_sensitivity`). Extra keyword
    arguments go into the PrivacyRecord (epsilon_pilot, amplification entries, or an
    epsilon that includes other releases). The caller has charged the budget.

    Parameters
    ----------
    sketch : Sketch
        The clean sketch, with one sum (never stored in the result).
    plan : ReleasePlan
        From :func:`plan_release` or :func:`plan_sketch_release`.
    source : noise source
        From :func:`~pysketch.privacy.mechanisms.noise_source` (OS entropy, or an
        insecure seeded one).
    count : int, optional
        The count already released (by another part of a budget); None: released here
        by the plan (noised under 'add_remove', n itself under 'replace').
    sensitivity : float, optional
        The sum's sensitivity in the plan's norm; default :func:`sketch_sensitivity`.
    data_norm : float, optional
        A public radius, for the default sensitivity of maps that need one.
    features_per_record : int, optional
        r, recorded; default: that of the sketch's subsampling.
    **record
        More entries of the :class:`PrivacyRecord`.

    Returns
    -------
    PrivateSketch

    Raises
    ------
    TypeError
        When `sketch` is not a clean Sketch, `plan` not a ReleasePlan, or `count` neither
        None nor an int.
    ValueError
        When the sketch holds more than one sum, and from the sensitivity and the
        mechanisms (values outside their ranges).

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.features import FeatureMap
    >>> from pysketch.operators import make_operator
    >>> from pysketch.privacy.mechanisms import noise_source
    >>> from pysketch.privacy.release import plan_release, release
    >>> X = np.random.default_rng(0).normal(size=(1000, 2))
    >>> sketch = FeatureMap(make_operator(2, 50, random_state=0), "complex").sketch(X)
    >>> private = release(sketch, plan_release(50, 1.0, neighbouring="replace"), noise_source())
    >>> private.count, private.privacy.epsilon_sum, private.privacy.secure_noise
    (1000, 1.0, True)
    """
    if isinstance(sketch, PrivateSketch) or not isinstance(sketch, Sketch):
        raise TypeError(f"sketch must be a clean pysketch.Sketch, got {type(sketch).__name__}")
    if not isinstance(plan, ReleasePlan):
        raise TypeError(f"plan must be a ReleasePlan (from plan_release), got {type(plan).__name__}")
    if len(sketch.sums) != 1:
        raise ValueError(f"this release path noises one sum; the sketch holds {tuple(sketch.sums)}")
    if count is not None and (isinstance(count, (bool, np.bool_)) or not isinstance(count, numbers.Integral)):
        raise TypeError(f"count must be None or the released count (an int), got {count!r}")
    if count is None:
        count = plan.release_count(sketch.count, source)
    if sensitivity is None:
        sensitivity = sketch_sensitivity(sketch, plan.sensitivity_norm, plan.neighbouring, data_norm=data_norm)
    if features_per_record is None and sketch.subsampling is not None:
        features_per_record = sketch.subsampling["r"]
    if plan.mechanism == "laplace":
        mech = Laplace(plan.epsilon_sum, sensitivity, insecure_seed=source)
    else:
        mech = Gaussian(plan.epsilon_sum, plan.delta, sensitivity, insecure_seed=source)
    noisy = mech.randomise(sketch.sum)
    fields = dict(
        epsilon=float(plan.epsilon), delta=float(plan.delta), neighbouring=plan.neighbouring,
        mechanism=plan.mechanism, epsilon_sum=float(plan.epsilon_sum), epsilon_count=float(plan.epsilon_count),
        sensitivity_sum=float(sensitivity), sensitivity_norm=plan.sensitivity_norm,
        noise_scale_sum=float(mech.effective_scale_),
        noise_scale_count=1.0 / plan.epsilon_count if plan.epsilon_count > 0 else 0.0,
        features_per_record=features_per_record, secure_noise=bool(source.secure),
    )
    fields.update(record)
    return PrivateSketch(sketch.feature_map, noisy, count, PrivacyRecord(**fields), subsampling=sketch.subsampling)
