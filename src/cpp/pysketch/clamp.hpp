// clamp.hpp - the output nodes of CL-AMP (compressive k-means by SHyGAMP): for every
// frequency j and cluster t, the mean and variance of theta = g_j z_jt under the generalized
// von Mises x Gaussian posterior (header-only, C++17; knows nothing of Python).
//
// Byrne, Chatalic, Gribonval & Schniter, IEEE TSP 2019; Chatalic's thesis (2020) sec. 6.3.2
// and appendix B, with the corrections and the beta-free form of the project notes
// (seed003_clamp.md sec. 3.3-3.6). The Python reference is pysketch/decoders/clamp.py
// (_theta_moments_one, gvm_coefficients, output_step_reference): the same algorithm and
// constants, checked against each other by tests/test_clamp.py.
//
//   theta_moments(q, laplace, ws, mean, var)
//       p(theta) ~ exp(f(theta)), f = a1 cos + b1 sin + a2 cos 2. + b2 sin 2. - (. - mu0)^2/(2 v0):
//       a coarse grid (<= 2 pi / 16 apart) over the window where the density can exceed
//       exp(-32) x its maximum finds every local maximum; safeguarded Newton refines them; the
//       modes within 30 nats (Laplace log-mass) of the best, +- 7 sd, and the coarse runs within
//       40 nats of the top are integrated on uniform grids of spacing 1 / (3 sqrt(max |f''|))
//       with weights exp(f - f_max) (log-sum-exp). laplace: MAP and 1 / (-f''(MAP)).
//
//   output_rows(args, row_begin, row_end)
//       fused per frequency: the coefficients (a1, b1, a2, b2, mu0, v0) of its k posteriors
//       (leave-one-out sums, O(k)), their moments, z_hat = E[theta]/g, q^z = Var[theta]/g^2
//       with the guards (non-finite -> prior moments; q^z clipped to [1e-12, 0.99] q^p).
//   output(args)   output_rows over all rows, on all threads (parallel.hpp).
//
// The grid loops (theta -> cos/sin -> f -> exp -> three sums) run on arrays: sincos from
// sincos.hpp (SIMD), the rest in plain loops compiled three times (AVX-512F, AVX2 + FMA and the
// baseline) and chosen at run time with the same level as the rest of pysketch
// (simd::level(), capped by PYSKETCH_SIMD). The sums use 8 fixed partial sums and exp
// is our own polynomial (relative error < 1e-15), so every level gives the same bits.
#ifndef PYSKETCH_CLAMP_HPP
#define PYSKETCH_CLAMP_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "pysketch/parallel.hpp"
#include "pysketch/simd.hpp"
#include "pysketch/sincos.hpp"

// No fused multiply-adds where the source has none: the AVX2 and AVX-512 clones of the grid
// loops must round like the baseline ones (the same bits on every level).
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif

