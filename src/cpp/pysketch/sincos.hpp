// sincos.hpp - SIMD cosine and sine, and the fused accumulations of sketching (header-only, C++17).
//
// Array functions (T = float or double), dispatched at run time on the instruction set the
// C kernel of vendor/ffht uses (simd.hpp's simd::level(), capped by PYSKETCH_SIMD): AVX-512F,
// AVX2 + FMA, or portable C++ for the "sse" and "scalar" levels and other CPUs.
//
//   sincos(t, n, c, s)                 c[j] = cos t[j], s[j] = sin t[j]
//   accumulate_cis(t, rows, row_stride, n, u, acc_cos, acc_sin)
//        acc_cos[j] += sum_r cos(t[r * row_stride + j] + u[j]),   acc_sin likewise with sin
//   accumulate_qcis(t, rows, row_stride, n, u, acc_re, acc_im)
//        acc_re[j] += 2^-1/2 sum_r sign cos(t[r * row_stride + j] + u[j]),  acc_im likewise with sin
//
// u may be nullptr (no dither); t + u is rounded to T, as numpy would. The accumulators are
// double and are read once and written once per call: the sums over rows stay in registers
// (for each block of columns, all the rows are walked before the next block). Every n works
// (n = 0 and rows = 0 do nothing), pointers need no alignment beyond their type's, row_stride
// may be any value (0 repeats a row, negative walks backwards). c and s may be t itself (in
// place) but must not otherwise overlap t or each other; the accumulators must not overlap
// the inputs. The calls run on the calling thread: callers split large jobs into blocks.
//
// Vector kernels, for other code of the same instruction set (x86 with GCC or Clang;
// PYSKETCH_SIMD_X86 is defined when they exist). All are inline, always_inline functions
// with target("avx512f") (the *_avx512 ones: __m512 = 16 floats, __m512d = 8 doubles) or
// target("avx2,fma") (*_avx2: __m256 = 8 floats, __m256d = 4 doubles), overloaded on the type:
//
//   void sincos_avx512(V t, V &c, V &s)          cos and sin of every lane; the same bits as
//                                                 the array function (lanes outside the fast
//                                                 range, NaN and inf: std::cos/std::sin, cold path)
//   void sincos_values_avx512(V t, V &c, V &s)   the polynomial path alone (fast range assumed)
//   __mmask16/8 outside_avx512(V t)              lanes outside the fast range (NaN, inf included)
//   bool any_outside_avx512(const V (&t)[W])     any lane of W vectors outside? (one compare)
//   void fix_avx512(V t, V &c, V &s, unsigned bad)   std::cos/std::sin in the lanes of `bad`
//   __mmask16/8 sincos_fast_avx512(V t, V &c, V &s)  values + outside
//   __mmask16/8 quadrant_fast_avx512(V x, __m512i &m)  m = floor(x / (pi/2)) in the low bits
//   ... and the same names with _avx2 (masks as int bit masks, from movemask).
//
// A hot loop calls sincos_values_* on its vectors, checks them with one any_outside_* and
// calls fix_* (with outside_*) only when that is true, which is what the array functions do.
// sincos_scalar(t, c, s) gives the same bits for one value.
//
// Accuracy and method
// -------------------
// Fast range |t| <= fast_bound<T>: 2^18 = 262144 for float, 2^30 ~ 1.07e9 for double.
//   k = round(t * fl(2/pi))                  one fma with the 1.5 * 2^p "round to integer" constant,
//                                            whose low bits then hold k mod 4 (the quadrant)
//   r = fma(-k, P2, fma(-k, P1, t))          Cody & Waite reduction (Software Manual for the
//                                            Elementary Functions, 1980) with a two-part pi/2:
//                                            P1 = pi/2 rounded toward zero, P2 = fl(pi/2 - P1) > 0
//                                            (positive so that t = -0 keeps r = -0). The inner fma
//                                            is exact (its result is a multiple of ulp(P1) below 1
//                                            in magnitude), so r has one rounding plus the
//                                            truncation k |pi/2 - P1 - P2| < 3e-10 (float),
//                                            1e-24 (double) over the fast range.
//   sin r = r + r^3 P(r^2), cos r = 1 + r^2 Q(r^2), Q(0) = -1/2; minimax (absolute error) on
//   |r| <= pi/4 + margin, degrees 7/8 (float) and 13/14 (double), coefficients computed by
//   tools/sincos_coefficients.py (Remez exchange in mpmath; polynomial error 2.1e-9 / 1.4e-10
//   for float, 6.5e-18 / 1.3e-19 for double); then the quadrant selects and negates.
// The polynomials are evaluated in w = -r^2 (see sin_poly below; this keeps sin(-0) = -0 for free).
// Measured max absolute error against a high-precision reference of the exact input
// (tests/test_sincos.py, long double reduction): 7.1e-8 for float (the result's own rounding
// is up to 3e-8: half an ulp of values near 1) and 1.3e-16 for double, over the whole fast
// range, on every instruction set. NaN and +-inf give NaN; beyond the fast range the results
// are std::cos and std::sin of the input, bit for bit.
//
// Every instruction set performs the same IEEE operations in the same order (the portable
// path with std::fma: a hardware instruction on AArch64 and other FMA targets, a libm call on
// baseline x86-64, where it is the rarely used "sse"/"scalar" level), so all levels give
// bit-identical results, as the transforms do.
//
// Accumulation
// ------------
// double inputs: per column, the sum over rows starts from 0 in double, adds the rows in order
// and is then added to the accumulator: acc + (((0 + v_0) + v_1) + ...). The roundings are
// those of the double additions: at most rows^2/2 ulps of 1 (2^-53) in the worst case, about
// sqrt(rows) ulps typically.
// float inputs: each float result v in [-1, 1] is rounded to the nearest multiple of 2^-26
// (an error of at most 2^-27 = 7.5e-9, and none when |v| >= 1/8, whose float spacing is already
// 2^-26 or coarser; the float result itself carries up to 7.1e-8), then summed exactly in 32-bit
// integers over blocks of 16 rows, and each block sum is added exactly to a per-column double
// sum (exact below 2^27 rows); one rounding when it is added to the accumulator. So the float
// sums are exact, do not depend on the order of the rows or on the instruction set, and their
// error is the sum of the per-value errors (<= 7.9e-8 each). This is faster than converting
// every value to double (one conversion and one integer addition per 16 values, and the 2^26
// scale is folded into the polynomial coefficients). Lanes outside the fast range add
// std::cos/std::sin in double to side sums instead.
//
// The quantized features of accumulate_qcis are those of Schellekens & Jacques, "Quantized
// compressive k-means" (IEEE SPL 2018) and Chatalic's thesis, Def. 2.5: with rho(x) =
// 2^-1/2 sign(cos x), Phi(x) = rho(x) + i rho(x - pi/2) = 2^-1/2 (sign cos x + i sign sin x).
// sign(0) = +1 (for +0 and -0): x = 0 contributes (+1, +1) 2^-1/2. No polynomial is needed:
// with m = floor(x / (pi/2)) (k, less one where the reduced r < 0), cos x < 0 exactly when
// (m + 1) mod 4 >= 2 and sin x < 0 exactly when m mod 4 >= 2. The reduced r has the sign of the
// exact x - k pi/2 on the whole fast range (its error is far below the distance of any float
// or double to a multiple of pi/2 there; tests/test_sincos.py checks the closest ones). The
// signs are counted in integers, so each call adds 2^-1/2 * (exact integer) to the
// accumulator with one fma per column. Inputs outside the fast range use sign(std::cos x)
// and sign(std::sin x); NaN and +-inf add NaN.
#ifndef PYSKETCH_SINCOS_HPP
#define PYSKETCH_SINCOS_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "pysketch/simd.hpp"

#if defined(__GNUC__) || defined(__clang__)
#define PYSKETCH_SINCOS_COLD __attribute__((noinline, cold))
#define PYSKETCH_SINCOS_UNLIKELY(x) __builtin_expect(static_cast<bool>(x), 0)
#elif defined(_MSC_VER)
#define PYSKETCH_SINCOS_COLD __declspec(noinline)
#define PYSKETCH_SINCOS_UNLIKELY(x) (x)
#else
#define PYSKETCH_SINCOS_COLD
#define PYSKETCH_SINCOS_UNLIKELY(x) (x)
#endif

