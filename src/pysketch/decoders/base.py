"""The decoder contract: a named way to turn a task posed on a sketch into its solution.

One call, ``decoder.decode(task) -> solution``. The task is the whole question:

- :class:`MixtureTask` (``task.name == 'mixture'``): `n_atoms` atoms of the family `atoms`
  ('dirac': k-means centres; 'diagonal_gaussian': a diagonal GMM) inside the box
  [`lower`, `upper`], from `problem`, what the sketch says (a DecodingProblem of Fourier
  features, or the problem the decoder names as its `problem_type`: the grid decoder's
  GridProblem); the solution is a MixtureSolution (CL-OMPR, CL-AMP, coreset, grid).
- :class:`SubspaceTask` (``'subspace'``): the top `n_components` principal directions from
  `problem` (a SubspaceProblem of quadratic features, or a CovarianceProblem of a
  second-moment sketch); the solution is a SubspaceSolution (Burer-Monteiro, eigen).

The argument is the posed problem of issue 38's ``decode(problem)``; it is called a task
because `problem` already names what a sketch says (DecodingProblem, GridProblem,
SubspaceProblem, CovarianceProblem: made from a sketch, unchanged, shared by the decoders
that read it), and the task adds what is asked of it.

The task holds what is asked and the problem what is known; how the decoder runs (its
restarts `n_init`, the generator of its starts `random_state`, and any option of its own,
as Burer-Monteiro's `max_iter`) is given when it is made, ``ClomprDecoder(n_init=3,
random_state=rng)``, and stored unchanged (scikit-learn's convention). Why there and not
in the task: the same task can be put to several decoders, or to one decoder set two
ways, and compared; options are the decoder's own (no task needs to know that CL-AMP
restarts or that Burer-Monteiro iterates); and the estimators make a decoder from their
own parameters once, then pose the task of the sketch at hand.

A decoder is a class registered in DECODERS under its name; the estimators pick one by
name (``decoder='clompr'``) and read what it declares on its class, never its name:

- `task`: the task it solves ('mixture' or 'subspace');
- `atoms`: the atom families it decodes (mixtures; empty for subspaces);
- `decodes_private`: whether it decodes private (noisy) sketches; checked with `check`
  before anything is sketched or any privacy budget is spent;
- `problem_type`: the problem it reads (None: the DecodingProblem of Fourier features),
  made from a sketch by `problem(sketch)`;
- `frequency_law`: the frequency law that an estimator's ``frequency_law='auto'`` stands
  for when this decoder reads the sketch (None: the estimator's default for its atoms;
  the coreset decoder asks for 'log_uniform', a multi-scale law);
- `scale_rule`: what ``kernel_scale='auto'`` means for it: 'estimate' (a scale for the
  atoms, estimated from a pilot of the data, pysketch.kernel_scale; from a private
  pilot's spread, the thesis's separation rule) or 'spread' (the data's spread itself: a
  multi-scale law covers the other scales).

The estimators never test a decoder's name: what differs between decoders is declared
here (tests/test_architecture.py refuses a comparison of a decoder name with a string
other than 'auto' outside pysketch.decoders). Which decoder decoder='auto' stands for is
a rule of each estimator, which names its choice.

A new decoder subclasses `Decoder`, declares these and registers itself::

    @DECODERS.register("mine")
    class MyDecoder(Decoder):
        name = "mine"
        atoms = ("dirac",)

        def decode(self, task):
            self.check_task(task)
            problem = task.problem  # problem.z, problem.apply, problem.count, ...
            ...  # task.n_atoms atoms in [task.lower, task.upper], self.n_init, self.random_state
            return MixtureSolution(theta=..., weights=..., residual=..., restart=0, n_iter=...)

The old contract, for one version: a decoder written as
``decode(self, problem, n_atoms, lower, upper, *, atoms, n_init, random_state)`` (or
``decode(self, problem, n_components, *, n_init, random_state)`` for subspaces) is
adapted when its class is made, with a FutureWarning: ``decode(task)`` calls it with the
task's values and the decoder's run options (and a class ``__init__`` of its own that
takes no run options accepts them). Calling a decoder the old way,
``decoder.decode(problem, n_atoms, lower, upper, n_init=..., random_state=...)``, still
works too and warns: the arguments become the task and the run options of a copy of the
decoder.
"""

