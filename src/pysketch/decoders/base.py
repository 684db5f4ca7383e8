"""The decoder contract: a named way to turn a problem of a task into its solution.

Two tasks today: 'mixture' (a DecodingProblem of Fourier features into a MixtureSolution:
CL-OMPR, CL-AMP, coreset) and 'subspace' (a SubspaceProblem of quadratic features into a
SubspaceSolution: pysketch.decoders.subspace). A decoder states its task; the estimators
check it before anything is sketched.

A decoder is a class registered in DECODERS under its name; the estimators pick one by
name (``decoder='clompr'``) and call ``decode``. A new decoder subclasses `Decoder`, says
which atom families it decodes and whether it decodes private sketches (checked before
any privacy budget is spent), and registers itself:

    @DECODERS.register("mine")
    class MyDecoder(Decoder):
        atoms = ("dirac",)
        def decode(self, problem, n_atoms, lower, upper, *, atoms="dirac", n_init=1, random_state=None):
            ...
            return MixtureSolution(...)
"""

from .._state import Registry

__all__ = ["DECODERS", "Decoder"]

#: Decoders by name (pysketch.decoders registers 'clompr', 'cl_amp' and 'coreset').
DECODERS = Registry("decoder", key="name")


class Decoder:
    """Decode a DecodingProblem into a MixtureSolution of `n_atoms` atoms of a family
    ('dirac': k-means centres; 'diagonal_gaussian': a diagonal GMM) inside the box
    [lower, upper]."""

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

    def decode(self, problem, n_atoms, lower, upper, *, atoms="dirac", n_init=1, random_state=None):
        raise NotImplementedError


DECODERS.base = Decoder
