// simd.hpp - the one SIMD layer of the C++ core: which instruction set to run (decided at run
// time) and the vector operations the kernels share (header-only, C++17).
//
// Detection. simd::level() is the level the C kernel of vendor/ffht chose on first use (cpuid,
// capped by the environment variable PYSKETCH_SIMD; pysketch.set_simd_level changes it):
// scalar, sse, avx2 (AVX2 + FMA) or avx512 (AVX-512F). Every kernel dispatches on it, so one
// setting moves the transforms, the phases, the nonlinearities and the accumulations together.
//
// Vector code exists on x86 with GCC or Clang, where PYSKETCH_SIMD_X86 is defined (defining
// PYSKETCH_PORTABLE_ONLY before the first include builds the portable paths alone, to test them
// on x86). Elsewhere the kernels keep their portable C++ path, which gives the same bits: every
// level performs the same IEEE operations in the same order.
//
// Vector operations (x86 only): simd::Avx512<T> and simd::Avx2<T>, T = float or double:
//   V, lanes                 the register type and its lanes (16/8 floats, 8/4 doubles)
//   I                        a vector of `lanes` 32-bit indices (gathers)
//   load, store, set1, zero, add, mul, fma(a, b, c) = a b + c (one rounding)
//   load_part, store_part    the first `count` lanes (count < lanes), others zero / untouched
//   loadi(p), scalei(i, k)   load `lanes` uint32 indices; multiply them by k
//   gather(base, i)          base[i[l]] in lane l
//   add_barrier(a, b)        a + b, never contracted with the product that made a
// All are static inline always_inline functions with the target attribute of their set
// (PYSKETCH_SIMD_AVX512 / PYSKETCH_SIMD_AVX2; the strings PYSKETCH_SIMD_TARGET_avx512 =
// "avx512f" and PYSKETCH_SIMD_TARGET_avx2 = "avx2,fma").
//
// Kernels written once for every set. A loop written as a template over these operations must
// itself be compiled for the set: GCC and Clang refuse to inline target-specific intrinsics into
// a function without that target, and Clang rejects any call passing a 256- or 512-bit vector
// from a function without the feature to one with it. A template cannot take its target
// attribute from a template argument, so the target comes from a region instead: such loops
// live in a *_loops.inc file (no include guard), which its header includes once per set,
//
//     PYSKETCH_SIMD_BEGIN_AVX512
//     namespace avx512 {
//     #include "pysketch/clamp_loops.inc"   (clamp.hpp's, for example)
//     }
//     PYSKETCH_SIMD_END
//
// and likewise with PYSKETCH_SIMD_BEGIN_AVX2 and namespace avx2. Every function defined between
// BEGIN and END is compiled for the set (GCC's target pragma, Clang's attribute push), as if it
// carried the target attribute; the .inc file includes nothing itself.
#ifndef PYSKETCH_SIMD_HPP
#define PYSKETCH_SIMD_HPP

#include <cstddef>
#include <cstdint>

#include "fht.h"

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__)) && \
    !defined(PYSKETCH_PORTABLE_ONLY)
#define PYSKETCH_SIMD_X86 1
#include <immintrin.h>
#endif