namespace pysketch {
namespace sincos {

// Constants of the kernels; printed by tools/sincos_coefficients.py.
template <class T>
struct Constants;

template <>
struct Constants<float> {
    static constexpr float fast_bound = 0x1p18f;
    static constexpr float two_over_pi = 0x1.45f306p-1f;
    static constexpr float round_magic = 0x1.8p23f;  // x + 1.5 * 2^23 rounds x to an integer (|x| < 2^22)
    static constexpr float pio2_1 = 0x1.921fb4p+0f;
    static constexpr float pio2_2 = 0x1.4442d2p-24f;
    static constexpr float sin_1 = -0x1.55553ep-3f;
    static constexpr float sin_2 = 0x1.11050cp-7f;
    static constexpr float sin_3 = -0x1.98a54ep-13f;
    static constexpr float cos_2 = 0x1.55554ap-5f;
    static constexpr float cos_3 = -0x1.6c0c1ap-10f;
    static constexpr float cos_4 = 0x1.99e0e4p-16f;
};

template <>
struct Constants<double> {
    static constexpr double fast_bound = 0x1p30;
    static constexpr double two_over_pi = 0x1.45f306dc9c883p-1;
    static constexpr double round_magic = 0x1.8p52;  // x + 1.5 * 2^52 rounds x to an integer (|x| < 2^51)
    static constexpr double pio2_1 = 0x1.921fb54442d18p+0;
    static constexpr double pio2_2 = 0x1.1a62633145c07p-54;
    static constexpr double sin_1 = -0x1.555555555553dp-3;
    static constexpr double sin_2 = 0x1.111111110ea87p-7;
    static constexpr double sin_3 = -0x1.a01a019aa3718p-13;
    static constexpr double sin_4 = 0x1.71de346777e35p-19;
    static constexpr double sin_5 = -0x1.ae5daa54e1fcbp-26;
    static constexpr double sin_6 = 0x1.5d62217202abp-33;
    static constexpr double cos_2 = 0x1.5555555555553p-5;
    static constexpr double cos_3 = -0x1.6c16c16c1636fp-10;
    static constexpr double cos_4 = 0x1.a01a019e80ba7p-16;
    static constexpr double cos_5 = -0x1.27e4f957a922ep-22;
    static constexpr double cos_6 = 0x1.1eeacac3562bep-29;
    static constexpr double cos_7 = -0x1.901f203783772p-37;
};

// Inputs with |t| <= fast_bound<T> take the polynomial path; the others (and NaN) std::sin/cos.
template <class T>
inline constexpr T fast_bound = Constants<T>::fast_bound;

// 2^-1/2, the magnitude of the quantized features.
inline constexpr double qcis_scale = 0x1.6a09e667f3bcdp-1;

namespace detail {

template <class T>
constexpr void check_type()
{
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "pysketch::sincos supports float and double");
}

template <class T>
using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;

template <class T>
inline Bits<T> bits_of(T x)
{
    Bits<T> b;
    std::memcpy(&b, &x, sizeof b);
    return b;
}

// The polynomials, in the operation order of the vector kernels. They are evaluated in
// w = -r^2 (one fnmadd), with the coefficients of odd powers of r^2 negated:
//   sin r = r + (r w) A(w),  A(w) = -s1 + s2 w - s3 w^2 + ...    (= -P(r^2))
//   cos r = 1 + w B(w),      B(w) = 1/2 + c2 w - c3 w^2 + ...    (= -Q(r^2))
// Each intermediate is exactly plus or minus the one of the plain Horner scheme in r^2 (IEEE
// rounding is symmetric), so the results have the same bits; but for r = -0 the product
// (r w) A(w) is -0 (A > 0), so sin(-0) = -0 comes with no extra operation.
inline float sin_poly(float r, float w)
{
    using C = Constants<float>;
    float p = std::fma(-C::sin_3, w, C::sin_2);
    p = std::fma(p, w, -C::sin_1);
    return std::fma(r * w, p, r);
}
inline float cos_poly(float w)
{
    using C = Constants<float>;
    float p = std::fma(C::cos_4, w, -C::cos_3);
    p = std::fma(p, w, C::cos_2);
    p = std::fma(p, w, 0.5f);
    return std::fma(w, p, 1.0f);
}
inline double sin_poly(double r, double w)
{
    using C = Constants<double>;
    double p = std::fma(C::sin_6, w, -C::sin_5);
    p = std::fma(p, w, C::sin_4);
    p = std::fma(p, w, -C::sin_3);
    p = std::fma(p, w, C::sin_2);
    p = std::fma(p, w, -C::sin_1);
    return std::fma(r * w, p, r);
}
inline double cos_poly(double w)
{
    using C = Constants<double>;
    double p = std::fma(-C::cos_7, w, C::cos_6);
    p = std::fma(p, w, -C::cos_5);
    p = std::fma(p, w, C::cos_4);
    p = std::fma(p, w, -C::cos_3);
    p = std::fma(p, w, C::cos_2);
    p = std::fma(p, w, 0.5);
    return std::fma(w, p, 1.0);
}

// Cody-Waite reduction: t = k pi/2 + r. Returns r; kk holds k in its low bits.
template <class T>
inline T reduce(T t, T &kk)
{
    using C = Constants<T>;
    kk = std::fma(t, C::two_over_pi, C::round_magic);
    const T k = kk - C::round_magic;
    const T r = std::fma(-k, C::pio2_1, t);
    return std::fma(-k, C::pio2_2, r);
}

template <class T>
inline bool in_fast_range(T t)
{
    return std::fabs(t) <= Constants<T>::fast_bound;  // false for NaN
}

}  // namespace detail

// cos and sin of one value, with the bits of the vector kernels.
template <class T>
inline void sincos_scalar(T t, T &c, T &s)
{
    detail::check_type<T>();
    if (!detail::in_fast_range(t)) {
        c = std::cos(t);
        s = std::sin(t);
        return;
    }
    T kk;
    const T r = detail::reduce(t, kk);
    const T w = std::fma(-r, r, T(0));  // -r^2
    const T sr = detail::sin_poly(r, w);
    const T cr = detail::cos_poly(w);
    const unsigned q = static_cast<unsigned>(detail::bits_of(kk)) & 3u;
    T sv = (q & 1u) ? cr : sr;
    T cv = (q & 1u) ? sr : cr;
    if (q & 2u) sv = -sv;
    if ((q + 1u) & 2u) cv = -cv;
    c = cv;
    s = sv;
}

namespace detail {

// The quantized features of one value in the fast range: adds (m + 1) & 2 and m & 2 (0 or 2:
// twice "cos < 0" and "sin < 0") to the counts, m = floor(x / (pi/2)).
template <class T>
inline void qcis_count(T x, std::uint64_t &count_cos, std::uint64_t &count_sin)
{
    T kk;
    const T r = reduce(x, kk);
    const std::uint64_t m = static_cast<std::uint64_t>(bits_of(kk)) - (r < T(0) ? 1u : 0u);
    count_cos += (m + 1u) & 2u;
    count_sin += m & 2u;
}

// The quantized features of a value outside the fast range (or NaN, infinity), in double.
template <class T>
inline void qcis_slow(T x, double &re, double &im)
{
    if (!std::isfinite(x)) {
        re = im = std::numeric_limits<double>::quiet_NaN();
        return;
    }
    re = std::cos(x) < T(0) ? -qcis_scale : qcis_scale;
    im = std::sin(x) < T(0) ? -qcis_scale : qcis_scale;
}

// The cold path of the vector kernels: lanes outside the fast range, in place.
template <class T>
PYSKETCH_SINCOS_COLD void fix_lanes(const T *t, T *c, T *s, unsigned bad)
{
    for (unsigned i = 0; bad != 0; ++i, bad >>= 1) {
        if (bad & 1u) {
            c[i] = std::cos(t[i]);
            s[i] = std::sin(t[i]);
        }
    }
}

// The cold path of the float accumulation: lanes outside the fast range add std::cos and std::sin
// to side sums in double and count 0 in the integer sums.
template <class T>
PYSKETCH_SINCOS_COLD void fix_lanes_apart(const T *t, T *c, T *s, unsigned bad, double *side_c, double *side_s)
{
    for (unsigned i = 0; bad != 0; ++i, bad >>= 1) {
        if (bad & 1u) {
            side_c[i] += static_cast<double>(std::cos(t[i]));
            side_s[i] += static_cast<double>(std::sin(t[i]));
            c[i] = s[i] = T(0);
        }
    }
}

// The cold path of the quantized kernels: lanes outside the fast range count 1 (sign +1 - 1 = 0
// in "rows - count") and add their features to side sums.
template <class T, class Count>
PYSKETCH_SINCOS_COLD void fix_qcis_lanes(const T *x, Count *count_cos, Count *count_sin, unsigned bad,
                                         double *side_re, double *side_im)
{
    for (unsigned i = 0; bad != 0; ++i, bad >>= 1) {
        if (bad & 1u) {
            double re, im;
            qcis_slow(x[i], re, im);
            side_re[i] += re;
            side_im[i] += im;
            count_cos[i] = 1;
            count_sin[i] = 1;
        }
    }
}

// Float accumulation: each float result v in [-1, 1] is rounded to the nearest multiple of
// 2^-26 (an error of at most 2^-27 = 7.5e-9, and none for |v| >= 1/8, whose float spacing is
// already 2^-26 or coarser) and summed exactly in 32-bit integers over blocks of 16 rows
// (|sum| <= 2^30); each block sum is added exactly to a double sum (exact below 2^27 rows).
inline constexpr float cis_fixed_scale = 0x1p26f;
inline constexpr std::size_t cis_block_rows = 16;

// ---- Portable implementations (the "sse" and "scalar" levels, and non-x86 CPUs) ----

template <class T>
void sincos_portable(const T *t, std::size_t n, T *c, T *s)
{
    for (std::size_t j = 0; j < n; ++j) sincos_scalar(t[j], c[j], s[j]);
}

// Columns are handled in chunks whose per-column sums stay in a small local buffer.
inline constexpr std::size_t portable_chunk = 256;

template <class T>
void cis_portable(const T *t, std::size_t rows, std::ptrdiff_t stride, std::size_t n, const T *u, double *acc_cos,
                  double *acc_sin)
{
    constexpr bool integer_sums = std::is_same_v<T, float>;
    constexpr std::size_t block = integer_sums ? cis_block_rows : ~std::size_t{0};
    double sum_c[portable_chunk], sum_s[portable_chunk], side_c[portable_chunk], side_s[portable_chunk];
    std::int32_t int_c[portable_chunk], int_s[portable_chunk];
    bool side[portable_chunk];
    for (std::size_t j0 = 0; j0 < n; j0 += portable_chunk) {
        const std::size_t m = std::min(portable_chunk, n - j0);
        std::fill(sum_c, sum_c + m, 0.0);
        std::fill(sum_s, sum_s + m, 0.0);
        std::fill(side_c, side_c + m, 0.0);
        std::fill(side_s, side_s + m, 0.0);
        std::fill(side, side + m, false);
        for (std::size_t r0 = 0; r0 < rows;) {
            const std::size_t r1 = rows - r0 > block ? r0 + block : rows;
            std::fill(int_c, int_c + m, 0);
            std::fill(int_s, int_s + m, 0);
            for (std::size_t r = r0; r < r1; ++r) {
                const T *row = t + static_cast<std::ptrdiff_t>(r) * stride + j0;
                for (std::size_t i = 0; i < m; ++i) {
                    const T x = u ? row[i] + u[j0 + i] : row[i];
                    T c, s;
                    sincos_scalar(x, c, s);
                    if constexpr (integer_sums) {
                        if (in_fast_range(x)) {
                            int_c[i] += static_cast<std::int32_t>(std::nearbyint(c * cis_fixed_scale));
                            int_s[i] += static_cast<std::int32_t>(std::nearbyint(s * cis_fixed_scale));
                        } else {
                            side_c[i] += static_cast<double>(c);
                            side_s[i] += static_cast<double>(s);
                            side[i] = true;
                        }
                    } else {
                        sum_c[i] += c;
                        sum_s[i] += s;
                    }
                }
            }
            if constexpr (integer_sums) {
                for (std::size_t i = 0; i < m; ++i) {
                    sum_c[i] += static_cast<double>(int_c[i]) * (1.0 / cis_fixed_scale);
                    sum_s[i] += static_cast<double>(int_s[i]) * (1.0 / cis_fixed_scale);
                }
            }
            r0 = r1;
        }
        for (std::size_t i = 0; i < m; ++i) {
            acc_cos[j0 + i] += sum_c[i];
            acc_sin[j0 + i] += sum_s[i];
            if (side[i]) {
                acc_cos[j0 + i] += side_c[i];
                acc_sin[j0 + i] += side_s[i];
            }
        }
    }
}

// Rows are counted in blocks small enough for 32-bit counters (2 per row at most).
inline constexpr std::size_t qcis_block_rows = std::size_t{1} << 29;

// acc + 2^-1/2 * (rows - count): the sum of the signs of `rows` features whose count of
// negatives, doubled, is `count`.
inline double qcis_flush(double acc, std::size_t rows, std::uint64_t count)
{
    return std::fma(static_cast<double>(rows) - static_cast<double>(count), qcis_scale, acc);
}

template <class T>
void qcis_portable(const T *t, std::size_t rows, std::ptrdiff_t stride, std::size_t n, const T *u, double *acc_re,
                   double *acc_im)
{
    std::uint64_t count_cos[portable_chunk], count_sin[portable_chunk];
    double side_re[portable_chunk], side_im[portable_chunk];
    bool side[portable_chunk];
    for (std::size_t j0 = 0; j0 < n; j0 += portable_chunk) {
        const std::size_t m = std::min(portable_chunk, n - j0);
        std::fill(side, side + m, false);
        std::fill(side_re, side_re + m, 0.0);
        std::fill(side_im, side_im + m, 0.0);
        for (std::size_t r0 = 0; r0 < rows; r0 += qcis_block_rows) {
            const std::size_t r1 = std::min(rows, r0 + qcis_block_rows);
            std::fill(count_cos, count_cos + m, 0);
            std::fill(count_sin, count_sin + m, 0);
            for (std::size_t r = r0; r < r1; ++r) {
                const T *row = t + static_cast<std::ptrdiff_t>(r) * stride + j0;
                for (std::size_t i = 0; i < m; ++i) {
                    const T x = u ? row[i] + u[j0 + i] : row[i];
                    if (in_fast_range(x)) {
                        qcis_count(x, count_cos[i], count_sin[i]);
                    } else {
                        double re, im;
                        qcis_slow(x, re, im);
                        side_re[i] += re;
                        side_im[i] += im;
                        side[i] = true;
                        count_cos[i] += 1;
                        count_sin[i] += 1;
                    }
                }
            }
            for (std::size_t i = 0; i < m; ++i) {
                acc_re[j0 + i] = qcis_flush(acc_re[j0 + i], r1 - r0, count_cos[i]);
                acc_im[j0 + i] = qcis_flush(acc_im[j0 + i], r1 - r0, count_sin[i]);
            }
        }
        for (std::size_t i = 0; i < m; ++i) {
            if (side[i]) {
                acc_re[j0 + i] += side_re[i];
                acc_im[j0 + i] += side_im[i];
            }
        }
    }
}

}  // namespace detail

#if defined(PYSKETCH_SIMD_X86)

#define PYSKETCH_SINCOS_AVX512 PYSKETCH_SIMD_AVX512
#define PYSKETCH_SINCOS_AVX2 PYSKETCH_SIMD_AVX2

// ---------------------------------------------------------------------------------------------
// Vector building blocks. The kernels compute values only; the range check is separate, so
// that a loop can test several vectors at once (one compare on the lane-wise maximum of their
// magnitudes) and fix the rare lanes outside the fast range afterwards.
// ---------------------------------------------------------------------------------------------

namespace detail {

// All-lanes masks. A few intrinsics are used in their zero-masking form with these: the plain
// forms pass an "undefined" vector that GCC 12 reports as -Wmaybe-uninitialized (GCC bug
// 105593); with a constant all-ones mask the compiler emits the same unmasked instruction.
inline constexpr __mmask16 all16 = 0xFFFF;
inline constexpr __mmask8 all8 = 0xFF;

// The bits of fast_bound: |t| > fast_bound exactly when the bits of |t| are larger, and NaN and
// infinities have larger bits than any finite value.
inline constexpr std::int32_t bound_bits_f32 = 0x48800000;               // 2^18
inline constexpr std::int64_t bound_bits_f64 = 0x41D0000000000000;       // 2^30
static_assert(Constants<float>::fast_bound == 0x1p18f && Constants<double>::fast_bound == 0x1p30,
              "update bound_bits_f32/f64 with fast_bound");

// ---- AVX-512 ----

// Cody-Waite reduction t = k pi/2 + r; kk holds k mod 4 in its low bits.
PYSKETCH_SINCOS_AVX512 __m512 reduce_avx512(__m512 t, __m512 &kk)
{
    using C = Constants<float>;
    const __m512 magic = _mm512_set1_ps(C::round_magic);
    kk = _mm512_fmadd_ps(t, _mm512_set1_ps(C::two_over_pi), magic);
    const __m512 k = _mm512_sub_ps(kk, magic);
    const __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(C::pio2_1), t);
    return _mm512_fnmadd_ps(k, _mm512_set1_ps(C::pio2_2), r);
}

PYSKETCH_SINCOS_AVX512 __m512d reduce_avx512(__m512d t, __m512d &kk)
{
    using C = Constants<double>;
    const __m512d magic = _mm512_set1_pd(C::round_magic);
    kk = _mm512_fmadd_pd(t, _mm512_set1_pd(C::two_over_pi), magic);
    const __m512d k = _mm512_sub_pd(kk, magic);
    const __m512d r = _mm512_fnmadd_pd(k, _mm512_set1_pd(C::pio2_1), t);
    return _mm512_fnmadd_pd(k, _mm512_set1_pd(C::pio2_2), r);
}

// The two halves of the kernels below, apart so that the accumulations can run the first half
// of one row next to the second half of the previous one (see cis_columns).
// (Two plain structs: a template over __m512 would drop the vector type's attributes.)
struct Reduced512 {
    __m512 sr, cr;  // sin and cos of the reduced argument r
    __m512 kk;      // the quadrant k mod 4 in the low bits
};
struct Reduced512d {
    __m512d sr, cr, kk;
};

// First half: the reduction and the two polynomials. With Fixed (float only), sr and cr come out
// multiplied by cis_fixed_scale, exactly: the power of two is folded into the coefficients,
// which gives the bits of the scaled plain results (the form the integer sums of
// accumulate_cis take).
template <bool Fixed>
PYSKETCH_SINCOS_AVX512 Reduced512 reduced_f32_avx512(__m512 t)
{
    using C = Constants<float>;
    constexpr float S = Fixed ? cis_fixed_scale : 1.0f;
    __m512 kk;
    const __m512 r = reduce_avx512(t, kk);
    const __m512 w = _mm512_fnmadd_ps(r, r, _mm512_setzero_ps());  // -r^2 (see sin_poly)

    __m512 ps = _mm512_fmadd_ps(_mm512_set1_ps(S * -C::sin_3), w, _mm512_set1_ps(S * C::sin_2));
    ps = _mm512_fmadd_ps(ps, w, _mm512_set1_ps(S * -C::sin_1));
    const __m512 rs = Fixed ? _mm512_mul_ps(r, _mm512_set1_ps(S)) : r;
    const __m512 sr = _mm512_fmadd_ps(_mm512_mul_ps(r, w), ps, rs);
    __m512 pc = _mm512_fmadd_ps(_mm512_set1_ps(S * C::cos_4), w, _mm512_set1_ps(S * -C::cos_3));
    pc = _mm512_fmadd_ps(pc, w, _mm512_set1_ps(S * C::cos_2));
    pc = _mm512_fmadd_ps(pc, w, _mm512_set1_ps(S * 0.5f));
    const __m512 cr = _mm512_fmadd_ps(w, pc, _mm512_set1_ps(S));
    return {sr, cr, kk};
}

// Second half: quadrant q = k mod 4: swap when q & 1; negate sin when q & 2 and cos when
// (q + 1) & 2, i.e. when q & 2 differs from q & 1.
PYSKETCH_SINCOS_AVX512 void place_avx512(const Reduced512 &h, __m512 &c, __m512 &s)
{
    const __m512i sign = _mm512_set1_epi32(INT32_MIN);
    const __m512i q = _mm512_castps_si512(h.kk);
    const __mmask16 odd = _mm512_test_epi32_mask(q, _mm512_set1_epi32(1));
    const __m512 sv = _mm512_mask_blend_ps(odd, h.sr, h.cr);
    const __m512 cv = _mm512_mask_blend_ps(odd, h.cr, h.sr);
    const __m512i q2 = _mm512_maskz_slli_epi32(all16, q, 30);  // q & 2 in the sign bit
    s = _mm512_castsi512_ps(_mm512_ternarylogic_epi32(_mm512_castps_si512(sv), q2, sign, 0x78));  // sv ^ (q2 & sign)
    const __m512i c2 = _mm512_ternarylogic_epi32(_mm512_castps_si512(cv), q2, sign, 0x78);
    c = _mm512_castsi512_ps(_mm512_mask_xor_epi32(c2, odd, c2, sign));
}

// cos and sin of the lanes of t (in the fast range); with Fixed, times cis_fixed_scale.
template <bool Fixed>
PYSKETCH_SINCOS_AVX512 void sincos_f32_avx512(__m512 t, __m512 &c, __m512 &s)
{
    place_avx512(reduced_f32_avx512<Fixed>(t), c, s);
}

PYSKETCH_SINCOS_AVX512 Reduced512d reduced_f64_avx512(__m512d t)
{
    using C = Constants<double>;
    __m512d kk;
    const __m512d r = reduce_avx512(t, kk);
    const __m512d w = _mm512_fnmadd_pd(r, r, _mm512_setzero_pd());  // -r^2

    __m512d ps = _mm512_fmadd_pd(_mm512_set1_pd(C::sin_6), w, _mm512_set1_pd(-C::sin_5));
    ps = _mm512_fmadd_pd(ps, w, _mm512_set1_pd(C::sin_4));
    ps = _mm512_fmadd_pd(ps, w, _mm512_set1_pd(-C::sin_3));
    ps = _mm512_fmadd_pd(ps, w, _mm512_set1_pd(C::sin_2));
    ps = _mm512_fmadd_pd(ps, w, _mm512_set1_pd(-C::sin_1));
    const __m512d sr = _mm512_fmadd_pd(_mm512_mul_pd(r, w), ps, r);
    __m512d pc = _mm512_fmadd_pd(_mm512_set1_pd(-C::cos_7), w, _mm512_set1_pd(C::cos_6));
    pc = _mm512_fmadd_pd(pc, w, _mm512_set1_pd(-C::cos_5));
    pc = _mm512_fmadd_pd(pc, w, _mm512_set1_pd(C::cos_4));
    pc = _mm512_fmadd_pd(pc, w, _mm512_set1_pd(-C::cos_3));
    pc = _mm512_fmadd_pd(pc, w, _mm512_set1_pd(C::cos_2));
    pc = _mm512_fmadd_pd(pc, w, _mm512_set1_pd(0.5));
    const __m512d cr = _mm512_fmadd_pd(w, pc, _mm512_set1_pd(1.0));
    return {sr, cr, kk};
}

PYSKETCH_SINCOS_AVX512 void place_avx512(const Reduced512d &h, __m512d &c, __m512d &s)
{
    const __m512i sign = _mm512_set1_epi64(INT64_MIN);
    const __m512i q = _mm512_castpd_si512(h.kk);
    const __mmask8 odd = _mm512_test_epi64_mask(q, _mm512_set1_epi64(1));
    const __m512d sv = _mm512_mask_blend_pd(odd, h.sr, h.cr);
    const __m512d cv = _mm512_mask_blend_pd(odd, h.cr, h.sr);
    const __m512i q2 = _mm512_maskz_slli_epi64(all8, q, 62);
    s = _mm512_castsi512_pd(_mm512_ternarylogic_epi64(_mm512_castpd_si512(sv), q2, sign, 0x78));
    const __m512i c2 = _mm512_ternarylogic_epi64(_mm512_castpd_si512(cv), q2, sign, 0x78);
    c = _mm512_castsi512_pd(_mm512_mask_xor_epi64(c2, odd, c2, sign));
}

PYSKETCH_SINCOS_AVX512 void sincos_f64_avx512(__m512d t, __m512d &c, __m512d &s)
{
    place_avx512(reduced_f64_avx512(t), c, s);
}

// m = floor(x / (pi/2)) in the low bits of each lane: k, less one where the reduced r < 0.
PYSKETCH_SINCOS_AVX512 __m512i quadrant_avx512(__m512 x)
{
    __m512 kk;
    const __m512 r = reduce_avx512(x, kk);
    const __mmask16 negative = _mm512_cmp_ps_mask(r, _mm512_setzero_ps(), _CMP_LT_OQ);
    const __m512i q = _mm512_castps_si512(kk);
    return _mm512_mask_sub_epi32(q, negative, q, _mm512_set1_epi32(1));
}

PYSKETCH_SINCOS_AVX512 __m512i quadrant_avx512(__m512d x)
{
    __m512d kk;
    const __m512d r = reduce_avx512(x, kk);
    const __mmask8 negative = _mm512_cmp_pd_mask(r, _mm512_setzero_pd(), _CMP_LT_OQ);
    const __m512i q = _mm512_castpd_si512(kk);
    return _mm512_mask_sub_epi64(q, negative, q, _mm512_set1_epi64(1));
}

PYSKETCH_SINCOS_AVX512 __m512i magnitude_bits_avx512(__m512 t)
{
    return _mm512_and_si512(_mm512_castps_si512(t), _mm512_set1_epi32(INT32_MAX));
}
PYSKETCH_SINCOS_AVX512 __m512i magnitude_bits_avx512(__m512d t)
{
    return _mm512_and_si512(_mm512_castpd_si512(t), _mm512_set1_epi64(INT64_MAX));
}

}  // namespace detail

