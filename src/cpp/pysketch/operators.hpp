// operators.hpp - structured random frequency operators over the fast Walsh-Hadamard
// transform (header-only, C++17; knows nothing of Python).
//
// A structured operator Omega (d x m) stacks `blocks` = ceil(m / dp) independent square
// blocks of size dp = 2^log_dp >= d (Chatalic's thesis, sec. 5.2.3): inputs are padded
// with zeros from d to dp, each block gives dp outputs, and the first m outputs are kept.
// Block b maps a padded input x to
//
//     R3  / GR2:  post_b * H (c_b * H (b_b * H (a_b * x)))
//     Fastfood:   post_b * H (b_b * P_b H (a_b * x)),   (P_b y)_i = y[perm_b[i]]
//
// (elementwise products; H the unnormalized Hadamard matrix). The caller draws the
// diagonals and folds every constant into them (thesis (5.6)-(5.8)):
//     R3:       a, b, c = D1, D2, D3 (Rademacher)   post = radii / dp^(3/2)
//     GR2:      a, b = D1, D2 (Rademacher), c = D_G  post = radii / (dp ||D_G||_F)
//     Fastfood: a = D_R (Rademacher), b = D_G        post = radii / (sqrt(dp) ||D_G||_F)
// so that apply computes Omega^T x and adjoint Omega v exactly as the products of these
// matrices (the adjoint runs the transposed sequence: H is symmetric, the diagonals are
// their own transposes and P^T scatters what P gathers).
//
// Every multiplication by a diagonal rides on a pass of the transform (vendor/ffht's
// fused diagonals), so a block costs three (two for Fastfood) transforms of dp values.
// Rows are processed in groups that fit in L1, and the work is split over the threads of
// parallel.hpp.
#ifndef PYSKETCH_OPERATORS_HPP
#define PYSKETCH_OPERATORS_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "pysketch/hadamard.hpp"
#include "pysketch/parallel.hpp"
#include "pysketch/scratch.hpp"

namespace pysketch {
namespace operators {

enum class Kind : int { r3 = 0, gr2 = 1, fastfood = 2 };

// A structured operator: sizes and pointers to its diagonals (owned by the caller). The
// arrays hold `blocks` consecutive runs of dp values (perm: dp indices in [0, dp)).
template <class T>
struct Structured {
    Kind kind = Kind::r3;
    std::size_t d = 0, m = 0, blocks = 0;
    int log_dp = 0;
    const T *a = nullptr, *b = nullptr, *c = nullptr;  // c: R3 and GR2 only
    const T *post = nullptr;
    const std::int32_t *perm = nullptr;  // Fastfood only

