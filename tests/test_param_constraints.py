"""The declared parameter constraints (pysketch._params, issue 38 item 3): every public
estimator declares one list of constraints for each argument of its __init__, each kind of
constraint accepts and refuses what it says, and a fit given an invalid value of any
parameter refuses it naming the parameter (the invalid values are drawn from the
declarations themselves)."""

import inspect
import numbers
import warnings

import numpy as np
import pytest

from pysketch import CompressiveGaussianMixture, CompressiveKMeans, CompressivePCA
from pysketch._params import (Array, Boolean, Bounds, DType, HasMethods, InstanceOf, Interval, NoneValue, Options,
                              RandomState, as_constraint, check_parameter, describe, invalid_examples)
from pysketch.distances import PrivateJLTransformer
from pysketch.m2m import M2MLinearRegression, M2MLogisticRegression, MarginalSynopsis
from pysketch.rfm import DPRFMRegressor, PrivateRFRegressor

ESTIMATORS = (CompressiveKMeans, CompressiveGaussianMixture, CompressivePCA, MarginalSynopsis, M2MLogisticRegression,
              M2MLinearRegression, PrivateRFRegressor, DPRFMRegressor, PrivateJLTransformer)


def _init_params(cls):
    return {name for name in inspect.signature(cls.__init__).parameters if name != "self"}


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_every_parameter_is_declared_and_nothing_else(cls):
    declared = set(cls._parameter_constraints)
    old = set(cls._renamed_params)  # checked under their new names
    assert declared | old == _init_params(cls), sorted(_init_params(cls) ^ (declared | old))
    assert not declared & old
    for name, constraints in cls._parameter_constraints.items():
        assert isinstance(constraints, list) and constraints, name
        for c in constraints:
            as_constraint(c)  # a constraint or a shorthand it reads
        assert describe(constraints)


# ------------------------------------------------------------------ each kind of constraint


def _accepts(constraints, value):
    try:
        check_parameter("p", value, constraints)
    except (TypeError, ValueError):
        return False
    return True


def test_an_integer_interval_takes_ints_of_any_kind_but_no_bool_float_or_nan():
    c = [Interval(numbers.Integral, 1, 10)]
    for ok in (1, 10, np.int64(5), np.int32(1), np.uint8(10)):
        assert _accepts(c, ok), ok
    for bad in (0, 11, True, np.bool_(True), 1.0, np.float64(2.0), "3", None, float("nan")):
        assert not _accepts(c, bad), bad
    with pytest.raises(TypeError, match=r"^p must be an int in \[1, 10\]; got True$"):
        check_parameter("p", True, c)
    with pytest.raises(ValueError, match=r"^p must be an int in \[1, 10\]; got 0$"):
        check_parameter("p", 0, c)
    with pytest.raises(TypeError, match=r"^n_clusters must be an int >= 1; got 2.5$"):
        check_parameter("n_clusters", 2.5, [Interval(numbers.Integral, 1, None)])


@pytest.mark.parametrize("closed, low_in, high_in", [("both", True, True), ("left", True, False),
                                                     ("right", False, True), ("neither", False, False)])
def test_a_real_interval_has_its_boundaries_as_declared_and_refuses_nan_and_infinity(closed, low_in, high_in):
    c = [Interval(numbers.Real, 0, 1, closed=closed)]
    assert _accepts(c, 0) is low_in and _accepts(c, 0.0) is low_in
    assert _accepts(c, 1) is high_in and _accepts(c, np.float32(1.0)) is high_in
    for ok in (0.5, np.float32(0.25), np.float64(0.75), np.int64(0) if low_in else 0.1):
        assert _accepts(c, ok), ok
    for bad in (-1e-300, 1.0000001, float("nan"), float("inf"), -float("inf"), True, np.bool_(False), "0.5", None):
        assert not _accepts(c, bad), bad
    unbounded = [Interval(numbers.Real, 0, None, closed="neither")]
    assert describe(unbounded) == "a positive finite number"
    assert _accepts(unbounded, 1e300) and not _accepts(unbounded, float("inf")) and not _accepts(unbounded, 10**400)
    with pytest.raises(ValueError, match=r"^p must be a positive finite number; got nan$"):
        check_parameter("p", float("nan"), unbounded)
    with pytest.raises(TypeError, match="must be a positive finite number; got 'x'"):
        check_parameter("p", "x", unbounded)


def test_options_compare_values_and_read_a_registry_at_every_check():
    c = [Options(("auto", "dense"))]
    assert _accepts(c, "auto") and _accepts(c, np.str_("dense"))
    for bad in ("Auto", "", None, 0, True, ("auto",)):
        assert not _accepts(c, bad), bad
    with pytest.raises(ValueError, match=r"^p must be one of \('auto', 'dense'\); got 0$"):
        check_parameter("p", 0, c)  # a value compared with options: a wrong value, whatever its type
    registry = ["a"]
    grows = [Options(lambda: tuple(registry))]
    assert not _accepts(grows, "b")
    registry.append("b")
    assert _accepts(grows, "b")
    # short option lists are named inline next to other constraints, long ones as a tuple
    assert describe([Options(("auto", "x")), Interval(numbers.Real, 0, None, closed="neither")]) == \
        "'auto', 'x' or a positive finite number"
    assert describe([Options(("a", "b", "c", "d")), None]) == "one of ('a', 'b', 'c', 'd') or None"
    custom = [Options(("auto",), text="'auto' only", message="{label} must be {allowed}, got {value}")]
    with pytest.raises(ValueError, match=r"^p must be 'auto' only, got 'x'$"):
        check_parameter("p", "x", custom)


