// features.hpp - the feature maps' nonlinearities and their fused accumulation into float64
// sums (header-only, C++17). sincos.hpp computes cos and sin; this file sums features.
//
// The nonlinearities, as policies (the sketches take one as a template parameter, or
// dispatch on the enum Nonlinearity with visit()):
//   Cis     acc0 += cos(t + u), acc1 += sin(t + u): the complex exponential e^{i(t + u)}
//   QCis    acc0 += 2^-1/2 sign cos(t + u), acc1 += 2^-1/2 sign sin(t + u): quantized
//   Square  acc0 += t^2 (no dither; acc1 unused): the quadratic features
// Each has `two` (whether it fills acc1), accumulate<T>(t, rows, row_stride, n, u, acc0, acc1):
// acc0/acc1[j] += sum over r < rows of the features of t[r * row_stride + j] (+ u[j]), and
// scatter<T>(t, idx, n, sums): the features of t[k] (the values accumulate adds for one row
// into zeroed accumulators) added at idx[k], k < n: to sums[idx[k]], or with `two` to the pair
// sums[2 idx[k]], sums[2 idx[k] + 1] (both parts of a feature in one cache line).
//
//   accumulate_cis(t, rows, row_stride, n, u, acc_cos, acc_sin)
//        acc_cos[j] += sum_r cos(t[r * row_stride + j] + u[j]),   acc_sin likewise with sin
//   accumulate_qcis(t, rows, row_stride, n, u, acc_re, acc_im)
//        acc_re[j] += 2^-1/2 sum_r sign cos(t[r * row_stride + j] + u[j]),  acc_im likewise with sin
//   accumulate_square(t, rows, row_stride, n, acc)
//        acc[j] += sum_r t[r * row_stride + j]^2, in double, rows in order per column
//
// u may be nullptr (no dither); t + u is rounded to T, as numpy would. The accumulators are
// double and are read once and written once per call: the sums over rows stay in registers
// (for each block of columns, all the rows are walked before the next block). Every n works
// (n = 0 and rows = 0 do nothing), pointers need no alignment beyond their type's, row_stride
// may be any value (0 repeats a row, negative walks backwards); the accumulators must not
// overlap the inputs. The calls run on the calling thread: callers split large jobs into
// blocks. Dispatched at run time on simd::level() (simd.hpp) like the kernels they call.
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
#ifndef PYSKETCH_FEATURES_HPP
#define PYSKETCH_FEATURES_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "pysketch/simd.hpp"
#include "pysketch/sincos.hpp"

namespace pysketch {
namespace features {

enum class Nonlinearity : int { cis = 0, qcis = 1, square = 2 };

// 2^-1/2, the magnitude of the quantized features.
inline constexpr double qcis_scale = 0x1.6a09e667f3bcdp-1;

namespace detail {

// The kernels of sincos.hpp, by their short names here.
using namespace sincos;
using namespace sincos::detail;

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
inline constexpr std::size_t cis_block_rows = 16;

// ---- Portable implementations (the "sse" and "scalar" levels, and non-x86 CPUs) ----

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

#define PYSKETCH_FEATURES_AVX512 PYSKETCH_SIMD_AVX512
#define PYSKETCH_FEATURES_AVX2 PYSKETCH_SIMD_AVX2

namespace detail {

// ---------------------------------------------------------------------------------------------
// The operations the accumulation loops need, per instruction set and type, on top of those of
// sincos.hpp's loops (values, first/second, outside, any_outside, fix; see there):
//   cis_values(t, c, s)   results in the form acc_add takes (float: times cis_fixed_scale)
//   cis_first(t)          the first half of cis_values (AVX-512 only, as first)
//   cis_fix               the cold path for the lanes outside the fast range
//   Acc, acc_*            per-lane sums of accumulate_cis over a block of rows, folded into
//                         the per-lane double sums Sum at the end of the block
//   QCount, q_*           per-lane integer counts of accumulate_qcis
//   width                 vectors per column block
// ---------------------------------------------------------------------------------------------

template <class T>
struct Avx512;
template <class T>
struct Avx2;

template <>
struct Avx512<float> : sincos::detail::Avx512<float> {
    using QCount = __m512i;
    using QCountScalar = std::int32_t;
    static constexpr std::size_t width = 2;  // vectors per column block of the accumulations
    static constexpr bool integer_sums = true;
    using Acc = __m512i;

