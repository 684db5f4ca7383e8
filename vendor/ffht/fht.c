/* fht.c - public API: argument checks and run-time choice of the instruction set. */
#include "fht.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fht_internal.h"

#if defined(FHT_HAVE_X86)
#if defined(_MSC_VER)
#include <intrin.h>
#include <immintrin.h>
#else
#include <cpuid.h>
#endif
#endif

/* ---------------------------------------------------------------- detection */

#if defined(FHT_HAVE_X86)
static void fht_cpuid(unsigned leaf, unsigned sub, unsigned r[4])
{
#if defined(_MSC_VER)
    int t[4];
    __cpuidex(t, (int)leaf, (int)sub);
    for (int i = 0; i < 4; i++) r[i] = (unsigned)t[i];
#else
    r[0] = r[1] = r[2] = r[3] = 0;
    __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
#endif
}

static uint64_t fht_xgetbv0(void)
{
#if defined(_MSC_VER)
    return _xgetbv(0);
#else
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
#endif
}

/* Intel SDM vol. 1, 14.3 and 15.2: a vector extension may be used only when cpuid
 * reports it and the OS saves its register state (XCR0 bits, read with xgetbv). */
static fht_simd_level fht_detect(void)
{
    unsigned r[4];
    fht_cpuid(0, 0, r);
    const unsigned max_leaf = r[0];
    fht_cpuid(1, 0, r);
    const unsigned ecx1 = r[2], edx1 = r[3];
    fht_simd_level level = FHT_SIMD_SCALAR;
    if (edx1 & (1u << 26)) level = FHT_SIMD_SSE; /* SSE2 */
    const int osxsave = (ecx1 >> 27) & 1, avx = (ecx1 >> 28) & 1, fma = (ecx1 >> 12) & 1;
    if (!osxsave || !avx || max_leaf < 7) return level;
    const uint64_t xcr0 = fht_xgetbv0();
    if ((xcr0 & 0x6) != 0x6) return level; /* XMM and YMM state */
    fht_cpuid(7, 0, r);
    const unsigned ebx7 = r[1];
    if (fma && (ebx7 & (1u << 5))) level = FHT_SIMD_AVX2;
    else return level;
    /* AVX-512F, plus opmask and both halves of the zmm state (XCR0 bits 5-7). */
    if ((ebx7 & (1u << 16)) && (xcr0 & 0xE0) == 0xE0) level = FHT_SIMD_AVX512;
    return level;
}
#else
static fht_simd_level fht_detect(void) { return FHT_SIMD_SCALAR; }
#endif

/* ---------------------------------------------------------------- dispatch */

typedef struct {
    fht_batch_f32_fn f32;
    fht_batch_f64_fn f64;
    fht_cols_f32_fn cols_f32;
    fht_cols_f64_fn cols_f64;
} fht_impl;

#define FHT_IMPL_(isa) {fht_batch_##isa##_f32, fht_batch_##isa##_f64, fht_cols_##isa##_f32, fht_cols_##isa##_f64}
static const fht_impl fht_impls[4] = {
    FHT_IMPL_(scalar),
#if defined(FHT_HAVE_X86)
    FHT_IMPL_(sse),
    FHT_IMPL_(avx2),
    FHT_IMPL_(avx512),
#else
    {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0},
#endif
};
#undef FHT_IMPL_

/* -1 until the first use; then the level in use. Written once by whichever thread
 * gets there first; every thread computes the same value, so the race is benign. */
static int fht_level = -1;
static int fht_max_level = -1;

static int fht_parse_level(const char *s)
{
    static const char *names[4] = {"scalar", "sse", "avx2", "avx512"};
    for (int i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0) return i;
    return -1;
}

static int fht_current(void)
{
    int level = __atomic_load_n(&fht_level, __ATOMIC_ACQUIRE);
    if (level >= 0) return level;
    const int best = (int)fht_detect();
    level = best;
    const char *env = getenv("PYSKETCH_SIMD");
    if (env && *env) {
        const int want = fht_parse_level(env);
        /* An unknown name leaves the best level; a known one can only lower it. */
        if (want >= 0 && want < level) level = want;
    }
    __atomic_store_n(&fht_max_level, best, __ATOMIC_RELEASE);
    __atomic_store_n(&fht_level, level, __ATOMIC_RELEASE);
    return level;
}

fht_simd_level fht_get_simd_level(void) { return (fht_simd_level)fht_current(); }

fht_simd_level fht_max_simd_level(void)
{
    fht_current();
    return (fht_simd_level)__atomic_load_n(&fht_max_level, __ATOMIC_ACQUIRE);
}

