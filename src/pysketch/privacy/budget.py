r"""The private-fit skeleton: one budget, named parts, one charge, one record.

A private fit or release spends a total (epsilon, delta) under one neighbouring relation
on named *parts*: a count, a pilot, a sketch, some statistics. A fit reads as a short
list of parts::

    budget = Budget(epsilon, delta, neighbouring=relation, what="MyEstimator.fit")
    budget.charge(accountant)                        # once, before any noise
    n = budget.part("count", share=0.05).count(len(X))
    private = budget.part("sketch").release(fm.sketch(X), count=n)   # the rest
    est.privacy_ = budget.record(private)            # one PrivacyRecord, with its parts

Composition. Parts compose sequentially: their epsilons and deltas add up (basic
composition, Dwork & Roth 2014, Theorem 3.16), also when a later part is planned from an
earlier part's output (adaptive composition, ibid. Theorem 3.16 holds for adaptively
chosen mechanisms). Parts given the same ``group`` see disjoint sets of records (each
record enters one part of the group): they compose in parallel and cost their maximum
(McSherry 2009, "Privacy integrated queries", Theorem 4). A part may not be planned beyond
what is left of the budget.

The charge. :meth:`Budget.charge` spends the whole (epsilon, delta) from the accountant
once; no part draws noise before it (RuntimeError). A fit whose parts are all pure (Laplace)
declares ``pure=True`` and is charged delta = 0. Noise comes from OS entropy (an
``insecure_seed`` gives reproducible, insecure noise for tests), never from a public seed,
and is never stored.

The record. :meth:`Budget.record` gives one :class:`~pysketch.privacy.PrivacyRecord`: the
guarantee (the budget's epsilon, delta and relation) and ``parts``, a mapping from each
part's name to what it spent and how (its epsilon, delta, mechanism, sensitivity, noise
scale). Given the private sketch of the fit, the record also carries that release's own
entries (mechanism, split, sensitivity and scales of the sum and the count).
"""

import dataclasses

import numpy as np

from .._checks import check_relation
from ..sketch import Sketch
from .accountant import charge as _charge_accountant
from .mechanisms import Gaussian, Laplace, check_delta, check_epsilon, noise_source, noisy_count
from .private_sketch import PrivacyRecord, PrivateSketch
from . import release as _release_path  # its `release`, looked up at each call (the dask tests spy on it)
from .release import DEFAULT_NSR_MAX, ReleasePlan, plan_release, plan_sketch_release, sketch_sensitivity
from .subsampling import epsilon_before_subsampling

__all__ = ["Budget", "Part", "make_private"]

#: The options of Part.plan_release (the other keyword arguments of Part.release go into the record).
_PLAN_OPTIONS = ("mechanism", "split", "n_lower", "nsr_max", "features_per_record", "data_fraction")

#: Relative slack allowed when parts add up to the budget (shares are floats).
_SLACK = 1e-9