    PYSKETCH_FEATURES_AVX512 static void cis_values(V t, V &c, V &s) { sincos_f32_avx512<true>(t, c, s); }
    PYSKETCH_FEATURES_AVX512 static Half cis_first(V t) { return reduced_f32_avx512<true>(t); }
    // The lanes of `bad` add std::cos and std::sin to the side sums and count 0.
    PYSKETCH_FEATURES_AVX512 static void cis_fix(V x, V &c, V &s, unsigned bad, double *side_c, double *side_s)
    {
        alignas(64) T xb[16], cb[16], sb[16];
        _mm512_store_ps(xb, x);
        _mm512_store_ps(cb, c);
        _mm512_store_ps(sb, s);
        fix_lanes_apart(xb, cb, sb, bad, side_c, side_s);
        c = _mm512_load_ps(cb);
        s = _mm512_load_ps(sb);
    }

    PYSKETCH_FEATURES_AVX512 static Acc acc_zero() { return _mm512_setzero_si512(); }
    // a += round(v), v = result * 2^26 (see cis_fixed_scale)
    PYSKETCH_FEATURES_AVX512 static void acc_add(Acc &a, V v)
    {
        a = _mm512_add_epi32(a, _mm512_maskz_cvtps_epi32(all16, v));
    }
    struct Sum {
        __m512d lo, hi;
    };
    PYSKETCH_FEATURES_AVX512 static Sum sum_zero() { return {_mm512_setzero_pd(), _mm512_setzero_pd()}; }
    // sum += a * 2^-26 (exact)
    PYSKETCH_FEATURES_AVX512 static void acc_fold(Sum &sum, Acc a)
    {
        const __m512d unit = _mm512_set1_pd(1.0 / cis_fixed_scale);
        const __m512d lo = _mm512_maskz_cvtepi32_pd(all8, _mm512_maskz_extracti64x4_epi64(0xF, a, 0));
        const __m512d hi = _mm512_maskz_cvtepi32_pd(all8, _mm512_maskz_extracti64x4_epi64(0xF, a, 1));
        sum.lo = _mm512_add_pd(sum.lo, _mm512_mul_pd(lo, unit));
        sum.hi = _mm512_add_pd(sum.hi, _mm512_mul_pd(hi, unit));
    }
    // dst[0, 16) += sum
    PYSKETCH_FEATURES_AVX512 static void sum_add_to(double *dst, const Sum &sum)
    {
        _mm512_storeu_pd(dst, _mm512_add_pd(_mm512_loadu_pd(dst), sum.lo));
        _mm512_storeu_pd(dst + 8, _mm512_add_pd(_mm512_loadu_pd(dst + 8), sum.hi));
    }
    PYSKETCH_FEATURES_AVX512 static void sum_store(double *out, const Sum &sum)
    {
        _mm512_storeu_pd(out, sum.lo);
        _mm512_storeu_pd(out + 8, sum.hi);
    }

