// subsample.hpp - feature subsampling in the sketch accumulator (header-only, C++17; knows
// nothing of Python or of privacy).
//
// Each record x_i contributes only the features of a random mask h_i in {0,1}^m, and the sum
// is rescaled by m / r so that its expectation is the full sum (notes seed000 sec. 4.2;
// Chatalic et al., "Compressive learning with privacy guarantees", Def. 20):
//
//     Sigma_H(X) = (m / r) sum_i Phi(x_i) (.) h_i
//
// Only the chosen features are computed. The masks (sec. 4.1 of the notes):
//
//   Scheme::uniform    h uniform among the masks with exactly r ones: r DISTINCT features per
//                      record (Floyd's algorithm: r draws, no rejection of duplicates).
//   Scheme::bernoulli  each feature kept independently with probability alpha = r / m (the
//                      number of features per record is Binomial(m, alpha)); drawn by
//                      geometric skips, about r draws per record.
//   Scheme::blocks     whole blocks of `block` consecutive features: r / block distinct blocks
//                      among m / block, uniformly (structured operators, block = d_p: only the
//                      chosen blocks' fast transforms are run).
//
// For complex features a chosen feature j contributes both its real and imaginary parts
// (cos and sin), as the notes require (sec. 4.3).
//
//   sketch_dense_subsampled(omega_t, d, m, f, x, x_stride, rows, u, spec, key, first, acc0, acc1)
//       omega_t: Omega^T (m x d, row-major: row j is the frequency omega_j), so that one
//       feature's weights are contiguous. Phases of the chosen features only (vector gathers
//       on AVX-512 / AVX2), then the nonlinearity (sincos.hpp's kernels) and a scatter-add.
//   sketch_structured_subsampled(op, f, x, x_stride, rows, u, spec, key, first, acc0, acc1)
//       blocks: the records are bucketed by chosen block and each block's transform runs on
//       its bucket only, straight into sketch.hpp's accumulation. uniform / bernoulli: the
//       blocks holding at least one chosen feature are transformed, one record at a time.
//   record_mask(spec, key, record)    the sorted features of one record's mask (blocks expanded):
//       the same draws as the sketches make, for tests.
//
// Randomness: a 128-bit key given by the caller. Record number `first + i` (its position in
// the stream) gets its own generator: Philox4x64-10 (Salmon et al., "Parallel random numbers:
// as easy as 1, 2, 3", SC 2011) of the counter (record, 0, 0x5375627361, 0) under the key gives
// the 256-bit state of a xoshiro256++ generator (Blackman & Vigna, 2019), which draws that
// record's mask. So the masks depend on the key and the record's position only: the same for
// any number of threads and any split of the stream into batches, independent across records.
//
// Values and determinism: the phases are the same chain of roundings as dense.hpp (t = x_0 w_0,
// then fma over i; + u_j rounded to T) on every instruction set, and the features the values
// sincos.hpp adds for those phases, so each chosen feature equals the corresponding entry of
// the full feature map. The scaled sum accumulates the records' features in record order per
// column, in pieces of rows that depend on (m, r, d) only, added in order (sketch.hpp's
// ordered_pieces), then acc += (m / r) * sum: the result is the same to the last bit for any
// thread count and instruction set. (The Bernoulli skips use std::log: reproducible on one
// platform and C library.)
#ifndef PYSKETCH_SUBSAMPLE_HPP
#define PYSKETCH_SUBSAMPLE_HPP

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "pysketch/masks.hpp"
#include "pysketch/operators.hpp"
#include "pysketch/scratch.hpp"
#include "pysketch/simd.hpp"
#include "pysketch/sincos.hpp"
#include "pysketch/sketch.hpp"

