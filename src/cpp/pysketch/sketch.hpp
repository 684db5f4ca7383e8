// sketch.hpp - fused sketching: transform a block of rows, apply the nonlinearity, add
// into float64 accumulators, next block (header-only, C++17; knows nothing of Python).
//
//   accumulate(f, t, rows, stride, n, u, acc0, acc1)
//       acc0/acc1[j] += sum over the rows of the features of the phases t[r][j] (+ u[j]):
//       cis (acc0 += cos, acc1 += sin), qcis (acc0 += 2^-1/2 sign cos, acc1 += 2^-1/2 sign
//       sin) or square (acc0 += t^2; no dither, acc1 unused): features.hpp.
//   accumulate_parallel(...)        the same, columns split over the threads.
//   sketch(phases, f, u, acc0, acc1)
//       the one sketching driver: the same for the phases Omega^T x of the rows of x, for
//       any operator bound to x that gives its phases block by block, or each record's
//       chosen features (the subsampled sketches of subsample.hpp; the concept is described
//       at the driver), never materializing more than a block of them.
//   sketch_structured(op, f, x, x_stride, rows, u, acc0, acc1)
//       the driver over StructuredPhases: rows go by L1-sized groups through each block of
//       the operator and straight into the nonlinearity and the sums.
//   sketch_dense(omega, omega_stride, d, m, f, x, x_stride, rows, u, acc0, acc1)
//       the driver over DensePhases, Omega dense (d x m): L1-sized tiles of phases
//       (dense.hpp), each straight into the nonlinearity and the sums.
//
// Determinism: every sum has a fixed order whatever the number of threads. Within one
// accumulation the columns are summed over rows in row order (float64), or exactly in
// fixed point (float32 features, see features.hpp); sketch_structured and sketch_dense cut the rows into
// pieces of a size that depends only on the operator, sums each piece into its own
// buffer, and adds the pieces into the accumulators strictly in order. So a sketch is the
// same to the last bit for 1 or 2 threads (and for every instruction set: the transforms
// and the nonlinearities are bit-identical across paths).
#ifndef PYSKETCH_SKETCH_HPP
#define PYSKETCH_SKETCH_HPP

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "pysketch/dense.hpp"
#include "pysketch/features.hpp"
#include "pysketch/operators.hpp"
#include "pysketch/parallel.hpp"
#include "pysketch/scratch.hpp"