    PYSKETCH_FEATURES_AVX512 static QCount q_zero() { return _mm512_setzero_si512(); }
    // Twice "cos x < 0" and twice "sin x < 0", per lane (fast range assumed).
    PYSKETCH_FEATURES_AVX512 static void q_values(V x, QCount &dc, QCount &ds)
    {
        const __m512i m = quadrant_avx512(x);
        const __m512i two = _mm512_set1_epi32(2);
        dc = _mm512_and_si512(_mm512_add_epi32(m, _mm512_set1_epi32(1)), two);
        ds = _mm512_and_si512(m, two);
    }
    PYSKETCH_FEATURES_AVX512 static QCount q_add(QCount a, QCount b) { return _mm512_add_epi32(a, b); }
    PYSKETCH_FEATURES_AVX512 static void q_store(QCountScalar *out, QCount v) { _mm512_storeu_si512(out, v); }
    PYSKETCH_FEATURES_AVX512 static QCount q_load(const QCountScalar *p) { return _mm512_loadu_si512(p); }
    // dst = fma(rows - count, 2^-1/2, dst) for the 16 lanes
    PYSKETCH_FEATURES_AVX512 static void q_flush(double *dst, std::size_t rows, QCount count)
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
struct Avx512<double> : sincos::detail::Avx512<double> {
    using QCount = __m512i;
    using QCountScalar = std::int64_t;
    static constexpr std::size_t width = 2;
    static constexpr bool integer_sums = false;
    using Acc = __m512d;

    PYSKETCH_FEATURES_AVX512 static void cis_values(V t, V &c, V &s) { sincos_f64_avx512(t, c, s); }
    PYSKETCH_FEATURES_AVX512 static Half cis_first(V t) { return reduced_f64_avx512(t); }
    PYSKETCH_FEATURES_AVX512 static void cis_fix(V x, V &c, V &s, unsigned bad, double *, double *)
    {
        fix_avx512(x, c, s, bad);
    }

    PYSKETCH_FEATURES_AVX512 static Acc acc_zero() { return _mm512_setzero_pd(); }
    PYSKETCH_FEATURES_AVX512 static void acc_add(Acc &a, V v) { a = _mm512_add_pd(a, v); }
    using Sum = __m512d;
    PYSKETCH_FEATURES_AVX512 static Sum sum_zero() { return _mm512_setzero_pd(); }
    PYSKETCH_FEATURES_AVX512 static void acc_fold(Sum &sum, Acc a) { sum = _mm512_add_pd(sum, a); }
    PYSKETCH_FEATURES_AVX512 static void sum_add_to(double *dst, const Sum &sum)
    {
        _mm512_storeu_pd(dst, _mm512_add_pd(_mm512_loadu_pd(dst), sum));
    }
    PYSKETCH_FEATURES_AVX512 static void sum_store(double *out, const Sum &sum) { _mm512_storeu_pd(out, sum); }

    PYSKETCH_FEATURES_AVX512 static QCount q_zero() { return _mm512_setzero_si512(); }
    PYSKETCH_FEATURES_AVX512 static void q_values(V x, QCount &dc, QCount &ds)
    {
        const __m512i m = quadrant_avx512(x);
        const __m512i two = _mm512_set1_epi64(2);
        dc = _mm512_and_si512(_mm512_add_epi64(m, _mm512_set1_epi64(1)), two);
        ds = _mm512_and_si512(m, two);
    }
    PYSKETCH_FEATURES_AVX512 static QCount q_add(QCount a, QCount b) { return _mm512_add_epi64(a, b); }
    PYSKETCH_FEATURES_AVX512 static void q_store(QCountScalar *out, QCount v) { _mm512_storeu_si512(out, v); }
    PYSKETCH_FEATURES_AVX512 static QCount q_load(const QCountScalar *p) { return _mm512_loadu_si512(p); }
    PYSKETCH_FEATURES_AVX512 static void q_flush(double *dst, std::size_t rows, QCount count)
    {
        // counts stay below 2^31 (blocks of qcis_block_rows rows): exact through int32
        const __m512d n = _mm512_set1_pd(static_cast<double>(rows));
        const __m512d v = _mm512_sub_pd(n, _mm512_maskz_cvtepi32_pd(all8, _mm512_maskz_cvtepi64_epi32(all8, count)));
        _mm512_storeu_pd(dst, _mm512_fmadd_pd(v, _mm512_set1_pd(qcis_scale), _mm512_loadu_pd(dst)));
    }
};

template <>
struct Avx2<float> : sincos::detail::Avx2<float> {
    using QCount = __m256i;
    using QCountScalar = std::int32_t;
    static constexpr std::size_t width = 4;  // 4 x 32 bytes: 128-byte runs of each row per pass
    static constexpr bool integer_sums = true;
    using Acc = __m256i;