namespace pysketch {
namespace subsample {

// The masks and their random numbers (masks.hpp, random.hpp), by their short names here.
using masks::draw_mask;
using masks::IndexList;
using masks::Marks;
using masks::MaskSpec;
using masks::record_mask;
using masks::Scheme;
using masks::validate;
using random::Key;
using random::philox4x64;
using random::record_generator;
using random::Xoshiro256pp;

// ---------------------------------------------------------------------------------------------
// Phases of chosen features (dense Omega)
// ---------------------------------------------------------------------------------------------
//
// Two ways, chosen from (r, m) only, with the same values (the chain of dense.hpp: t = x_0 w_0,
// then t = fma(x_i, w_i, t), then + u_j rounded to T):
//   gather  (r < m / strip_ratio): the chosen frequencies only, from Omega^T (m x d, row j =
//           omega_j, so that one frequency is a few cache lines): vector gathers over lanes of
//           chosen features, d of them per lane group; below 16 features per record, the lanes
//           take (record, feature) pairs of a whole group of records (x gathered too).
//   strips  (otherwise): dense.hpp's tiles of phases (16 records x a strip of columns, Omega
//           streamed as in the full sketch), from which the chosen ones are picked. Per chosen
//           feature this costs m / r streamed multiply-adds instead of d gathered ones, which
//           is less once r is more than about m / 32 (measured: benchmarks/reports/subsample_report.py).
// The nonlinearity and the accumulation see only the chosen features either way.

inline constexpr std::size_t strip_ratio = 32;

namespace detail {

// out[k] = phase of feature idx[k] for the record x (a row of d values), k < n.
template <class T>
void phases_portable(const T *wt, std::size_t d, const T *x, const std::uint32_t *idx, std::size_t n, const T *u,
                     T *out)
{
    for (std::size_t k = 0; k < n; ++k) {
        const T *w = wt + static_cast<std::size_t>(idx[k]) * d;
        T t = x[0] * w[0];
        for (std::size_t i = 1; i < d; ++i) t = std::fma(x[i], w[i], t);
        if (u) t = t + u[idx[k]];
        out[k] = t;
    }
}

// out[k] = phase of feature idx[k] for the record xs + rec[k] * d (pairs), k < n.
template <class T>
void pair_phases_portable(const T *wt, std::size_t d, const T *xs, const std::uint32_t *idx, const std::uint32_t *rec,
                          std::size_t n, const T *u, T *out)
{
    for (std::size_t k = 0; k < n; ++k) {
        const T *w = wt + static_cast<std::size_t>(idx[k]) * d;
        const T *x = xs + static_cast<std::size_t>(rec[k]) * d;
        T t = x[0] * w[0];
        for (std::size_t i = 1; i < d; ++i) t = std::fma(x[i], w[i], t);
        if (u) t = t + u[idx[k]];
        out[k] = t;
    }
}

#if defined(PYSKETCH_SIMD_X86)

// The gathered phases, written once for both sets (subsample_loops.inc) and compiled for each.
PYSKETCH_SIMD_BEGIN_AVX512
namespace avx512 {
#include "pysketch/subsample_loops.inc"
}  // namespace avx512
PYSKETCH_SIMD_END

PYSKETCH_SIMD_BEGIN_AVX2
namespace avx2 {
#include "pysketch/subsample_loops.inc"
}  // namespace avx2
PYSKETCH_SIMD_END

#endif  // PYSKETCH_SIMD_X86

}  // namespace detail

// Phases of chosen features from Omega^T (m x d, row j = omega_j; every index < m), the same
// bits on every level and as dense.hpp:
//   rec == nullptr: out[k] = omega_{idx[k]}^T x (+ u[idx[k]])              (one record x)
//   otherwise:      out[k] = omega_{idx[k]}^T x_{rec[k]} (+ u[idx[k]])     (x_q = x + q * d)
template <class T>
void phases_selected(const T *wt, std::size_t d, std::size_t m, const T *x, const std::uint32_t *idx,
                     const std::uint32_t *rec, std::size_t records, std::size_t n, const T *u, T *out)
{
    if (n == 0) return;
#if defined(PYSKETCH_SIMD_X86)
    // 32-bit gather offsets: j * d + i and q * d + i must fit in an int
    const std::size_t reach = std::max(m, records) * d;
    if (reach <= static_cast<std::size_t>(std::numeric_limits<int>::max())) {
        switch (simd::level()) {
        case simd::Level::avx512:
            if (rec) detail::avx512::chosen_phases<simd::Avx512<T>, true>(wt, d, x, idx, rec, n, u, out);
            else detail::avx512::chosen_phases<simd::Avx512<T>, false>(wt, d, x, idx, rec, n, u, out);
            return;
        case simd::Level::avx2:
            if (rec) detail::avx2::chosen_phases<simd::Avx2<T>, true>(wt, d, x, idx, rec, n, u, out);
            else detail::avx2::chosen_phases<simd::Avx2<T>, false>(wt, d, x, idx, rec, n, u, out);
            return;
        default: break;
        }
    }
#else
    (void)m;
    (void)records;
#endif
    if (rec) detail::pair_phases_portable(wt, d, x, idx, rec, n, u, out);
    else detail::phases_portable(wt, d, x, idx, n, u, out);
}

// ---------------------------------------------------------------------------------------------
// Sketches
// ---------------------------------------------------------------------------------------------
//
// The subsampled operators below are Phases of sketch.hpp's driver: they give the chosen
// phases of each record (sink.chosen, or whole phase blocks for the blocks scheme) and their
// sums are rescaled by m / r.

namespace detail {

// Records per group in the gather way: about 1024 chosen features per call of the nonlinearity.
inline std::size_t group_records(std::size_t r) { return std::clamp<std::size_t>((1024 + r - 1) / r, 1, 64); }

// Rows per piece of the ordered reduction: about 2^22 operations of work, a whole number of
// groups, and never fewer than needed to make the per-piece clearing of the m sums small; it
// depends on (m, r, d) only, never on the thread count.
inline std::size_t piece_records(std::size_t m, std::size_t r, std::size_t d, std::size_t group)
{
    const std::size_t per_row = std::max<std::size_t>(1, r * (d + 16));
    const std::size_t want = std::max<std::size_t>({1, (std::size_t{1} << 22) / per_row, 8 * m / std::max<std::size_t>(1, r)});
    return (want + group - 1) / group * group;
}

inline double scale_of(const MaskSpec &spec)
{
    return static_cast<double>(spec.m) / static_cast<double>(spec.r);
}

// Draws the masks of records first .. first + count - 1 into idx (record after record); rec[e]
// is the record (0 .. count - 1) of entry e.
inline void draw_group(const MaskSpec &spec, Key key, std::uint64_t first, std::size_t count, bool sorted,
                       IndexList &idx, IndexList &rec)
{
    Marks &marks = scratch::local<Marks>(scratch::Buffer::mask_marks);
    idx.clear();
    rec.clear();
    for (std::size_t q = 0; q < count; ++q) {
        Xoshiro256pp rng = record_generator(key, first + q);
        draw_mask(spec, rng, marks, sorted, idx);
        std::uint32_t *p = rec.extend(idx.size() - rec.size());
        std::fill(p, rec.data() + rec.size(), static_cast<std::uint32_t>(q));
    }
}

}  // namespace detail

// A dense Omega, given both ways (omega: d x m, row-major, `omega_stride` elements between rows;
// omega_t = Omega^T, m x d, C-contiguous), bound to the rows of x and their masks (scheme
// uniform or bernoulli).
template <class T>
class DenseSubsampledPhases {
  public:
    using value_type = T;
    static constexpr bool rescaled = true;

