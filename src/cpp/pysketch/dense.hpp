// dense.hpp - small dense products for fused sketching (header-only, C++17).
//
//   phases(x, x_stride, rows, d, w, w_stride, n, t, t_stride)
//       t[r][j] = sum_{i < d} x[r][i] w[i][j]   for r < rows, j < n
//
// A tile of the phases X Omega, made where the nonlinearity consumes it (sketch.hpp): the
// products of a few rows with a strip of columns of a dense Omega (d x m, row-major), meant
// for small d (where a BLAS call per tile costs more than the arithmetic and a whole-matrix
// product would leave the L2 cache).
//
// Every output is the same chain of roundings on every instruction set:
// t = x[0] w[0], then t = fma(x[i], w[i], t) for i = 1 .. d-1 (one rounding per fma). The
// AVX-512F and AVX2+FMA paths (chosen at run time by simd::level(), with simd.hpp's vector
// operations) vectorize over j; the portable path (the "sse" and "scalar" levels and other
// CPUs) uses std::fma; so the phases, and the sketches made from them, are bit-identical
// across levels. Register blocking: 4 rows x 2 vectors of columns per inner loop (8
// accumulators, each Omega vector used for 4 rows), then single rows, single vectors and
// the last columns one at a time.
#ifndef PYSKETCH_DENSE_HPP
#define PYSKETCH_DENSE_HPP

#include <cmath>
#include <cstddef>

#include "pysketch/simd.hpp"

namespace pysketch {
namespace dense {
namespace detail {

// One output, the reference chain (also the tail of the vector paths).
template <class T>
inline T dot_column(const T *x, std::size_t d, const T *w, std::ptrdiff_t ws)
{
    T t = x[0] * w[0];
    for (std::size_t i = 1; i < d; ++i) t = std::fma(x[i], w[static_cast<std::ptrdiff_t>(i) * ws], t);
    return t;
}

template <class T>
void phases_portable(const T *x, std::ptrdiff_t xs, std::size_t rows, std::size_t d, const T *w,
                     std::ptrdiff_t ws, std::size_t n, T *t, std::ptrdiff_t ts)
{
    for (std::size_t r = 0; r < rows; ++r) {
        const T *xr = x + static_cast<std::ptrdiff_t>(r) * xs;
        T *tr = t + static_cast<std::ptrdiff_t>(r) * ts;
        for (std::size_t j = 0; j < n; ++j) tr[j] = dot_column(xr, d, w + j, ws);
    }
}

#if defined(PYSKETCH_SIMD_X86)

// The vector kernels, written once for both sets (dense_loops.inc) and compiled for each.
PYSKETCH_SIMD_BEGIN_AVX512
namespace avx512 {
#include "pysketch/dense_loops.inc"
}  // namespace avx512
PYSKETCH_SIMD_END

PYSKETCH_SIMD_BEGIN_AVX2
namespace avx2 {
#include "pysketch/dense_loops.inc"
}  // namespace avx2
PYSKETCH_SIMD_END

#endif  // PYSKETCH_SIMD_X86

}  // namespace detail

// t[r * t_stride + j] = sum_{i < d} x[r * x_stride + i] * w[i * w_stride + j] for r < rows,
// j < n (d >= 1; the chain of roundings above). t must not overlap x or w.
template <class T>
void phases(const T *x, std::ptrdiff_t x_stride, std::size_t rows, std::size_t d, const T *w,
            std::ptrdiff_t w_stride, std::size_t n, T *t, std::ptrdiff_t t_stride)
{
    if (rows == 0 || n == 0 || d == 0) return;
#if defined(PYSKETCH_SIMD_X86)
    switch (simd::level()) {
    case simd::Level::avx512:
        detail::avx512::phases<simd::Avx512<T>>(x, x_stride, rows, d, w, w_stride, n, t, t_stride);
        return;
    case simd::Level::avx2:
        detail::avx2::phases<simd::Avx2<T>>(x, x_stride, rows, d, w, w_stride, n, t, t_stride);
        return;
    default: break;
    }
#endif
    detail::phases_portable(x, x_stride, rows, d, w, w_stride, n, t, t_stride);
}

}  // namespace dense
}  // namespace pysketch

#endif  // PYSKETCH_DENSE_HPP