import copy
import dataclasses
import functools
import inspect
import warnings

import numpy as np

from .._state import Registry

__all__ = ["DECODERS", "Decoder", "MixtureTask", "SubspaceTask", "Task"]

#: Decoders by name (pysketch.decoders registers 'clompr', 'cl_amp', 'coreset', 'grid',
#: 'burer_monteiro' and 'eigen').
DECODERS = Registry("decoder", key="name")


class Task:
    """What a decoder is asked (see the module docstring): `name` is the task ('mixture',
    'subspace'), `problem` what the sketch says.

    The base of :class:`MixtureTask` and :class:`SubspaceTask`; a decoder's
    ``check_task`` accepts only its instances.

    Examples
    --------
    >>> from pysketch.decoders import MixtureTask, SubspaceTask, Task
    >>> task = SubspaceTask(problem=None, n_components=2)
    >>> isinstance(task, Task), task.name, MixtureTask.name
    (True, 'subspace', 'mixture')
    """

    name = None


@dataclasses.dataclass(frozen=True, eq=False)
class MixtureTask(Task):
    """`n_atoms` atoms of the family `atoms` (pysketch.decoders.problem.ATOMS) inside the
    box [lower, upper] (in the problem's frame), from `problem`.

    Frozen; its values are checked by the decoder that solves it.

    Parameters
    ----------
    problem : DecodingProblem or a decoder's problem type
        What the sketch says (``Decoder.problem(sketch)`` makes the one a decoder reads).
    n_atoms : int
        The number of atoms (clusters).
    lower, upper : float or array_like of shape (d,)
        The box of the atoms' positions.
    atoms : str, default 'dirac'
        The atom family: 'dirac' (k-means centres), 'diagonal_gaussian' or
        'isotropic_gaussian'.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.decoders import DECODERS, MixtureTask
    >>> from pysketch.features import FeatureMap
    >>> from pysketch.operators import make_operator
    >>> X = np.repeat([[-3.0, -3.0], [3.0, 3.0]], 500, axis=0) + np.random.default_rng(0).normal(0, 0.5, (1000, 2))
    >>> sketch = FeatureMap(make_operator(2, 40, random_state=0), "complex").sketch(X)
    >>> decoder = DECODERS.get("clompr")(random_state=0)
    >>> solution = decoder.decode(MixtureTask(decoder.problem(sketch), 2, lower=-5.0, upper=5.0))
    >>> bool(np.allclose(np.sort(solution.theta[:, 0]), [-3, 3], atol=0.5))
    True
    """

    name = "mixture"
    problem: object
    n_atoms: int
    lower: np.ndarray
    upper: np.ndarray
    atoms: str = "dirac"


@dataclasses.dataclass(frozen=True, eq=False)
class SubspaceTask(Task):
    """The top `n_components` principal directions, from `problem`.

    Frozen; its values are checked by the decoder that solves it.

    Parameters
    ----------
    problem : SubspaceProblem or CovarianceProblem
        What the sketch says (``Decoder.problem(sketch)`` makes the one a decoder reads).
    n_components : int
        The number of directions, in [1, d].

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.decoders import DECODERS, SubspaceTask
    >>> from pysketch.features import SecondMomentMap
    >>> X = np.random.default_rng(0).normal(size=(2000, 8)) * [3.0, 2.0, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]
    >>> decoder = DECODERS.get("eigen")()
    >>> solution = decoder.decode(SubspaceTask(decoder.problem(SecondMomentMap(8).sketch(X)), 2))
    >>> bool(np.allclose(np.abs(solution.components[:, :2]), np.eye(2), atol=0.1))
    True
    """

    name = "subspace"
    problem: object
    n_components: int


