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
from .accountant import charge as _charge_accountant
from .mechanisms import Gaussian, Laplace, check_delta, check_epsilon, noise_source, noisy_count
from .private_sketch import PrivacyRecord, PrivateSketch

__all__ = ["Budget", "Part"]

#: Relative slack allowed when parts add up to the budget (shares are floats).
_SLACK = 1e-9


@dataclasses.dataclass
class Part:
    """A named share (epsilon, delta) of a :class:`Budget`; it draws noise with the
    budget's source once the budget is charged, and records how."""

    budget: "Budget"
    name: str
    epsilon: float
    delta: float
    group: object = None
    spent: dict = dataclasses.field(default_factory=dict)
    value: object = None  # a count part's released count

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

    def laplace(self, values, sensitivity):
        """values with Laplace noise of scale sensitivity / epsilon (sensitivity: L1, under
        the budget's relation). Returns an array of the same shape."""
        mech = Laplace(self.epsilon, sensitivity, insecure_seed=self._source())
        out = mech.randomise(np.asarray(values, dtype=np.float64))
        self._note(mechanism="laplace", sensitivity=float(sensitivity), sensitivity_norm=1,
                   scale=float(mech.effective_scale_))
        return out

    def gaussian(self, values, sensitivity):
        """values with the analytic Gaussian mechanism's noise at (epsilon, delta) for an L2
        sensitivity (Balle & Wang 2018, Theorem 8)."""
        mech = Gaussian(self.epsilon, self.delta, sensitivity, insecure_seed=self._source())
        out = mech.randomise(np.asarray(values, dtype=np.float64))
        self._note(mechanism="gaussian", sensitivity=float(sensitivity), sensitivity_norm=2,
                   scale=float(mech.effective_scale_))
        return out

    def noise(self, values, sensitivity):
        """Laplace (delta = 0; `sensitivity` is L1) or Gaussian (delta > 0; L2)."""
        return self.gaussian(values, sensitivity) if self.delta > 0 else self.laplace(values, sensitivity)

    def release(self, sketch, *, count=None, mechanism="auto", split=None, n_lower=None, nsr_max=None,
                sensitivity=None, data_norm=None, features_per_record=None, **record):
        """The PrivateSketch of a clean sketch at this part's (epsilon, delta): the count and
        the sum split as :func:`~pysketch.privacy.release.plan_sketch_release` plans them
        (make_private's split); or the
        whole part on the sum when the count is public (replace), given, or released by
        another part (`count` = that Part: the sketch's record then states its split). Extra
        keyword arguments go into the sketch's own PrivacyRecord (as in `release`)."""
        from .release import DEFAULT_NSR_MAX, ReleasePlan, plan_release, plan_sketch_release, release

        source = self._source()
        relation = self.budget.neighbouring
        if features_per_record is None and sketch.subsampling is not None:
            features_per_record = sketch.subsampling["r"]
        if count is not None or relation == "replace":
            # the sum alone: the count is public (replace), given, or another part's release
            base = plan_release(sketch.feature_map.m, self.epsilon, self.delta, neighbouring="replace",
                                mechanism=mechanism, split=split)  # (a split is checked, not used)
            eps_count = 0.0
            if isinstance(count, Part):
                if count.budget is not self.budget or not count.spent or count.spent["mechanism"] != "discrete_laplace":
                    raise ValueError("count must be a count part of the same budget, already released")
                eps_count, count = count.epsilon, count.value
            total = base.epsilon + eps_count
            plan = ReleasePlan(epsilon=total, delta=base.delta, neighbouring=relation, mechanism=base.mechanism,
                               epsilon_sum=base.epsilon, epsilon_count=eps_count, split=base.epsilon / total)
        else:
            plan = plan_sketch_release(sketch, self.epsilon, self.delta, neighbouring=relation, mechanism=mechanism,
                                       split=split, n_lower=n_lower,
                                       nsr_max=DEFAULT_NSR_MAX if nsr_max is None else nsr_max,
                                       features_per_record=features_per_record)
        private = release(sketch, plan, source, count=count, sensitivity=sensitivity, data_norm=data_norm,
                          features_per_record=features_per_record, **record)
        rec = private.privacy
        self._note(mechanism=rec.mechanism, sensitivity=rec.sensitivity_sum, sensitivity_norm=rec.sensitivity_norm,
                   scale=rec.noise_scale_sum, epsilon_sum=rec.epsilon_sum, epsilon_count=rec.epsilon_count)
        if plan.mechanism == "laplace" and self.delta > 0:
            self.spent["delta"] = 0.0  # Laplace spends no delta
        return private


class Budget:
    """A total (epsilon, delta) under `neighbouring`, spent on named parts (module
    docstring). `what` names the fit in the accountant's history. pure=True: every part is
    pure epsilon-DP, and the accountant is charged delta = 0 whatever delta was given."""

    def __init__(self, epsilon, delta=0.0, *, neighbouring="add_remove", what="private fit", pure=False,
                 insecure_seed=None):
        self.epsilon = check_epsilon(epsilon)
        self.delta = 0.0 if pure else check_delta(delta, positive=False)
        if pure:
            check_delta(delta, positive=False)
        self.neighbouring = check_relation(neighbouring)
        self.what = str(what)
        self.pure = bool(pure)
        self._seed = insecure_seed
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
        self.source = noise_source(self._seed)
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