    DenseSubsampledPhases(const T *omega, std::ptrdiff_t omega_stride, const T *omega_t, std::size_t d,
                          std::size_t m, const T *x, std::ptrdiff_t x_stride, std::size_t rows, const T *u,
                          const MaskSpec &spec, Key key, std::uint64_t first)
        : omega_(omega), omega_stride_(omega_stride), omega_t_(omega_t), d_(d), m_(m), x_(x), x_stride_(x_stride),
          rows_(rows), u_(u), spec_(spec), key_(key), first_(first), strips_(strip_ratio * spec.r >= m),
          group_(strips_ ? sketch::dense_tile_rows : detail::group_records(spec.r))
    {
    }

    std::size_t rows() const { return rows_; }
    std::size_t width() const { return m_; }
    std::size_t piece_rows() const { return detail::piece_records(m_, spec_.r, d_, group_); }
    double scale() const { return detail::scale_of(spec_); }

    template <class Sink>
    void phases(std::size_t p0, std::size_t p1, Sink &&sink) const
    {
        if (strips_) strip_phases(p0, p1, sink);
        else gathered_phases(p0, p1, sink);
    }

  private:
    // The gather way: each group of records draws its masks and computes the chosen phases.
    template <class Sink>
    void gathered_phases(std::size_t p0, std::size_t p1, Sink &sink) const
    {
        const std::size_t d = d_, m = m_, group = group_;
        const T *const u = u_;
        IndexList &idx = scratch::local<IndexList>(scratch::Buffer::chosen_indices);
        IndexList &rec = scratch::local<IndexList>(scratch::Buffer::chosen_records);
        for (std::size_t g0 = p0; g0 < p1; g0 += group) {
            const std::size_t count = std::min(group, p1 - g0);
            detail::draw_group(spec_, key_, first_ + g0, count, false, idx, rec);
            T *ph = scratch::grown<T>(scratch::Buffer::chosen_phases, idx.size());
            const T *xg = x_ + static_cast<std::ptrdiff_t>(g0) * x_stride_;
            if (spec_.r >= 16) {  // whole lane groups of one record: x broadcast
                std::size_t e0 = 0;
                for (std::size_t q = 0; q < count; ++q) {
                    std::size_t e1 = e0;
                    while (e1 < idx.size() && rec[e1] == q) ++e1;
                    phases_selected<T>(omega_t_, d, m, xg + static_cast<std::ptrdiff_t>(q) * x_stride_,
                                       idx.data() + e0, nullptr, 0, e1 - e0, u, ph + e0);
                    e0 = e1;
                }
            } else {  // (record, feature) pairs: the group's records copied together
                T *xs = scratch::grown<T>(scratch::Buffer::gathered_records, count * d);
                for (std::size_t q = 0; q < count; ++q)
                    std::memcpy(xs + q * d, xg + static_cast<std::ptrdiff_t>(q) * x_stride_, d * sizeof(T));
                phases_selected<T>(omega_t_, d, m, xs, idx.data(), rec.data(), count, idx.size(), u, ph);
            }
            sink.chosen(ph, idx.data(), idx.size());
        }
    }