namespace pysketch {
namespace clamp {

// Shared with the Python reference (pysketch/decoders/clamp.py); change both together.
inline constexpr double window_std = 8.0;
inline constexpr double coarse_per_period = 16.0;
inline constexpr std::size_t coarse_min_points = 17;
inline constexpr std::size_t max_coarse = 4097;
inline constexpr double fine_per_std = 3.0;
inline constexpr double fine_half_width = 7.0;
inline constexpr std::size_t max_fine = 4097;
inline constexpr double mode_keep = 30.0;
inline constexpr double support_margin = 10.0;
inline constexpr int newton_maxiter = 40;
inline constexpr double qz_clip_lo = 1e-12;
inline constexpr double qz_clip_hi = 0.99;

inline constexpr double pi = 3.141592653589793238462643383279502884;

struct Coef {
    double a1, b1, a2, b2, mu0, v0;
};

namespace detail {

inline void f012(const Coef &q, double th, double &f, double &f1, double &f2)
{
    double c, s;
    sincos::sincos_scalar<double>(th, c, s);
    const double c2 = c * c - s * s, s2 = 2.0 * s * c;
    const double dt = th - q.mu0;
    f = q.a1 * c + q.b1 * s + q.a2 * c2 + q.b2 * s2 - dt * dt / (2.0 * q.v0);
    f1 = -q.a1 * s + q.b1 * c - 2.0 * q.a2 * s2 + 2.0 * q.b2 * c2 - dt / q.v0;
    f2 = -q.a1 * c - q.b1 * s - 4.0 * q.a2 * c2 - 4.0 * q.b2 * s2 - 1.0 / q.v0;
}

inline double f0(const Coef &q, double th)
{
    double f, f1, f2;
    f012(q, th, f, f1, f2);
    return f;
}

// exp(x) for x <= ~0 as used here (x is clamped to [-700, 700]): Cody-Waite reduction
// x = n ln2 + r, |r| <= ln2/2, then the Taylor polynomial of degree 13 (truncation < 3e-17
// relative) and 2^n from the exponent bits. Branch-free, so the loops vectorize.
inline double exp_poly(double x)
{
    x = std::min(std::max(x, -700.0), 700.0);
    const double shifter = 6755399441055744.0;  // 1.5 * 2^52: adding it rounds to an integer
    const double kd = x * 1.4426950408889634 + shifter;
    const double n = kd - shifter;
    const double r = (x - n * 0.693147180559890330187) - n * 5.497923018708371174e-14;
    double p = 1.0 / 6227020800.0;
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    std::uint64_t kb, sb;
    std::memcpy(&kb, &kd, sizeof kd);
    const double sh = shifter;
    std::memcpy(&sb, &sh, sizeof sh);
    const std::uint64_t bits = (kb - sb + 1023u) << 52;
    double scale;
    std::memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

// The grid loops (clamp_loops.inc), compiled for AVX-512F, for AVX2 + FMA and for the baseline.
#if defined(PYSKETCH_SIMD_X86)
PYSKETCH_SIMD_BEGIN_AVX512
namespace avx512 {
#include "pysketch/clamp_loops.inc"
}  // namespace avx512
PYSKETCH_SIMD_END

PYSKETCH_SIMD_BEGIN_AVX2
namespace avx2 {
#include "pysketch/clamp_loops.inc"
}  // namespace avx2
PYSKETCH_SIMD_END
#endif

namespace base {
#include "pysketch/clamp_loops.inc"
}  // namespace base

struct Loops {
    void (*fill)(double, double, std::size_t, double *);
    void (*f_values)(const Coef &, const double *, const double *, const double *, std::size_t, double *);
    void (*sums)(const double *, const double *, std::size_t, double, double, double[3]);
};

inline Loops loops()
{
#if defined(PYSKETCH_SIMD_X86)
    switch (simd::level()) {
    case simd::Level::avx512: return {avx512::fill, avx512::f_values, avx512::sums};
    case simd::Level::avx2: return {avx2::fill, avx2::f_values, avx2::sums};
    default: break;
    }
#endif
    return {base::fill, base::f_values, base::sums};
}

struct Mode {
    double th, f, c;
};

}  // namespace detail

// Buffers reused from one posterior to the next (one per thread).
struct Workspace {
    std::vector<double> th, c, s, f;
    std::vector<detail::Mode> modes;
    std::vector<std::pair<double, double>> pieces, intervals;
    detail::Loops loops = detail::loops();