    PYSKETCH_FEATURES_AVX2 static void cis_values(V t, V &c, V &s) { sincos_f32_avx2<true>(t, c, s); }
    PYSKETCH_FEATURES_AVX2 static void cis_fix(V x, V &c, V &s, unsigned bad, double *side_c, double *side_s)
    {
        alignas(32) T xb[8], cb[8], sb[8];
        _mm256_store_ps(xb, x);
        _mm256_store_ps(cb, c);
        _mm256_store_ps(sb, s);
        fix_lanes_apart(xb, cb, sb, bad, side_c, side_s);
        c = _mm256_load_ps(cb);
        s = _mm256_load_ps(sb);
    }

    PYSKETCH_FEATURES_AVX2 static Acc acc_zero() { return _mm256_setzero_si256(); }
    PYSKETCH_FEATURES_AVX2 static void acc_add(Acc &a, V v) { a = _mm256_add_epi32(a, _mm256_cvtps_epi32(v)); }
    struct Sum {
        __m256d lo, hi;
    };
    PYSKETCH_FEATURES_AVX2 static Sum sum_zero() { return {_mm256_setzero_pd(), _mm256_setzero_pd()}; }
    PYSKETCH_FEATURES_AVX2 static void acc_fold(Sum &sum, Acc a)
    {
        const __m256d unit = _mm256_set1_pd(1.0 / cis_fixed_scale);
        const __m256d lo = _mm256_cvtepi32_pd(_mm256_castsi256_si128(a));
        const __m256d hi = _mm256_cvtepi32_pd(_mm256_extracti128_si256(a, 1));
        sum.lo = _mm256_add_pd(sum.lo, _mm256_mul_pd(lo, unit));
        sum.hi = _mm256_add_pd(sum.hi, _mm256_mul_pd(hi, unit));
    }
    PYSKETCH_FEATURES_AVX2 static void sum_add_to(double *dst, const Sum &sum)
    {
        _mm256_storeu_pd(dst, _mm256_add_pd(_mm256_loadu_pd(dst), sum.lo));
        _mm256_storeu_pd(dst + 4, _mm256_add_pd(_mm256_loadu_pd(dst + 4), sum.hi));
    }
    PYSKETCH_FEATURES_AVX2 static void sum_store(double *out, const Sum &sum)
    {
        _mm256_storeu_pd(out, sum.lo);
        _mm256_storeu_pd(out + 4, sum.hi);
    }

    PYSKETCH_FEATURES_AVX2 static QCount q_zero() { return _mm256_setzero_si256(); }
    PYSKETCH_FEATURES_AVX2 static void q_values(V x, QCount &dc, QCount &ds)
    {
        const __m256i m = quadrant_avx2(x);
        const __m256i two = _mm256_set1_epi32(2);
        dc = _mm256_and_si256(_mm256_add_epi32(m, _mm256_set1_epi32(1)), two);
        ds = _mm256_and_si256(m, two);
    }
    PYSKETCH_FEATURES_AVX2 static QCount q_add(QCount a, QCount b) { return _mm256_add_epi32(a, b); }
    PYSKETCH_FEATURES_AVX2 static void q_store(QCountScalar *out, QCount v)
    {
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(out), v);
    }
    PYSKETCH_FEATURES_AVX2 static QCount q_load(const QCountScalar *p)
    {
        return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p));
    }
    PYSKETCH_FEATURES_AVX2 static void q_flush(double *dst, std::size_t rows, QCount count)
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
struct Avx2<double> : sincos::detail::Avx2<double> {
    using QCount = __m256i;
    using QCountScalar = std::int64_t;
    static constexpr std::size_t width = 4;
    static constexpr bool integer_sums = false;
    using Acc = __m256d;