class Decoder:
    """Decode a task (MixtureTask, SubspaceTask) into its solution; see the module docstring.

    Parameters
    ----------
    n_init : int, default 1
        Restarts (how each decoder uses them: its docstring).
    random_state : None, int or numpy.random.Generator
        Draws the decoder's starts. A Generator is used as it is (each `decode` continues
        it); an int gives the same starts at every `decode`.

    Raises
    ------
    ValueError
        From ``check`` (and ``check_task``), when the decoder does not solve the task,
        does not decode the atom family, or does not decode private sketches.
    TypeError
        From ``check_task``, when the task is not a Task.
    NotImplementedError
        From this base class's ``decode``: a decoder defines its own.

    Examples
    --------
    >>> from pysketch.decoders import DECODERS
    >>> decoder = DECODERS.get("clompr")(n_init=3, random_state=0)
    >>> decoder.task, decoder.atoms, decoder.n_init
    ('mixture', ('dirac', 'diagonal_gaussian'), 3)
    >>> decoder.check(task="subspace")
    Traceback (most recent call last):
        ...
    ValueError: decoder 'clompr' solves the 'mixture' task, not 'subspace'
    """

    name = None
    #: the task it solves: 'mixture' or 'subspace'
    task = "mixture"
    #: the atom families (pysketch.decoders.problem.ATOMS) it decodes
    atoms = ("dirac",)
    #: whether it decodes private (noisy) sketches
    decodes_private = True
    #: the problem it reads, made from a sketch by ``problem_type.from_sketch`` (None: the
    #: DecodingProblem of Fourier features)
    problem_type = None
    #: the frequency law frequency_law='auto' stands for when it reads the sketch (None:
    #: the estimator's default for its atoms)
    frequency_law = None
    #: what kernel_scale='auto' is for it: 'estimate' (the atoms' scale, from a pilot) or
    #: 'spread' (the data's spread)
    scale_rule = "estimate"

    def __init__(self, *, n_init=1, random_state=None):
        self.n_init = n_init
        self.random_state = random_state

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        decode = vars(cls).get("decode")
        if decode is None:
            return
        if _is_old_decode(decode):
            warnings.warn(
                f"{cls.__module__}.{cls.__qualname__}.decode{inspect.signature(decode)} follows the old decoder "
                "contract; it is adapted for this version only. Write decode(self, task): the task holds the "
                "problem and what is asked (task.problem, task.n_atoms, task.lower, task.upper, task.atoms; "
                "task.n_components), the decoder its run options (self.n_init, self.random_state); see "
                "pysketch.decoders.base", FutureWarning, stacklevel=2)
            cls.decode = _adapt_old_decode(decode)
            init = vars(cls).get("__init__")
            if init is not None and not _takes_run_options(init):
                cls.__init__ = _adapt_old_init(init)
        else:
            cls.decode = _accept_old_calls(decode)

    @classmethod
    def problem(cls, sketch):
        """The problem this decoder reads, made from `sketch` (a Sketch or PrivateSketch)."""
        if cls.problem_type is None:
            from .problem import DecodingProblem

            return DecodingProblem.from_sketch(sketch)
        return cls.problem_type.from_sketch(sketch)

    @classmethod
    def check(cls, *, task="mixture", atoms="dirac", private=False):
        """ValueError (naming the decoder) when it cannot decode such a sketch: asked
        before anything is sketched or charged."""
        if task != cls.task:
            raise ValueError(f"decoder {cls.name!r} solves the {cls.task!r} task, not {task!r}")
        if cls.atoms and atoms not in cls.atoms:  # decoders of atoms (mixtures)
            raise ValueError(f"decoder {cls.name!r} decodes atoms {cls.atoms}, not {atoms!r}")
        if private and not cls.decodes_private:
            raise ValueError(f"decoder={cls.name!r} does not decode private sketches (measured unreliable: it fits "
                             "the noise); use decoder='clompr' or 'cl_amp' with epsilon")

    def check_task(self, task):
        """The task, when this decoder solves it: TypeError unless it is a Task; `check`'s
        ValueError for another task, another atom family or a private problem it does
        not decode."""
        if not isinstance(task, Task):
            raise TypeError(f"decoder {self.name!r} decodes a MixtureTask or SubspaceTask, got {type(task).__name__}")
        self.check(task=task.name, atoms=getattr(task, "atoms", None),
                   private=bool(getattr(task.problem, "private", False)))
        return task

    def decode(self, task):
        """The solution of `task` (a MixtureSolution or SubspaceSolution)."""
        raise NotImplementedError


DECODERS.base = Decoder


# ------------------------------------------------------------- the old contract, one version

