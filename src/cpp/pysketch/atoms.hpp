// atoms.hpp - the sketches of mixture atoms and the terms of their gradients, for the
// compressive learning decoders (header-only, C++17; knows nothing of Python).
//
// k atoms are given by their phases P (k x m) and optional amplitudes amp (k x m):
//     a_kj = amp_kj * exp(i P_kj)
// (Dirac atoms: P = C Omega, no amplitude; diagonal Gaussians: P = mu Omega and amp =
// exp(-((Omega o Omega)^T sigma^2) / 2), Chatalic's thesis sec. 6.2.1). Against a target
// z = zr + i zi (m values), two modes:
//
//   mixture (alpha given):  r = z - sum_k alpha_k a_k,   returns F = ||r||^2 and
//                           grad_alpha_k = dF/dalpha_k = -2 Re(a_k^H r)
//   correlation (no alpha): r = z,  returns nothing but corr_k = Re(a_k^H r) and
//                           sq_norm_k = ||a_k||^2
//
// and, in both, Gr_kj = Re(conj(a_kj) r_j) and Gi_kj = Im(conj(a_kj) r_j), from which the
// callers build the gradients with the operator's adjoint (notes seed003 sec. 2.2, 2.4):
//   dF/dP_kj = -2 alpha_k Gi_kj,  dF/dQ_kj = alpha_k Gr_kj (amp = exp(-Q/2)),
//   d Re(a_k^H r)/dP_kj = Gi_kj,   d Re(a_k^H r)/dQ_kj = -Gr_kj / 2.
// Everything is float64; cos and sin come from sincos.hpp (SIMD, same bits on every path).
#ifndef PYSKETCH_ATOMS_HPP
#define PYSKETCH_ATOMS_HPP

#include <cstddef>
#include <stdexcept>
#include <vector>

#include "pysketch/sincos.hpp"

namespace pysketch {
namespace atoms {

struct Terms {
    std::size_t k = 0, m = 0;
    const double *P = nullptr;    // k x m, row stride m
    const double *amp = nullptr;  // k x m or nullptr (all ones)
    const double *alpha = nullptr;  // k, or nullptr: correlation mode
    const double *zr = nullptr, *zi = nullptr;  // m
    double *Gr = nullptr, *Gi = nullptr;  // k x m outputs (either may be nullptr)
    double *out_k = nullptr;    // k: grad_alpha (mixture) or corr (correlation)
    double *sq_norm = nullptr;  // k: ||a_k||^2 (correlation mode; may be nullptr)
};

// Returns F = ||r||^2 in the mixture mode, 0 in the correlation mode.
inline double terms(const Terms &t)
{
    const std::size_t k = t.k, m = t.m;
    if (!t.P || !t.zr || !t.zi || !t.out_k) throw std::invalid_argument("atoms::terms: missing array");
    std::vector<double> C(k * m), S(k * m), rr(t.zr, t.zr + m), ri(t.zi, t.zi + m);
    for (std::size_t a = 0; a < k; ++a) {
        double *c = C.data() + a * m, *s = S.data() + a * m;
        sincos::sincos<double>(t.P + a * m, m, c, s);
        if (t.amp) {
            const double *am = t.amp + a * m;
            for (std::size_t j = 0; j < m; ++j) {
                c[j] *= am[j];
                s[j] *= am[j];
            }
        }
    }
    double F = 0.0;
    if (t.alpha) {  // r = z - sum_k alpha_k a_k
        for (std::size_t a = 0; a < k; ++a) {
            const double w = t.alpha[a];
            const double *c = C.data() + a * m, *s = S.data() + a * m;
            for (std::size_t j = 0; j < m; ++j) {
                rr[j] -= w * c[j];
                ri[j] -= w * s[j];
            }
        }
        for (std::size_t j = 0; j < m; ++j) F += rr[j] * rr[j] + ri[j] * ri[j];
    }
    for (std::size_t a = 0; a < k; ++a) {
        const double *c = C.data() + a * m, *s = S.data() + a * m;
        double *gr = t.Gr ? t.Gr + a * m : nullptr, *gi = t.Gi ? t.Gi + a * m : nullptr;
        double re_sum = 0.0, norm = 0.0;
        for (std::size_t j = 0; j < m; ++j) {
            // conj(a) r = (c - i s)(rr + i ri) = (c rr + s ri) + i (c ri - s rr)
            const double re = c[j] * rr[j] + s[j] * ri[j];
            const double im = c[j] * ri[j] - s[j] * rr[j];
            if (gr) gr[j] = re;
            if (gi) gi[j] = im;
            re_sum += re;
            norm += c[j] * c[j] + s[j] * s[j];
        }
        t.out_k[a] = t.alpha ? -2.0 * re_sum : re_sum;
        if (t.sq_norm) t.sq_norm[a] = norm;
    }
    return F;
}

}  // namespace atoms
}  // namespace pysketch

#endif  // PYSKETCH_ATOMS_HPP