const char *fht_simd_level_name(fht_simd_level level)
{
    switch (level) {
    case FHT_SIMD_SCALAR: return "scalar";
    case FHT_SIMD_SSE: return "sse";
    case FHT_SIMD_AVX2: return "avx2";
    case FHT_SIMD_AVX512: return "avx512";
    default: return "unknown";
    }
}

int fht_set_simd_level(fht_simd_level level)
{
    if ((int)level < 0 || (int)level > (int)fht_max_simd_level()) return -1;
    if (!fht_impls[level].f32) return -1;
    __atomic_store_n(&fht_level, (int)level, __ATOMIC_RELEASE);
    return 0;
}

/* ---------------------------------------------------------------- checks */

/* Do [a, a + na) and [b, b + nb) (in bytes) overlap? */
static int fht_overlap(const void *a, size_t na, const void *b, size_t nb)
{
    const uintptr_t pa = (uintptr_t)a, pb = (uintptr_t)b;
    return pa < pb + nb && pb < pa + na;
}

/* Bytes spanned by count rows of n elements of size es, stride in elements. */
static size_t fht_span(size_t count, ptrdiff_t stride, size_t n, size_t es)
{
    return count == 0 ? 0 : ((count - 1) * (size_t)stride + n) * es;
}

static int fht_check(const void *buf, int log_n, size_t count, ptrdiff_t stride)
{
    if (!buf || log_n < 0 || log_n > FHT_MAX_LOG_N) return -1;
    if (count > 1 && (stride < 0 || (size_t)stride < ((size_t)1 << log_n))) return -1;
    return 0;
}

static int fht_check_oop(const void *in, ptrdiff_t in_stride, const void *out, ptrdiff_t out_stride,
                         int log_n, size_t count, size_t es)
{
    if (fht_check(in, log_n, count, in_stride) || fht_check(out, log_n, count, out_stride)) return -1;
    if (in == out) return in_stride == out_stride || count <= 1 ? 0 : -1;
    const size_t n = (size_t)1 << log_n;
    if (fht_overlap(in, fht_span(count, in_stride, n, es), out, fht_span(count, out_stride, n, es)))
        return -1;
    return 0;
}

/* ---------------------------------------------------------------- API */

int fht_float(float *buf, int log_n) { return fht_float_batch(buf, log_n, 1, 0); }
int fht_double(double *buf, int log_n) { return fht_double_batch(buf, log_n, 1, 0); }

int fht_float_oop(const float *in, float *out, int log_n)
{
    return fht_float_batch_oop(in, 0, out, 0, log_n, 1);
}
int fht_double_oop(const double *in, double *out, int log_n)
{
    return fht_double_batch_oop(in, 0, out, 0, log_n, 1);
}

/* The diagonals (n elements each, or NULL) must not overlap the output rows. */
static int fht_check_diag(const void *pre, const void *post, const void *out, ptrdiff_t out_stride, int log_n,
                          size_t count, size_t es)
{
    const size_t n = (size_t)1 << log_n;
    const size_t span = fht_span(count, out_stride, n, es);
    if (pre && fht_overlap(pre, n * es, out, span)) return -1;
    if (post && fht_overlap(post, n * es, out, span)) return -1;
    return 0;
}

int fht_float_batch_diag(float *buf, int log_n, size_t count, ptrdiff_t stride, const float *pre,
                         const float *post)
{
    if (fht_check(buf, log_n, count, stride)) return -1;
    if (count == 0) return 0;
    if (fht_check_diag(pre, post, buf, stride, log_n, count, sizeof(float))) return -1;
    fht_impls[fht_current()].f32(buf, stride, buf, stride, log_n, count, pre, post, 0);
    return 0;
}

int fht_double_batch_diag(double *buf, int log_n, size_t count, ptrdiff_t stride, const double *pre,
                          const double *post)
{
    if (fht_check(buf, log_n, count, stride)) return -1;
    if (count == 0) return 0;
    if (fht_check_diag(pre, post, buf, stride, log_n, count, sizeof(double))) return -1;
    fht_impls[fht_current()].f64(buf, stride, buf, stride, log_n, count, pre, post, 0);
    return 0;
}

int fht_float_batch_oop_diag(const float *in, ptrdiff_t in_stride, float *out, ptrdiff_t out_stride,
                             int log_n, size_t count, const float *pre, const float *post)
{
    if (fht_check_oop(in, in_stride, out, out_stride, log_n, count, sizeof(float))) return -1;
    if (count == 0) return 0;
    if (fht_check_diag(pre, post, out, out_stride, log_n, count, sizeof(float))) return -1;
    fht_impls[fht_current()].f32(out, out_stride, in, in_stride, log_n, count, pre, post, 0);
    return 0;
}