    std::size_t dp() const { return std::size_t{1} << log_dp; }
    std::size_t width() const { return blocks * dp(); }
};

// Throws std::invalid_argument unless the description is consistent.
template <class T>
void validate(const Structured<T> &op)
{
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "float or double");
    if (op.log_dp < 0 || op.log_dp > 24) throw std::invalid_argument("structured operator: log_dp out of range");
    const std::size_t dp = op.dp();
    if (op.d == 0 || op.d > dp) throw std::invalid_argument("structured operator: need 1 <= d <= dp");
    if (op.m == 0 || op.blocks != (op.m + dp - 1) / dp)
        throw std::invalid_argument("structured operator: blocks must be ceil(m / dp)");
    if (!op.a || !op.b || !op.post) throw std::invalid_argument("structured operator: missing diagonal");
    if (op.kind == Kind::fastfood ? op.perm == nullptr : op.c == nullptr)
        throw std::invalid_argument("structured operator: missing diagonal or permutation");
}

namespace detail {

// Rows per group: about 64 KiB of one block's values, at most 64 rows (but never fewer than
// 16 KiB). The batch kernels overlap the passes of consecutive rows and pay a start and an
// end per call; groups of 64 KiB (in L2) beat groups of 16 KiB (in L1) on Zen 4: one R3 block,
// float, 0.532 -> 0.511 us per row at dp = 1024, 3.50 -> 3.46 at 4096, 0.121 -> 0.118 at 256.
// The wide groups of sketch.hpp and subsample.hpp (multiples of this) keep their sizes, and
// with them the order of the sums.
template <class T>
std::size_t group_rows(int log_dp)
{
    const std::size_t l1 = std::max<std::size_t>(1, (std::size_t{16384} / sizeof(T)) >> log_dp);
    const std::size_t l2 = std::max<std::size_t>(1, (std::size_t{65536} / sizeof(T)) >> log_dp);
    return std::max(l1, std::min<std::size_t>(64, l2));
}

// Minimum work (rows x outputs) before the threads are woken.
inline constexpr std::size_t parallel_min_outputs = std::size_t{1} << 16;

// to[r][i] = from[r][perm[i]] for rows of dp values. Four values are loaded before any is
// stored, which lets the compiler store them as one vector: the plain loop (one load, one
// store per value) ran at 0.40 or 0.55 ns per value on Zen 4 depending on where the code
// happened to lie (Fastfood blocks moved 15-20% with unrelated changes), this one at
// 0.24-0.29 (float, rows of 1024 to 4096). Kept out of line for the same reason.
template <class T>
__attribute__((noinline)) void gather_rows(const T *from, T *to, std::size_t rows, std::size_t dp,
                                           const std::int32_t *perm)
{
    for (std::size_t r = 0; r < rows; ++r) {
        const T *f = from + r * dp;
        T *t = to + r * dp;
        std::size_t i = 0;
        for (; i + 4 <= dp; i += 4) {
            T v[4];
            for (int k = 0; k < 4; ++k) v[k] = f[perm[i + k]];
            for (int k = 0; k < 4; ++k) t[i + k] = v[k];
        }
        for (; i < dp; ++i) t[i] = f[perm[i]];
    }
}

// The forward map of block k on `rows` rows: from src (row stride src_stride; padded
// rows of dp values, or buf itself) to dst (row stride dst_stride: the output when the
// whole block is kept, else buf). buf and tmp (rows x dp each) are scratch; the first
// transform reads src, the last writes dst, so no copy is needed in either case.
template <class T>
void forward_block(const Structured<T> &op, std::size_t k, const T *src, std::ptrdiff_t src_stride, T *dst,
                   std::ptrdiff_t dst_stride, T *buf, T *tmp, std::size_t rows)
{
    const std::size_t dp = op.dp();
    const auto ds = static_cast<std::ptrdiff_t>(dp);
    const std::size_t off = k * dp;
    if (op.kind == Kind::fastfood) {
        hadamard::transform_diag<T>(src, src_stride, buf, ds, rows, op.log_dp, op.a + off, nullptr);
        gather_rows(buf, tmp, rows, dp, op.perm + off);
        hadamard::transform_diag<T>(tmp, ds, dst, dst_stride, rows, op.log_dp, op.b + off, op.post + off);
        return;
    }
    // Each inner diagonal is multiplied in as the previous transform stores its results
    // rather than as the next one loads them: the same products, rounded the same way,
    // but the last pass of a transform has idle multipliers while the first one (the
    // in-register levels) keeps them busy; about 4% faster per block at dp = 1024.
    hadamard::transform_diag<T>(src, src_stride, buf, ds, rows, op.log_dp, op.a + off, op.b + off);
    hadamard::transform_diag<T>(buf, ds, buf, ds, rows, op.log_dp, nullptr, op.c + off);
    hadamard::transform_diag<T>(buf, ds, dst, dst_stride, rows, op.log_dp, nullptr, op.post + off);
}

// Few rows go block-parallel: below this many rows in a call (and with more than one
// block), each row goes through all the blocks at once, the blocks taking the place of
// the rows of a batch (per-row diagonals, vendor/ffht's fht_*_batch_oop_diags), so the
// batch kernels interleave blocks as they interleave rows. Row by row through one block
// at a time, a single vector got none of that and cost 1.75x more per block (dp = 1024).
inline constexpr std::size_t few_rows = 3;

// Blocks per call of the block-parallel forms: about 128 KiB of outputs (L2).
template <class T>
std::size_t blocks_per_sweep(int log_dp)
{
    return std::max<std::size_t>(1, (std::size_t{131072} / sizeof(T)) >> log_dp);
}

// Blocks [k0, k0 + nb) of the forward map on one padded row src (dp values): block k0 + j
// to dst + j * dp (nb rows of dp values; tmp: nb * dp scratch for Fastfood). src must not
// overlap dst. Bit-identical to forward_block on each block.
template <class T>
void forward_blocks(const Structured<T> &op, std::size_t k0, std::size_t nb, const T *src, T *dst, T *tmp)
{
    const std::size_t dp = op.dp();
    const auto ds = static_cast<std::ptrdiff_t>(dp);
    const std::size_t off = k0 * dp;
    if (op.kind == Kind::fastfood) {
        hadamard::transform_diags<T>(src, 0, dst, ds, nb, op.log_dp, op.a + off, nullptr, ds);
        for (std::size_t j = 0; j < nb; ++j) gather_rows(dst + j * dp, tmp + j * dp, 1, dp, op.perm + off + j * dp);
        hadamard::transform_diags<T>(tmp, ds, dst, ds, nb, op.log_dp, op.b + off, op.post + off, ds);
        return;
    }
    hadamard::transform_diags<T>(src, 0, dst, ds, nb, op.log_dp, op.a + off, op.b + off, ds);
    hadamard::transform_diags<T>(dst, ds, dst, ds, nb, op.log_dp, nullptr, op.c + off, ds);
    hadamard::transform_diags<T>(dst, ds, dst, ds, nb, op.log_dp, nullptr, op.post + off, ds);
}

// The adjoint of blocks [k0, k0 + nb) on one row, in place: buf holds nb rows of dp values
// (the zero-padded outputs of each block) and becomes their contributions to Omega v
// (tmp: nb * dp scratch for Fastfood). Bit-identical to adjoint_block on each block.
template <class T>
void adjoint_blocks(const Structured<T> &op, std::size_t k0, std::size_t nb, T *buf, T *tmp)
{
    const std::size_t dp = op.dp();
    const auto ds = static_cast<std::ptrdiff_t>(dp);
    const std::size_t off = k0 * dp;
    if (op.kind == Kind::fastfood) {
        hadamard::transform_diags<T>(buf, ds, buf, ds, nb, op.log_dp, op.post + off, nullptr, ds);
        for (std::size_t j = 0; j < nb; ++j) {
            const std::int32_t *perm = op.perm + off + j * dp;
            const T *g = op.b + off + j * dp, *src = buf + j * dp;
            T *dst = tmp + j * dp;
            for (std::size_t i = 0; i < dp; ++i) dst[perm[i]] = g[i] * src[i];
        }
        hadamard::transform_diags<T>(tmp, ds, buf, ds, nb, op.log_dp, nullptr, op.a + off, ds);
        return;
    }
    hadamard::transform_diags<T>(buf, ds, buf, ds, nb, op.log_dp, op.post + off, op.c + off, ds);
    hadamard::transform_diags<T>(buf, ds, buf, ds, nb, op.log_dp, nullptr, op.b + off, ds);
    hadamard::transform_diags<T>(buf, ds, buf, ds, nb, op.log_dp, nullptr, op.a + off, ds);
}

// The adjoint of block k: buf (rows x dp, zero-padded outputs of the block) becomes the
// block's contribution to Omega v, in place (tmp: scratch).
template <class T>
void adjoint_block(const Structured<T> &op, std::size_t k, T *buf, T *tmp, std::size_t rows)
{
    const std::size_t dp = op.dp();
    const auto ds = static_cast<std::ptrdiff_t>(dp);
    const std::size_t off = k * dp;
    if (op.kind == Kind::fastfood) {
        hadamard::transform_diag<T>(buf, ds, buf, ds, rows, op.log_dp, op.post + off, nullptr);
        const std::int32_t *perm = op.perm + off;
        const T *g = op.b + off;
        for (std::size_t r = 0; r < rows; ++r) {
            const T *src = buf + r * dp;
            T *dst = tmp + r * dp;
            for (std::size_t i = 0; i < dp; ++i) dst[perm[i]] = g[i] * src[i];
        }
        hadamard::transform_diag<T>(tmp, ds, buf, ds, rows, op.log_dp, nullptr, op.a + off);
        return;
    }
    hadamard::transform_diag<T>(buf, ds, buf, ds, rows, op.log_dp, op.post + off, op.c + off);  // as in forward_block
    hadamard::transform_diag<T>(buf, ds, buf, ds, rows, op.log_dp, nullptr, op.b + off);
    hadamard::transform_diag<T>(buf, ds, buf, ds, rows, op.log_dp, nullptr, op.a + off);
}

// Copy `rows` rows of d values (stride in elements) into buf (stride dp), zero-padded.
template <class T>
void load_padded(const T *x, std::ptrdiff_t stride, std::size_t rows, std::size_t d, std::size_t dp, T *buf)
{
    for (std::size_t r = 0; r < rows; ++r) {
        T *dst = buf + r * dp;
        std::memcpy(dst, x + static_cast<std::ptrdiff_t>(r) * stride, d * sizeof(T));
        std::fill(dst + d, dst + dp, T(0));
    }
}

}  // namespace detail

// out[r, 0:m] = Omega^T x_r for the `rows` rows of x (d values each). Strides in elements;
// x and out must not overlap.
template <class T>
void apply(const Structured<T> &op, const T *x, std::ptrdiff_t x_stride, std::size_t rows, T *out,
           std::ptrdiff_t out_stride)
{
    validate(op);
    if (rows == 0) return;
    const std::size_t dp = op.dp(), g = detail::group_rows<T>(op.log_dp);
    if (rows < detail::few_rows && op.blocks > 1) {
        // each row through all the blocks at once, in sweeps of up to `per` blocks; the
        // sweeps of a row are split over the threads
        const std::size_t per = detail::blocks_per_sweep<T>(op.log_dp);
        const std::size_t sweeps = (op.blocks + per - 1) / per, items = rows * sweeps;
        auto work = [&](std::size_t begin, std::size_t end) {
            T *const pad = op.d == dp ? nullptr : scratch::aligned<T>(scratch::Buffer::padded_input, dp);
            T *const buf = scratch::aligned<T>(scratch::Buffer::block_output, per * dp);
            T *const tmp =
                op.kind == Kind::fastfood ? scratch::aligned<T>(scratch::Buffer::fastfood_tmp, per * dp) : nullptr;
            std::size_t loaded = static_cast<std::size_t>(-1);
            for (std::size_t item = begin; item < end; ++item) {
                const std::size_t r = item / sweeps, k0 = item % sweeps * per, nb = std::min(per, op.blocks - k0);
                const T *src = x + static_cast<std::ptrdiff_t>(r) * x_stride;
                if (pad) {
                    if (loaded != r) detail::load_padded(src, 0, 1, op.d, dp, pad);
                    loaded = r;
                    src = pad;
                }
                T *o = out + static_cast<std::ptrdiff_t>(r) * out_stride + k0 * dp;
                const std::size_t width = std::min(nb * dp, op.m - k0 * dp);  // outputs kept
                if (width == nb * dp) {
                    detail::forward_blocks(op, k0, nb, src, o, tmp);
                } else {
                    detail::forward_blocks(op, k0, nb, src, buf, tmp);
                    std::memcpy(o, buf, width * sizeof(T));
                }
            }
        };
        const int threads = get_num_threads();
        if (threads > 1 && items > 1 && rows * op.width() >= detail::parallel_min_outputs)
            parallel_for(items, static_cast<std::size_t>(threads), work);
        else
            work(0, items);
        return;
    }
    const std::size_t groups = (rows + g - 1) / g, items = groups * op.blocks;
    // Rows of exactly dp values (no padding) at a stride the kernel takes are read in
    // place; otherwise each group is copied once, zero-padded, and reused for every block.
    const bool direct = op.d == dp && (rows == 1 || x_stride >= static_cast<std::ptrdiff_t>(dp));
    auto work = [&](std::size_t begin, std::size_t end) {
        T *const pad = direct ? nullptr : scratch::aligned<T>(scratch::Buffer::padded_input, g * dp);
        T *const buf = scratch::aligned<T>(scratch::Buffer::block_output, g * dp);
        T *const tmp =
            op.kind == Kind::fastfood ? scratch::aligned<T>(scratch::Buffer::fastfood_tmp, g * dp) : nullptr;
        std::size_t loaded = static_cast<std::size_t>(-1);
        for (std::size_t item = begin; item < end; ++item) {
            const std::size_t grp = item / op.blocks, k = item % op.blocks;
            const std::size_t r0 = grp * g, count = std::min(g, rows - r0);
            const T *xg = x + static_cast<std::ptrdiff_t>(r0) * x_stride;
            const T *src = xg;
            std::ptrdiff_t src_stride = x_stride;
            if (!direct) {
                if (loaded != grp) detail::load_padded(xg, x_stride, count, op.d, dp, pad);
                loaded = grp;
                src = pad;
                src_stride = static_cast<std::ptrdiff_t>(dp);
            }
            const std::size_t col = k * dp, width = std::min(dp, op.m - col);
            T *og = out + static_cast<std::ptrdiff_t>(r0) * out_stride + col;
            if (width == dp && (count == 1 || out_stride >= static_cast<std::ptrdiff_t>(dp))) {
                detail::forward_block(op, k, src, src_stride, og, out_stride, buf, tmp, count);
            } else {  // the last, truncated block: through buf
                detail::forward_block(op, k, src, src_stride, buf, static_cast<std::ptrdiff_t>(dp), buf, tmp, count);
                for (std::size_t r = 0; r < count; ++r)
                    std::memcpy(og + static_cast<std::ptrdiff_t>(r) * out_stride, buf + r * dp, width * sizeof(T));
            }
        }
    };
    const int threads = get_num_threads();
    if (threads > 1 && items > 1 && rows * op.width() >= detail::parallel_min_outputs)
        parallel_for(items, static_cast<std::size_t>(threads), work);
    else
        work(0, items);
}

// out[r, 0:d] = Omega v_r for the `rows` rows of v (m values each). Strides in elements;
// v and out must not overlap.
template <class T>
void adjoint(const Structured<T> &op, const T *v, std::ptrdiff_t v_stride, std::size_t rows, T *out,
             std::ptrdiff_t out_stride)
{
    validate(op);
    if (rows == 0) return;
    const std::size_t dp = op.dp(), g = detail::group_rows<T>(op.log_dp);
    if (rows < detail::few_rows && op.blocks > 1) {
        // each row through all the blocks at once (sweeps of up to `per` blocks); the
        // contributions are added block after block, as below, so the sums are the same
        const std::size_t per = detail::blocks_per_sweep<T>(op.log_dp);
        T *const buf = scratch::aligned<T>(scratch::Buffer::block_output, per * dp);
        T *const tmp =
            op.kind == Kind::fastfood ? scratch::aligned<T>(scratch::Buffer::fastfood_tmp, per * dp) : nullptr;
        for (std::size_t r = 0; r < rows; ++r) {
            const T *vr = v + static_cast<std::ptrdiff_t>(r) * v_stride;
            T *o = out + static_cast<std::ptrdiff_t>(r) * out_stride;
            std::fill_n(o, op.d, T(0));
            for (std::size_t k0 = 0; k0 < op.blocks; k0 += per) {
                const std::size_t nb = std::min(per, op.blocks - k0);
                for (std::size_t j = 0; j < nb; ++j) {
                    const std::size_t col = (k0 + j) * dp, width = std::min(dp, op.m - col);
                    T *dst = buf + j * dp;
                    std::memcpy(dst, vr + col, width * sizeof(T));
                    std::fill(dst + width, dst + dp, T(0));
                }
                detail::adjoint_blocks(op, k0, nb, buf, tmp);
                for (std::size_t j = 0; j < nb; ++j) {
                    const T *src = buf + j * dp;
                    for (std::size_t i = 0; i < op.d; ++i) o[i] += src[i];
                }
            }
        }
        return;
    }
    const std::size_t groups = (rows + g - 1) / g;
    auto work = [&](std::size_t begin, std::size_t end) {
        T *const buf = scratch::aligned<T>(scratch::Buffer::block_output, g * dp);
        T *const tmp =
            op.kind == Kind::fastfood ? scratch::aligned<T>(scratch::Buffer::fastfood_tmp, g * dp) : nullptr;
        for (std::size_t grp = begin; grp < end; ++grp) {
            const std::size_t r0 = grp * g, count = std::min(g, rows - r0);
            for (std::size_t r = 0; r < count; ++r)
                std::fill_n(out + static_cast<std::ptrdiff_t>(r0 + r) * out_stride, op.d, T(0));
            for (std::size_t k = 0; k < op.blocks; ++k) {
                const std::size_t col = k * dp, width = std::min(dp, op.m - col);
                for (std::size_t r = 0; r < count; ++r) {
                    T *dst = buf + r * dp;
                    std::memcpy(dst, v + static_cast<std::ptrdiff_t>(r0 + r) * v_stride + col, width * sizeof(T));
                    std::fill(dst + width, dst + dp, T(0));
                }
                detail::adjoint_block(op, k, buf, tmp, count);
                for (std::size_t r = 0; r < count; ++r) {
                    T *o = out + static_cast<std::ptrdiff_t>(r0 + r) * out_stride;
                    const T *src = buf + r * dp;
                    for (std::size_t i = 0; i < op.d; ++i) o[i] += src[i];
                }
            }
        }
    };
    const int threads = get_num_threads();
    if (threads > 1 && groups > 1 && rows * op.width() >= detail::parallel_min_outputs)
        parallel_for(groups, static_cast<std::size_t>(threads), work);
    else
        work(0, groups);
}

}  // namespace operators
}  // namespace pysketch

#endif  // PYSKETCH_OPERATORS_HPP