// Lanes of t outside the fast range (|t| > fast_bound, NaN, infinities).
PYSKETCH_SINCOS_AVX512 __mmask16 outside_avx512(__m512 t)
{
    return _mm512_cmpgt_epi32_mask(detail::magnitude_bits_avx512(t), _mm512_set1_epi32(detail::bound_bits_f32));
}
PYSKETCH_SINCOS_AVX512 __mmask8 outside_avx512(__m512d t)
{
    return _mm512_cmpgt_epi64_mask(detail::magnitude_bits_avx512(t), _mm512_set1_epi64(detail::bound_bits_f64));
}

// Is any lane of t[0], ..., t[W - 1] outside the fast range? (one compare for all)
template <std::size_t W>
PYSKETCH_SINCOS_AVX512 bool any_outside_avx512(const __m512 (&t)[W])
{
    __m512i m = detail::magnitude_bits_avx512(t[0]);
    for (std::size_t w = 1; w < W; ++w)
        m = _mm512_maskz_max_epu32(detail::all16, m, detail::magnitude_bits_avx512(t[w]));
    return _mm512_cmpgt_epi32_mask(m, _mm512_set1_epi32(detail::bound_bits_f32)) != 0;
}
template <std::size_t W>
PYSKETCH_SINCOS_AVX512 bool any_outside_avx512(const __m512d (&t)[W])
{
    __m512i m = detail::magnitude_bits_avx512(t[0]);
    for (std::size_t w = 1; w < W; ++w)
        m = _mm512_maskz_max_epu64(detail::all8, m, detail::magnitude_bits_avx512(t[w]));
    return _mm512_cmpgt_epi64_mask(m, _mm512_set1_epi64(detail::bound_bits_f64)) != 0;
}

// cos and sin of the lanes of t, assuming every lane is in the fast range (check with
// outside_avx512 / any_outside_avx512; other lanes get meaningless values).
PYSKETCH_SINCOS_AVX512 void sincos_values_avx512(__m512 t, __m512 &c, __m512 &s)
{
    detail::sincos_f32_avx512<false>(t, c, s);
}
PYSKETCH_SINCOS_AVX512 void sincos_values_avx512(__m512d t, __m512d &c, __m512d &s)
{
    detail::sincos_f64_avx512(t, c, s);
}

// cos and sin of the lanes in the fast range; returns the mask of the others.
PYSKETCH_SINCOS_AVX512 __mmask16 sincos_fast_avx512(__m512 t, __m512 &c, __m512 &s)
{
    sincos_values_avx512(t, c, s);
    return outside_avx512(t);
}
PYSKETCH_SINCOS_AVX512 __mmask8 sincos_fast_avx512(__m512d t, __m512d &c, __m512d &s)
{
    sincos_values_avx512(t, c, s);
    return outside_avx512(t);
}