@dataclasses.dataclass
class Part:
    """A named share (epsilon, delta) of a :class:`Budget`; it draws noise with the
    budget's source once the budget is charged, and records how.

    Parts are made by :meth:`Budget.part`, not directly. A part is spent by one release:
    ``count`` (a noisy count), ``laplace``, ``gaussian`` or ``noise`` (noisy values),
    ``mechanism`` (a mechanism for releases made row by row), ``release`` (a private
    sketch, planned by ``plan_release``), or ``source`` (the noise source, for a release
    drawn by another function of the privacy layer).

    Parameters
    ----------
    budget : Budget
        The budget it is a share of.
    name : str
        Its name in the budget and in the record.
    epsilon : float
        Its epsilon.
    delta : float
        Its delta (0 for a pure part).
    group : hashable, optional
        Parts of one group see disjoint records and cost their maximum (module
        docstring); None: sequential.
    spent : dict, optional
        What the release spent and how (filled by the release; it goes into the record).
    value : object, optional
        A count part's released count.

    Raises
    ------
    RuntimeError
        When a part draws noise before its budget is charged, is planned or spent a
        second time, or is described (``describe``) before it is spent.
    ValueError
        From ``count`` under 'replace' (the count is public); from ``describe``, for the
        entries epsilon, delta or group; from ``mechanism``, for a kind other than
        'laplace' or 'gaussian' (and the mechanisms' own checks); from ``plan_release``
        and ``release``, for a `count` that is not a released count part of the same
        budget, a plan made with a count when none is given, or a `data_fraction` under
        'replace' or with delta / data_fraction >= 1.
    TypeError
        From ``release``, for planning options given to a part already planned.

    Examples
    --------
    >>> from pysketch.privacy.budget import Budget
    >>> budget = Budget(1.0, what="a noisy count")
    >>> part = budget.part("count", share=0.5)
    >>> part.epsilon, budget.remaining()
    (0.5, (0.5, 0.0))
    >>> _ = budget.charge()
    >>> n = part.count(1000)
    >>> part.spent["mechanism"], part.spent["sensitivity"]
    ('discrete_laplace', 1.0)
    """

    budget: "Budget"
    name: str
    epsilon: float
    delta: float
    group: object = None
    spent: dict = dataclasses.field(default_factory=dict)
    value: object = None  # a count part's released count
    _plan: object = dataclasses.field(default=None, repr=False)  # a release's plan (plan_release)

    def _source(self):
        if not self.budget.charged:
            raise RuntimeError(f"the part {self.name!r} draws noise before the budget is charged: call "
                               "Budget.charge(accountant) first")
        if self.spent:
            raise RuntimeError(f"the part {self.name!r} has already been spent; plan one part per release")
        return self.budget.source

    def _note(self, **fields):
        self.spent.update({"epsilon": float(self.epsilon), "delta": float(self.delta), **fields})
        if self.group is not None:
            self.spent["group"] = self.group

    def source(self, mechanism, sensitivity=None, **fields):
        """The noise source, for a release drawn by another function of the privacy layer
        at this part's (epsilon, delta) (e.g. private moments); `mechanism`, `sensitivity`
        and `fields` go into the record."""
        src = self._source()
        self._note(mechanism=str(mechanism), **({} if sensitivity is None else {"sensitivity": float(sensitivity)}),
                   **fields)
        return src

    def describe(self, **fields):
        """Add entries to the part's record after its release (e.g. the noise scale that a
        function of the privacy layer chose); the part must have been spent."""
        if not self.spent:
            raise RuntimeError(f"the part {self.name!r} has not been spent")
        reserved = {"epsilon", "delta", "group"} & set(fields)
        if reserved:
            raise ValueError(f"describe cannot change {sorted(reserved)}")
        self.spent.update(fields)

    def count(self, n):
        """n with discrete Laplace noise of scale 1/epsilon (sensitivity 1 under add/remove).
        Under 'replace' n is public and a count part is an error (ValueError): spend nothing
        on it."""
        if self.budget.neighbouring == "replace":
            raise ValueError("under neighbouring='replace' the count is public: plan no count part")
        source = self._source()
        value = noisy_count(n, self.epsilon, source)
        self.value = value
        self._note(mechanism="discrete_laplace", sensitivity=1.0, sensitivity_norm=1, scale=1.0 / self.epsilon)
        return value

    def mechanism(self, kind, sensitivity, **options):
        """The mechanism at this part's (epsilon, delta), drawing from the budget's source:
        'laplace' (scale sensitivity / epsilon, L1 sensitivity) or 'gaussian' (the analytic
        Gaussian mechanism, Balle & Wang 2018, Theorem 8, or `calibration='classical'`; L2
        sensitivity), for a release that draws through the mechanism's own methods (e.g.
        one release per row). It may be made before the budget is charged (its parameters
        are then checked before anything is spent), but draws only after. The part is
        spent: the record states the mechanism and sensitivity (and the noise scale, once
        drawn, when the release goes through `laplace` or `gaussian`)."""
        if self.spent:
            raise RuntimeError(f"the part {self.name!r} has already been spent; plan one part per release")
        if kind == "laplace":
            mech = Laplace(self.epsilon, sensitivity, insecure_seed=self.budget._pending_source, **options)
        elif kind == "gaussian":
            mech = Gaussian(self.epsilon, self.delta, sensitivity, insecure_seed=self.budget._pending_source,
                            **options)
        else:
            raise ValueError(f"kind must be 'laplace' or 'gaussian', got {kind!r}")
        calibration = options.get("calibration", "analytic")
        self._note(mechanism=kind if calibration == "analytic" else f"{kind} ({calibration})",
                   sensitivity=float(sensitivity),
                   sensitivity_norm=1 if kind == "laplace" else 2)
        return _ChargedMechanism(self.budget, mech)

    def _draw(self, kind, values, sensitivity):
        self._source()  # refused before the charge, and once spent, before anything is noted
        mech = self.mechanism(kind, sensitivity)
        out = mech.randomise(np.asarray(values, dtype=np.float64))
        self.spent["scale"] = float(mech.effective_scale_)  # known once the noise is drawn
        return out

    def laplace(self, values, sensitivity):
        """values with Laplace noise of scale sensitivity / epsilon (sensitivity: L1, under
        the budget's relation). Returns an array of the same shape."""
        return self._draw("laplace", values, sensitivity)

    def gaussian(self, values, sensitivity):
        """values with the analytic Gaussian mechanism's noise at (epsilon, delta) for an L2
        sensitivity (Balle & Wang 2018, Theorem 8)."""
        return self._draw("gaussian", values, sensitivity)

    def noise(self, values, sensitivity):
        """Laplace (delta = 0; `sensitivity` is L1) or Gaussian (delta > 0; L2)."""
        return self.gaussian(values, sensitivity) if self.delta > 0 else self.laplace(values, sensitivity)

    def plan_release(self, sketch, *, count=None, mechanism="auto", split=None, n_lower=None, nsr_max=None,
                     features_per_record=None, data_fraction=None):
        """Plan this part's release of a clean sketch (checked before the budget is charged;
        `release` then draws it): the count and the sum split as
        :func:`~pysketch.privacy.release.plan_sketch_release` plans them (make_private's split); or the
        whole part on the sum when the count is public (replace), given, or released by
        another part (`count` = that Part, or True when it will be given to `release`).

        data_fraction : the sketch was made from a secret Poisson subsample keeping each
            record with this probability: the noise is calibrated at eps' = log(1 + (e^eps
            - 1) / beta), delta' = delta / beta, so that the part's (epsilon, delta) holds
            for the whole dataset (amplification by Poisson subsampling, Balle, Barthe &
            Gaboardi 2018; add/remove only). Returns the ReleasePlan."""
        if self.spent or self._plan is not None:
            raise RuntimeError(f"the part {self.name!r} is already planned or spent; plan one part per release")
        relation = self.budget.neighbouring
        if features_per_record is None and sketch.subsampling is not None:
            features_per_record = sketch.subsampling["r"]
        if count is not None or relation == "replace":
            # the sum alone: the count is public (replace), given, or another part's release
            base = plan_release(sketch.feature_map.m, self.epsilon, self.delta, neighbouring="replace",
                                mechanism=mechanism, split=split)  # (a split is checked, not used)
            eps_count = 0.0
            if isinstance(count, Part):
                if count.budget is not self.budget or count.spent.get("mechanism", "discrete_laplace") != \
                        "discrete_laplace":
                    raise ValueError("count must be a count part of the same budget")
                eps_count = count.epsilon
            total = base.epsilon + eps_count
            plan = ReleasePlan(epsilon=total, delta=base.delta, neighbouring=relation, mechanism=base.mechanism,
                               epsilon_sum=base.epsilon, epsilon_count=eps_count, split=base.epsilon / total)
        else:
            plan = plan_sketch_release(sketch, self.epsilon, self.delta, neighbouring=relation, mechanism=mechanism,
                                       split=split, n_lower=n_lower,
                                       nsr_max=DEFAULT_NSR_MAX if nsr_max is None else nsr_max,
                                       features_per_record=features_per_record)
        amplification = {}
        if data_fraction is not None:
            if relation != "add_remove":
                raise ValueError("data_fraction (Poisson subsampling amplification) is for neighbouring='add_remove'")
            eps_cal = epsilon_before_subsampling(plan.epsilon, data_fraction)
            delta_cal = plan.delta / data_fraction
            if delta_cal >= 1:
                raise ValueError(f"delta / data_fraction = {delta_cal} must be < 1")
            # calibrated at (eps', delta'), the split kept; the record states the guarantee
            # for the whole dataset, after amplification
            amplification = dict(epsilon=float(plan.epsilon), delta=float(plan.delta),
                                 data_fraction=float(data_fraction), epsilon_before_amplification=float(eps_cal),
                                 delta_before_amplification=float(delta_cal))
            plan = plan.with_budget(eps_cal, delta_cal)
        self._plan = (plan, count is not None, features_per_record, amplification)
        return plan

    def release(self, sketch, *, count=None, sensitivity=None, data_norm=None, **options):
        """The PrivateSketch of a clean sketch at this part's (epsilon, delta), as planned by
        `plan_release` (called here with `options` when the part is not planned yet).
        `count`: the count part released before (or the released count) when the plan
        leaves the count out. `sensitivity`, `data_norm`: as in
        :func:`~pysketch.privacy.release.release`. Other keyword arguments of `options`
        that `plan_release` does not take go into the sketch's own PrivacyRecord."""
        record = {k: options.pop(k) for k in list(options) if k not in _PLAN_OPTIONS}
        if self._plan is None:
            self.plan_release(sketch, count=count, **options)
        elif options:
            raise TypeError(f"the part {self.name!r} is planned: give {sorted(options)} to plan_release")
        plan, counted, features_per_record, amplification = self._plan
        source = self._source()
        if isinstance(count, Part):
            if not count.spent:
                raise ValueError("count must be a count part of the same budget, already released")
            count = count.value
        elif counted and count is None:
            raise ValueError(f"the part {self.name!r} was planned with a count: give it to release")
        private = _release_path.release(sketch, plan, source, count=count, sensitivity=sensitivity,
                                        data_norm=data_norm, features_per_record=features_per_record,
                                        **amplification, **record)
        rec = private.privacy
        self._note(mechanism=rec.mechanism, sensitivity=rec.sensitivity_sum, sensitivity_norm=rec.sensitivity_norm,
                   scale=rec.noise_scale_sum, epsilon_sum=rec.epsilon_sum, epsilon_count=rec.epsilon_count,
                   **({"data_fraction": amplification["data_fraction"]} if amplification else {}))
        if plan.mechanism == "laplace" and self.delta > 0:
            self.spent["delta"] = 0.0  # Laplace spends no delta
        return private


