/* fht_avx512.c - AVX-512F path (32 zmm registers, blocks of 16 vectors).
 * In-register level of stride s: x <- fma(x, sign_s, swap_s(x)), sign_s = -1 on the
 * lanes whose bit s is set: one shuffle (vpermilps for strides 1 and 2 of float,
 * vshuff32x4 / vshuff64x2 across 128-bit lanes) and one FMA per level. x*(+-1) is
 * exact, so the FMA rounds once, exactly like the a + b or a - b of the other paths. */
#include <immintrin.h>
#include "fht_internal.h"

#define FHT_LR 4
#define FHT_LEAF_BYTES 14 /* 16 KiB: half of a 32 KiB L1 */
#define FHT_INLINE_ static inline __attribute__((always_inline))

static const float fht_avx512_sgn_f32[4][16] __attribute__((aligned(64))) = {
    {1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1},
    {1, 1, -1, -1, 1, 1, -1, -1, 1, 1, -1, -1, 1, 1, -1, -1},
    {1, 1, 1, 1, -1, -1, -1, -1, 1, 1, 1, 1, -1, -1, -1, -1},
    {1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1, -1}};
static const double fht_avx512_sgn_f64[3][8] __attribute__((aligned(64))) = {
    {1, -1, 1, -1, 1, -1, 1, -1}, {1, 1, -1, -1, 1, 1, -1, -1}, {1, 1, 1, 1, -1, -1, -1, -1}};

FHT_INLINE_ __m512 fht_avx512_inreg_f32(__m512 x, const int l)
{
    const __m512 sign = _mm512_load_ps(fht_avx512_sgn_f32[l]);
    if (l == 0) return _mm512_fmadd_ps(x, sign, _mm512_permute_ps(x, 0xB1));
    if (l == 1) return _mm512_fmadd_ps(x, sign, _mm512_permute_ps(x, 0x4E));
    if (l == 2) return _mm512_fmadd_ps(x, sign, _mm512_shuffle_f32x4(x, x, 0xB1));
    return _mm512_fmadd_ps(x, sign, _mm512_shuffle_f32x4(x, x, 0x4E));
}
FHT_INLINE_ __m512d fht_avx512_inreg_f64(__m512d x, const int l)
{
    const __m512d sign = _mm512_load_pd(fht_avx512_sgn_f64[l]);
    if (l == 0) return _mm512_fmadd_pd(x, sign, _mm512_permute_pd(x, 0x55));
    if (l == 1) return _mm512_fmadd_pd(x, sign, _mm512_shuffle_f64x2(x, x, 0xB1));
    return _mm512_fmadd_pd(x, sign, _mm512_shuffle_f64x2(x, x, 0x4E));
}

#define FHT_T float
#define FHT_V __m512
#define FHT_LW 4
#define FHT_LOAD(p) _mm512_loadu_ps(p)
#define FHT_STORE(p, v) _mm512_storeu_ps((p), (v))
#define FHT_ADD(a, b) _mm512_add_ps((a), (b))
#define FHT_SUB(a, b) _mm512_sub_ps((a), (b))
#define FHT_MUL(a, b) _mm512_mul_ps((a), (b))
#define FHT_SUB_X(a, b) _mm512_fnmadd_ps((b), _mm512_set1_ps(1.0f), (a))
#define FHT_INREG1(v, l) fht_avx512_inreg_f32((v), (l))
#define FHT_NAME(x) fht_##x##_avx512_f32
#define FHT_FUSED_PIPE 1
#define FHT_BLOCKS 1
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

#define FHT_T double
#define FHT_V __m512d
#define FHT_LW 3
#define FHT_LOAD(p) _mm512_loadu_pd(p)
#define FHT_STORE(p, v) _mm512_storeu_pd((p), (v))
#define FHT_ADD(a, b) _mm512_add_pd((a), (b))
#define FHT_SUB(a, b) _mm512_sub_pd((a), (b))
#define FHT_MUL(a, b) _mm512_mul_pd((a), (b))
#define FHT_SUB_X(a, b) _mm512_fnmadd_pd((b), _mm512_set1_pd(1.0), (a))
#define FHT_INREG1(v, l) fht_avx512_inreg_f64((v), (l))
#define FHT_NAME(x) fht_##x##_avx512_f64
#define FHT_BLOCKS 1
#include "fht_kernel.h"