#: the old calls, by task: decode(problem, n_atoms, lower, upper, *, atoms, n_init, random_state)
#: and decode(problem, n_components, *, n_init, random_state); _UNSET: not given
_UNSET = object()
_OLD_CALLS = {
    "mixture": inspect.Signature([
        inspect.Parameter("problem", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        inspect.Parameter("n_atoms", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        inspect.Parameter("lower", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        inspect.Parameter("upper", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        inspect.Parameter("atoms", inspect.Parameter.KEYWORD_ONLY, default="dirac"),
        inspect.Parameter("n_init", inspect.Parameter.KEYWORD_ONLY, default=_UNSET),
        inspect.Parameter("random_state", inspect.Parameter.KEYWORD_ONLY, default=_UNSET)]),
    "subspace": inspect.Signature([
        inspect.Parameter("problem", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        inspect.Parameter("n_components", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        inspect.Parameter("n_init", inspect.Parameter.KEYWORD_ONLY, default=_UNSET),
        inspect.Parameter("random_state", inspect.Parameter.KEYWORD_ONLY, default=_UNSET)]),
}


def _is_old_decode(decode):
    """Whether a class's decode takes the old arguments: more than the task after self."""
    positional = [p for p in inspect.signature(decode).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) > 2


def _takes_run_options(init):
    params = inspect.signature(init).parameters
    return ("n_init" in params and "random_state" in params) or any(p.kind == p.VAR_KEYWORD for p in params.values())


def _task_of_old_call(task_name, args, kwargs):
    """(task, run options given) of an old call's arguments."""
    bound = _OLD_CALLS[task_name].bind(*args, **kwargs)
    bound.apply_defaults()
    a = bound.arguments
    if task_name == "subspace":
        task = SubspaceTask(a["problem"], a["n_components"])
    else:
        task = MixtureTask(a["problem"], a["n_atoms"], a["lower"], a["upper"], atoms=a["atoms"])
    return task, {k: a[k] for k in ("n_init", "random_state") if a[k] is not _UNSET}


def _accept_old_calls(decode):
    """A decoder's decode(task) that also takes the old call (with a FutureWarning): the
    arguments become the task and the run options of a copy of the decoder."""

    @functools.wraps(decode)
    def wrapper(self, *args, **kwargs):
        if (len(args) == 1 and not kwargs) or (not args and list(kwargs) == ["task"]):
            return decode(self, *args, **kwargs)
        task_name = type(self).task
        what = "problem, n_components" if task_name == "subspace" else "problem, n_atoms, lower, upper"
        warnings.warn(
            f"{type(self).__name__}.decode({what}, ...) is the old decoder call; it goes in the next version. "
            f"Give n_init and random_state to {type(self).__name__}(...) and call "
            f"decode({'SubspaceTask' if task_name == 'subspace' else 'MixtureTask'}({what}...))",
            FutureWarning, stacklevel=2)
        task, run = _task_of_old_call(task_name, args, kwargs)
        if run:
            self = copy.copy(self)
            for key, value in run.items():
                setattr(self, key, value)
        return decode(self, task)

    return wrapper


def _adapt_old_decode(old):
    """The decode(task) of a decoder written to the old contract: calls it with the task's
    values and the decoder's run options (old calls go through as they are)."""

    @functools.wraps(old)
    def decode(self, *args, **kwargs):
        task = args[0] if len(args) == 1 and not kwargs else None
        if not args and list(kwargs) == ["task"]:
            task = kwargs["task"]
        if not isinstance(task, Task):
            return old(self, *args, **kwargs)
        run = {"n_init": getattr(self, "n_init", 1), "random_state": getattr(self, "random_state", None)}
        if task.name == "subspace":
            return old(self, task.problem, task.n_components, **run)
        return old(self, task.problem, task.n_atoms, task.lower, task.upper, atoms=task.atoms, **run)

    return decode


def _adapt_old_init(init):
    """An old decoder's own __init__, taking the run options too (stored as Decoder's)."""

    @functools.wraps(init)
    def __init__(self, *args, n_init=1, random_state=None, **kwargs):
        init(self, *args, **kwargs)
        self.n_init = n_init
        self.random_state = random_state

    return __init__