// Replaces c and s in the lanes of `bad` by std::cos and std::sin of t (a cold path).
PYSKETCH_SINCOS_AVX512 void fix_avx512(__m512 t, __m512 &c, __m512 &s, unsigned bad)
{
    if (PYSKETCH_SINCOS_UNLIKELY(bad != 0)) {
        alignas(64) float tb[16], cb[16], sb[16];
        _mm512_store_ps(tb, t);
        _mm512_store_ps(cb, c);
        _mm512_store_ps(sb, s);
        detail::fix_lanes(tb, cb, sb, bad);
        c = _mm512_load_ps(cb);
        s = _mm512_load_ps(sb);
    }
}
PYSKETCH_SINCOS_AVX512 void fix_avx512(__m512d t, __m512d &c, __m512d &s, unsigned bad)
{
    if (PYSKETCH_SINCOS_UNLIKELY(bad != 0)) {
        alignas(64) double tb[8], cb[8], sb[8];
        _mm512_store_pd(tb, t);
        _mm512_store_pd(cb, c);
        _mm512_store_pd(sb, s);
        detail::fix_lanes(tb, cb, sb, bad);
        c = _mm512_load_pd(cb);
        s = _mm512_load_pd(sb);
    }
}

// cos and sin of every lane of t (the same bits as the array function).
PYSKETCH_SINCOS_AVX512 void sincos_avx512(__m512 t, __m512 &c, __m512 &s)
{
    fix_avx512(t, c, s, sincos_fast_avx512(t, c, s));
}
PYSKETCH_SINCOS_AVX512 void sincos_avx512(__m512d t, __m512d &c, __m512d &s)
{
    fix_avx512(t, c, s, sincos_fast_avx512(t, c, s));
}

// m = floor(x / (pi/2)) in the low bits of each lane, for the lanes in the fast range (sign
// cos x < 0 exactly when (m + 1) & 2, sin x < 0 exactly when m & 2); returns the mask of the
// others.
PYSKETCH_SINCOS_AVX512 __mmask16 quadrant_fast_avx512(__m512 x, __m512i &m)
{
    m = detail::quadrant_avx512(x);
    return outside_avx512(x);
}
PYSKETCH_SINCOS_AVX512 __mmask8 quadrant_fast_avx512(__m512d x, __m512i &m)
{
    m = detail::quadrant_avx512(x);
    return outside_avx512(x);
}

// ---- AVX2 + FMA (the same operations, 256-bit) ----

namespace detail {

PYSKETCH_SINCOS_AVX2 __m256 reduce_avx2(__m256 t, __m256 &kk)
{
    using C = Constants<float>;
    const __m256 magic = _mm256_set1_ps(C::round_magic);
    kk = _mm256_fmadd_ps(t, _mm256_set1_ps(C::two_over_pi), magic);
    const __m256 k = _mm256_sub_ps(kk, magic);
    const __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(C::pio2_1), t);
    return _mm256_fnmadd_ps(k, _mm256_set1_ps(C::pio2_2), r);
}

PYSKETCH_SINCOS_AVX2 __m256d reduce_avx2(__m256d t, __m256d &kk)
{
    using C = Constants<double>;
    const __m256d magic = _mm256_set1_pd(C::round_magic);
    kk = _mm256_fmadd_pd(t, _mm256_set1_pd(C::two_over_pi), magic);
    const __m256d k = _mm256_sub_pd(kk, magic);
    const __m256d r = _mm256_fnmadd_pd(k, _mm256_set1_pd(C::pio2_1), t);
    return _mm256_fnmadd_pd(k, _mm256_set1_pd(C::pio2_2), r);
}

template <bool Fixed>
PYSKETCH_SINCOS_AVX2 void sincos_f32_avx2(__m256 t, __m256 &c, __m256 &s)
{
    using C = Constants<float>;
    constexpr float S = Fixed ? cis_fixed_scale : 1.0f;
    __m256 kk;
    const __m256 r = reduce_avx2(t, kk);
    const __m256 w = _mm256_fnmadd_ps(r, r, _mm256_setzero_ps());  // -r^2

    __m256 ps = _mm256_fmadd_ps(_mm256_set1_ps(S * -C::sin_3), w, _mm256_set1_ps(S * C::sin_2));
    ps = _mm256_fmadd_ps(ps, w, _mm256_set1_ps(S * -C::sin_1));
    const __m256 rs = Fixed ? _mm256_mul_ps(r, _mm256_set1_ps(S)) : r;
    const __m256 sr = _mm256_fmadd_ps(_mm256_mul_ps(r, w), ps, rs);
    __m256 pc = _mm256_fmadd_ps(_mm256_set1_ps(S * C::cos_4), w, _mm256_set1_ps(S * -C::cos_3));
    pc = _mm256_fmadd_ps(pc, w, _mm256_set1_ps(S * C::cos_2));
    pc = _mm256_fmadd_ps(pc, w, _mm256_set1_ps(S * 0.5f));
    const __m256 cr = _mm256_fmadd_ps(w, pc, _mm256_set1_ps(S));

    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256i q = _mm256_castps_si256(kk);
    const __m256 odd = _mm256_castsi256_ps(_mm256_slli_epi32(q, 31));  // q & 1 in the sign bit only
    const __m256 sv = _mm256_blendv_ps(sr, cr, odd);                    // blendv reads the sign bit
    const __m256 cv = _mm256_blendv_ps(cr, sr, odd);
    const __m256 q2 = _mm256_and_ps(_mm256_castsi256_ps(_mm256_slli_epi32(q, 30)), sign);  // q & 2
    s = _mm256_xor_ps(sv, q2);
    c = _mm256_xor_ps(cv, _mm256_xor_ps(q2, odd));
}

PYSKETCH_SINCOS_AVX2 void sincos_f64_avx2(__m256d t, __m256d &c, __m256d &s)
{
    using C = Constants<double>;
    __m256d kk;
    const __m256d r = reduce_avx2(t, kk);
    const __m256d w = _mm256_fnmadd_pd(r, r, _mm256_setzero_pd());  // -r^2

    __m256d ps = _mm256_fmadd_pd(_mm256_set1_pd(C::sin_6), w, _mm256_set1_pd(-C::sin_5));
    ps = _mm256_fmadd_pd(ps, w, _mm256_set1_pd(C::sin_4));
    ps = _mm256_fmadd_pd(ps, w, _mm256_set1_pd(-C::sin_3));
    ps = _mm256_fmadd_pd(ps, w, _mm256_set1_pd(C::sin_2));
    ps = _mm256_fmadd_pd(ps, w, _mm256_set1_pd(-C::sin_1));
    const __m256d sr = _mm256_fmadd_pd(_mm256_mul_pd(r, w), ps, r);
    __m256d pc = _mm256_fmadd_pd(_mm256_set1_pd(-C::cos_7), w, _mm256_set1_pd(C::cos_6));
    pc = _mm256_fmadd_pd(pc, w, _mm256_set1_pd(-C::cos_5));
    pc = _mm256_fmadd_pd(pc, w, _mm256_set1_pd(C::cos_4));
    pc = _mm256_fmadd_pd(pc, w, _mm256_set1_pd(-C::cos_3));
    pc = _mm256_fmadd_pd(pc, w, _mm256_set1_pd(C::cos_2));
    pc = _mm256_fmadd_pd(pc, w, _mm256_set1_pd(0.5));
    const __m256d cr = _mm256_fmadd_pd(w, pc, _mm256_set1_pd(1.0));

    const __m256d sign = _mm256_set1_pd(-0.0);
    const __m256i q = _mm256_castpd_si256(kk);
    const __m256d odd = _mm256_castsi256_pd(_mm256_slli_epi64(q, 63));
    const __m256d sv = _mm256_blendv_pd(sr, cr, odd);
    const __m256d cv = _mm256_blendv_pd(cr, sr, odd);
    const __m256d q2 = _mm256_and_pd(_mm256_castsi256_pd(_mm256_slli_epi64(q, 62)), sign);
    s = _mm256_xor_pd(sv, q2);
    c = _mm256_xor_pd(cv, _mm256_xor_pd(q2, odd));
}

PYSKETCH_SINCOS_AVX2 __m256i quadrant_avx2(__m256 x)
{
    __m256 kk;
    const __m256 r = reduce_avx2(x, kk);
    // all ones (-1) in the lanes where r < 0
    const __m256i negative = _mm256_castps_si256(_mm256_cmp_ps(r, _mm256_setzero_ps(), _CMP_LT_OQ));
    return _mm256_add_epi32(_mm256_castps_si256(kk), negative);
}

PYSKETCH_SINCOS_AVX2 __m256i quadrant_avx2(__m256d x)
{
    __m256d kk;
    const __m256d r = reduce_avx2(x, kk);
    const __m256i negative = _mm256_castpd_si256(_mm256_cmp_pd(r, _mm256_setzero_pd(), _CMP_LT_OQ));
    return _mm256_add_epi64(_mm256_castpd_si256(kk), negative);
}

// Lanes outside the fast range, as all-ones lanes.
PYSKETCH_SINCOS_AVX2 __m256i outside_lanes_avx2(__m256 t)
{
    const __m256i m = _mm256_and_si256(_mm256_castps_si256(t), _mm256_set1_epi32(INT32_MAX));
    return _mm256_cmpgt_epi32(m, _mm256_set1_epi32(bound_bits_f32));
}
PYSKETCH_SINCOS_AVX2 __m256i outside_lanes_avx2(__m256d t)
{
    const __m256i m = _mm256_and_si256(_mm256_castpd_si256(t), _mm256_set1_epi64x(INT64_MAX));
    return _mm256_cmpgt_epi64(m, _mm256_set1_epi64x(bound_bits_f64));
}

}  // namespace detail

PYSKETCH_SINCOS_AVX2 int outside_avx2(__m256 t)
{
    return _mm256_movemask_ps(_mm256_castsi256_ps(detail::outside_lanes_avx2(t)));
}
PYSKETCH_SINCOS_AVX2 int outside_avx2(__m256d t)
{
    return _mm256_movemask_pd(_mm256_castsi256_pd(detail::outside_lanes_avx2(t)));
}

template <std::size_t W>
PYSKETCH_SINCOS_AVX2 bool any_outside_avx2(const __m256 (&t)[W])
{
    const __m256i magnitude = _mm256_set1_epi32(INT32_MAX);
    __m256i m = _mm256_and_si256(_mm256_castps_si256(t[0]), magnitude);
    for (std::size_t w = 1; w < W; ++w) m = _mm256_max_epu32(m, _mm256_and_si256(_mm256_castps_si256(t[w]), magnitude));
    const __m256i out = _mm256_cmpgt_epi32(m, _mm256_set1_epi32(detail::bound_bits_f32));
    return !_mm256_testz_si256(out, out);
}
template <std::size_t W>
PYSKETCH_SINCOS_AVX2 bool any_outside_avx2(const __m256d (&t)[W])
{
    // AVX2 has no 64-bit maximum: or the compares
    __m256i out = detail::outside_lanes_avx2(t[0]);
    for (std::size_t w = 1; w < W; ++w) out = _mm256_or_si256(out, detail::outside_lanes_avx2(t[w]));
    return !_mm256_testz_si256(out, out);
}

PYSKETCH_SINCOS_AVX2 void sincos_values_avx2(__m256 t, __m256 &c, __m256 &s)
{
    detail::sincos_f32_avx2<false>(t, c, s);
}
PYSKETCH_SINCOS_AVX2 void sincos_values_avx2(__m256d t, __m256d &c, __m256d &s)
{
    detail::sincos_f64_avx2(t, c, s);
}

PYSKETCH_SINCOS_AVX2 int sincos_fast_avx2(__m256 t, __m256 &c, __m256 &s)
{
    sincos_values_avx2(t, c, s);
    return outside_avx2(t);
}
PYSKETCH_SINCOS_AVX2 int sincos_fast_avx2(__m256d t, __m256d &c, __m256d &s)
{
    sincos_values_avx2(t, c, s);
    return outside_avx2(t);
}

PYSKETCH_SINCOS_AVX2 void fix_avx2(__m256 t, __m256 &c, __m256 &s, unsigned bad)
{
    if (PYSKETCH_SINCOS_UNLIKELY(bad != 0)) {
        alignas(32) float tb[8], cb[8], sb[8];
        _mm256_store_ps(tb, t);
        _mm256_store_ps(cb, c);
        _mm256_store_ps(sb, s);
        detail::fix_lanes(tb, cb, sb, bad);
        c = _mm256_load_ps(cb);
        s = _mm256_load_ps(sb);
    }
}
PYSKETCH_SINCOS_AVX2 void fix_avx2(__m256d t, __m256d &c, __m256d &s, unsigned bad)
{
    if (PYSKETCH_SINCOS_UNLIKELY(bad != 0)) {
        alignas(32) double tb[4], cb[4], sb[4];
        _mm256_store_pd(tb, t);
        _mm256_store_pd(cb, c);
        _mm256_store_pd(sb, s);
        detail::fix_lanes(tb, cb, sb, bad);
        c = _mm256_load_pd(cb);
        s = _mm256_load_pd(sb);
    }
}