    // The strips way: the masks of the whole piece, bucketed by strip of columns; then strip
    // after strip (Omega's strip stays in cache), tiles of all the phases of 16 records, from
    // which the chosen ones are picked.
    template <class Sink>
    void strip_phases(std::size_t p0, std::size_t p1, Sink &sink) const
    {
        constexpr std::size_t tr = sketch::dense_tile_rows, tc = sketch::dense_tile_cols<T>();
        const std::size_t d = d_, m = m_;
        const T *const u = u_;
        IndexList &idx = scratch::local<IndexList>(scratch::Buffer::chosen_indices);
        IndexList &rec = scratch::local<IndexList>(scratch::Buffer::chosen_records);
        std::vector<std::size_t> &start = scratch::vector<std::size_t>(scratch::Buffer::bucket_start);
        std::vector<std::size_t> &hist = scratch::vector<std::size_t>(scratch::Buffer::bucket_histogram);
        T *const tile = scratch::aligned<T>(scratch::Buffer::block_output, tr * tc);
        const std::size_t nstrips = (m + tc - 1) / tc;
        detail::draw_group(spec_, key_, first_ + p0, p1 - p0, false, idx, rec);
        const std::size_t n = idx.size();
        const std::uint32_t *const ix = idx.data();
        const std::uint32_t *const rx = rec.data();
        // counting sort by strip, record order kept within a strip; four histograms so that
        // consecutive entries do not wait on the same counter
        hist.assign(4 * nstrips, 0);
        for (std::size_t e = 0; e < n; ++e) ++hist[(e & 3) * nstrips + ix[e] / tc];
        start.assign(nstrips + 1, 0);
        for (std::size_t b = 0; b < nstrips; ++b)
            start[b + 1] = start[b] + hist[b] + hist[nstrips + b] + hist[2 * nstrips + b] + hist[3 * nstrips + b];
        std::uint32_t *const order = scratch::grown<std::uint32_t>(scratch::Buffer::order, n);
        std::uint32_t *const picked = scratch::grown<std::uint32_t>(scratch::Buffer::picked, n);
        std::copy(start.begin(), start.end() - 1, hist.begin());
        for (std::size_t e = 0; e < n; ++e) order[hist[ix[e] / tc]++] = static_cast<std::uint32_t>(e);
        T *const ph = scratch::grown<T>(scratch::Buffer::chosen_phases, n);
        for (std::size_t b = 0; b < nstrips; ++b) {
            const std::size_t c0 = b * tc, width = std::min(tc, m - c0);
            std::size_t s0 = start[b];
            for (std::size_t r0 = p0; r0 < p1 && s0 < start[b + 1]; r0 += tr) {
                const std::size_t count = std::min(tr, p1 - r0), q0 = r0 - p0;
                std::size_t s1 = s0;
                while (s1 < start[b + 1] && rx[order[s1]] < q0 + count) ++s1;
                if (s1 == s0) continue;
                dense::phases<T>(x_ + static_cast<std::ptrdiff_t>(r0) * x_stride_, x_stride_, count, d,
                                 omega_ + c0, omega_stride_, width, tile, static_cast<std::ptrdiff_t>(tc));
                for (std::size_t t = s0; t < s1; ++t) {
                    const std::size_t e = order[t], j = ix[e];
                    const T v = tile[(rx[e] - q0) * tc + (j - c0)];
                    ph[t] = u ? static_cast<T>(v + u[j]) : v;
                    picked[t] = static_cast<std::uint32_t>(j);
                }
                s0 = s1;
            }
        }
        sink.chosen(ph, picked, n);
    }

