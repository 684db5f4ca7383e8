/* fht_avx2.c - AVX2 + FMA path (16 ymm registers, blocks of 8 vectors).
 * In-register level of stride s: x <- fma(x, sign_s, swap_s(x)), sign_s = -1 on the
 * lanes whose bit s is set: one shuffle and one FMA per level. x*(+-1) is exact, so
 * the FMA rounds once, exactly like the a + b or a - b of the other paths. */
#include <immintrin.h>
#include "fht_internal.h"

#define FHT_LR 3
#define FHT_LEAF_BYTES 14 /* 16 KiB: half of a 32 KiB L1 */
#define FHT_PREFETCH (1 << 20) /* rows of up to 1 MiB prefetch the next one */
#define FHT_INLINE_ static inline __attribute__((always_inline))

static const float fht_avx2_sgn_f32[3][8] __attribute__((aligned(32))) = {
    {1, -1, 1, -1, 1, -1, 1, -1}, {1, 1, -1, -1, 1, 1, -1, -1}, {1, 1, 1, 1, -1, -1, -1, -1}};
static const double fht_avx2_sgn_f64[2][4] __attribute__((aligned(32))) = {{1, -1, 1, -1},
                                                                           {1, 1, -1, -1}};

FHT_INLINE_ __m256 fht_avx2_inreg_f32(__m256 x, const int l)
{
    const __m256 sign = _mm256_load_ps(fht_avx2_sgn_f32[l]);
    if (l == 0) return _mm256_fmadd_ps(x, sign, _mm256_permute_ps(x, 0xB1));
    if (l == 1) return _mm256_fmadd_ps(x, sign, _mm256_permute_ps(x, 0x4E));
    return _mm256_fmadd_ps(x, sign, _mm256_permute2f128_ps(x, x, 0x01));
}
FHT_INLINE_ __m256d fht_avx2_inreg_f64(__m256d x, const int l)
{
    const __m256d sign = _mm256_load_pd(fht_avx2_sgn_f64[l]);
    if (l == 0) return _mm256_fmadd_pd(x, sign, _mm256_permute_pd(x, 0x5));
    return _mm256_fmadd_pd(x, sign, _mm256_permute2f128_pd(x, x, 0x01));
}

#define FHT_T float
#define FHT_V __m256
#define FHT_LW 3
#define FHT_LOAD(p) _mm256_loadu_ps(p)
#define FHT_STORE(p, v) _mm256_storeu_ps((p), (v))
#define FHT_ADD(a, b) _mm256_add_ps((a), (b))
#define FHT_SUB(a, b) _mm256_sub_ps((a), (b))
#define FHT_MUL(a, b) _mm256_mul_ps((a), (b))
#define FHT_SUB_X(a, b) _mm256_fnmadd_ps((b), _mm256_set1_ps(1.0f), (a))
#define FHT_INREG1(v, l) fht_avx2_inreg_f32((v), (l))
#define FHT_NAME(x) fht_##x##_avx2_f32
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
#define FHT_V __m256d
#define FHT_LW 2
#define FHT_LOAD(p) _mm256_loadu_pd(p)
#define FHT_STORE(p, v) _mm256_storeu_pd((p), (v))
#define FHT_ADD(a, b) _mm256_add_pd((a), (b))
#define FHT_SUB(a, b) _mm256_sub_pd((a), (b))
#define FHT_MUL(a, b) _mm256_mul_pd((a), (b))
#define FHT_SUB_X(a, b) _mm256_fnmadd_pd((b), _mm256_set1_pd(1.0), (a))
#define FHT_INREG1(v, l) fht_avx2_inreg_f64((v), (l))
#define FHT_NAME(x) fht_##x##_avx2_f64
#include "fht_kernel.h"
