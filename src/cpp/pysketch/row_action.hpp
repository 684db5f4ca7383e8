// row_action.hpp - sequential single-row updates of a linear system F x = y (header-only,
// C++17): the randomized Kaczmarz method and single-sample SGD on the squared loss.
//
//   run(problem, rows, T, x, mode, step)
//       for t = 0 .. T-1:  i = rows[t];  r = y[i] - <F_i, x>;  x += w_t r F_i
//       mode kaczmarz: w_t = 1 / ||F_i||^2 (a row with ||F_i|| = 0 is skipped: x unchanged)
//       mode sgd:      w_t = step (a constant), i.e. x -= step * grad of (1/2)(<F_i, x> - y_i)^2
//
// F is m x p, row-major, float64, rows `stride` elements apart; y has m entries; rows holds T
// row indices in [0, m) (the sampling is the caller's); x (p entries) is updated in place.
// Every update reads the x left by the previous one, so the loop over t is inherently
// sequential: only the two passes over a row (the dot product, then the update) are vector
// work. Used by pysketch.rfm.solvers (notes seed004 sec. 1.2 and sec. 6, items 4 and 12).
//
// Arithmetic (the same on every SIMD level, since there is a single code path and no
// dispatch): the dot product <F_i, x> (and, in Kaczmarz mode, ||F_i||^2 in the same pass) is
// accumulated in `lanes` = 8 partial sums, lane k taking the entries j = k (mod 8) in
// increasing j, then summed as ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)). The weight
// is w = r / ||F_i||^2 (Kaczmarz) or w = step * r (SGD), then x[j] = x[j] + w F_i[j]. The
// fixed lane structure lets the compiler vectorize both passes without reassociating
// anything. The result therefore differs from a single running sum only by rounding.
#ifndef PYSKETCH_ROW_ACTION_HPP
#define PYSKETCH_ROW_ACTION_HPP

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace pysketch {
namespace row_action {

enum class Mode : int { kaczmarz = 0, sgd = 1 };

// The system: F (m x p, row i at F + i * stride) and y (m entries).
struct Problem {
    const double *F;
    std::ptrdiff_t stride;
    std::size_t m;
    std::size_t p;
    const double *y;
};

namespace detail {

constexpr std::size_t lanes = 8;

inline double lane_sum(const double (&s)[lanes])
{
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

// <a, x>, in the lane order described at the top.
inline double dot(const double *a, const double *x, std::size_t p)
{
    double s[lanes] = {0, 0, 0, 0, 0, 0, 0, 0};
    std::size_t j = 0;
    for (; j + lanes <= p; j += lanes)
        for (std::size_t k = 0; k < lanes; ++k) s[k] += a[j + k] * x[j + k];
    for (std::size_t k = 0; j + k < p; ++k) s[k] += a[j + k] * x[j + k];
    return lane_sum(s);
}

// <a, x> and ||a||^2 in one pass over a, each in the lane order of `dot`.
inline void dot_and_norm(const double *a, const double *x, std::size_t p, double &ax, double &aa)
{
    double s[lanes] = {0, 0, 0, 0, 0, 0, 0, 0};
    double q[lanes] = {0, 0, 0, 0, 0, 0, 0, 0};
    std::size_t j = 0;
    for (; j + lanes <= p; j += lanes)
        for (std::size_t k = 0; k < lanes; ++k) {
            s[k] += a[j + k] * x[j + k];
            q[k] += a[j + k] * a[j + k];
        }
    for (std::size_t k = 0; j + k < p; ++k) {
        s[k] += a[j + k] * x[j + k];
        q[k] += a[j + k] * a[j + k];
    }
    ax = lane_sum(s);
    aa = lane_sum(q);
}

// x += w a.
inline void axpy(double w, const double *a, double *x, std::size_t p)
{
    for (std::size_t j = 0; j < p; ++j) x[j] += w * a[j];
}

}  // namespace detail

// The T updates (see the top of the file). Returns the number of updates skipped because the
// row had zero norm (Kaczmarz mode; always 0 in SGD mode). Throws std::out_of_range, before
// touching that update, if some rows[t] is outside [0, m): x then holds the first t updates.
// x must not overlap F or y.
inline std::size_t run(const Problem &pb, const std::int64_t *rows, std::size_t T, double *x, Mode mode,
                       double step)
{
    std::size_t skipped = 0;
    const std::size_t p = pb.p;
    for (std::size_t t = 0; t < T; ++t) {
        const std::int64_t i = rows[t];
        if (i < 0 || static_cast<std::uint64_t>(i) >= pb.m)
            throw std::out_of_range("rows[" + std::to_string(t) + "] = " + std::to_string(i) +
                                    " is outside [0, " + std::to_string(pb.m) + ")");
        const double *a = pb.F + static_cast<std::ptrdiff_t>(i) * pb.stride;
        double w;
        if (mode == Mode::kaczmarz) {
            double ax = 0.0, aa = 0.0;
            detail::dot_and_norm(a, x, p, ax, aa);
            if (!(aa > 0.0)) {
                ++skipped;
                continue;
            }
            w = (pb.y[i] - ax) / aa;
        } else {
            w = step * (pb.y[i] - detail::dot(a, x, p));
        }
        detail::axpy(w, a, x, p);
    }
    return skipped;
}

}  // namespace row_action
}  // namespace pysketch

#endif