    const T *omega_;
    std::ptrdiff_t omega_stride_;
    const T *omega_t_;
    std::size_t d_, m_;
    const T *x_;
    std::ptrdiff_t x_stride_;
    std::size_t rows_;
    const T *u_;
    MaskSpec spec_;
    Key key_;
    std::uint64_t first_;
    bool strips_;        // the strips way (r >= m / strip_ratio), else the gather way
    std::size_t group_;  // records per group
};

// A structured operator bound to the rows of x and their masks: blocks (spec.block == op.dp(),
// m a multiple of it) or uniform / bernoulli.
template <class T>
class StructuredSubsampledPhases {
  public:
    using value_type = T;
    static constexpr bool rescaled = true;

    StructuredSubsampledPhases(const operators::Structured<T> &op, const T *x, std::ptrdiff_t x_stride,
                               std::size_t rows, const T *u, const MaskSpec &spec, Key key, std::uint64_t first)
        : op_(op), x_(x), x_stride_(x_stride), rows_(rows), u_(u), spec_(spec), key_(key), first_(first)
    {
    }

    std::size_t rows() const { return rows_; }
    std::size_t width() const { return op_.m; }
    double scale() const { return detail::scale_of(spec_); }
    std::size_t piece_rows() const
    {
        const std::size_t dp = op_.dp(), m = op_.m, log_cost = static_cast<std::size_t>(op_.log_dp) + 1;
        if (spec_.scheme == Scheme::blocks) {
            const std::size_t wide = wide_rows();
            const std::size_t want =
                std::max<std::size_t>({1, (std::size_t{1} << 21) / (spec_.r * log_cost), 8 * m / spec_.r});
            return (want + wide - 1) / wide * wide;
        }
        const std::size_t group = detail::group_records(spec_.r);
        const std::size_t per_row = std::min(spec_.r, op_.blocks) * dp * log_cost + spec_.r * 16;
        const std::size_t want = std::max<std::size_t>({1, (std::size_t{1} << 22) / per_row, 8 * m / spec_.r});
        return (want + group - 1) / group * group;
    }

    template <class Sink>
    void phases(std::size_t p0, std::size_t p1, Sink &&sink) const
    {
        if (spec_.scheme == Scheme::blocks) block_phases(p0, p1, sink);
        else chosen_phases(p0, p1, sink);
    }