    PYSKETCH_FEATURES_AVX2 static void cis_values(V t, V &c, V &s) { sincos_f64_avx2(t, c, s); }
    PYSKETCH_FEATURES_AVX2 static void cis_fix(V x, V &c, V &s, unsigned bad, double *, double *)
    {
        fix_avx2(x, c, s, bad);
    }

    PYSKETCH_FEATURES_AVX2 static Acc acc_zero() { return _mm256_setzero_pd(); }
    PYSKETCH_FEATURES_AVX2 static void acc_add(Acc &a, V v) { a = _mm256_add_pd(a, v); }
    using Sum = __m256d;
    PYSKETCH_FEATURES_AVX2 static Sum sum_zero() { return _mm256_setzero_pd(); }
    PYSKETCH_FEATURES_AVX2 static void acc_fold(Sum &sum, Acc a) { sum = _mm256_add_pd(sum, a); }
    PYSKETCH_FEATURES_AVX2 static void sum_add_to(double *dst, const Sum &sum)
    {
        _mm256_storeu_pd(dst, _mm256_add_pd(_mm256_loadu_pd(dst), sum));
    }
    PYSKETCH_FEATURES_AVX2 static void sum_store(double *out, const Sum &sum) { _mm256_storeu_pd(out, sum); }

    PYSKETCH_FEATURES_AVX2 static QCount q_zero() { return _mm256_setzero_si256(); }
    PYSKETCH_FEATURES_AVX2 static void q_values(V x, QCount &dc, QCount &ds)
    {
        const __m256i m = quadrant_avx2(x);
        const __m256i two = _mm256_set1_epi64x(2);
        dc = _mm256_and_si256(_mm256_add_epi64(m, _mm256_set1_epi64x(1)), two);
        ds = _mm256_and_si256(m, two);
    }
    PYSKETCH_FEATURES_AVX2 static QCount q_add(QCount a, QCount b) { return _mm256_add_epi64(a, b); }
    PYSKETCH_FEATURES_AVX2 static void q_store(QCountScalar *out, QCount v)
    {
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(out), v);
    }
    PYSKETCH_FEATURES_AVX2 static QCount q_load(const QCountScalar *p)
    {
        return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p));
    }
    PYSKETCH_FEATURES_AVX2 static void q_flush(double *dst, std::size_t rows, QCount count)
    {
        alignas(32) std::int64_t c[4];
        _mm256_store_si256(reinterpret_cast<__m256i *>(c), count);
        const __m256d v = _mm256_sub_pd(_mm256_set1_pd(static_cast<double>(rows)),
                                        _mm256_setr_pd(static_cast<double>(c[0]), static_cast<double>(c[1]),
                                                       static_cast<double>(c[2]), static_cast<double>(c[3])));
        _mm256_storeu_pd(dst, _mm256_fmadd_pd(v, _mm256_set1_pd(qcis_scale), _mm256_loadu_pd(dst)));
    }
};

// The accumulation loops, written once for both sets (features_loops.inc) and compiled for each.
PYSKETCH_SIMD_BEGIN_AVX512
namespace avx512 {
#include "pysketch/features_loops.inc"
}  // namespace avx512
PYSKETCH_SIMD_END

PYSKETCH_SIMD_BEGIN_AVX2
namespace avx2 {
#include "pysketch/features_loops.inc"
}  // namespace avx2
PYSKETCH_SIMD_END

}  // namespace detail

#endif  // PYSKETCH_SIMD_X86

// ---------------------------------------------------------------------------------------------
// Array functions
// ---------------------------------------------------------------------------------------------

