"""Conversion of a ``random_state`` argument to a :class:`numpy.random.Generator`.

Every random object of pysketch takes a ``random_state`` argument, as in scikit-learn,
and turns it into a generator with :func:`as_generator` at the start of each call that
draws. The rules:

* ``None``: a new generator seeded from fresh OS entropy (not reproducible).
* an ``int >= 0`` (Python or numpy integer): ``numpy.random.default_rng(seed)``, so the
  same seed gives the same draws, call after call.
* a :class:`numpy.random.SeedSequence`: ``numpy.random.default_rng(seed_sequence)``.
* a :class:`numpy.random.Generator`: used as is; its state advances with every draw, so
  two calls given the same generator get different (independent) draws. To make several
  draws of one object independent *and* reproducible, pass one generator through them
  rather than the same int twice (the same int restarts the same stream).
* a legacy :class:`numpy.random.RandomState`: a new generator is seeded with 128 bits drawn
  from it (so the RandomState advances, and a seeded RandomState gives reproducible draws).

Privacy noise must never come from here with a user seed: see the privacy modules.
"""

import numbers

import numpy as np

__all__ = ["as_generator"]

_ALLOWED = (
    "None, an int >= 0, a numpy.random.SeedSequence, a numpy.random.Generator "
    "or a numpy.random.RandomState"
)


def as_generator(random_state, name="random_state"):
    """Return a :class:`numpy.random.Generator` for a ``random_state`` argument.

    Parameters
    ----------
    random_state : None, int, numpy.random.SeedSequence, numpy.random.Generator or \
numpy.random.RandomState
        ``None`` gives a generator seeded from fresh OS entropy; an int >= 0 or a
        SeedSequence seeds ``numpy.random.default_rng``; a Generator is returned as is (not
        copied: drawing from the result advances it); a legacy RandomState is used to draw
        a 128-bit seed (four 32-bit words) for a new generator, which advances the
        RandomState.
    name : str, optional
        The name of the argument, used in error messages.

    Returns
    -------
    numpy.random.Generator

    Raises
    ------
    TypeError
        If `random_state` is of any other type (bools and floats included).
    ValueError
        If `random_state` is a negative int.
    """
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, (bool, np.bool_)):
        raise TypeError(f"{name} must be {_ALLOWED}; got the bool {random_state!r}")
    if isinstance(random_state, numbers.Integral):
        seed = int(random_state)
        if seed < 0:
            raise ValueError(f"{name} must be {_ALLOWED}; got the negative int {seed}")
        return np.random.default_rng(seed)
    if isinstance(random_state, np.random.SeedSequence):
        return np.random.default_rng(random_state)
    if isinstance(random_state, np.random.RandomState):
        # 128 bits of entropy, drawn from the legacy stream (which advances).
        words = random_state.randint(0, 2**32, size=4, dtype=np.uint64)
        return np.random.default_rng(np.random.SeedSequence([int(w) for w in words]))
    raise TypeError(
        f"{name} must be {_ALLOWED}; got {random_state!r} of type "
        f"{type(random_state).__name__}"
    )
