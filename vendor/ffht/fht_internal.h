/* fht_internal.h - declarations shared by the dispatcher and the per-ISA files. */
#ifndef PYSKETCH_FHT_INTERNAL_H
#define PYSKETCH_FHT_INTERNAL_H

#include <stddef.h>
#include <string.h>

/* Row r: dst + r * dst_stride = post_r * H (pre_r * (src + r * src_stride)), with
 * pre_r = pre + r * diag_stride and post_r likewise (either may be NULL). */
typedef void (*fht_batch_f32_fn)(float *dst, ptrdiff_t dst_stride, const float *src, ptrdiff_t src_stride,
                                 int log_n, size_t count, const float *pre, const float *post,
                                 ptrdiff_t diag_stride);
typedef void (*fht_batch_f64_fn)(double *dst, ptrdiff_t dst_stride, const double *src,
                                 ptrdiff_t src_stride, int log_n, size_t count, const double *pre,
                                 const double *post, ptrdiff_t diag_stride);

/* Columns (fht.h, fht_*_cols): count columns of 2^log_n elements elem_stride apart. */
typedef void (*fht_cols_f32_fn)(float *buf, int log_n, size_t count, ptrdiff_t elem_stride);
typedef void (*fht_cols_f64_fn)(double *buf, int log_n, size_t count, ptrdiff_t elem_stride);

/* The per-ISA kernels are shared between the files of the library but are not its API:
 * hidden, so that a shared object linking libpysketch_fht.a exports (at most) the fht_*
 * functions of fht.h. */
#if defined(__GNUC__) || defined(__clang__)
#define FHT_HIDDEN __attribute__((visibility("hidden")))
#else
#define FHT_HIDDEN
#endif

#define FHT_DECLARE_ISA(isa)                                                                         \
    FHT_HIDDEN void fht_cols_##isa##_f32(float *buf, int log_n, size_t count, ptrdiff_t elem_stride); \
    FHT_HIDDEN void fht_cols_##isa##_f64(double *buf, int log_n, size_t count, ptrdiff_t elem_stride); \
    FHT_HIDDEN void fht_batch_##isa##_f32(float *dst, ptrdiff_t dst_stride, const float *src,          \
                                          ptrdiff_t src_stride, int log_n, size_t count, const float *pre, \
                                          const float *post, ptrdiff_t diag_stride);                 \
    FHT_HIDDEN void fht_batch_##isa##_f64(double *dst, ptrdiff_t dst_stride, const double *src,        \
                                          ptrdiff_t src_stride, int log_n, size_t count, const double *pre, \
                                          const double *post, ptrdiff_t diag_stride);

FHT_DECLARE_ISA(scalar)
#if defined(FHT_HAVE_X86)
FHT_DECLARE_ISA(sse)
FHT_DECLARE_ISA(avx2)
FHT_DECLARE_ISA(avx512)
#endif

#endif