def test_none_boolean_instances_and_methods():
    assert _accepts([None], None) and not _accepts([None], 0) and isinstance(as_constraint(None), NoneValue)
    b = ["boolean"]
    assert isinstance(as_constraint("boolean"), Boolean)
    for ok in (True, False, np.bool_(True)):
        assert _accepts(b, ok)
    for bad in (0, 1, "True", None):
        assert not _accepts(b, bad), bad
    d = [InstanceOf(dict, text="a dict"), None]
    assert _accepts(d, {}) and _accepts(d, None) and not _accepts(d, [("a", 1)])
    with pytest.raises(TypeError, match=r"^p must be a dict or None; got \[0.2\]$"):
        check_parameter("p", [0.2], d)
    assert as_constraint(dict).accepts({})

    class Spends:
        def spend(self, epsilon, delta):
            pass

    class NotCallable:
        spend = 3

    h = [HasMethods("spend")]
    assert _accepts(h, Spends()) and not _accepts(h, NotCallable()) and not _accepts(h, object())


def test_random_state_takes_what_as_generator_takes():
    c = ["random_state"]
    assert isinstance(as_constraint("random_state"), RandomState)
    for ok in (None, 0, 7, np.int64(3), np.random.default_rng(0), np.random.RandomState(0),
               np.random.SeedSequence(1)):
        assert _accepts(c, ok), ok
    with pytest.raises(ValueError, match="random_state must be None, an int >= 0"):
        check_parameter("random_state", -1, c)
    for bad in (1.5, True, "0", [0]):
        with pytest.raises(TypeError, match="random_state must be"):
            check_parameter("random_state", bad, c)


def test_dtypes_arrays_and_bounds():
    dt = [DType(np.float32, np.float64)]
    for ok in ("float32", np.float64, np.dtype("float32"), "f8", None):  # None: numpy's default, float64
        assert _accepts(dt, ok), ok
    for bad in ("float16", 0, "nonsense", True, "float32 "):
        assert not _accepts(dt, bad), bad
    three = [Array((3,), positive=True)]
    assert _accepts(three, (1, 2, 3)) and _accepts(three, np.array([0.5, 1.0, 2.0]))
    for bad in ((1, 2), (1, 0, 2), (1, float("nan"), 2), ((1, 2, 3),), "abc", None):
        assert not _accepts(three, bad), bad
    box = [Bounds()]
    for ok in ((0, 1), ([0, 0], [1, 2]), (np.zeros(3), 1.0), np.zeros((4, 2)), [[0, 1], [0, 1], [0, 1]]):
        assert _accepts(box, ok), ok
    for bad in ("box", np.zeros((3, 3)), np.zeros(2), (np.zeros((2, 2)), np.ones((2, 2))), {"lower": 0}):
        assert not _accepts(box, bad), bad


def test_invalid_examples_are_refused_by_the_whole_list():
    for constraints in ([Interval(numbers.Integral, 1, None), None], [Options(("auto",)), Interval(numbers.Real, 0, 1)],
                        ["boolean"], ["random_state"], [Bounds(), None], [DType(np.float64)]):
        examples = invalid_examples(constraints)
        assert examples
        for v in examples:
            assert not _accepts(constraints, v), (constraints, v)


# ------------------------------------------------------------------ the estimators' fits


def _data():
    rng = np.random.default_rng(0)
    X = rng.uniform(0.0, 1.0, size=(40, 3))
    return X, (X[:, 0] > 0.5).astype(float)


#: arguments that make every other parameter valid (epsilon given: no FutureWarning)
VALID = {
    CompressiveKMeans: {}, CompressiveGaussianMixture: {}, CompressivePCA: {},
    MarginalSynopsis: {"bounds": ([0, 0, 0], [1, 1, 1])},
    M2MLogisticRegression: {"bounds": ([0, 0, 0], [1, 1, 1])},
    M2MLinearRegression: {"bounds": ([0, 0, 0], [1, 1, 1]), "target_bounds": (0, 1)},
    PrivateRFRegressor: {"epsilon": None}, DPRFMRegressor: {"epsilon": None},
    PrivateJLTransformer: {"epsilon": None},
}


def _fit(est):
    X, y = _data()
    if isinstance(est, (M2MLogisticRegression, M2MLinearRegression, PrivateRFRegressor, DPRFMRegressor)):
        return est.fit(X, y)
    return est.fit(X)


def _cases():
    for cls in ESTIMATORS:
        simple_renames = {new: old for old, new in cls._renamed_params.items() if isinstance(new, str)}
        for name, constraints in cls._parameter_constraints.items():
            for i, value in enumerate(invalid_examples(constraints)):  # ids by index: the same in every worker
                yield pytest.param(cls, name, name, value, id=f"{cls.__name__}-{name}-{i}")
                if name in simple_renames:  # given under its old name (the new one left out): named so
                    old = simple_renames[name]
                    yield pytest.param(cls, name, old, value, id=f"{cls.__name__}-{old}-{i}")


@pytest.mark.parametrize("cls, name, given, value", list(_cases()))
def test_an_invalid_value_of_any_parameter_is_refused_naming_it(cls, name, given, value):
    est = cls(**{**{k: v for k, v in VALID[cls].items() if k != name}, given: value})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # an old name warns first
        with pytest.raises((TypeError, ValueError), match=rf"^{given} must be "):
            _fit(est)
    assert getattr(est, given) is value  # __init__ and the check leave the parameter as given


def test_numpy_scalars_are_valid_parameters():
    X, _ = _data()
    est = CompressiveKMeans(np.int64(2), n_init=np.int32(1), kernel_scale=np.float32(0.5), pilot_size=np.int64(20),
                            random_state=np.int64(0)).fit(X)
    assert est.cluster_centers_.shape == (2, 3)
    with pytest.raises(TypeError, match=r"^n_clusters must be an int >= 1; got True$"):
        CompressiveKMeans(True).fit(X)