// acc_cos[j] += sum_{r < rows} cos(t[r * row_stride + j] + u[j]), acc_sin[j] likewise with sin,
// for j < n; u == nullptr means u = 0 (then no addition is made).
template <class T>
void accumulate_cis(const T *t, std::size_t rows, std::ptrdiff_t row_stride, std::size_t n, const T *u,
                    double *acc_cos, double *acc_sin)
{
    sincos::detail::check_type<T>();
    if (n == 0 || rows == 0) return;
#if defined(PYSKETCH_SIMD_X86)
    switch (simd::level()) {
    case simd::Level::avx512:
        if (u) detail::avx512::cis_loop<detail::Avx512<T>, true>(t, rows, row_stride, n, u, acc_cos, acc_sin);
        else detail::avx512::cis_loop<detail::Avx512<T>, false>(t, rows, row_stride, n, u, acc_cos, acc_sin);
        return;
    case simd::Level::avx2:
        if (u) detail::avx2::cis_loop<detail::Avx2<T>, true>(t, rows, row_stride, n, u, acc_cos, acc_sin);
        else detail::avx2::cis_loop<detail::Avx2<T>, false>(t, rows, row_stride, n, u, acc_cos, acc_sin);
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
    sincos::detail::check_type<T>();
    if (n == 0 || rows == 0) return;
#if defined(PYSKETCH_SIMD_X86)
    switch (simd::level()) {
    case simd::Level::avx512:
        if (u) detail::avx512::qcis_loop<detail::Avx512<T>, true>(t, rows, row_stride, n, u, acc_re, acc_im);
        else detail::avx512::qcis_loop<detail::Avx512<T>, false>(t, rows, row_stride, n, u, acc_re, acc_im);
        return;
    case simd::Level::avx2:
        if (u) detail::avx2::qcis_loop<detail::Avx2<T>, true>(t, rows, row_stride, n, u, acc_re, acc_im);
        else detail::avx2::qcis_loop<detail::Avx2<T>, false>(t, rows, row_stride, n, u, acc_re, acc_im);
        return;
    default: break;
    }
#endif
    detail::qcis_portable(t, rows, row_stride, n, u, acc_re, acc_im);
}

// acc[j] += sum_r t[r * row_stride + j]^2 for j < n, in double, rows in order per column.
template <class T>
void accumulate_square(const T *t, std::size_t rows, std::ptrdiff_t stride, std::size_t n, double *acc)
{
    constexpr std::size_t strip = 256;  // columns per strip: the partial sums stay in L1
    double part[strip];
    for (std::size_t j0 = 0; j0 < n; j0 += strip) {
        const std::size_t w = std::min(strip, n - j0);
        std::fill_n(part, w, 0.0);
        for (std::size_t r = 0; r < rows; ++r) {
            const T *row = t + static_cast<std::ptrdiff_t>(r) * stride + j0;
            for (std::size_t j = 0; j < w; ++j) {
                const double v = static_cast<double>(row[j]);
                part[j] += v * v;
            }
        }
        for (std::size_t j = 0; j < w; ++j) acc[j0 + j] += part[j];
    }
}

namespace detail {

// scatter for the nonlinearities with two parts: the features of chunks of t (accumulate(x, w,
// c, s): one row of w phases into the zeroed c and s, in L1) added to the pairs of sums.
template <class T, class Accumulate>
void scatter_pairs(const T *t, const std::uint32_t *idx, std::size_t n, double *sums, Accumulate &&accumulate)
{
    constexpr std::size_t chunk = 512;
    double c[chunk], s[chunk];
    for (std::size_t k0 = 0; k0 < n; k0 += chunk) {
        const std::size_t w = std::min(chunk, n - k0);
        std::fill_n(c, w, 0.0);
        std::fill_n(s, w, 0.0);
        accumulate(t + k0, w, c, s);
        for (std::size_t k = 0; k < w; ++k) {
            double *p = sums + 2 * static_cast<std::size_t>(idx[k0 + k]);
            p[0] += c[k];
            p[1] += s[k];
        }
    }
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// The nonlinearities as policies
// ---------------------------------------------------------------------------------------------

struct Cis {
    static constexpr Nonlinearity kind = Nonlinearity::cis;
    static constexpr bool two = true;  // fills acc1 too
    template <class T>
    static void accumulate(const T *t, std::size_t rows, std::ptrdiff_t stride, std::size_t n, const T *u,
                           double *acc0, double *acc1)
    {
        accumulate_cis<T>(t, rows, stride, n, u, acc0, acc1);
    }
    template <class T>
    static void scatter(const T *t, const std::uint32_t *idx, std::size_t n, double *sums)
    {
        detail::scatter_pairs(t, idx, n, sums, [](const T *x, std::size_t w, double *c, double *s) {
            accumulate_cis<T>(x, 1, static_cast<std::ptrdiff_t>(w), w, nullptr, c, s);
        });
    }
};

struct QCis {
    static constexpr Nonlinearity kind = Nonlinearity::qcis;
    static constexpr bool two = true;
    template <class T>
    static void accumulate(const T *t, std::size_t rows, std::ptrdiff_t stride, std::size_t n, const T *u,
                           double *acc0, double *acc1)
    {
        accumulate_qcis<T>(t, rows, stride, n, u, acc0, acc1);
    }
    template <class T>
    static void scatter(const T *t, const std::uint32_t *idx, std::size_t n, double *sums)
    {
        detail::scatter_pairs(t, idx, n, sums, [](const T *x, std::size_t w, double *c, double *s) {
            accumulate_qcis<T>(x, 1, static_cast<std::ptrdiff_t>(w), w, nullptr, c, s);
        });
    }
};

struct Square {
    static constexpr Nonlinearity kind = Nonlinearity::square;
    static constexpr bool two = false;
    template <class T>
    static void accumulate(const T *t, std::size_t rows, std::ptrdiff_t stride, std::size_t n, const T *,
                           double *acc0, double *)
    {
        accumulate_square<T>(t, rows, stride, n, acc0);
    }
    template <class T>
    static void scatter(const T *t, const std::uint32_t *idx, std::size_t n, double *sums)
    {
        for (std::size_t k = 0; k < n; ++k) {
            const double v = static_cast<double>(t[k]);
            sums[idx[k]] += v * v;  // v^2 = accumulate's 0 + (0 + v^2)
        }
    }
};

// fn(Policy{}) for the policy of f.
template <class Fn>
decltype(auto) visit(Nonlinearity f, Fn &&fn)
{
    switch (f) {
    case Nonlinearity::cis: return fn(Cis{});
    case Nonlinearity::qcis: return fn(QCis{});
    case Nonlinearity::square: return fn(Square{});
    }
    throw std::invalid_argument("unknown nonlinearity");
}

// Does f fill a second accumulator?
inline bool has_two(Nonlinearity f)
{
    return visit(f, [](auto p) { return decltype(p)::two; });
}

// The accumulation of f (see the policies).
template <class T>
void accumulate(Nonlinearity f, const T *t, std::size_t rows, std::ptrdiff_t stride, std::size_t n, const T *u,
                double *acc0, double *acc1)
{
    visit(f, [&](auto p) { decltype(p)::template accumulate<T>(t, rows, stride, n, u, acc0, acc1); });
}

// The scattered accumulation of f (see the policies).
template <class T>
void scatter(Nonlinearity f, const T *t, const std::uint32_t *idx, std::size_t n, double *sums)
{
    visit(f, [&](auto p) { decltype(p)::template scatter<T>(t, idx, n, sums); });
}

}  // namespace features
}  // namespace pysketch

#endif  // PYSKETCH_FEATURES_HPP