  private:
    // Records per mask draw of the blocks scheme: a whole number of L1-sized transform groups.
    std::size_t wide_rows() const
    {
        const std::size_t g = operators::detail::group_rows<T>(op_.log_dp);
        return std::max<std::size_t>(g, 64 / g * g);
    }

    // blocks: a wide group of records draws its blocks; each chosen block is transformed for the
    // records that chose it (in record order, L1-sized groups), one phase block.
    template <class Sink>
    void block_phases(std::size_t p0, std::size_t p1, Sink &sink) const
    {
        const operators::Structured<T> &op = op_;
        const std::size_t dp = op.dp(), m = op.m, k = spec_.r / dp, nblocks = m / dp;
        const std::size_t g = operators::detail::group_rows<T>(op.log_dp), wide = wide_rows();
        IndexList &chosen = scratch::local<IndexList>(scratch::Buffer::chosen_indices);
        std::vector<std::size_t> &start = scratch::vector<std::size_t>(scratch::Buffer::bucket_start);
        Marks &marks = scratch::local<Marks>(scratch::Buffer::mask_marks);
        T *const pad = scratch::aligned<T>(scratch::Buffer::padded_input, g * dp);
        T *const buf = scratch::aligned<T>(scratch::Buffer::block_output, g * dp);
        T *const tmp =
            op.kind == operators::Kind::fastfood ? scratch::aligned<T>(scratch::Buffer::fastfood_tmp, g * dp) : nullptr;
        for (std::size_t w0 = p0; w0 < p1; w0 += wide) {
            const std::size_t count = std::min(wide, p1 - w0);
            chosen.clear();
            for (std::size_t q = 0; q < count; ++q) {
                Xoshiro256pp rng = record_generator(key_, first_ + w0 + q);
                draw_mask(spec_, rng, marks, false, chosen);
            }
            // bucket the records by block (counting sort, record order kept)
            start.assign(nblocks + 1, 0);
            for (std::size_t e = 0; e < chosen.size(); ++e) ++start[chosen[e] + 1];
            for (std::size_t b = 0; b < nblocks; ++b) start[b + 1] += start[b];
            std::uint32_t *const order = scratch::grown<std::uint32_t>(scratch::Buffer::order, chosen.size());
            for (std::size_t e = 0; e < chosen.size(); ++e)
                order[start[chosen[e]]++] = static_cast<std::uint32_t>(e / k);
            for (std::size_t b = nblocks; b > 0; --b) start[b] = start[b - 1];  // restore the starts
            start[0] = 0;
            for (std::size_t b = 0; b < nblocks; ++b) {
                for (std::size_t e0 = start[b]; e0 < start[b + 1]; e0 += g) {
                    const std::size_t n = std::min(g, start[b + 1] - e0);
                    for (std::size_t e = 0; e < n; ++e) {
                        const T *xr = x_ + static_cast<std::ptrdiff_t>(w0 + order[e0 + e]) * x_stride_;
                        operators::detail::load_padded(xr, x_stride_, 1, op.d, dp, pad + e * dp);
                    }
                    operators::detail::forward_block(op, b, pad, static_cast<std::ptrdiff_t>(dp), buf,
                                                     static_cast<std::ptrdiff_t>(dp), buf, tmp, n);
                    sink(static_cast<const T *>(buf), n, static_cast<std::ptrdiff_t>(dp), b * dp, dp);
                }
            }
        }
    }

