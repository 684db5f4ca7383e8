// nearest.hpp - the nearest of k centers for every record, and its squared distance
// (header-only, C++17; knows nothing of Python): the labels, inertia, predict and score of
// the k-means estimators, in one pass over the records instead of an (n, k) matrix.
//
//   nearest(x, x_stride, rows, d, c, k, labels, d2)
//       labels[r] = the first j minimising sum_i (x[r][i] - c[j][i])^2 (the sum in double,
//       from the differences, over i in increasing order), d2[r] = that minimum (d2 may be
//       null). Rows on the threads; each row is computed alone, so the result does not
//       depend on the thread count. Inputs finite (the caller checks).
#ifndef PYSKETCH_NEAREST_HPP
#define PYSKETCH_NEAREST_HPP

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "pysketch/parallel.hpp"

namespace pysketch {
namespace nearest {

// Centers per tile: their running sums stay in registers while a record's coordinates stream.
inline constexpr std::size_t tile = 8;

template <class T>
void rows_range(const T *x, std::ptrdiff_t x_stride, std::size_t r0, std::size_t r1, std::size_t d, const double *ct,
                std::size_t k, std::int64_t *labels, double *d2)
{
    // ct is the centers transposed and padded: ct[i * kp + j] = c[j][i], kp a multiple of tile.
    const std::size_t kp = (k + tile - 1) / tile * tile;
    for (std::size_t r = r0; r < r1; ++r) {
        const T *row = x + static_cast<std::ptrdiff_t>(r) * x_stride;
        double best = std::numeric_limits<double>::infinity();
        std::int64_t arg = 0;
        for (std::size_t j0 = 0; j0 < k; j0 += tile) {
            double s[tile] = {};
            for (std::size_t i = 0; i < d; ++i) {
                const double v = static_cast<double>(row[i]);
                const double *c = ct + i * kp + j0;
                for (std::size_t t = 0; t < tile; ++t) {
                    const double e = v - c[t];
                    s[t] += e * e;
                }
            }
            const std::size_t width = k - j0 < tile ? k - j0 : tile;
            for (std::size_t t = 0; t < width; ++t) {
                if (s[t] < best || (j0 + t == 0)) {
                    best = s[t];
                    arg = static_cast<std::int64_t>(j0 + t);
                }
            }
        }
        labels[r] = arg;
        if (d2) d2[r] = best;
    }
}

// c: k x d, row-major (c_stride elements between centers). k >= 1.
template <class T>
void nearest(const T *x, std::ptrdiff_t x_stride, std::size_t rows, std::size_t d, const double *c,
             std::ptrdiff_t c_stride, std::size_t k, std::int64_t *labels, double *d2)
{
    if (rows == 0) return;
    const std::size_t kp = (k + tile - 1) / tile * tile;
    std::vector<double> ct(d * kp, 0.0);
    for (std::size_t j = 0; j < k; ++j)
        for (std::size_t i = 0; i < d; ++i) ct[i * kp + j] = c[static_cast<std::ptrdiff_t>(j) * c_stride + i];
    const std::size_t work = rows * d * kp;
    const std::size_t threads = work >= (std::size_t{1} << 16) ? static_cast<std::size_t>(get_num_threads()) : 1;
    parallel_for(rows, threads, [&](std::size_t r0, std::size_t r1) {
        rows_range(x, x_stride, r0, r1, d, ct.data(), k, labels, d2);
    });
}

}  // namespace nearest
}  // namespace pysketch

#endif  // PYSKETCH_NEAREST_HPP