namespace pysketch {
namespace sketch {

// The nonlinearities and their accumulations (features.hpp), by their short names here.
using features::accumulate;
using features::Nonlinearity;

namespace detail {

// Rows whose features are accumulated in one call: the accumulators of a block are read
// and written once per call, so the calls take several L1-sized transform groups at once
// (up to 64 rows, about 128 KiB of phases, which stay in L2).
template <class T>
std::size_t wide_rows(const operators::Structured<T> &op)
{
    const std::size_t g = operators::detail::group_rows<T>(op.log_dp);
    const std::size_t want = std::min<std::size_t>(64, std::max<std::size_t>(1, (std::size_t{1} << 17) / (op.dp() * sizeof(T))));
    return std::max(g, want / g * g);
}

// Rows per piece of the ordered reduction: about 2^21 outputs of work, a whole number of
// wide groups; it depends on the operator only, never on the thread count.
template <class T>
std::size_t piece_rows(const operators::Structured<T> &op)
{
    const std::size_t w = wide_rows(op);
    const std::size_t want = std::max<std::size_t>(1, (std::size_t{1} << 21) / op.width());
    return (want + w - 1) / w * w;
}

}  // namespace detail

// accumulate() with the columns split over the threads (each thread owns its columns, so
// the sums are the same as on one thread).
template <class T>
void accumulate_parallel(Nonlinearity f, const T *t, std::size_t rows, std::ptrdiff_t stride, std::size_t n,
                         const T *u, double *acc0, double *acc1)
{
    if (rows == 0 || n == 0) return;
    const int threads = get_num_threads();
    constexpr std::size_t col_step = 64;  // whole cache lines of accumulators per range
    const std::size_t strips = (n + col_step - 1) / col_step;
    auto work = [&](std::size_t begin, std::size_t end) {
        const std::size_t j0 = begin * col_step, j1 = std::min(n, end * col_step);
        accumulate<T>(f, t + j0, rows, stride, j1 - j0, u ? u + j0 : nullptr, acc0 + j0, acc1 ? acc1 + j0 : nullptr);
    };
    if (threads > 1 && strips > 1 && rows * n >= (std::size_t{1} << 16))
        parallel_for(strips, static_cast<std::size_t>(threads), work);
    else
        work(0, strips);
}

namespace detail {

// Runs body(p0, p1, l0, l1) for the pieces [p * piece, min(rows, (p + 1) * piece)) of the
// rows, on the threads, and adds each piece's sums into acc0/acc1 strictly in piece order.
// body adds the sums of its rows into l0 (and l1 when `two`), m values each: a per-thread
// buffer cleared before the call, or acc0/acc1 themselves when there is a single piece (no
// buffer to clear and merge: the per-call cost of one record at a time; the choice depends
// only on the number of rows, so the results stay the same for any thread count). Pieces
// are claimed one at a time in increasing order, so a thread finishing piece p waits at most
// for the piece before it, which another thread is finishing at the same time.
template <class Body>
void ordered_pieces(std::size_t rows, std::size_t piece, std::size_t m, bool two, double *acc0, double *acc1,
                    Body &&body)
{
    const std::size_t pieces = (rows + piece - 1) / piece;
    std::mutex mu;
    std::condition_variable cv;
    std::size_t merged = 0;  // pieces added so far
    bool failed = false;     // a piece threw: release the pieces waiting for it
    auto piece_task = [&](std::size_t p) {
        const bool alone = pieces == 1;
        double *const l0 = alone ? acc0 : scratch::aligned<double>(scratch::Buffer::piece_sums, two ? 2 * m : m);
        double *const l1 = alone ? acc1 : two ? l0 + m : nullptr;
        try {
            if (!alone) std::fill_n(l0, two ? 2 * m : m, 0.0);
            body(p * piece, std::min(rows, (p + 1) * piece), l0, l1);
            if (alone) return;
            std::unique_lock<std::mutex> lock(mu);
            cv.wait(lock, [&] { return merged == p || failed; });
            if (failed) return;
            for (std::size_t j = 0; j < m; ++j) acc0[j] += l0[j];
            if (two)
                for (std::size_t j = 0; j < m; ++j) acc1[j] += l1[j];
            ++merged;
            lock.unlock();
            cv.notify_all();
        } catch (...) {
            {
                std::lock_guard<std::mutex> lock(mu);
                failed = true;
            }
            cv.notify_all();
            throw;
        }
    };
    const int threads = get_num_threads();
    if (threads > 1 && pieces > 1) {
        global_thread_pool().run(pieces, static_cast<std::size_t>(threads), piece_task);
    } else {
        for (std::size_t p = 0; p < pieces; ++p) piece_task(p);
    }
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// The sketching driver
// ---------------------------------------------------------------------------------------------
//
// sketch(phases, f, u, acc0, acc1) adds the features f(Omega^T x_r (+ u)) of the rows of x
// into acc0/acc1, for any operator that gives its phases block by block, or only some of them
// (subsample.hpp: each record's chosen features, the sums rescaled). An operator bound to its
// input (the "phases" argument; Phases<T> below for each operator) provides:
//
//   using value_type                  T, the element type of x and of the phases
//   std::size_t rows() const          the number of rows of x
//   std::size_t width() const         m, the number of phases of a row
//   std::size_t piece_rows() const    rows per piece of the ordered reduction (a function of the
//                                     operator only, never of the thread count)
//   static constexpr bool rescaled    whether the sums are multiplied by scale() (double) before
//                                     they are added to acc0/acc1
//   void phases(r0, r1, sink) const   the phases of the rows [r0, r1) as calls of
//     sink(t, count, stride, col, width)   the phases of `count` consecutive rows (row k at
//                                     t + k * stride) in the columns [col, col + width); for
//                                     each column the rows come in increasing order
//     sink.chosen(t, idx, n)          n phases t[k] of the features idx[k], u already added
//                                     (rounded to T); features in the order of the rows
//
// The driver cuts the rows into pieces, sends each piece's phases straight into the
// nonlinearity and the piece's sums (detail::PieceSums; never materializing the phases of more
// than a block), and merges the pieces in order (detail::ordered_pieces): into acc0/acc1, or,
// when rescaled, into zeroed sums, then acc += scale() * sums. A new operator is one more Phases
// type; a new feature is one more features.hpp policy behind `f`.

namespace detail {

// The sums of one piece of rows (l0, and l1 when f fills two accumulators; m values each),
// where the driver sends its phases (see above). Chosen features are summed apart
// (features::scatter: the two parts of a feature side by side) and added to l0/l1 by finish(),
// after the piece's blocks.
template <class T>
class PieceSums {
  public:
    PieceSums(Nonlinearity f, bool two, const T *u, std::size_t m, double *l0, double *l1)
        : f_(f), two_(two), u_(u), m_(m), l0_(l0), l1_(l1)
    {
    }

    void operator()(const T *t, std::size_t count, std::ptrdiff_t stride, std::size_t col, std::size_t width)
    {
        accumulate<T>(f_, t, count, stride, width, u_ ? u_ + col : nullptr, l0_ + col, two_ ? l1_ + col : nullptr);
    }

    void chosen(const T *t, const std::uint32_t *idx, std::size_t n)
    {
        if (n == 0) return;
        if (!chosen_) {
            chosen_ = scratch::grown<double>(scratch::Buffer::scatter_sums, two_ ? 2 * m_ : m_);
            std::fill_n(chosen_, two_ ? 2 * m_ : m_, 0.0);
        }
        features::scatter<T>(f_, t, idx, n, chosen_);
    }

    void finish()
    {
        if (!chosen_) return;
        if (!two_) {
            for (std::size_t j = 0; j < m_; ++j) l0_[j] += chosen_[j];
            return;
        }
        for (std::size_t j = 0; j < m_; ++j) {
            l0_[j] += chosen_[2 * j];
            l1_[j] += chosen_[2 * j + 1];
        }
    }

  private:
    Nonlinearity f_;
    bool two_;
    const T *u_;
    std::size_t m_;
    double *l0_, *l1_;
    double *chosen_ = nullptr;  // the chosen features' sums, once there are some
};

}  // namespace detail

template <class Phases>
void sketch(const Phases &phases, Nonlinearity f, const typename Phases::value_type *u, double *acc0, double *acc1)
{
    using T = typename Phases::value_type;
    const bool two = features::has_two(f);
    if (!acc0 || (two && !acc1)) throw std::invalid_argument("sketch: missing accumulator");
    const std::size_t rows = phases.rows(), m = phases.width();
    if (rows == 0 || m == 0) return;
    auto piece = [&](std::size_t p0, std::size_t p1, double *l0, double *l1) {
        detail::PieceSums<T> sums(f, two, u, m, l0, l1);
        phases.phases(p0, p1, sums);
        sums.finish();
    };
    if constexpr (Phases::rescaled) {
        std::vector<double> sums(two ? 2 * m : m, 0.0);
        double *s0 = sums.data(), *s1 = two ? s0 + m : nullptr;
        detail::ordered_pieces(rows, phases.piece_rows(), m, two, s0, s1, piece);
        const double scale = phases.scale();
        for (std::size_t j = 0; j < m; ++j) acc0[j] += scale * s0[j];
        if (two)
            for (std::size_t j = 0; j < m; ++j) acc1[j] += scale * s1[j];
    } else {
        detail::ordered_pieces(rows, phases.piece_rows(), m, two, acc0, acc1, piece);
    }
}

// A structured operator bound to the rows of x: rows go by L1-sized groups through each block
// of the operator (or, a few rows at a time, through sweeps of blocks), each block's outputs
// one phase block.
template <class T>
class StructuredPhases {
  public:
    using value_type = T;
    static constexpr bool rescaled = false;

    StructuredPhases(const operators::Structured<T> &op, const T *x, std::ptrdiff_t x_stride, std::size_t rows)
        : op_(op), x_(x), x_stride_(x_stride), rows_(rows),
          direct_(op.d == op.dp() && (rows == 1 || x_stride >= static_cast<std::ptrdiff_t>(op.dp()))),
          wide_(detail::wide_rows(op))
    {
    }

    std::size_t rows() const { return rows_; }
    std::size_t width() const { return op_.m; }
    std::size_t piece_rows() const { return detail::piece_rows(op_); }

    template <class Sink>
    void phases(std::size_t p0, std::size_t p1, Sink &&sink) const
    {
        const operators::Structured<T> &op = op_;
        const std::size_t dp = op.dp(), m = op.m, g = operators::detail::group_rows<T>(op.log_dp);
        const std::size_t wide = wide_;
        T *const pad = direct_ ? nullptr : scratch::aligned<T>(scratch::Buffer::padded_input, wide * dp);
        // buf also holds the few-rows sweeps below (each thread's scratch is sized once here:
        // growing it later would move it)
        const std::size_t per = std::min(op.blocks, operators::detail::blocks_per_sweep<T>(op.log_dp));
        const std::size_t few = operators::detail::few_rows - 1;
        T *const buf = scratch::aligned<T>(scratch::Buffer::block_output, std::max(wide, few * per) * dp);
        T *const tmp = op.kind == operators::Kind::fastfood
                           ? scratch::aligned<T>(scratch::Buffer::fastfood_tmp, std::max(g, per) * dp)
                           : nullptr;
        for (std::size_t w0 = p0; w0 < p1; w0 += wide) {
            const std::size_t wcount = std::min(wide, p1 - w0);
            const T *src = x_ + static_cast<std::ptrdiff_t>(w0) * x_stride_;
            std::ptrdiff_t src_stride = x_stride_;
            if (!direct_) {
                operators::detail::load_padded(src, x_stride_, wcount, op.d, dp, pad);
                src = pad;
                src_stride = static_cast<std::ptrdiff_t>(dp);
            }
            if (wcount < operators::detail::few_rows && op.blocks > 1) {
                // few rows: each through a sweep of blocks at once (operators.hpp), then the
                // same phase blocks as below, block by block, so the same sums
                for (std::size_t k0 = 0; k0 < op.blocks; k0 += per) {
                    const std::size_t nb = std::min(per, op.blocks - k0);
                    const auto rs = static_cast<std::ptrdiff_t>(nb * dp);
                    for (std::size_t r = 0; r < wcount; ++r)
                        operators::detail::forward_blocks(op, k0, nb, src + static_cast<std::ptrdiff_t>(r) * src_stride,
                                                          buf + r * nb * dp, tmp);
                    for (std::size_t j = 0; j < nb; ++j) {
                        const std::size_t col = (k0 + j) * dp;
                        sink(static_cast<const T *>(buf + j * dp), wcount, rs, col, std::min(dp, m - col));
                    }
                }
                continue;
            }
            for (std::size_t k = 0; k < op.blocks; ++k) {
                // L1-sized transforms into the wide buffer, then one phase block
                for (std::size_t r0 = 0; r0 < wcount; r0 += g) {
                    const std::size_t count = std::min(g, wcount - r0);
                    T *dst = buf + r0 * dp;
                    operators::detail::forward_block(op, k, src + static_cast<std::ptrdiff_t>(r0) * src_stride,
                                                     src_stride, dst, static_cast<std::ptrdiff_t>(dp), dst, tmp,
                                                     count);
                }
                const std::size_t col = k * dp;
                sink(static_cast<const T *>(buf), wcount, static_cast<std::ptrdiff_t>(dp), col, std::min(dp, m - col));
            }
        }
    }

  private:
    const operators::Structured<T> &op_;
    const T *x_;
    std::ptrdiff_t x_stride_;
    std::size_t rows_;
    bool direct_;
    std::size_t wide_;
};

// Tiles of the dense sketch: rows x columns of phases made at a time (32 KiB, in L1), and
// the rows of a piece of the ordered reduction (about 2^21 outputs of work, a whole number
// of tile rows; it depends on m only, never on the thread count).
constexpr std::size_t dense_tile_rows = 16;
template <class T>
constexpr std::size_t dense_tile_cols()
{
    return (std::size_t{32} << 10) / (dense_tile_rows * sizeof(T));
}

// A dense Omega (d x m, row-major, `omega_stride` elements between its rows) bound to the rows
// of x: the phases are made a tile at a time (dense.hpp), each tile one phase block. The
// columns are walked in strips of a tile's width (Omega's strip stays in cache for all the
// rows of a piece), the rows of each strip in order.
template <class T>
class DensePhases {
  public:
    using value_type = T;
    static constexpr bool rescaled = false;

    DensePhases(const T *omega, std::ptrdiff_t omega_stride, std::size_t d, std::size_t m, const T *x,
                std::ptrdiff_t x_stride, std::size_t rows)
        : omega_(omega), omega_stride_(omega_stride), d_(d), m_(m), x_(x), x_stride_(x_stride), rows_(rows)
    {
    }

    std::size_t rows() const { return rows_; }
    std::size_t width() const { return m_; }
    std::size_t piece_rows() const
    {
        const std::size_t want = std::max<std::size_t>(1, (std::size_t{1} << 21) / m_);
        return (want + dense_tile_rows - 1) / dense_tile_rows * dense_tile_rows;
    }

    template <class Sink>
    void phases(std::size_t p0, std::size_t p1, Sink &&sink) const
    {
        constexpr std::size_t tr = dense_tile_rows, tc = dense_tile_cols<T>();
        T *const tile = scratch::aligned<T>(scratch::Buffer::block_output, tr * tc);
        for (std::size_t c0 = 0; c0 < m_; c0 += tc) {
            const std::size_t width = std::min(tc, m_ - c0);
            for (std::size_t r0 = p0; r0 < p1; r0 += tr) {
                const std::size_t count = std::min(tr, p1 - r0);
                dense::phases<T>(x_ + static_cast<std::ptrdiff_t>(r0) * x_stride_, x_stride_, count, d_, omega_ + c0,
                                 omega_stride_, width, tile, static_cast<std::ptrdiff_t>(tc));
                sink(static_cast<const T *>(tile), count, static_cast<std::ptrdiff_t>(tc), c0, width);
            }
        }
    }

  private:
    const T *omega_;
    std::ptrdiff_t omega_stride_;
    std::size_t d_, m_;
    const T *x_;
    std::ptrdiff_t x_stride_;
    std::size_t rows_;
};

// acc0/acc1 += the sums of the features f(Omega^T x_r (+ u)) over the rows of x, Omega a
// structured operator.
template <class T>
void sketch_structured(const operators::Structured<T> &op, Nonlinearity f, const T *x, std::ptrdiff_t x_stride,
                       std::size_t rows, const T *u, double *acc0, double *acc1)
{
    operators::validate(op);
    if (rows == 0) return;
    sketch(StructuredPhases<T>(op, x, x_stride, rows), f, u, acc0, acc1);
}

// The same with a dense Omega (d x m, row-major, `omega_stride` elements between its rows).
template <class T>
void sketch_dense(const T *omega, std::ptrdiff_t omega_stride, std::size_t d, std::size_t m, Nonlinearity f,
                  const T *x, std::ptrdiff_t x_stride, std::size_t rows, const T *u, double *acc0, double *acc1)
{
    if (rows == 0 || m == 0) return;
    if (d == 0) throw std::invalid_argument("sketch_dense: d must be >= 1");
    sketch(DensePhases<T>(omega, omega_stride, d, m, x, x_stride, rows), f, u, acc0, acc1);
}

// lo[j] = min(lo[j], min over the rows of x[r][j]), hi[j] likewise with max, for j < d:
// the bounding box of the records, a reduction that merges across batches (x finite;
// a NaN is not ordered and may or may not be skipped). Rows on the threads; min and max
// are exact, so the result does not depend on the thread count.
template <class T>
void column_bounds(const T *x, std::ptrdiff_t stride, std::size_t rows, std::size_t d, double *lo, double *hi)
{
    if (rows == 0 || d == 0) return;
    std::mutex mu;
    auto work = [&](std::size_t r0, std::size_t r1) {
        std::vector<T> l(x + static_cast<std::ptrdiff_t>(r0) * stride,
                         x + static_cast<std::ptrdiff_t>(r0) * stride + static_cast<std::ptrdiff_t>(d));
        std::vector<T> h(l);
        for (std::size_t r = r0 + 1; r < r1; ++r) {
            const T *row = x + static_cast<std::ptrdiff_t>(r) * stride;
            for (std::size_t j = 0; j < d; ++j) {
                l[j] = row[j] < l[j] ? row[j] : l[j];
                h[j] = row[j] > h[j] ? row[j] : h[j];
            }
        }
        std::lock_guard<std::mutex> lock(mu);
        for (std::size_t j = 0; j < d; ++j) {
            lo[j] = std::min(lo[j], static_cast<double>(l[j]));
            hi[j] = std::max(hi[j], static_cast<double>(h[j]));
        }
    };
    const std::size_t threads = rows * d >= (std::size_t{1} << 18) ? static_cast<std::size_t>(get_num_threads()) : 1;
    parallel_for(rows, threads, work);
}

}  // namespace sketch
}  // namespace pysketch

#endif  // PYSKETCH_SKETCH_HPP