PYSKETCH_SINCOS_AVX2 void sincos_avx2(__m256 t, __m256 &c, __m256 &s)
{
    fix_avx2(t, c, s, static_cast<unsigned>(sincos_fast_avx2(t, c, s)));
}
PYSKETCH_SINCOS_AVX2 void sincos_avx2(__m256d t, __m256d &c, __m256d &s)
{
    fix_avx2(t, c, s, static_cast<unsigned>(sincos_fast_avx2(t, c, s)));
}

PYSKETCH_SINCOS_AVX2 int quadrant_fast_avx2(__m256 x, __m256i &m)
{
    m = detail::quadrant_avx2(x);
    return outside_avx2(x);
}
PYSKETCH_SINCOS_AVX2 int quadrant_fast_avx2(__m256d x, __m256i &m)
{
    m = detail::quadrant_avx2(x);
    return outside_avx2(x);
}

namespace detail {

// ---------------------------------------------------------------------------------------------
// The operations the array loops need, per instruction set and type:
//   values(t, c, s)       plain results (fast range assumed)
//   cis_values(t, c, s)   results in the form acc_add takes (float: times cis_fixed_scale)
//   Half, first(t),       values and cis_values in two halves: first or cis_first, then second
//   cis_first(t),         (AVX-512 only: its loops run the first half of one step beside the
//   second(h, c, s)       second half of the previous one)
//   outside(t)            mask of the lanes outside the fast range; any_outside(t[W]) for several
//   fix / cis_fix         the cold path for those lanes
//   Acc, acc_*            per-lane sums of accumulate_cis over a block of rows, folded into
//                         the per-lane double sums Sum at the end of the block
//   QCount, q_*           per-lane integer counts of accumulate_qcis
// ---------------------------------------------------------------------------------------------

template <class T>
struct Avx512;

template <>
struct Avx512<float> : simd::Avx512<float> {
    using QCount = __m512i;
    using QCountScalar = std::int32_t;
    static constexpr std::size_t width = 2;  // vectors per column block of the accumulations
    static constexpr bool check_first = false;  // 32 registers: rows pipelined, one check per row
    static constexpr bool integer_sums = true;
    using Acc = __m512i;

    PYSKETCH_SINCOS_AVX512 static void values(V t, V &c, V &s) { sincos_f32_avx512<false>(t, c, s); }
    PYSKETCH_SINCOS_AVX512 static void cis_values(V t, V &c, V &s) { sincos_f32_avx512<true>(t, c, s); }
    using Half = Reduced512;
    PYSKETCH_SINCOS_AVX512 static Half first(V t) { return reduced_f32_avx512<false>(t); }
    PYSKETCH_SINCOS_AVX512 static Half cis_first(V t) { return reduced_f32_avx512<true>(t); }
    PYSKETCH_SINCOS_AVX512 static void second(const Half &h, V &c, V &s) { place_avx512(h, c, s); }
    PYSKETCH_SINCOS_AVX512 static unsigned outside(V t) { return outside_avx512(t); }
    template <std::size_t W>
    PYSKETCH_SINCOS_AVX512 static bool any_outside(const V (&t)[W])
    {
        return any_outside_avx512(t);
    }
    PYSKETCH_SINCOS_AVX512 static void fix(V t, V &c, V &s, unsigned bad) { fix_avx512(t, c, s, bad); }
    // The lanes of `bad` add std::cos and std::sin to the side sums and count 0.
    PYSKETCH_SINCOS_AVX512 static void cis_fix(V x, V &c, V &s, unsigned bad, double *side_c, double *side_s)
    {
        alignas(64) T xb[16], cb[16], sb[16];
        _mm512_store_ps(xb, x);
        _mm512_store_ps(cb, c);
        _mm512_store_ps(sb, s);
        fix_lanes_apart(xb, cb, sb, bad, side_c, side_s);
        c = _mm512_load_ps(cb);
        s = _mm512_load_ps(sb);
    }

    PYSKETCH_SINCOS_AVX512 static Acc acc_zero() { return _mm512_setzero_si512(); }
    // a += round(v), v = result * 2^26 (see cis_fixed_scale)
    PYSKETCH_SINCOS_AVX512 static void acc_add(Acc &a, V v)
    {
        a = _mm512_add_epi32(a, _mm512_maskz_cvtps_epi32(all16, v));
    }
    struct Sum {
        __m512d lo, hi;
    };
    PYSKETCH_SINCOS_AVX512 static Sum sum_zero() { return {_mm512_setzero_pd(), _mm512_setzero_pd()}; }
    // sum += a * 2^-26 (exact)
    PYSKETCH_SINCOS_AVX512 static void acc_fold(Sum &sum, Acc a)
    {
        const __m512d unit = _mm512_set1_pd(1.0 / cis_fixed_scale);
        const __m512d lo = _mm512_maskz_cvtepi32_pd(all8, _mm512_maskz_extracti64x4_epi64(0xF, a, 0));
        const __m512d hi = _mm512_maskz_cvtepi32_pd(all8, _mm512_maskz_extracti64x4_epi64(0xF, a, 1));
        sum.lo = _mm512_add_pd(sum.lo, _mm512_mul_pd(lo, unit));
        sum.hi = _mm512_add_pd(sum.hi, _mm512_mul_pd(hi, unit));
    }
    // dst[0, 16) += sum
    PYSKETCH_SINCOS_AVX512 static void sum_add_to(double *dst, const Sum &sum)
    {
        _mm512_storeu_pd(dst, _mm512_add_pd(_mm512_loadu_pd(dst), sum.lo));
        _mm512_storeu_pd(dst + 8, _mm512_add_pd(_mm512_loadu_pd(dst + 8), sum.hi));
    }
    PYSKETCH_SINCOS_AVX512 static void sum_store(double *out, const Sum &sum)
    {
        _mm512_storeu_pd(out, sum.lo);
        _mm512_storeu_pd(out + 8, sum.hi);
    }

    PYSKETCH_SINCOS_AVX512 static QCount q_zero() { return _mm512_setzero_si512(); }
    // Twice "cos x < 0" and twice "sin x < 0", per lane (fast range assumed).
    PYSKETCH_SINCOS_AVX512 static void q_values(V x, QCount &dc, QCount &ds)
    {
        const __m512i m = quadrant_avx512(x);
        const __m512i two = _mm512_set1_epi32(2);
        dc = _mm512_and_si512(_mm512_add_epi32(m, _mm512_set1_epi32(1)), two);
        ds = _mm512_and_si512(m, two);
    }
    PYSKETCH_SINCOS_AVX512 static QCount q_add(QCount a, QCount b) { return _mm512_add_epi32(a, b); }
    PYSKETCH_SINCOS_AVX512 static void q_store(QCountScalar *out, QCount v) { _mm512_storeu_si512(out, v); }
    PYSKETCH_SINCOS_AVX512 static QCount q_load(const QCountScalar *p) { return _mm512_loadu_si512(p); }
    // dst = fma(rows - count, 2^-1/2, dst) for the 16 lanes
    PYSKETCH_SINCOS_AVX512 static void q_flush(double *dst, std::size_t rows, QCount count)
    {
        const __m512d n = _mm512_set1_pd(static_cast<double>(rows));
        const __m512d h = _mm512_set1_pd(qcis_scale);
        const __m512d lo = _mm512_maskz_cvtepi32_pd(all8, _mm512_maskz_extracti64x4_epi64(0xF, count, 0));
        const __m512d hi = _mm512_maskz_cvtepi32_pd(all8, _mm512_maskz_extracti64x4_epi64(0xF, count, 1));
        _mm512_storeu_pd(dst, _mm512_fmadd_pd(_mm512_sub_pd(n, lo), h, _mm512_loadu_pd(dst)));
        _mm512_storeu_pd(dst + 8, _mm512_fmadd_pd(_mm512_sub_pd(n, hi), h, _mm512_loadu_pd(dst + 8)));
    }
};

template <>
struct Avx512<double> : simd::Avx512<double> {
    using QCount = __m512i;
    using QCountScalar = std::int64_t;
    static constexpr std::size_t width = 2;
    static constexpr bool check_first = false;
    static constexpr bool integer_sums = false;
    using Acc = __m512d;

    PYSKETCH_SINCOS_AVX512 static void values(V t, V &c, V &s) { sincos_f64_avx512(t, c, s); }
    PYSKETCH_SINCOS_AVX512 static void cis_values(V t, V &c, V &s) { sincos_f64_avx512(t, c, s); }
    using Half = Reduced512d;
    PYSKETCH_SINCOS_AVX512 static Half first(V t) { return reduced_f64_avx512(t); }
    PYSKETCH_SINCOS_AVX512 static Half cis_first(V t) { return reduced_f64_avx512(t); }
    PYSKETCH_SINCOS_AVX512 static void second(const Half &h, V &c, V &s) { place_avx512(h, c, s); }
    PYSKETCH_SINCOS_AVX512 static unsigned outside(V t) { return outside_avx512(t); }
    template <std::size_t W>
    PYSKETCH_SINCOS_AVX512 static bool any_outside(const V (&t)[W])
    {
        return any_outside_avx512(t);
    }
    PYSKETCH_SINCOS_AVX512 static void fix(V t, V &c, V &s, unsigned bad) { fix_avx512(t, c, s, bad); }
    PYSKETCH_SINCOS_AVX512 static void cis_fix(V x, V &c, V &s, unsigned bad, double *, double *)
    {
        fix_avx512(x, c, s, bad);
    }

    PYSKETCH_SINCOS_AVX512 static Acc acc_zero() { return _mm512_setzero_pd(); }
    PYSKETCH_SINCOS_AVX512 static void acc_add(Acc &a, V v) { a = _mm512_add_pd(a, v); }
    using Sum = __m512d;
    PYSKETCH_SINCOS_AVX512 static Sum sum_zero() { return _mm512_setzero_pd(); }
    PYSKETCH_SINCOS_AVX512 static void acc_fold(Sum &sum, Acc a) { sum = _mm512_add_pd(sum, a); }
    PYSKETCH_SINCOS_AVX512 static void sum_add_to(double *dst, const Sum &sum)
    {
        _mm512_storeu_pd(dst, _mm512_add_pd(_mm512_loadu_pd(dst), sum));
    }
    PYSKETCH_SINCOS_AVX512 static void sum_store(double *out, const Sum &sum) { _mm512_storeu_pd(out, sum); }

    PYSKETCH_SINCOS_AVX512 static QCount q_zero() { return _mm512_setzero_si512(); }
    PYSKETCH_SINCOS_AVX512 static void q_values(V x, QCount &dc, QCount &ds)
    {
        const __m512i m = quadrant_avx512(x);
        const __m512i two = _mm512_set1_epi64(2);
        dc = _mm512_and_si512(_mm512_add_epi64(m, _mm512_set1_epi64(1)), two);
        ds = _mm512_and_si512(m, two);
    }
    PYSKETCH_SINCOS_AVX512 static QCount q_add(QCount a, QCount b) { return _mm512_add_epi64(a, b); }
    PYSKETCH_SINCOS_AVX512 static void q_store(QCountScalar *out, QCount v) { _mm512_storeu_si512(out, v); }
    PYSKETCH_SINCOS_AVX512 static QCount q_load(const QCountScalar *p) { return _mm512_loadu_si512(p); }
    PYSKETCH_SINCOS_AVX512 static void q_flush(double *dst, std::size_t rows, QCount count)
    {
        // counts stay below 2^31 (blocks of qcis_block_rows rows): exact through int32
        const __m512d n = _mm512_set1_pd(static_cast<double>(rows));
        const __m512d v = _mm512_sub_pd(n, _mm512_maskz_cvtepi32_pd(all8, _mm512_maskz_cvtepi64_epi32(all8, count)));
        _mm512_storeu_pd(dst, _mm512_fmadd_pd(v, _mm512_set1_pd(qcis_scale), _mm512_loadu_pd(dst)));
    }
};

template <class T>
struct Avx2;

template <>
struct Avx2<float> : simd::Avx2<float> {
    using QCount = __m256i;
    using QCountScalar = std::int32_t;
    static constexpr std::size_t width = 4;  // 4 x 32 bytes: 128-byte runs of each row per pass
    static constexpr bool check_first = true;  // 16 registers: check, then finish one vector at a time
    static constexpr bool integer_sums = true;
    using Acc = __m256i;

