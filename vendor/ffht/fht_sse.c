/* fht_sse.c - SSE2 path (16 xmm registers, blocks of 8 vectors).
 * In-register level of stride s: x <- swap_s(x) + (x with its sign flipped on the
 * lanes whose bit s is set): one shuffle, one xor and one add (no FMA in SSE2). Lane
 * i gets x[i] + x[i^s] or x[i^s] - x[i], exactly the values a - b and a + b. */
#include <emmintrin.h>
#include "fht_internal.h"

#define FHT_LR 3
#define FHT_LEAF_BYTES 14 /* 16 KiB: half of a 32 KiB L1 */
#define FHT_INLINE_ static inline __attribute__((always_inline))

/* ---- float: 4 lanes ---- */
FHT_INLINE_ __m128 fht_sse_inreg_f32(__m128 x, const int l)
{
    const __m128 neg1 = _mm_castsi128_ps(_mm_setr_epi32(0, (int)0x80000000, 0, (int)0x80000000));
    const __m128 neg2 = _mm_castsi128_ps(_mm_setr_epi32(0, 0, (int)0x80000000, (int)0x80000000));
    if (l == 0) return _mm_add_ps(_mm_shuffle_ps(x, x, 0xB1), _mm_xor_ps(x, neg1));
    return _mm_add_ps(_mm_shuffle_ps(x, x, 0x4E), _mm_xor_ps(x, neg2));
}
#define FHT_T float
#define FHT_V __m128
#define FHT_LW 2
#define FHT_LOAD(p) _mm_loadu_ps(p)
#define FHT_STORE(p, v) _mm_storeu_ps((p), (v))
#define FHT_ADD(a, b) _mm_add_ps((a), (b))
#define FHT_SUB(a, b) _mm_sub_ps((a), (b))
#define FHT_MUL(a, b) _mm_mul_ps((a), (b))
#define FHT_SUB_X(a, b) _mm_sub_ps((a), (b))
#define FHT_INREG1(v, l) fht_sse_inreg_f32((v), (l))
#define FHT_NAME(x) fht_##x##_sse_f32
#include "fht_kernel.h"
#undef FHT_T
#undef FHT_V
#undef FHT_LW
#undef FHT_LOAD
#undef FHT_STORE
#undef FHT_ADD
#undef FHT_SUB
#undef FHT_MUL
#undef FHT_SUB_X
#undef FHT_INREG1
#undef FHT_NAME

/* ---- double: 2 lanes ---- */
FHT_INLINE_ __m128d fht_sse_inreg_f64(__m128d x, const int l)
{
    (void)l;
    const __m128d neg1 = _mm_castsi128_pd(_mm_set_epi64x((long long)0x8000000000000000ULL, 0));
    return _mm_add_pd(_mm_shuffle_pd(x, x, 1), _mm_xor_pd(x, neg1));
}
#define FHT_T double
#define FHT_V __m128d
#define FHT_LW 1
#define FHT_LOAD(p) _mm_loadu_pd(p)
#define FHT_STORE(p, v) _mm_storeu_pd((p), (v))
#define FHT_ADD(a, b) _mm_add_pd((a), (b))
#define FHT_SUB(a, b) _mm_sub_pd((a), (b))
#define FHT_MUL(a, b) _mm_mul_pd((a), (b))
#define FHT_SUB_X(a, b) _mm_sub_pd((a), (b))
#define FHT_INREG1(v, l) fht_sse_inreg_f64((v), (l))
#define FHT_NAME(x) fht_##x##_sse_f64
#include "fht_kernel.h"