    void grid(const Coef &q, double t0, double h, std::size_t n)
    {
        if (th.size() < n) {
            th.resize(n);
            c.resize(n);
            s.resize(n);
            f.resize(n);
        }
        loops.fill(t0, h, n, th.data());
        sincos::sincos<double>(th.data(), n, c.data(), s.data());
        loops.f_values(q, th.data(), c.data(), s.data(), n, f.data());
    }
};

namespace detail {

// Safeguarded Newton for the maximum bracketed by [lo, hi] from the coarse sample th.
inline Mode refine(const Coef &q, double lo, double hi, double th)
{
    const double start = th;
    const double fstart = f0(q, th);
    for (int it = 0; it < newton_maxiter; ++it) {
        double f, d1, d2;
        f012(q, th, f, d1, d2);
        if (d1 > 0.0) lo = th;
        else hi = th;
        double nw = d2 < 0.0 ? th - d1 / d2 : 0.5 * (lo + hi);
        if (!(lo < nw && nw < hi)) nw = 0.5 * (lo + hi);
        const double tolx = 1e-12 * (1.0 + std::fabs(th));
        const bool done = std::fabs(nw - th) <= tolx || hi - lo <= tolx;
        th = nw;
        if (done) break;
    }
    double f, d1, d2;
    f012(q, th, f, d1, d2);
    if (!(f >= fstart)) {
        th = start;
        f012(q, th, f, d1, d2);
    }
    return {th, f, -d2};
}

}  // namespace detail

inline void theta_moments(const Coef &q, bool laplace, Workspace &ws, double &mean, double &var)
{
    const double vals[6] = {q.a1, q.b1, q.a2, q.b2, q.mu0, q.v0};
    for (double v : vals)
        if (!std::isfinite(v)) {
            mean = q.mu0;
            var = q.v0;
            return;
        }
    if (!(q.v0 > 0.0)) {
        mean = q.mu0;
        var = q.v0;
        return;
    }
    const double k1 = std::hypot(q.a1, q.b1), k2 = std::hypot(q.a2, q.b2);
    const double R = 2.0 * (k1 + k2), n2 = window_std * window_std;
    const double W = std::min(std::sqrt(q.v0 * (n2 + 2.0 * R)), std::sqrt(pi * pi + q.v0 * n2));
    // coarse pass
    std::size_t n_c = static_cast<std::size_t>(std::ceil(2.0 * W / (2.0 * pi / coarse_per_period))) + 1;
    n_c = std::min(std::max(n_c, coarse_min_points), max_coarse);
    const double hc = 2.0 * W / static_cast<double>(n_c - 1);
    const double t0 = q.mu0 - W;
    ws.grid(q, t0, hc, n_c);
    std::vector<double> &grid = ws.th, &fc = ws.f;
    ws.modes.clear();
    const double ninf = -std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < n_c; ++i) {
        const double left = i > 0 ? fc[i - 1] : ninf;
        const double right = i + 1 < n_c ? fc[i + 1] : ninf;
        if (fc[i] > left && fc[i] >= right) {
            const double lo = grid[i > 0 ? i - 1 : 0], hi = grid[std::min(i + 1, n_c - 1)];
            detail::Mode md = detail::refine(q, lo, hi, grid[i]);
            if (!(md.c > 0.0)) md.c = 1.0 / (hc * hc);
            ws.modes.push_back(md);
        }
    }
    if (ws.modes.empty()) {
        mean = q.mu0;
        var = q.v0;
        return;
    }
    std::size_t best = 0;
    double lmax = ninf;
    std::size_t map = 0;
    for (std::size_t i = 0; i < ws.modes.size(); ++i) {
        const double l = ws.modes[i].f - 0.5 * std::log(ws.modes[i].c);
        if (l > lmax) {
            lmax = l;
            best = i;
        }
        if (ws.modes[i].f > ws.modes[map].f) map = i;
    }
    if (laplace) {  // notes sec. 3.5 (a): the variance is the INVERSE of -f'' (ERRATUM)
        mean = ws.modes[map].th;
        var = 1.0 / ws.modes[map].c;
        return;
    }
    double fref = ninf;
    const double lo_w = grid[0], hi_w = grid[n_c - 1];
    ws.pieces.clear();
    for (const detail::Mode &md : ws.modes) {
        if (md.f - 0.5 * std::log(md.c) < lmax - mode_keep) continue;
        fref = std::max(fref, md.f);
        const double sd = 1.0 / std::sqrt(md.c);
        ws.pieces.emplace_back(std::max(lo_w, md.th - fine_half_width * sd), std::min(hi_w, md.th + fine_half_width * sd));
    }
    const double thr = fref - mode_keep - support_margin;
    for (std::size_t i = 0; i < n_c;) {
        if (fc[i] >= thr) {
            std::size_t j = i;
            while (j + 1 < n_c && fc[j + 1] >= thr) ++j;
            ws.pieces.emplace_back(grid[i > 0 ? i - 1 : 0], grid[std::min(j + 1, n_c - 1)]);
            i = j + 1;
        } else {
            ++i;
        }
    }
    std::sort(ws.pieces.begin(), ws.pieces.end());
    ws.intervals.clear();
    for (const auto &p : ws.pieces) {
        if (!ws.intervals.empty() && p.first <= ws.intervals.back().second)
            ws.intervals.back().second = std::max(ws.intervals.back().second, p.second);
        else
            ws.intervals.push_back(p);
    }
    const double tref = ws.modes[best].th;
    const double cmax = k1 + 4.0 * k2 + 1.0 / q.v0;
    const double hf = std::min(hc, 1.0 / (fine_per_std * std::sqrt(cmax)));
    double s0 = 0.0, s1 = 0.0, s2 = 0.0;
    for (const auto &iv : ws.intervals) {
        const double a = iv.first, b = iv.second;
        std::size_t n = static_cast<std::size_t>(std::ceil((b - a) / hf)) + 1;
        n = std::min(max_fine, std::max<std::size_t>(2, n));
        const double h = (b - a) / static_cast<double>(n - 1);
        ws.grid(q, a, h, n);
        double out[3];
        ws.loops.sums(ws.th.data(), ws.f.data(), n, fref, tref, out);
        // trapezoid: half weights at the two ends
        const double we[2] = {detail::exp_poly(ws.f[0] - fref), detail::exp_poly(ws.f[n - 1] - fref)};
        const double de[2] = {ws.th[0] - tref, ws.th[n - 1] - tref};
        for (int e = 0; e < 2; ++e) {
            out[0] -= 0.5 * we[e];
            out[1] -= 0.5 * we[e] * de[e];
            out[2] -= 0.5 * we[e] * de[e] * de[e];
        }
        s0 += out[0] * h;
        s1 += out[1] * h;
        s2 += out[2] * h;
    }
    if (!(s0 > 0.0) || !std::isfinite(s0)) {
        mean = q.mu0;
        var = q.v0;
        return;
    }
    const double e1 = s1 / s0;
    mean = tref + e1;
    var = std::max(s2 / s0 - e1 * e1, 0.0);
}

// The output nodes (Alg. 6.2 lines 9-10) for rows [begin, end) of m x k arrays (row-major).
struct OutputArgs {
    std::size_t m = 0, k = 0;
    const double *zr = nullptr, *zi = nullptr, *g = nullptr;  // m
    const double *P = nullptr;                                // m x k
    const double *qp = nullptr, *alpha = nullptr, *tau = nullptr;  // k
    double noise_var = 0.0;
    bool laplace = false;
    double *zhat = nullptr, *qz = nullptr;  // m x k outputs
};

inline void output_rows(const OutputArgs &a, std::size_t begin, std::size_t end)
{
    const std::size_t k = a.k;
    Workspace ws;
    std::vector<double> beta(k), mr(k), mi(k), g11(k), g22(k), g12(k), ph(k);
    for (std::size_t j = begin; j < end; ++j) {
        const double g = a.g[j], g2 = g * g;
        const double *P = a.P + j * k;
        double smr = 0, smi = 0, s11 = 0, s22 = 0, s12 = 0;
        for (std::size_t l = 0; l < k; ++l) {
            // notes sec. 3.3: beta (6.25), E[v] (B.9), Gamma's own terms (B.14, with exp(-2 g^2 q^p))
            beta[l] = a.alpha[l] * std::exp(-0.5 * g2 * a.tau[l]);
            ph[l] = g * P[l];
            double c, s;
            sincos::sincos_scalar<double>(ph[l], c, s);
            const double ev = std::exp(-0.5 * g2 * a.qp[l]);
            mr[l] = beta[l] * ev * c;
            mi[l] = beta[l] * ev * s;
            const double e2 = ev * ev;
            const double w = 0.5 * beta[l] * beta[l] * (-std::expm1(-g2 * a.qp[l]));
            const double c2 = c * c - s * s, s2 = 2.0 * s * c;
            g11[l] = w * (1.0 - e2 * c2);
            g22[l] = w * (1.0 + e2 * c2);
            g12[l] = -w * e2 * s2;
            smr += mr[l];
            smi += mi[l];
            s11 += g11[l];
            s22 += g22[l];
            s12 += g12[l];
        }
        for (std::size_t t = 0; t < k; ++t) {
            const double rr = a.zr[j] - (smr - mr[t]);  // r = s - m_t (ERRATUM of (B.15): minus)
            const double ri = a.zi[j] - (smi - mi[t]);
            const double G11 = std::max(s11 - g11[t], 0.0) + a.noise_var;
            const double G22 = std::max(s22 - g22[t], 0.0) + a.noise_var;
            double G12 = s12 - g12[t];
            double det = G11 * G22 - G12 * G12;
            if (!(det > 1e-3 * G11 * G22)) {
                G12 = 0.0;
                det = G11 * G22;
            }
            const double L11 = G22 / det, L22 = G11 / det, L12 = -G12 / det;
            const Coef q{beta[t] * (L11 * rr + L12 * ri), beta[t] * (L12 * rr + L22 * ri),
                         -0.25 * beta[t] * beta[t] * (L11 - L22), -0.5 * beta[t] * beta[t] * L12, ph[t],
                         g2 * a.qp[t]};
            double mean, var;
            theta_moments(q, a.laplace, ws, mean, var);
            double zh = mean / g, qzv = var / g2;  // notes sec. 3.2, q^n -> 0
            if (!std::isfinite(zh) || !std::isfinite(qzv)) {
                zh = P[t];
                qzv = a.qp[t];
            }
            qzv = std::min(std::max(qzv, qz_clip_lo * a.qp[t]), qz_clip_hi * a.qp[t]);
            a.zhat[j * k + t] = zh;
            a.qz[j * k + t] = qzv;
        }
    }
}

inline void output(const OutputArgs &a)
{
    parallel_for(a.m, [&](std::size_t begin, std::size_t end) { output_rows(a, begin, end); });
}

// Moments for n independent coefficient sets (arrays of length n), on all threads.
inline void theta_moments_array(std::size_t n, const double *a1, const double *b1, const double *a2,
                                const double *b2, const double *mu0, const double *v0, bool laplace, double *mean,
                                double *var)
{
    parallel_for(n, [&](std::size_t begin, std::size_t end) {
        Workspace ws;
        for (std::size_t i = begin; i < end; ++i)
            theta_moments(Coef{a1[i], b1[i], a2[i], b2[i], mu0[i], v0[i]}, laplace, ws, mean[i], var[i]);
    });
}

}  // namespace clamp
}  // namespace pysketch

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

#endif  // PYSKETCH_CLAMP_HPP