    PYSKETCH_SINCOS_AVX2 static void values(V t, V &c, V &s) { sincos_f32_avx2<false>(t, c, s); }
    PYSKETCH_SINCOS_AVX2 static void cis_values(V t, V &c, V &s) { sincos_f32_avx2<true>(t, c, s); }
    PYSKETCH_SINCOS_AVX2 static unsigned outside(V t) { return static_cast<unsigned>(outside_avx2(t)); }
    template <std::size_t W>
    PYSKETCH_SINCOS_AVX2 static bool any_outside(const V (&t)[W])
    {
        return any_outside_avx2(t);
    }
    PYSKETCH_SINCOS_AVX2 static void fix(V t, V &c, V &s, unsigned bad) { fix_avx2(t, c, s, bad); }
    PYSKETCH_SINCOS_AVX2 static void cis_fix(V x, V &c, V &s, unsigned bad, double *side_c, double *side_s)
    {
        alignas(32) T xb[8], cb[8], sb[8];
        _mm256_store_ps(xb, x);
        _mm256_store_ps(cb, c);
        _mm256_store_ps(sb, s);
        fix_lanes_apart(xb, cb, sb, bad, side_c, side_s);
        c = _mm256_load_ps(cb);
        s = _mm256_load_ps(sb);
    }

    PYSKETCH_SINCOS_AVX2 static Acc acc_zero() { return _mm256_setzero_si256(); }
    PYSKETCH_SINCOS_AVX2 static void acc_add(Acc &a, V v) { a = _mm256_add_epi32(a, _mm256_cvtps_epi32(v)); }
    struct Sum {
        __m256d lo, hi;
    };
    PYSKETCH_SINCOS_AVX2 static Sum sum_zero() { return {_mm256_setzero_pd(), _mm256_setzero_pd()}; }
    PYSKETCH_SINCOS_AVX2 static void acc_fold(Sum &sum, Acc a)
    {
        const __m256d unit = _mm256_set1_pd(1.0 / cis_fixed_scale);
        const __m256d lo = _mm256_cvtepi32_pd(_mm256_castsi256_si128(a));
        const __m256d hi = _mm256_cvtepi32_pd(_mm256_extracti128_si256(a, 1));
        sum.lo = _mm256_add_pd(sum.lo, _mm256_mul_pd(lo, unit));
        sum.hi = _mm256_add_pd(sum.hi, _mm256_mul_pd(hi, unit));
    }
    PYSKETCH_SINCOS_AVX2 static void sum_add_to(double *dst, const Sum &sum)
    {
        _mm256_storeu_pd(dst, _mm256_add_pd(_mm256_loadu_pd(dst), sum.lo));
        _mm256_storeu_pd(dst + 4, _mm256_add_pd(_mm256_loadu_pd(dst + 4), sum.hi));
    }
    PYSKETCH_SINCOS_AVX2 static void sum_store(double *out, const Sum &sum)
    {
        _mm256_storeu_pd(out, sum.lo);
        _mm256_storeu_pd(out + 4, sum.hi);
    }

    PYSKETCH_SINCOS_AVX2 static QCount q_zero() { return _mm256_setzero_si256(); }
    PYSKETCH_SINCOS_AVX2 static void q_values(V x, QCount &dc, QCount &ds)
    {
        const __m256i m = quadrant_avx2(x);
        const __m256i two = _mm256_set1_epi32(2);
        dc = _mm256_and_si256(_mm256_add_epi32(m, _mm256_set1_epi32(1)), two);
        ds = _mm256_and_si256(m, two);
    }
    PYSKETCH_SINCOS_AVX2 static QCount q_add(QCount a, QCount b) { return _mm256_add_epi32(a, b); }
    PYSKETCH_SINCOS_AVX2 static void q_store(QCountScalar *out, QCount v)
    {
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(out), v);
    }
    PYSKETCH_SINCOS_AVX2 static QCount q_load(const QCountScalar *p)
    {
        return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p));
    }
    PYSKETCH_SINCOS_AVX2 static void q_flush(double *dst, std::size_t rows, QCount count)
    {
        const __m256d n = _mm256_set1_pd(static_cast<double>(rows));
        const __m256d h = _mm256_set1_pd(qcis_scale);
        const __m256d lo = _mm256_sub_pd(n, _mm256_cvtepi32_pd(_mm256_castsi256_si128(count)));
        const __m256d hi = _mm256_sub_pd(n, _mm256_cvtepi32_pd(_mm256_extracti128_si256(count, 1)));
        _mm256_storeu_pd(dst, _mm256_fmadd_pd(lo, h, _mm256_loadu_pd(dst)));
        _mm256_storeu_pd(dst + 4, _mm256_fmadd_pd(hi, h, _mm256_loadu_pd(dst + 4)));
    }
};

template <>
struct Avx2<double> : simd::Avx2<double> {
    using QCount = __m256i;
    using QCountScalar = std::int64_t;
    static constexpr std::size_t width = 4;
    static constexpr bool check_first = true;
    static constexpr bool integer_sums = false;
    using Acc = __m256d;

    PYSKETCH_SINCOS_AVX2 static void values(V t, V &c, V &s) { sincos_f64_avx2(t, c, s); }
    PYSKETCH_SINCOS_AVX2 static void cis_values(V t, V &c, V &s) { sincos_f64_avx2(t, c, s); }
    PYSKETCH_SINCOS_AVX2 static unsigned outside(V t) { return static_cast<unsigned>(outside_avx2(t)); }
    template <std::size_t W>
    PYSKETCH_SINCOS_AVX2 static bool any_outside(const V (&t)[W])
    {
        return any_outside_avx2(t);
    }
    PYSKETCH_SINCOS_AVX2 static void fix(V t, V &c, V &s, unsigned bad) { fix_avx2(t, c, s, bad); }
    PYSKETCH_SINCOS_AVX2 static void cis_fix(V x, V &c, V &s, unsigned bad, double *, double *)
    {
        fix_avx2(x, c, s, bad);
    }

    PYSKETCH_SINCOS_AVX2 static Acc acc_zero() { return _mm256_setzero_pd(); }
    PYSKETCH_SINCOS_AVX2 static void acc_add(Acc &a, V v) { a = _mm256_add_pd(a, v); }
    using Sum = __m256d;
    PYSKETCH_SINCOS_AVX2 static Sum sum_zero() { return _mm256_setzero_pd(); }
    PYSKETCH_SINCOS_AVX2 static void acc_fold(Sum &sum, Acc a) { sum = _mm256_add_pd(sum, a); }
    PYSKETCH_SINCOS_AVX2 static void sum_add_to(double *dst, const Sum &sum)
    {
        _mm256_storeu_pd(dst, _mm256_add_pd(_mm256_loadu_pd(dst), sum));
    }
    PYSKETCH_SINCOS_AVX2 static void sum_store(double *out, const Sum &sum) { _mm256_storeu_pd(out, sum); }

    PYSKETCH_SINCOS_AVX2 static QCount q_zero() { return _mm256_setzero_si256(); }
    PYSKETCH_SINCOS_AVX2 static void q_values(V x, QCount &dc, QCount &ds)
    {
        const __m256i m = quadrant_avx2(x);
        const __m256i two = _mm256_set1_epi64x(2);
        dc = _mm256_and_si256(_mm256_add_epi64(m, _mm256_set1_epi64x(1)), two);
        ds = _mm256_and_si256(m, two);
    }
    PYSKETCH_SINCOS_AVX2 static QCount q_add(QCount a, QCount b) { return _mm256_add_epi64(a, b); }
    PYSKETCH_SINCOS_AVX2 static void q_store(QCountScalar *out, QCount v)
    {
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(out), v);
    }
    PYSKETCH_SINCOS_AVX2 static QCount q_load(const QCountScalar *p)
    {
        return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p));
    }
    PYSKETCH_SINCOS_AVX2 static void q_flush(double *dst, std::size_t rows, QCount count)
    {
        alignas(32) std::int64_t c[4];
        _mm256_store_si256(reinterpret_cast<__m256i *>(c), count);
        const __m256d v = _mm256_sub_pd(_mm256_set1_pd(static_cast<double>(rows)),
                                        _mm256_setr_pd(static_cast<double>(c[0]), static_cast<double>(c[1]),
                                                       static_cast<double>(c[2]), static_cast<double>(c[3])));
        _mm256_storeu_pd(dst, _mm256_fmadd_pd(v, _mm256_set1_pd(qcis_scale), _mm256_loadu_pd(dst)));
    }
};

// Ops::Half where the Ops split their kernels in halves (see Avx512), else a placeholder.
template <class Ops, class = void>
struct HalfOf {
    using type = char;
};
template <class Ops>
struct HalfOf<Ops, std::void_t<typename Ops::Half>> {
    using type = typename Ops::Half;
};