int fht_double_batch_oop_diag(const double *in, ptrdiff_t in_stride, double *out, ptrdiff_t out_stride,
                              int log_n, size_t count, const double *pre, const double *post)
{
    if (fht_check_oop(in, in_stride, out, out_stride, log_n, count, sizeof(double))) return -1;
    if (count == 0) return 0;
    if (fht_check_diag(pre, post, out, out_stride, log_n, count, sizeof(double))) return -1;
    fht_impls[fht_current()].f64(out, out_stride, in, in_stride, log_n, count, pre, post, 0);
    return 0;
}

/* Per-row diagonals (fht.h): the diagonals of all rows must not overlap the output, the
 * input may be one row read by every output row (in_stride 0, never in place). */
static int fht_check_diags(const void *in, ptrdiff_t in_stride, const void *out, ptrdiff_t out_stride, int log_n,
                           size_t count, const void *pre, const void *post, ptrdiff_t diag_stride, size_t es)
{
    if (diag_stride < 0) return -1;
    if (in_stride == 0 && count > 1) {
        if (!in || fht_check(out, log_n, count, out_stride)) return -1;
        const size_t n = (size_t)1 << log_n;
        if (in == out || fht_overlap(in, n * es, out, fht_span(count, out_stride, n, es))) return -1;
    } else if (fht_check_oop(in, in_stride, out, out_stride, log_n, count, es)) {
        return -1;
    }
    if (count == 0) return 0;
    const size_t n = (size_t)1 << log_n;
    const size_t span = fht_span(count, out_stride, n, es), dspan = fht_span(count, diag_stride, n, es);
    if (pre && fht_overlap(pre, dspan, out, span)) return -1;
    if (post && fht_overlap(post, dspan, out, span)) return -1;
    return 0;
}

int fht_float_batch_oop_diags(const float *in, ptrdiff_t in_stride, float *out, ptrdiff_t out_stride, int log_n,
                              size_t count, const float *pre, const float *post, ptrdiff_t diag_stride)
{
    if (fht_check_diags(in, in_stride, out, out_stride, log_n, count, pre, post, diag_stride, sizeof(float)))
        return -1;
    if (count == 0) return 0;
    fht_impls[fht_current()].f32(out, out_stride, in, in_stride, log_n, count, pre, post, diag_stride);
    return 0;
}

int fht_double_batch_oop_diags(const double *in, ptrdiff_t in_stride, double *out, ptrdiff_t out_stride,
                               int log_n, size_t count, const double *pre, const double *post,
                               ptrdiff_t diag_stride)
{
    if (fht_check_diags(in, in_stride, out, out_stride, log_n, count, pre, post, diag_stride, sizeof(double)))
        return -1;
    if (count == 0) return 0;
    fht_impls[fht_current()].f64(out, out_stride, in, in_stride, log_n, count, pre, post, diag_stride);
    return 0;
}

int fht_float_batch(float *buf, int log_n, size_t count, ptrdiff_t stride)
{
    return fht_float_batch_diag(buf, log_n, count, stride, NULL, NULL);
}

int fht_double_batch(double *buf, int log_n, size_t count, ptrdiff_t stride)
{
    return fht_double_batch_diag(buf, log_n, count, stride, NULL, NULL);
}

int fht_float_batch_oop(const float *in, ptrdiff_t in_stride, float *out, ptrdiff_t out_stride, int log_n,
                        size_t count)
{
    return fht_float_batch_oop_diag(in, in_stride, out, out_stride, log_n, count, NULL, NULL);
}

int fht_double_batch_oop(const double *in, ptrdiff_t in_stride, double *out, ptrdiff_t out_stride,
                         int log_n, size_t count)
{
    return fht_double_batch_oop_diag(in, in_stride, out, out_stride, log_n, count, NULL, NULL);
}

/* Columns: element i of column c at buf + c + i * elem_stride; distinct elements need
 * elem_stride >= count whenever a column has more than one element. */
static int fht_check_cols(const void *buf, int log_n, size_t count, ptrdiff_t elem_stride)
{
    if (!buf || log_n < 0 || log_n > FHT_MAX_LOG_N) return -1;
    if (log_n > 0 && count > 0 && (elem_stride < 0 || (size_t)elem_stride < count)) return -1;
    return 0;
}

int fht_float_cols(float *buf, int log_n, size_t count, ptrdiff_t elem_stride)
{
    if (fht_check_cols(buf, log_n, count, elem_stride)) return -1;
    if (count == 0 || log_n == 0) return 0;
    fht_impls[fht_current()].cols_f32(buf, log_n, count, elem_stride);
    return 0;
}

int fht_double_cols(double *buf, int log_n, size_t count, ptrdiff_t elem_stride)
{
    if (fht_check_cols(buf, log_n, count, elem_stride)) return -1;
    if (count == 0 || log_n == 0) return 0;
    fht_impls[fht_current()].cols_f64(buf, log_n, count, elem_stride);
    return 0;
}
