"""The decoders' entry to the compiled core (pysketch._core): the one module of
pysketch.decoders that imports it, so that what the decoders ask of the C++ core is read
here. Each function takes and fills arrays exactly as the core does: C-contiguous float64
(or the dtype named), outputs written in place; the GIL is released inside."""

from .. import _core

__all__ = ["atom_terms", "clamp_output", "sincos"]


def sincos(t):
    """(cos t, sin t) of a 1-D C-contiguous float32 / float64 array of phases: two new
    arrays of its dtype (src/cpp/pysketch/sincos.hpp)."""
    return _core.sincos(t)


def atom_terms(P, amp, alpha, zr, zi, Gr, Gi, out_k, sq_norm):
    """The atoms a_kj = amp_kj exp(i P_kj) (amp None: 1) against z = zr + i zi
    (src/cpp/pysketch/atoms.hpp). With weights alpha: r = z - sum_k alpha_k a_k, returns
    ||r||^2 and writes out_k = -2 Re(a_k^H r); without (None): r = z, returns 0 and writes
    out_k = Re(a_k^H r) and sq_norm = ||a_k||^2. Gr / Gi (k x m, or None) receive the real
    and imaginary parts of conj(a_kj) r_j."""
    return _core.atom_terms(P, amp, alpha, zr, zi, Gr, Gi, out_k, sq_norm)


def clamp_output(zr, zi, g, P, qp, alpha, tau, noise_var, laplace, zhat, qz):
    """CL-AMP's output nodes (src/cpp/pysketch/clamp.hpp): for the m x k pseudo-priors
    N(P, qp) and the sketch zr + i zi, writes the posterior means zhat and variances qz
    (m x k) of z = theta / g; `laplace` chooses Laplace's method over the adaptive grid."""
    _core.clamp_output(zr, zi, g, P, qp, alpha, tau, noise_var, laplace, zhat, qz)