// ---------------------------------------------------------------------------------------------
// The array loops, written once and compiled for each instruction set. GCC and Clang refuse to
// inline target-specific intrinsics into a function without that target, so a plain template
// over Ops cannot be used: this macro stamps out the loops with the target attribute.
//
//   sincos_loop     two vectors per step (one range check for both), then the tail
//   cis_columns     columns [0, W * lanes) (or [0, count) with W = 1 when Part) of every row:
//                   the per-column sums stay in registers across rows
//   qcis_columns    the same with integer counts of negative signs
// ---------------------------------------------------------------------------------------------
#define PYSKETCH_SINCOS_DEFINE_LOOPS(ISA, TARGET)                                                                    \
    template <class Ops>                                                                                             \
    __attribute__((target(TARGET))) void sincos_loop_##ISA(const typename Ops::T *t, std::size_t n,                  \
                                                          typename Ops::T *c, typename Ops::T *s)                    \
    {                                                                                                                \
        using V = typename Ops::V;                                                                                   \
        constexpr std::size_t L = Ops::lanes;                                                                        \
        std::size_t j = 0;                                                                                           \
        /* With 32 registers, the steps are software-pipelined as in cis_columns (the first half of step */          \
        /* j + 1 before the second half of step j): 0.279 -> 0.263 ns a value (float, AVX-512, Zen 4). */            \
        typename HalfOf<Ops>::type next[2];                                                                          \
        bool next_slow = false;                                                                                      \
        if constexpr (!Ops::check_first) {                                                                           \
            if (n >= 2 * L) {                                                                                        \
                const V x[2] = {Ops::load(t), Ops::load(t + L)};                                                     \
                next[0] = Ops::first(x[0]);                                                                          \
                next[1] = Ops::first(x[1]);                                                                          \
                next_slow = Ops::any_outside(x);                                                                     \
            }                                                                                                        \
        }                                                                                                            \
        for (; j + 2 * L <= n; j += 2 * L) {                                                                         \
            V c0, s0, c1, s1;                                                                                        \
            bool slow;                                                                                               \
            if constexpr (Ops::check_first) {                                                                        \
                const V x[2] = {Ops::load(t + j), Ops::load(t + j + L)};                                             \
                Ops::values(x[0], c0, s0);                                                                           \
                Ops::values(x[1], c1, s1);                                                                           \
                slow = Ops::any_outside(x);                                                                          \
            } else {                                                                                                 \
                const typename Ops::Half h0 = next[0], h1 = next[1];                                                 \
                slow = next_slow;                                                                                    \
                if (j + 4 * L <= n) {                                                                                \
                    const V x[2] = {Ops::load(t + j + 2 * L), Ops::load(t + j + 3 * L)};                             \
                    next[0] = Ops::first(x[0]);                                                                      \
                    next[1] = Ops::first(x[1]);                                                                      \
                    next_slow = Ops::any_outside(x);                                                                 \
                }                                                                                                    \
                Ops::second(h0, c0, s0);                                                                             \
                Ops::second(h1, c1, s1);                                                                             \
            }                                                                                                        \
            if (PYSKETCH_SINCOS_UNLIKELY(slow)) { /* reloaded: the pipelined loop no longer has them */              \
                const V x0 = Ops::load(t + j), x1 = Ops::load(t + j + L);                                            \
                Ops::fix(x0, c0, s0, Ops::outside(x0));                                                              \
                Ops::fix(x1, c1, s1, Ops::outside(x1));                                                              \
            }                                                                                                        \
            Ops::store(c + j, c0);                                                                                   \
            Ops::store(s + j, s0);                                                                                   \
            Ops::store(c + j + L, c1);                                                                               \
            Ops::store(s + j + L, s1);                                                                               \
        }                                                                                                            \
        for (; j < n; j += L) { /* at most one full vector and one part */                                           \
            const std::size_t m = std::min(L, n - j);                                                                \
            const V x = m == L ? Ops::load(t + j) : Ops::load_part(t + j, m);                                        \
            V vc, vs;                                                                                                \
            Ops::values(x, vc, vs);                                                                                  \
            Ops::fix(x, vc, vs, Ops::outside(x));                                                                    \
            if (m == L) {                                                                                            \
                Ops::store(c + j, vc);                                                                               \
                Ops::store(s + j, vs);                                                                               \
            } else {                                                                                                 \
                Ops::store_part(c + j, vc, m);                                                                       \
                Ops::store_part(s + j, vs, m);                                                                       \
            }                                                                                                        \
        }                                                                                                            \
    }                                                                                                                \
                                                                                                                     \
    /* The cold path of the accumulations, for vector w of a column block: with integer sums, the */                 \
    /* lanes outside the fast range go to the side sums (all zeroed on first use); with double */                    \
    /* sums they are patched. */                                                                                     \
    template <class Ops, std::size_t W>                                                                              \
    __attribute__((target(TARGET))) void cis_fix_##ISA(typename Ops::V x, typename Ops::V &vc, typename Ops::V &vs,  \
                                                      std::size_t w, bool &side, double *side_c, double *side_s)     \
    {                                                                                                                \
        const unsigned bad = Ops::outside(x);                                                                        \
        if (bad == 0) return;                                                                                        \
        if (Ops::integer_sums && !side) {                                                                            \
            std::fill(side_c, side_c + W * Ops::lanes, 0.0);                                                         \
            std::fill(side_s, side_s + W * Ops::lanes, 0.0);                                                         \
            side = true;                                                                                             \
        }                                                                                                            \
        Ops::cis_fix(x, vc, vs, bad, side_c + w * Ops::lanes, side_s + w * Ops::lanes);                              \
    }                                                                                                                \
                                                                                                                     \
    template <class Ops, std::size_t W>                                                                              \
    __attribute__((target(TARGET))) void qcis_fix_##ISA(typename Ops::V x, typename Ops::QCount &dc,                 \
                                                       typename Ops::QCount &ds, std::size_t w, bool &side,          \
                                                       double *side_re, double *side_im)                             \
    {                                                                                                                \
        constexpr std::size_t L = Ops::lanes;                                                                        \
        const unsigned bad = Ops::outside(x);                                                                        \
        if (bad == 0) return;                                                                                        \
        if (!side) {                                                                                                 \
            std::fill(side_re, side_re + W * L, 0.0);                                                                \
            std::fill(side_im, side_im + W * L, 0.0);                                                                \
            side = true;                                                                                             \
        }                                                                                                            \
        alignas(64) typename Ops::T xb[L];                                                                           \
        alignas(64) typename Ops::QCountScalar cb[L], sb[L];                                                         \
        Ops::store(xb, x);                                                                                           \
        Ops::q_store(cb, dc);                                                                                        \
        Ops::q_store(sb, ds);                                                                                        \
        fix_qcis_lanes(xb, cb, sb, bad, side_re + w * L, side_im + w * L);                                           \
        dc = Ops::q_load(cb);                                                                                        \
        ds = Ops::q_load(sb);                                                                                        \
    }                                                                                                                \
                                                                                                                     \
    /* The hot loops call the cold paths through these: the copies are the only values whose */                      \
    /* address is taken, so the loops keep theirs in registers. Passed by reference directly, the */                 \
    /* two results of every vector were stored to the stack on each row, taken or not (GCC 12); */                   \
    /* accumulate_cis float ran 8% slower (0.383 against 0.353 ns per value, AVX-512, 64 x 8192). */                 \
    template <class Ops, std::size_t W>                                                                              \
    __attribute__((target(TARGET), always_inline)) inline void cis_patch_##ISA(                                      \
        typename Ops::V x, typename Ops::V &vc, typename Ops::V &vs, std::size_t w, bool &side, double *side_c,      \
        double *side_s)                                                                                              \
    {                                                                                                                \
        typename Ops::V c = vc, s = vs;                                                                              \
        cis_fix_##ISA<Ops, W>(x, c, s, w, side, side_c, side_s);                                                     \
        vc = c;                                                                                                      \
        vs = s;                                                                                                      \
    }                                                                                                                \
    template <class Ops, std::size_t W>                                                                              \
    __attribute__((target(TARGET), always_inline)) inline void qcis_patch_##ISA(                                     \
        typename Ops::V x, typename Ops::QCount &dc, typename Ops::QCount &ds, std::size_t w, bool &side,            \
        double *side_re, double *side_im)                                                                            \
    {                                                                                                                \
        typename Ops::QCount c = dc, s = ds;                                                                         \
        qcis_fix_##ISA<Ops, W>(x, c, s, w, side, side_re, side_im);                                                  \
        dc = c;                                                                                                      \
        ds = s;                                                                                                      \
    }                                                                                                                \
                                                                                                                     \
    /* Row `row` of the columns, plus the dither, as vector w. */                                                    \
    template <class Ops, std::size_t W, bool HasU, bool Part>                                                        \
    __attribute__((target(TARGET), always_inline)) inline typename Ops::V cis_load_##ISA(                            \
        const typename Ops::T *row, const typename Ops::V (&uv)[W], std::size_t count, std::size_t w)                \
    {                                                                                                                \
        typename Ops::V x = Part ? Ops::load_part(row, count) : Ops::load(row + w * Ops::lanes);                     \
        if constexpr (HasU) x = Ops::add(x, uv[w]);                                                                  \
        return x;                                                                                                    \
    }                                                                                                                \
    /* The first half of a row step (the software-pipelined loop below): returns whether any lane */                 \
    /* is outside the fast range. */                                                                                 \
    template <class Ops, std::size_t W, bool HasU, bool Part>                                                        \
    __attribute__((target(TARGET), always_inline)) inline bool cis_first_row_##ISA(                                  \
        const typename Ops::T *row, const typename Ops::V (&uv)[W], std::size_t count, typename Ops::Half (&h)[W])   \
    {                                                                                                                \
        typename Ops::V x[W];                                                                                        \
        for (std::size_t w = 0; w < W; ++w) x[w] = cis_load_##ISA<Ops, W, HasU, Part>(row, uv, count, w);            \
        for (std::size_t w = 0; w < W; ++w) h[w] = Ops::cis_first(x[w]);                                             \
        return Ops::any_outside(x);                                                                                  \
    }                                                                                                                \
                                                                                                                     \
    template <class Ops, std::size_t W, bool HasU, bool Part>                                                        \
    __attribute__((target(TARGET), always_inline)) inline void cis_columns_##ISA(                                    \
        const typename Ops::T *t, std::size_t rows, std::ptrdiff_t stride, const typename Ops::T *u, std::size_t count,\
        double *acc_cos, double *acc_sin)                                                                            \
    {                                                                                                                \
        using V = typename Ops::V;                                                                                   \
        constexpr std::size_t L = Ops::lanes;                                                                        \
        constexpr std::size_t block = Ops::integer_sums ? cis_block_rows : ~std::size_t{0};                          \
        V uv[W] = {};                                                                                                \
        for (std::size_t w = 0; w < W; ++w)                                                                          \
            if constexpr (HasU) uv[w] = Part ? Ops::load_part(u, count) : Ops::load(u + w * L);                      \
        /* per-column sums in double; with integer sums, the lanes outside the fast range apart */                   \
        typename Ops::Sum sum_c[W], sum_s[W];                                                                        \
        for (std::size_t w = 0; w < W; ++w) sum_c[w] = sum_s[w] = Ops::sum_zero();                                   \
        alignas(64) double side_c[W * L], side_s[W * L];                                                             \
        bool side = false;                                                                                           \
        const auto row_at = [t, stride](std::size_t r) { return t + static_cast<std::ptrdiff_t>(r) * stride; };      \
        /* With 32 registers (check_first false) the rows are software-pipelined: the first half of */               \
        /* row r + 1 (reduction and polynomials, about 40 cycles of dependent latency) is issued before */           \
        /* the second half of row r (quadrants, sums), so the scheduler no longer fills with operations */           \
        /* waiting on one row's chain: float AVX-512 went from 0.355 to 0.323 ns per value (64 x 8192, */            \
        /* Zen 4). A row's range check comes with its first half; its cold path reloads the row. With */             \
        /* 16 registers, each row is checked, then finished one vector at a time. */                                 \
        typename HalfOf<Ops>::type next[W];                                                                          \
        bool next_slow = false;                                                                                      \
        if constexpr (!Ops::check_first)                                                                             \
            next_slow = rows != 0 && cis_first_row_##ISA<Ops, W, HasU, Part>(t, uv, count, next);                    \
        for (std::size_t r0 = 0; r0 < rows;) {                                                                       \
            const std::size_t r1 = rows - r0 > block ? r0 + block : rows;                                            \
            typename Ops::Acc ac[W], as[W];                                                                          \
            for (std::size_t w = 0; w < W; ++w) ac[w] = as[w] = Ops::acc_zero();                                     \
            for (std::size_t r = r0; r < r1; ++r) {                                                                  \
                if constexpr (Ops::check_first) {                                                                    \
                    V x[W];                                                                                          \
                    for (std::size_t w = 0; w < W; ++w)                                                              \
                        x[w] = cis_load_##ISA<Ops, W, HasU, Part>(row_at(r), uv, count, w);                          \
                    const bool slow = PYSKETCH_SINCOS_UNLIKELY(Ops::any_outside(x));                                 \
                    for (std::size_t w = 0; w < W; ++w) {                                                            \
                        V vc, vs;                                                                                    \
                        Ops::cis_values(x[w], vc, vs);                                                               \
                        if (PYSKETCH_SINCOS_UNLIKELY(slow))                                                          \
                            cis_patch_##ISA<Ops, W>(x[w], vc, vs, w, side, side_c, side_s);                          \
                        Ops::acc_add(ac[w], vc);                                                                     \
                        Ops::acc_add(as[w], vs);                                                                     \
                    }                                                                                                \
                } else {                                                                                             \
                    typename Ops::Half cur[W];                                                                       \
                    for (std::size_t w = 0; w < W; ++w) cur[w] = next[w];                                            \
                    const bool slow = next_slow;                                                                     \
                    if (r + 1 < rows)                                                                                \
                        next_slow = cis_first_row_##ISA<Ops, W, HasU, Part>(row_at(r + 1), uv, count, next);         \
                    V vc[W], vs[W];                                                                                  \
                    for (std::size_t w = 0; w < W; ++w) Ops::second(cur[w], vc[w], vs[w]);                          \
                    if (PYSKETCH_SINCOS_UNLIKELY(slow)) {                                                            \
                        for (std::size_t w = 0; w < W; ++w)                                                          \
                            cis_patch_##ISA<Ops, W>(cis_load_##ISA<Ops, W, HasU, Part>(row_at(r), uv, count, w), vc[w],\
                                                    vs[w], w, side, side_c, side_s);                                 \
                    }                                                                                                \
                    for (std::size_t w = 0; w < W; ++w) {                                                            \
                        Ops::acc_add(ac[w], vc[w]);                                                                  \
                        Ops::acc_add(as[w], vs[w]);                                                                  \
                    }                                                                                                \
                }                                                                                                    \
            }                                                                                                        \
            for (std::size_t w = 0; w < W; ++w) {                                                                    \
                Ops::acc_fold(sum_c[w], ac[w]);                                                                      \
                Ops::acc_fold(sum_s[w], as[w]);                                                                      \
            }                                                                                                        \
            r0 = r1;                                                                                                 \
        }                                                                                                            \
        if constexpr (Part) {                                                                                        \
            double bc[L], bs[L];                                                                                     \
            Ops::sum_store(bc, sum_c[0]);                                                                            \
            Ops::sum_store(bs, sum_s[0]);                                                                            \
            for (std::size_t i = 0; i < count; ++i) {                                                                \
                acc_cos[i] += bc[i];                                                                                 \
                acc_sin[i] += bs[i];                                                                                 \
            }                                                                                                        \
        } else {                                                                                                     \
            for (std::size_t w = 0; w < W; ++w) {                                                                    \
                Ops::sum_add_to(acc_cos + w * L, sum_c[w]);                                                          \
                Ops::sum_add_to(acc_sin + w * L, sum_s[w]);                                                          \
            }                                                                                                        \
        }                                                                                                            \
        if (side) {                                                                                                  \
            for (std::size_t i = 0; i < (Part ? count : W * L); ++i) {                                               \
                acc_cos[i] += side_c[i];                                                                             \
                acc_sin[i] += side_s[i];                                                                             \
            }                                                                                                        \
        }                                                                                                            \
    }                                                                                                                \
                                                                                                                     \
    /* `blocks` column blocks of W vectors (or one part vector), one after the other: one function */                \
    /* per shape, so that the constants are set up once per call. */                                                 \
    template <class Ops, std::size_t W, bool HasU, bool Part>                                                        \
    __attribute__((target(TARGET))) void cis_blocks_##ISA(const typename Ops::T *t, std::size_t rows,                \
                                                         std::ptrdiff_t stride, const typename Ops::T *u,            \
                                                         std::size_t count, std::size_t blocks, double *acc_cos,     \
                                                         double *acc_sin)                                            \
    {                                                                                                                \
        constexpr std::size_t step = W * Ops::lanes;                                                                 \
        for (std::size_t b = 0; b < blocks; ++b)                                                                     \
            cis_columns_##ISA<Ops, W, HasU, Part>(t + b * step, rows, stride, u + (HasU ? b * step : 0), count,      \
                                                  acc_cos + b * step, acc_sin + b * step);                           \
    }                                                                                                                \
                                                                                                                     \
    template <class Ops, bool HasU>                                                                                  \
    __attribute__((target(TARGET))) void cis_loop_##ISA(const typename Ops::T *t, std::size_t rows,                  \
                                                       std::ptrdiff_t stride, std::size_t n,                         \
                                                       const typename Ops::T *u, double *acc_cos, double *acc_sin)   \
    {                                                                                                                \
        constexpr std::size_t L = Ops::lanes, W = Ops::width;                                                        \
        const std::size_t wide = n / (W * L), narrow = n % (W * L) / L, j = wide * W * L, k = j + narrow * L;        \
        if (wide) cis_blocks_##ISA<Ops, W, HasU, false>(t, rows, stride, u, L, wide, acc_cos, acc_sin);              \
        if (narrow)                                                                                                  \
            cis_blocks_##ISA<Ops, 1, HasU, false>(t + j, rows, stride, u + (HasU ? j : 0), L, narrow, acc_cos + j,   \
                                                  acc_sin + j);                                                      \
        if (k < n)                                                                                                   \
            cis_blocks_##ISA<Ops, 1, HasU, true>(t + k, rows, stride, u + (HasU ? k : 0), n - k, 1, acc_cos + k,     \
                                                 acc_sin + k);                                                       \
    }                                                                                                                \
                                                                                                                     \
    template <class Ops, std::size_t W, bool HasU, bool Part>                                                        \
    __attribute__((target(TARGET), always_inline)) inline void qcis_columns_##ISA(                                   \
        const typename Ops::T *t, std::size_t rows, std::ptrdiff_t stride, const typename Ops::T *u, std::size_t count,\
        double *acc_re, double *acc_im)                                                                              \
    {                                                                                                                \
        using V = typename Ops::V;                                                                                   \
        using Q = typename Ops::QCount;                                                                              \
        constexpr std::size_t L = Ops::lanes;                                                                        \
        V uv[W];                                                                                                     \
        for (std::size_t w = 0; w < W; ++w)                                                                          \
            if constexpr (HasU) uv[w] = Part ? Ops::load_part(u, count) : Ops::load(u + w * L);                      \
        /* features of the lanes outside the fast range (rare): summed apart, in double */                           \
        alignas(64) double side_re[W * L], side_im[W * L];                                                           \
        bool side = false;                                                                                           \
        for (std::size_t r0 = 0; r0 < rows; r0 += qcis_block_rows) {                                                 \
            const std::size_t r1 = std::min(rows, r0 + qcis_block_rows);                                             \
            Q cc[W], cs[W];                                                                                          \
            for (std::size_t w = 0; w < W; ++w) cc[w] = cs[w] = Ops::q_zero();                                       \
            for (std::size_t r = r0; r < r1; ++r) {                                                                  \
                const typename Ops::T *row = t + static_cast<std::ptrdiff_t>(r) * stride;                            \
                V x[W];                                                                                              \
                for (std::size_t w = 0; w < W; ++w) {                                                                \
                    x[w] = Part ? Ops::load_part(row, count) : Ops::load(row + w * L);                               \
                    if constexpr (HasU) x[w] = Ops::add(x[w], uv[w]);                                                \
                }                                                                                                    \
                if constexpr (Ops::check_first) {                                                                    \
                    const bool slow = PYSKETCH_SINCOS_UNLIKELY(Ops::any_outside(x));                                 \
                    for (std::size_t w = 0; w < W; ++w) {                                                            \
                        Q dc, ds;                                                                                    \
                        Ops::q_values(x[w], dc, ds);                                                                 \
                        if (PYSKETCH_SINCOS_UNLIKELY(slow))                                                          \
                            qcis_patch_##ISA<Ops, W>(x[w], dc, ds, w, side, side_re, side_im);                       \
                        cc[w] = Ops::q_add(cc[w], dc);                                                               \
                        cs[w] = Ops::q_add(cs[w], ds);                                                               \
                    }                                                                                                \
                } else {                                                                                             \
                    Q dc[W], ds[W];                                                                                  \
                    for (std::size_t w = 0; w < W; ++w) Ops::q_values(x[w], dc[w], ds[w]);                           \
                    if (PYSKETCH_SINCOS_UNLIKELY(Ops::any_outside(x))) {                                             \
                        for (std::size_t w = 0; w < W; ++w)                                                          \
                            qcis_patch_##ISA<Ops, W>(x[w], dc[w], ds[w], w, side, side_re, side_im);                 \
                    }                                                                                                \
                    for (std::size_t w = 0; w < W; ++w) {                                                            \
                        cc[w] = Ops::q_add(cc[w], dc[w]);                                                            \
                        cs[w] = Ops::q_add(cs[w], ds[w]);                                                            \
                    }                                                                                                \
                }                                                                                                    \
            }                                                                                                        \
            if constexpr (Part) {                                                                                    \
                alignas(64) typename Ops::QCountScalar bc[L], bs[L];                                                 \
                Ops::q_store(bc, cc[0]);                                                                             \
                Ops::q_store(bs, cs[0]);                                                                             \
                for (std::size_t i = 0; i < count; ++i) {                                                            \
                    acc_re[i] = qcis_flush(acc_re[i], r1 - r0, static_cast<std::uint64_t>(bc[i]));                   \
                    acc_im[i] = qcis_flush(acc_im[i], r1 - r0, static_cast<std::uint64_t>(bs[i]));                   \
                }                                                                                                    \
            } else {                                                                                                 \
                for (std::size_t w = 0; w < W; ++w) {                                                                \
                    Ops::q_flush(acc_re + w * L, r1 - r0, cc[w]);                                                    \
                    Ops::q_flush(acc_im + w * L, r1 - r0, cs[w]);                                                    \
                }                                                                                                    \
            }                                                                                                        \
        }                                                                                                            \
        if (side) {                                                                                                  \
            for (std::size_t i = 0; i < (Part ? count : W * L); ++i) {                                               \
                acc_re[i] += side_re[i];                                                                             \
                acc_im[i] += side_im[i];                                                                             \
            }                                                                                                        \
        }                                                                                                            \
    }                                                                                                                \
                                                                                                                     \
    template <class Ops, std::size_t W, bool HasU, bool Part>                                                        \
    __attribute__((target(TARGET))) void qcis_blocks_##ISA(const typename Ops::T *t, std::size_t rows,               \
                                                          std::ptrdiff_t stride, const typename Ops::T *u,           \
                                                          std::size_t count, std::size_t blocks, double *acc_re,     \
                                                          double *acc_im)                                            \
    {                                                                                                                \
        constexpr std::size_t step = W * Ops::lanes;                                                                 \
        for (std::size_t b = 0; b < blocks; ++b)                                                                     \
            qcis_columns_##ISA<Ops, W, HasU, Part>(t + b * step, rows, stride, u + (HasU ? b * step : 0), count,     \
                                                   acc_re + b * step, acc_im + b * step);                            \
    }                                                                                                                \
                                                                                                                     \
    template <class Ops, bool HasU>                                                                                  \
    __attribute__((target(TARGET))) void qcis_loop_##ISA(const typename Ops::T *t, std::size_t rows,                 \
                                                        std::ptrdiff_t stride, std::size_t n,                        \
                                                        const typename Ops::T *u, double *acc_re, double *acc_im)    \
    {                                                                                                                \
        constexpr std::size_t L = Ops::lanes, W = Ops::width;                                                        \
        const std::size_t wide = n / (W * L), narrow = n % (W * L) / L, j = wide * W * L, k = j + narrow * L;        \
        if (wide) qcis_blocks_##ISA<Ops, W, HasU, false>(t, rows, stride, u, L, wide, acc_re, acc_im);               \
        if (narrow)                                                                                                  \
            qcis_blocks_##ISA<Ops, 1, HasU, false>(t + j, rows, stride, u + (HasU ? j : 0), L, narrow, acc_re + j,   \
                                                   acc_im + j);                                                      \
        if (k < n)                                                                                                   \
            qcis_blocks_##ISA<Ops, 1, HasU, true>(t + k, rows, stride, u + (HasU ? k : 0), n - k, 1, acc_re + k,     \
                                                  acc_im + k);                                                       \
    }