namespace pysketch {
namespace simd {

enum class Level : int { scalar = 0, sse = 1, avx2 = 2, avx512 = 3 };

// The level in use (see above). Cheap: one load after the first call.
inline Level level()
{
    switch (fht_get_simd_level()) {
    case FHT_SIMD_AVX512: return Level::avx512;
    case FHT_SIMD_AVX2: return Level::avx2;
    case FHT_SIMD_SSE: return Level::sse;
    default: return Level::scalar;
    }
}

#if defined(PYSKETCH_SIMD_X86)

#define PYSKETCH_SIMD_TARGET_avx512 "avx512f"
#define PYSKETCH_SIMD_TARGET_avx2 "avx2,fma"
#define PYSKETCH_SIMD_AVX512 __attribute__((always_inline, target("avx512f"))) inline
#define PYSKETCH_SIMD_AVX2 __attribute__((always_inline, target("avx2,fma"))) inline

// The target regions (see the top of this file).
#if defined(__clang__)
#define PYSKETCH_SIMD_BEGIN_AVX512 \
    _Pragma("clang attribute push(__attribute__((target(\"avx512f\"))), apply_to = function)")
#define PYSKETCH_SIMD_BEGIN_AVX2 \
    _Pragma("clang attribute push(__attribute__((target(\"avx2,fma\"))), apply_to = function)")
#define PYSKETCH_SIMD_END _Pragma("clang attribute pop")
#else
#define PYSKETCH_SIMD_BEGIN_AVX512 _Pragma("GCC push_options") _Pragma("GCC target(\"avx512f\")")
#define PYSKETCH_SIMD_BEGIN_AVX2 _Pragma("GCC push_options") _Pragma("GCC target(\"avx2,fma\")")
#define PYSKETCH_SIMD_END _Pragma("GCC pop_options")
#endif

template <class T>
struct Avx512;
template <class T>
struct Avx2;

// Masked forms with an explicit zero source and a full mask stand in for a few plain
// intrinsics, which start from an undefined register that GCC 12 reports as
// -Wmaybe-uninitialized (GCC bug 105593); the instruction emitted is the same.
template <>
struct Avx512<float> {
    using T = float;
    using V = __m512;
    using I = __m512i;
    static constexpr std::size_t lanes = 16;
    PYSKETCH_SIMD_AVX512 static __mmask16 part_mask(std::size_t count)
    {
        return static_cast<__mmask16>((1u << count) - 1u);
    }
    PYSKETCH_SIMD_AVX512 static V load(const T *p) { return _mm512_loadu_ps(p); }
    PYSKETCH_SIMD_AVX512 static V load_part(const T *p, std::size_t count)
    {
        return _mm512_maskz_loadu_ps(part_mask(count), p);
    }
    PYSKETCH_SIMD_AVX512 static void store(T *p, V v) { _mm512_storeu_ps(p, v); }
    PYSKETCH_SIMD_AVX512 static void store_part(T *p, V v, std::size_t count)
    {
        _mm512_mask_storeu_ps(p, part_mask(count), v);
    }
    PYSKETCH_SIMD_AVX512 static V set1(T a) { return _mm512_set1_ps(a); }
    PYSKETCH_SIMD_AVX512 static V zero() { return _mm512_setzero_ps(); }
    PYSKETCH_SIMD_AVX512 static V add(V a, V b) { return _mm512_add_ps(a, b); }
    PYSKETCH_SIMD_AVX512 static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
    PYSKETCH_SIMD_AVX512 static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
    PYSKETCH_SIMD_AVX512 static I loadi(const std::uint32_t *p) { return _mm512_loadu_si512(p); }
    PYSKETCH_SIMD_AVX512 static I scalei(I i, std::size_t k)
    {
        return _mm512_mullo_epi32(i, _mm512_set1_epi32(static_cast<int>(k)));
    }
    PYSKETCH_SIMD_AVX512 static V gather(const T *base, I i)
    {
        return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), static_cast<__mmask16>(0xffff), i, base, 4);
    }
    PYSKETCH_SIMD_AVX512 static V add_barrier(V a, V b)
    {
        __asm__("" : "+v"(a));  // the product chain must not be contracted with this sum
        return _mm512_add_ps(a, b);
    }
};

template <>
struct Avx512<double> {
    using T = double;
    using V = __m512d;
    using I = __m256i;
    static constexpr std::size_t lanes = 8;
    PYSKETCH_SIMD_AVX512 static __mmask8 part_mask(std::size_t count)
    {
        return static_cast<__mmask8>((1u << count) - 1u);
    }
    PYSKETCH_SIMD_AVX512 static V load(const T *p) { return _mm512_loadu_pd(p); }
    PYSKETCH_SIMD_AVX512 static V load_part(const T *p, std::size_t count)
    {
        return _mm512_maskz_loadu_pd(part_mask(count), p);
    }
    PYSKETCH_SIMD_AVX512 static void store(T *p, V v) { _mm512_storeu_pd(p, v); }
    PYSKETCH_SIMD_AVX512 static void store_part(T *p, V v, std::size_t count)
    {
        _mm512_mask_storeu_pd(p, part_mask(count), v);
    }
    PYSKETCH_SIMD_AVX512 static V set1(T a) { return _mm512_set1_pd(a); }
    PYSKETCH_SIMD_AVX512 static V zero() { return _mm512_setzero_pd(); }
    PYSKETCH_SIMD_AVX512 static V add(V a, V b) { return _mm512_add_pd(a, b); }
    PYSKETCH_SIMD_AVX512 static V mul(V a, V b) { return _mm512_mul_pd(a, b); }
    PYSKETCH_SIMD_AVX512 static V fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
    PYSKETCH_SIMD_AVX512 static I loadi(const std::uint32_t *p)
    {
        return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p));
    }
    PYSKETCH_SIMD_AVX512 static I scalei(I i, std::size_t k)
    {
        return _mm256_mullo_epi32(i, _mm256_set1_epi32(static_cast<int>(k)));
    }
    PYSKETCH_SIMD_AVX512 static V gather(const T *base, I i)
    {
        return _mm512_mask_i32gather_pd(_mm512_setzero_pd(), static_cast<__mmask8>(0xff), i, base, 8);
    }
    PYSKETCH_SIMD_AVX512 static V add_barrier(V a, V b)
    {
        __asm__("" : "+v"(a));
        return _mm512_add_pd(a, b);
    }
};