    // uniform / bernoulli: per record, the blocks holding a chosen feature are transformed and
    // the chosen phases picked out.
    template <class Sink>
    void chosen_phases(std::size_t p0, std::size_t p1, Sink &sink) const
    {
        const operators::Structured<T> &op = op_;
        const std::size_t dp = op.dp(), group = detail::group_records(spec_.r);
        const T *const u = u_;
        IndexList &idx = scratch::local<IndexList>(scratch::Buffer::chosen_indices);
        IndexList &rec = scratch::local<IndexList>(scratch::Buffer::chosen_records);
        T *const pad = scratch::aligned<T>(scratch::Buffer::padded_input, dp);
        T *const buf = scratch::aligned<T>(scratch::Buffer::block_output, dp);
        T *const tmp =
            op.kind == operators::Kind::fastfood ? scratch::aligned<T>(scratch::Buffer::fastfood_tmp, dp) : nullptr;
        for (std::size_t g0 = p0; g0 < p1; g0 += group) {
            const std::size_t count = std::min(group, p1 - g0);
            detail::draw_group(spec_, key_, first_ + g0, count, true, idx, rec);
            T *ph = scratch::grown<T>(scratch::Buffer::chosen_phases, idx.size());
            std::size_t loaded = static_cast<std::size_t>(-1), current = 0;
            for (std::size_t e = 0; e < idx.size(); ++e) {
                const std::size_t q = rec[e], j = idx[e], b = j / dp;
                if (q != loaded) {
                    const T *xr = x_ + static_cast<std::ptrdiff_t>(g0 + q) * x_stride_;
                    operators::detail::load_padded(xr, x_stride_, 1, op.d, dp, pad);
                    loaded = q;
                    current = static_cast<std::size_t>(-1);
                }
                if (b != current) {
                    operators::detail::forward_block(op, b, pad, static_cast<std::ptrdiff_t>(dp), buf,
                                                     static_cast<std::ptrdiff_t>(dp), buf, tmp, 1);
                    current = b;
                }
                const T t = buf[j - b * dp];
                ph[e] = u ? static_cast<T>(t + u[j]) : t;
            }
            sink.chosen(ph, idx.data(), idx.size());
        }
    }

    const operators::Structured<T> &op_;
    const T *x_;
    std::ptrdiff_t x_stride_;
    std::size_t rows_;
    const T *u_;
    MaskSpec spec_;
    Key key_;
    std::uint64_t first_;
};

// acc0/acc1 += (m / r) * sum_i of the features f(omega_j^T x_i (+ u_j)) for j in the mask of
// record first + i. Omega dense, given both ways: omega (d x m, row-major, `omega_stride`
// elements between rows) and omega_t = Omega^T (m x d, C-contiguous); scheme uniform or
// bernoulli.
template <class T>
void sketch_dense_subsampled(const T *omega, std::ptrdiff_t omega_stride, const T *omega_t, std::size_t d,
                             std::size_t m, sketch::Nonlinearity f, const T *x, std::ptrdiff_t x_stride,
                             std::size_t rows, const T *u, const MaskSpec &spec, Key key, std::uint64_t first,
                             double *acc0, double *acc1)
{
    validate(spec);
    if (spec.m != m) throw std::invalid_argument("sketch_dense_subsampled: the mask's m differs from Omega's");
    if (spec.scheme == Scheme::blocks)
        throw std::invalid_argument("sketch_dense_subsampled: the blocks scheme needs a structured operator");
    if (d == 0) throw std::invalid_argument("sketch_dense_subsampled: d must be >= 1");
    sketch::sketch(DenseSubsampledPhases<T>(omega, omega_stride, omega_t, d, m, x, x_stride, rows, u, spec, key, first),
                   f, u, acc0, acc1);
}

// The same for a structured operator: blocks (spec.block == op.dp(), m a multiple of it) or
// uniform / bernoulli masks.
template <class T>
void sketch_structured_subsampled(const operators::Structured<T> &op, sketch::Nonlinearity f, const T *x,
                                  std::ptrdiff_t x_stride, std::size_t rows, const T *u, const MaskSpec &spec, Key key,
                                  std::uint64_t first, double *acc0, double *acc1)
{
    operators::validate(op);
    validate(spec);
    if (spec.m != op.m) throw std::invalid_argument("sketch_structured_subsampled: the mask's m differs from Omega's");
    if (spec.scheme == Scheme::blocks && spec.block != op.dp())
        throw std::invalid_argument("sketch_structured_subsampled: the blocks must be the operator's blocks");
    sketch::sketch(StructuredSubsampledPhases<T>(op, x, x_stride, rows, u, spec, key, first), f, u, acc0, acc1);
}

}  // namespace subsample
}  // namespace pysketch

#endif  // PYSKETCH_SUBSAMPLE_HPP