class _ChargedMechanism:
    """A part's mechanism that draws only once its budget is charged (RuntimeError before);
    anything else is the mechanism's own."""

    def __init__(self, budget, mechanism):
        self._budget = budget
        self._mechanism = mechanism

    def _check(self):
        if not self._budget.charged:
            raise RuntimeError(f"a mechanism of {self._budget.what} draws noise before the budget is charged: call "
                               "Budget.charge(accountant) first")
        return self._mechanism

    def randomise(self, values):
        return self._check().randomise(values)

    def randomise_rows(self, values):
        return self._check().randomise_rows(values)

    def __getattr__(self, name):
        return getattr(self._mechanism, name)


class Budget:
    """A total (epsilon, delta) under `neighbouring`, spent on named parts (module
    docstring). `what` names the fit in the accountant's history. pure=True: every part is
    pure epsilon-DP, and the accountant is charged delta = 0 whatever delta was given.

    Parameters
    ----------
    epsilon : float > 0
        The total epsilon, within [2**-100, 2**100].
    delta : float in [0, 1), default 0
        The total delta (checked, then taken as 0, when `pure`).
    neighbouring : {'add_remove', 'replace'}, default 'add_remove'
        The relation of every part: under 'replace' the count is public and no count
        part may be planned.
    what : str, default 'private fit'
        The name of the fit in the accountant's history and in error messages.
    pure : bool, default False
        Every part is pure epsilon-DP: parts get no delta, and the charge is (epsilon, 0).
    insecure_seed : None or int, optional
        None (default): noise from OS entropy. An int: reproducible, **insecure** noise
        (tests); the record then says ``secure_noise=False``.

    Raises
    ------
    ValueError
        For an epsilon, delta or relation outside its range; from ``part``, for an empty
        or repeated name, a share outside (0, 1], a share given with an epsilon, a delta
        without an epsilon, the rest of the budget given a group, a part's epsilon or
        delta outside its range, or a part that exceeds what is left of the budget.
    RuntimeError
        From ``charge``, when the budget is already charged; from ``record``, before the
        charge.
    TypeError
        From ``record``, when `private` is not a PrivateSketch.
    BudgetError
        From ``charge``, when the accountant refuses the spend.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.privacy.budget import Budget
    >>> budget = Budget(1.0, what="a count and a sum")
    >>> n_part, sum_part = budget.part("count", share=0.2), budget.part("sum")  # the rest
    >>> _ = budget.charge()        # once, before any noise (no accountant here)
    >>> n, s = n_part.count(500), sum_part.laplace(np.array([250.0]), sensitivity=1.0)
    >>> record = budget.record()
    >>> record.epsilon, sorted(record.parts), record.parts["sum"]["mechanism"]
    (1.0, ['count', 'sum'], 'laplace')
    """

    def __init__(self, epsilon, delta=0.0, *, neighbouring="add_remove", what="private fit", pure=False,
                 insecure_seed=None):
        self.epsilon = check_epsilon(epsilon)
        self.delta = 0.0 if pure else check_delta(delta, positive=False)
        if pure:
            check_delta(delta, positive=False)
        self.neighbouring = check_relation(neighbouring)
        self.what = str(what)
        self.pure = bool(pure)
        # made now (mechanisms planned before the charge hold it), drawn from only after it
        self._pending_source = noise_source(insecure_seed)
        self.parts = {}
        self.charged = False
        self.source = None

    # -------------------------------------------------------------- planning

    def spent(self):
        """(epsilon, delta) of the parts planned so far: sums over the sequential parts and
        the groups, maxima within a group."""
        eps, dl = 0.0, 0.0
        groups = {}
        for p in self.parts.values():
            if p.group is None:
                eps += p.epsilon
                dl += p.delta
            else:
                e, d = groups.get(p.group, (0.0, 0.0))
                groups[p.group] = (max(e, p.epsilon), max(d, p.delta))
        for e, d in groups.values():
            eps += e
            dl += d
        return eps, dl

    def remaining(self):
        """(epsilon, delta) not yet planned (never negative)."""
        eps, dl = self.spent()
        eps_left, dl_left = self.epsilon - eps, self.delta - dl
        # what float rounding of the shares leaves is nothing
        return (eps_left if eps_left > _SLACK * self.epsilon else 0.0,
                dl_left if dl_left > _SLACK * self.delta else 0.0)

    def part(self, name, epsilon=None, delta=None, *, share=None, group=None):
        """Plan the part `name`: `share` of the whole budget (epsilon and delta alike), or an
        explicit epsilon (and delta, default 0 with an explicit epsilon), or, with neither,
        everything not yet planned (the rest). ValueError when the parts would exceed the
        budget or a name repeats."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty str, got {name!r}")
        if name in self.parts:
            raise ValueError(f"the budget already has a part named {name!r}")
        if share is not None:
            if epsilon is not None or delta is not None:
                raise ValueError("give share or epsilon (and delta), not both")
            if isinstance(share, bool) or not isinstance(share, (int, float, np.floating)) or not 0 < share <= 1:
                raise ValueError(f"share must be a number in (0, 1], got {share!r}")
            eps, dl = float(share) * self.epsilon, float(share) * self.delta
        elif epsilon is None:
            if delta is not None:
                raise ValueError("delta without epsilon: give both, a share, or neither (the rest)")
            if group is not None:
                raise ValueError("the rest of the budget cannot join a parallel group: give its epsilon")
            eps, dl = self.remaining()
        else:
            eps = float(epsilon)
            dl = 0.0 if delta is None else float(delta)
        check_epsilon(eps, f"the epsilon of part {name!r}")
        if not (0.0 <= dl < 1.0) or (dl > 0 and self.pure):
            raise ValueError(f"the delta of part {name!r} must be in [0, 1) (0 in a pure budget), got {dl!r}")
        part = Part(self, name, eps, dl, group)
        self.parts[name] = part
        total_eps, total_dl = self.spent()
        if total_eps > self.epsilon * (1 + _SLACK) or total_dl > self.delta * (1 + _SLACK) + 1e-300:
            del self.parts[name]
            raise ValueError(f"the part {name!r} ({eps:.6g}, {dl:.3g}) exceeds what is left of the budget "
                             f"({self.epsilon:.6g}, {self.delta:.3g}) of {self.what}: left "
                             f"({self.remaining()[0]:.6g}, {self.remaining()[1]:.3g})")
        return part

    # -------------------------------------------------------------- spending

    def charge(self, accountant=None):
        """Spend the whole (epsilon, delta) from `accountant` (pysketch's, diffprivlib's or
        None), once, and open the noise source. Returns self."""
        if self.charged:
            raise RuntimeError(f"the budget of {self.what} is already charged")
        _charge_accountant(accountant, self.epsilon, self.delta, self.what)
        self.source = self._pending_source
        self.charged = True
        return self

    def record(self, private=None, **extra):
        """The PrivacyRecord of the fit: the budget's guarantee and its parts; with the fit's
        PrivateSketch `private`, that release's entries too. `extra`: more entries of
        PrivacyRecord (e.g. data_fraction)."""
        if not self.charged:
            raise RuntimeError("record() before charge(): nothing was released")
        parts = {name: dict(p.spent) for name, p in self.parts.items() if p.spent}
        fields = {}
        if private is not None:
            if not isinstance(private, PrivateSketch):
                raise TypeError(f"private must be the fit's PrivateSketch, got {type(private).__name__}")
            fields.update(private.privacy.to_dict())
        fields.update(epsilon=float(self.epsilon), delta=float(self.delta), neighbouring=self.neighbouring,
                      secure_noise=bool(self.source.secure), parts=parts)
        fields.update(extra)
        return PrivacyRecord.from_dict(fields)

    def __repr__(self):
        eps, dl = self.spent()
        return (f"Budget({self.epsilon:g}, {self.delta:g}, neighbouring={self.neighbouring!r}, what={self.what!r}, "
                f"parts={list(self.parts)}, planned=({eps:.6g}, {dl:.3g}), charged={self.charged})")


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
        Default: minimize the NSR at n = n_lower (or at n0(m, epsilon), [P] eq. (26)).
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

    Returns
    -------
    PrivateSketch
        The noisy sum and count, with the :class:`~pysketch.privacy.PrivacyRecord` of the
        release (``.privacy``).

    Raises
    ------
    TypeError
        When `sketch` is not a clean Sketch (a PrivateSketch is refused).
    ValueError
        For an argument outside its range (epsilon, delta, relation, mechanism, split,
        n_lower, data_fraction; 'gaussian' with delta = 0), or a sketch whose
        sensitivity has no closed form here (Bernoulli feature masks: give
        `sensitivity`).
    BudgetError
        When `accountant` refuses the spend; nothing is drawn then.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.features import FeatureMap
    >>> from pysketch.operators import make_operator
    >>> from pysketch.privacy import BudgetAccountant, make_private
    >>> X = np.random.default_rng(0).normal(size=(1000, 2))
    >>> sketch = FeatureMap(make_operator(2, 50, random_state=0), "complex").sketch(X)
    >>> acc = BudgetAccountant(epsilon=2.0)
    >>> private = make_private(sketch, epsilon=1.0, accountant=acc)
    >>> private.privacy.mechanism, private.sum.shape, acc.spent
    ('laplace', (50,), (1.0, 0.0))
    """
    if isinstance(sketch, PrivateSketch):
        raise TypeError("sketch is already private")
    if not isinstance(sketch, Sketch):
        raise TypeError(f"sketch must be a pysketch.Sketch, got {type(sketch).__name__}")
    # one part, planned (and every argument checked) before the budget is charged; Laplace
    # spends no delta
    pure = mechanism == "laplace" or (mechanism == "auto" and delta == 0)
    budget = Budget(epsilon, delta, neighbouring=neighbouring, what="make_private", pure=pure,
                    insecure_seed=insecure_seed)
    part = budget.part("sketch")
    plan = part.plan_release(sketch, mechanism=mechanism, split=split, n_lower=n_lower,
                             features_per_record=features_per_record, data_fraction=data_fraction)
    if sensitivity is None:
        sensitivity = sketch_sensitivity(sketch, plan.sensitivity_norm, neighbouring, data_norm=data_norm)
    budget.charge(accountant)
    return part.release(sketch, sensitivity=sensitivity)