PYSKETCH_SINCOS_DEFINE_LOOPS(avx512, PYSKETCH_SIMD_TARGET_avx512)
PYSKETCH_SINCOS_DEFINE_LOOPS(avx2, PYSKETCH_SIMD_TARGET_avx2)
#undef PYSKETCH_SINCOS_DEFINE_LOOPS

}  // namespace detail

#endif  // PYSKETCH_SIMD_X86

// ---------------------------------------------------------------------------------------------
// Array functions
// ---------------------------------------------------------------------------------------------

// c[j] = cos t[j], s[j] = sin t[j] for j < n.
template <class T>
void sincos(const T *t, std::size_t n, T *c, T *s)
{
    detail::check_type<T>();
    if (n == 0) return;
#if defined(PYSKETCH_SIMD_X86)
    switch (simd::level()) {
    case simd::Level::avx512: detail::sincos_loop_avx512<detail::Avx512<T>>(t, n, c, s); return;
    case simd::Level::avx2: detail::sincos_loop_avx2<detail::Avx2<T>>(t, n, c, s); return;
    default: break;
    }
#endif
    detail::sincos_portable(t, n, c, s);
}

// acc_cos[j] += sum_{r < rows} cos(t[r * row_stride + j] + u[j]), acc_sin[j] likewise with sin,
// for j < n; u == nullptr means u = 0 (then no addition is made).
template <class T>
void accumulate_cis(const T *t, std::size_t rows, std::ptrdiff_t row_stride, std::size_t n, const T *u,
                    double *acc_cos, double *acc_sin)
{
    detail::check_type<T>();
    if (n == 0 || rows == 0) return;
#if defined(PYSKETCH_SIMD_X86)
    switch (simd::level()) {
    case simd::Level::avx512:
        if (u) detail::cis_loop_avx512<detail::Avx512<T>, true>(t, rows, row_stride, n, u, acc_cos, acc_sin);
        else detail::cis_loop_avx512<detail::Avx512<T>, false>(t, rows, row_stride, n, u, acc_cos, acc_sin);
        return;
    case simd::Level::avx2:
        if (u) detail::cis_loop_avx2<detail::Avx2<T>, true>(t, rows, row_stride, n, u, acc_cos, acc_sin);
        else detail::cis_loop_avx2<detail::Avx2<T>, false>(t, rows, row_stride, n, u, acc_cos, acc_sin);
        return;
    default: break;
    }
#endif
    detail::cis_portable(t, rows, row_stride, n, u, acc_cos, acc_sin);
}

// acc_re[j] += 2^-1/2 sum_r sign cos(t[r * row_stride + j] + u[j]), acc_im[j] likewise with sin,
// sign(0) = +1 (the quantized complex exponential; see the top of this file).
template <class T>
void accumulate_qcis(const T *t, std::size_t rows, std::ptrdiff_t row_stride, std::size_t n, const T *u,
                     double *acc_re, double *acc_im)
{
    detail::check_type<T>();
    if (n == 0 || rows == 0) return;
#if defined(PYSKETCH_SIMD_X86)
    switch (simd::level()) {
    case simd::Level::avx512:
        if (u) detail::qcis_loop_avx512<detail::Avx512<T>, true>(t, rows, row_stride, n, u, acc_re, acc_im);
        else detail::qcis_loop_avx512<detail::Avx512<T>, false>(t, rows, row_stride, n, u, acc_re, acc_im);
        return;
    case simd::Level::avx2:
        if (u) detail::qcis_loop_avx2<detail::Avx2<T>, true>(t, rows, row_stride, n, u, acc_re, acc_im);
        else detail::qcis_loop_avx2<detail::Avx2<T>, false>(t, rows, row_stride, n, u, acc_re, acc_im);
        return;
    default: break;
    }
#endif
    detail::qcis_portable(t, rows, row_stride, n, u, acc_re, acc_im);
}

}  // namespace sincos
}  // namespace pysketch

#endif  // PYSKETCH_SINCOS_HPP
