"""The decoders' entry to the compiled core (pysketch._core): the one module of
pysketch.decoders that imports it, so that what the decoders ask of the C++ core is read
here. Each function takes and fills arrays exactly as the core does: C-contiguous float64
(or the dtype named), outputs written in place; the GIL is released inside."""

from .. import _core

__all__ = ["atom_terms", "clamp_output", "sincos"]


def sincos(t):
    """(cos t, sin t) of a 1-D C-contiguous float32 / float64 array of phases: two new
    arrays of its dtype (src/cpp/pysketch/sincos.hpp).

    Parameters
    ----------
    t : ndarray of float32 or float64, shape (n,)
        C-contiguous, native byte order.

    Returns
    -------
    cos, sin : ndarray of t's dtype, shape (n,)

    Raises
    ------
    TypeError
        For another dtype, or an object that is not an ndarray.
    ValueError
        For an array that is not 1-D or not contiguous.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.decoders.kernels import sincos
    >>> c, s = sincos(np.array([0.0, np.pi / 2]))
    >>> bool(np.allclose(c, [1, 0])), bool(np.allclose(s, [0, 1])), c.dtype
    (True, True, dtype('float64'))
    """
    return _core.sincos(t)


def atom_terms(P, amp, alpha, zr, zi, Gr, Gi, out_k, sq_norm):
    """The atoms a_kj = amp_kj exp(i P_kj) (amp None: 1) against z = zr + i zi
    (src/cpp/pysketch/atoms.hpp). With weights alpha: r = z - sum_k alpha_k a_k, returns
    ||r||^2 and writes out_k = -2 Re(a_k^H r); without (None): r = z, returns 0 and writes
    out_k = Re(a_k^H r) and sq_norm = ||a_k||^2. Gr / Gi (k x m, or None) receive the real
    and imaginary parts of conj(a_kj) r_j.

    Parameters
    ----------
    P : ndarray of float64, shape (k, m)
        The atoms' phases.
    amp : ndarray of float64, shape (k, m), or None
        Their amplitudes (Gaussian atoms); None: 1.
    alpha : ndarray of float64, shape (k,), or None
        The weights; None: the correlations of each atom with z.
    zr, zi : ndarray of float64, shape (m,)
        The target's real and imaginary parts.
    Gr, Gi : ndarray of float64, shape (k, m), or None
        Filled in place when given.
    out_k : ndarray of float64, shape (k,)
        Filled in place.
    sq_norm : ndarray of float64, shape (k,), or None
        Filled in place (without weights).

    Returns
    -------
    float
        ||r||^2 with weights, 0 without.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.decoders.kernels import atom_terms
    >>> out, sq = np.empty(2), np.empty(2)
    >>> atom_terms(np.zeros((2, 5)), None, None, np.ones(5), np.zeros(5), None, None, out, sq)  # a_k = 1 = z
    0.0
    >>> out, sq
    (array([5., 5.]), array([5., 5.]))
    """
    return _core.atom_terms(P, amp, alpha, zr, zi, Gr, Gi, out_k, sq_norm)


def clamp_output(zr, zi, g, P, qp, alpha, tau, noise_var, laplace, zhat, qz):
    """CL-AMP's output nodes (src/cpp/pysketch/clamp.hpp): for the m x k pseudo-priors
    N(P, qp) and the sketch zr + i zi, writes the posterior means zhat and variances qz
    (m x k) of z = theta / g; `laplace` chooses Laplace's method over the adaptive grid.

    The compiled twin of :func:`pysketch.decoders.cl_amp.output_step_reference`, with the
    same algorithm and constants.

    Parameters
    ----------
    zr, zi : ndarray of float64, shape (m,)
        The sketch's real and imaginary parts.
    g : ndarray of float64, shape (m,)
        The frequency norms, > 0.
    P : ndarray of float64, shape (m, k)
        The pseudo-prior means.
    qp : ndarray of float64, shape (k,)
        The pseudo-prior variances.
    alpha, tau : ndarray of float64, shape (k,)
        The clusters' weights and spreads.
    noise_var : float
        The noise floor sigma_e^2.
    laplace : bool
        True: Laplace's method (MAP and inverse curvature); False: the adaptive grid.
    zhat, qz : ndarray of float64, shape (m, k)
        Filled in place.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.decoders.cl_amp import output_step_reference
    >>> from pysketch.decoders.kernels import clamp_output
    >>> rng = np.random.default_rng(0)
    >>> zr, zi, g, P = rng.normal(size=6), rng.normal(size=6), np.ones(6), rng.normal(size=(6, 2))
    >>> qp, alpha, tau, zhat, qz = np.full(2, 0.5), np.full(2, 0.5), np.zeros(2), np.empty((6, 2)), np.empty((6, 2))
    >>> clamp_output(zr, zi, g, P, qp, alpha, tau, 1e-3, False, zhat, qz)
    >>> ref_zhat, ref_qz = output_step_reference(zr, zi, g, P, qp, alpha, tau, 1e-3)
    >>> bool(np.allclose(zhat, ref_zhat, rtol=0, atol=1e-9)), bool(np.allclose(qz, ref_qz, rtol=1e-8))
    (True, True)
    """
    _core.clamp_output(zr, zi, g, P, qp, alpha, tau, noise_var, laplace, zhat, qz)
