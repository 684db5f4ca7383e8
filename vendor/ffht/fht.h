/*
 * fht.h - pysketch's fast Walsh-Hadamard transform (standalone C99 library).
 *
 * The transform is in place, unnormalized and in natural (Sylvester) order:
 *
 *     y[i] = sum_j (-1)^popcount(i & j) x[j],      0 <= i, j < n = 2^log_n,
 *
 * so that applying it twice multiplies by n. Every butterfly level is applied in
 * order of increasing stride (1, 2, 4, ..., n/2) on every instruction set, so all
 * code paths return bit-identical results.
 *
 * The best implementation the CPU supports (AVX-512F, AVX2+FMA, SSE2, portable C)
 * is chosen on first use by cpuid; the environment variable PYSKETCH_SIMD
 * (avx512 | avx2 | sse | scalar) caps the level, and fht_set_simd_level() changes
 * it at run time (meant for tests).
 *
 * All functions are thread-safe and single-threaded; they return 0 on success and
 * -1 on bad arguments (NULL buffer, log_n outside [0, 30], a row stride smaller
 * than the row length, overlapping out-of-place buffers, diagonals overlapping the
 * output).
 *
 * An installed pysketch ships this header in pysketch.get_include() and the library,
 * libpysketch_fht.a, in pysketch.get_library_dir(): link with -lpysketch_fht. Only the
 * functions declared here are exported from it. docs/c_api.md describes both this API
 * and the header-only C++ API built on it.
 */
#ifndef PYSKETCH_FHT_H
#define PYSKETCH_FHT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FHT_MAX_LOG_N 30

/* Instruction-set levels, in increasing order. */
typedef enum {
    FHT_SIMD_SCALAR = 0,
    FHT_SIMD_SSE = 1,    /* SSE2 */
    FHT_SIMD_AVX2 = 2,   /* AVX2 + FMA */
    FHT_SIMD_AVX512 = 3  /* AVX-512F */
} fht_simd_level;

/* One transform of length 2^log_n, in place. */
int fht_float(float *buf, int log_n);
int fht_double(double *buf, int log_n);

/* Out of place: out = H in. in is left untouched; the buffers must not overlap
 * unless they are the same pointer (then this is the in-place transform). */
int fht_float_oop(const float *in, float *out, int log_n);
int fht_double_oop(const double *in, double *out, int log_n);

/* count transforms of length 2^log_n, in place; row r starts at buf + r * stride
 * (stride in elements, stride >= 2^log_n; any stride is accepted when count <= 1). */
int fht_float_batch(float *buf, int log_n, size_t count, ptrdiff_t stride);
int fht_double_batch(double *buf, int log_n, size_t count, ptrdiff_t stride);

/* Batched out of place: row r of out (at out + r * out_stride) = H (row r of in). */
int fht_float_batch_oop(const float *in, ptrdiff_t in_stride, float *out, ptrdiff_t out_stride,
                        int log_n, size_t count);
int fht_double_batch_oop(const double *in, ptrdiff_t in_stride, double *out, ptrdiff_t out_stride,
                         int log_n, size_t count);

/* Diagonals fused with the transform: each row becomes post * H (pre * row), elementwise:
 * pre[i] multiplies element i before the transform and post[i] output i after it (n
 * values each, the same for every row; NULL for none). Each product is rounded once
 * and they cost no pass of their own (they ride on the first and last passes). pre and
 * post must not overlap the output rows. */
int fht_float_batch_diag(float *buf, int log_n, size_t count, ptrdiff_t stride, const float *pre,
                         const float *post);
int fht_double_batch_diag(double *buf, int log_n, size_t count, ptrdiff_t stride, const double *pre,
                          const double *post);
int fht_float_batch_oop_diag(const float *in, ptrdiff_t in_stride, float *out, ptrdiff_t out_stride,
                             int log_n, size_t count, const float *pre, const float *post);
int fht_double_batch_oop_diag(const double *in, ptrdiff_t in_stride, double *out, ptrdiff_t out_stride,
                              int log_n, size_t count, const double *pre, const double *post);

/* Per-row diagonals: row r of out = post_r * H (pre_r * row r of in), where
 * pre_r = pre + r * diag_stride and post_r = post + r * diag_stride (diag_stride >= 0, in
 * elements; 0 gives every row the same diagonals, as the functions above). in_stride may
 * be 0: every output row then starts from the same input row (which must not overlap the
 * output). Same rounding as the other forms: row r is bit-identical to a call of
 * fht_*_batch_oop_diag on that row with pre_r and post_r. Made for the blocks of a
 * structured operator applied to one vector: one call instead of one per block, so the
 * batch kernels interleave the blocks as they do rows. */
int fht_float_batch_oop_diags(const float *in, ptrdiff_t in_stride, float *out, ptrdiff_t out_stride, int log_n,
                              size_t count, const float *pre, const float *post, ptrdiff_t diag_stride);
int fht_double_batch_oop_diags(const double *in, ptrdiff_t in_stride, double *out, ptrdiff_t out_stride,
                               int log_n, size_t count, const double *pre, const double *post,
                               ptrdiff_t diag_stride);

/* Transforms along columns, in place: count columns of 2^log_n elements each, element i
 * of column c at buf + c + i * elem_stride (elem_stride >= count, in elements, unless
 * log_n = 0 or count = 0). Levels in increasing stride, like the other forms. With them a
 * transform can be done in two steps that each split among threads: the transform of
 * length 2^(a + b) of buf equals the transforms of its 2^b rows of 2^a elements
 * (fht_*_batch with stride 2^a) followed by fht_*_cols(buf, b, 2^a, 2^a), which may itself
 * be cut into calls over ranges of columns; the result is bit-identical to one call. */
int fht_float_cols(float *buf, int log_n, size_t count, ptrdiff_t elem_stride);
int fht_double_cols(double *buf, int log_n, size_t count, ptrdiff_t elem_stride);

/* The level in use, and the best level this CPU and operating system support. */
fht_simd_level fht_get_simd_level(void);
fht_simd_level fht_max_simd_level(void);
/* "avx512", "avx2", "sse" or "scalar". */
const char *fht_simd_level_name(fht_simd_level level);
/* Use this level from now on (process-wide). Returns -1, changing nothing, when the
 * CPU or this build does not support it. Not meant to be called while transforms run
 * in other threads (they would finish on either level; results are identical). */
int fht_set_simd_level(fht_simd_level level);

#ifdef __cplusplus
}
#endif

#endif /* PYSKETCH_FHT_H */