template <>
struct Avx2<float> {
    using T = float;
    using V = __m256;
    using I = __m256i;
    static constexpr std::size_t lanes = 8;
    PYSKETCH_SIMD_AVX2 static __m256i part_mask(std::size_t count)
    {
        const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)), lane);
    }
    PYSKETCH_SIMD_AVX2 static V load(const T *p) { return _mm256_loadu_ps(p); }
    PYSKETCH_SIMD_AVX2 static V load_part(const T *p, std::size_t count)
    {
        return _mm256_maskload_ps(p, part_mask(count));
    }
    PYSKETCH_SIMD_AVX2 static void store(T *p, V v) { _mm256_storeu_ps(p, v); }
    PYSKETCH_SIMD_AVX2 static void store_part(T *p, V v, std::size_t count)
    {
        _mm256_maskstore_ps(p, part_mask(count), v);
    }
    PYSKETCH_SIMD_AVX2 static V set1(T a) { return _mm256_set1_ps(a); }
    PYSKETCH_SIMD_AVX2 static V zero() { return _mm256_setzero_ps(); }
    PYSKETCH_SIMD_AVX2 static V add(V a, V b) { return _mm256_add_ps(a, b); }
    PYSKETCH_SIMD_AVX2 static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
    PYSKETCH_SIMD_AVX2 static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
    PYSKETCH_SIMD_AVX2 static I loadi(const std::uint32_t *p)
    {
        return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p));
    }
    PYSKETCH_SIMD_AVX2 static I scalei(I i, std::size_t k)
    {
        return _mm256_mullo_epi32(i, _mm256_set1_epi32(static_cast<int>(k)));
    }
    PYSKETCH_SIMD_AVX2 static V gather(const T *base, I i)
    {
        return _mm256_mask_i32gather_ps(_mm256_setzero_ps(), base, i, _mm256_castsi256_ps(_mm256_set1_epi32(-1)), 4);
    }
    PYSKETCH_SIMD_AVX2 static V add_barrier(V a, V b)
    {
        __asm__("" : "+x"(a));
        return _mm256_add_ps(a, b);
    }
};

template <>
struct Avx2<double> {
    using T = double;
    using V = __m256d;
    using I = __m128i;
    static constexpr std::size_t lanes = 4;
    PYSKETCH_SIMD_AVX2 static __m256i part_mask(std::size_t count)
    {
        return _mm256_cmpgt_epi64(_mm256_set1_epi64x(static_cast<long long>(count)), _mm256_setr_epi64x(0, 1, 2, 3));
    }
    PYSKETCH_SIMD_AVX2 static V load(const T *p) { return _mm256_loadu_pd(p); }
    PYSKETCH_SIMD_AVX2 static V load_part(const T *p, std::size_t count)
    {
        return _mm256_maskload_pd(p, part_mask(count));
    }
    PYSKETCH_SIMD_AVX2 static void store(T *p, V v) { _mm256_storeu_pd(p, v); }
    PYSKETCH_SIMD_AVX2 static void store_part(T *p, V v, std::size_t count)
    {
        _mm256_maskstore_pd(p, part_mask(count), v);
    }
    PYSKETCH_SIMD_AVX2 static V set1(T a) { return _mm256_set1_pd(a); }
    PYSKETCH_SIMD_AVX2 static V zero() { return _mm256_setzero_pd(); }
    PYSKETCH_SIMD_AVX2 static V add(V a, V b) { return _mm256_add_pd(a, b); }
    PYSKETCH_SIMD_AVX2 static V mul(V a, V b) { return _mm256_mul_pd(a, b); }
    PYSKETCH_SIMD_AVX2 static V fma(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
    PYSKETCH_SIMD_AVX2 static I loadi(const std::uint32_t *p)
    {
        return _mm_loadu_si128(reinterpret_cast<const __m128i *>(p));
    }
    PYSKETCH_SIMD_AVX2 static I scalei(I i, std::size_t k)
    {
        return _mm_mullo_epi32(i, _mm_set1_epi32(static_cast<int>(k)));
    }
    PYSKETCH_SIMD_AVX2 static V gather(const T *base, I i)
    {
        return _mm256_mask_i32gather_pd(_mm256_setzero_pd(), base, i, _mm256_castsi256_pd(_mm256_set1_epi64x(-1)),
                                        8);
    }
    PYSKETCH_SIMD_AVX2 static V add_barrier(V a, V b)
    {
        __asm__("" : "+x"(a));
        return _mm256_add_pd(a, b);
    }
};

#endif  // PYSKETCH_SIMD_X86

}  // namespace simd
}  // namespace pysketch

#endif  // PYSKETCH_SIMD_HPP
