// sincos.hpp - SIMD cosine and sine (header-only, C++17). The accumulations of the features
// made from them (cis, quantized cis) are in features.hpp.
//
// Array functions (T = float or double), dispatched at run time on the instruction set the
// C kernel of vendor/ffht uses (simd.hpp's simd::level(), capped by PYSKETCH_SIMD): AVX-512F,
// AVX2 + FMA, or portable C++ for the "sse" and "scalar" levels and other CPUs.
//
//   sincos(t, n, c, s)                 c[j] = cos t[j], s[j] = sin t[j]
//
// Every n works (n = 0 does nothing), pointers need no alignment beyond their type's. c and s
// may be t itself (in place) but must not otherwise overlap t or each other. The calls run on
// the calling thread: callers split large jobs into blocks.
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


// The float accumulations (features.hpp) take cos and sin times this power of two, which the
// vector kernels fold into their coefficients (sincos_f32_*<true>).
inline constexpr float cis_fixed_scale = 0x1p26f;

// ---- Portable implementations (the "sse" and "scalar" levels, and non-x86 CPUs) ----

template <class T>
void sincos_portable(const T *t, std::size_t n, T *c, T *s)
{
    for (std::size_t j = 0; j < n; ++j) sincos_scalar(t[j], c[j], s[j]);
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
// of one row next to the second half of the previous one (see cis_columns in features.hpp).
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
// The operations the array loops need, per instruction set and type, on top of simd.hpp's
// (load, store, add, ...; features.hpp extends these for its accumulations):
//   values(t, c, s)       plain results (fast range assumed)
//   Half, first(t),       values in two halves: first, then second (AVX-512 only: its loops
//   second(h, c, s)       run the first half of one step beside the second half of the
//                         previous one)
//   outside(t)            mask of the lanes outside the fast range; any_outside(t[W]) for several
//   fix                   the cold path for those lanes
//   check_first           16 registers: check a step's range, then compute (no pipelining)
// ---------------------------------------------------------------------------------------------

template <class T>
struct Avx512;

template <>
struct Avx512<float> : simd::Avx512<float> {
    static constexpr bool check_first = false;  // 32 registers: rows pipelined, one check per row
    PYSKETCH_SINCOS_AVX512 static void values(V t, V &c, V &s) { sincos_f32_avx512<false>(t, c, s); }
    using Half = Reduced512;
    PYSKETCH_SINCOS_AVX512 static Half first(V t) { return reduced_f32_avx512<false>(t); }
    PYSKETCH_SINCOS_AVX512 static void second(const Half &h, V &c, V &s) { place_avx512(h, c, s); }
    PYSKETCH_SINCOS_AVX512 static unsigned outside(V t) { return outside_avx512(t); }
    template <std::size_t W>
    PYSKETCH_SINCOS_AVX512 static bool any_outside(const V (&t)[W])
    {
        return any_outside_avx512(t);
    }
    PYSKETCH_SINCOS_AVX512 static void fix(V t, V &c, V &s, unsigned bad) { fix_avx512(t, c, s, bad); }
};

template <>
struct Avx512<double> : simd::Avx512<double> {
    static constexpr bool check_first = false;
    PYSKETCH_SINCOS_AVX512 static void values(V t, V &c, V &s) { sincos_f64_avx512(t, c, s); }
    using Half = Reduced512d;
    PYSKETCH_SINCOS_AVX512 static Half first(V t) { return reduced_f64_avx512(t); }
    PYSKETCH_SINCOS_AVX512 static void second(const Half &h, V &c, V &s) { place_avx512(h, c, s); }
    PYSKETCH_SINCOS_AVX512 static unsigned outside(V t) { return outside_avx512(t); }
    template <std::size_t W>
    PYSKETCH_SINCOS_AVX512 static bool any_outside(const V (&t)[W])
    {
        return any_outside_avx512(t);
    }
    PYSKETCH_SINCOS_AVX512 static void fix(V t, V &c, V &s, unsigned bad) { fix_avx512(t, c, s, bad); }
};

template <class T>
struct Avx2;

template <>
struct Avx2<float> : simd::Avx2<float> {
    static constexpr bool check_first = true;  // 16 registers: check, then finish one vector at a time
    PYSKETCH_SINCOS_AVX2 static void values(V t, V &c, V &s) { sincos_f32_avx2<false>(t, c, s); }
    PYSKETCH_SINCOS_AVX2 static unsigned outside(V t) { return static_cast<unsigned>(outside_avx2(t)); }
    template <std::size_t W>
    PYSKETCH_SINCOS_AVX2 static bool any_outside(const V (&t)[W])
    {
        return any_outside_avx2(t);
    }
    PYSKETCH_SINCOS_AVX2 static void fix(V t, V &c, V &s, unsigned bad) { fix_avx2(t, c, s, bad); }
};

template <>
struct Avx2<double> : simd::Avx2<double> {
    static constexpr bool check_first = true;
    PYSKETCH_SINCOS_AVX2 static void values(V t, V &c, V &s) { sincos_f64_avx2(t, c, s); }
    PYSKETCH_SINCOS_AVX2 static unsigned outside(V t) { return static_cast<unsigned>(outside_avx2(t)); }
    template <std::size_t W>
    PYSKETCH_SINCOS_AVX2 static bool any_outside(const V (&t)[W])
    {
        return any_outside_avx2(t);
    }
    PYSKETCH_SINCOS_AVX2 static void fix(V t, V &c, V &s, unsigned bad) { fix_avx2(t, c, s, bad); }
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

// The array loops, written once for both sets (sincos_loops.inc) and compiled for each.
PYSKETCH_SIMD_BEGIN_AVX512
namespace avx512 {
#include "pysketch/sincos_loops.inc"
}  // namespace avx512
PYSKETCH_SIMD_END

PYSKETCH_SIMD_BEGIN_AVX2
namespace avx2 {
#include "pysketch/sincos_loops.inc"
}  // namespace avx2
PYSKETCH_SIMD_END

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
    case simd::Level::avx512: detail::avx512::sincos_loop<detail::Avx512<T>>(t, n, c, s); return;
    case simd::Level::avx2: detail::avx2::sincos_loop<detail::Avx2<T>>(t, n, c, s); return;
    default: break;
    }
#endif
    detail::sincos_portable(t, n, c, s);
}

}  // namespace sincos
}  // namespace pysketch

#endif  // PYSKETCH_SINCOS_HPP
