// onehot.hpp - the one-hot sketch maps of M2M (Houssiau et al.): HIST, per-attribute
// equal-width histograms, and RACE, R p-stable LSH hashes into W buckets each; and the
// co-occurrence Gram matrix of one-hot features (header-only, C++17; knows nothing of Python).
//
// A one-hot map sends a record to k active features, one per block: block j holds the
// features [offsets[j], offsets[j] + sizes[j]). HIST has k = d blocks of n_bins features
// (attribute j, bin b -> feature j * n_bins + b); RACE has k = R blocks of W features (hash j,
// bucket b -> feature j * W + b).
//
//   hist_indices(X, hist, out, out_stride)   out[i, j] = j * n_bins + bin(X[i, j], j)
//   hist_accumulate(X, hist, counts)         counts[j * n_bins + bin(X[i, j], j)] += 1 for all i, j;
//                                            returns the number of records with a coordinate
//                                            outside [lower[j], upper[j]] (clamped into an edge bin)
//   race_indices(X, race, out, out_stride)   out[i, j] = j * W + bucket(X[i, :], j)
//   race_accumulate(X, race, counts)         counts[j * W + bucket(X[i, :], j)] += 1 for all i, j
//   gram(g)                                  out = P^T P, P the n x m 0/1 matrix with
//                                            P[i, idx[i, j]] = 1 (written entirely)
//
// X is an n x d matrix of float or double (contiguous rows, any row stride); every input is
// converted to double before any arithmetic. The work is spread over get_num_threads()
// threads (parallel.hpp); every result is the same for any thread count.
//
// HIST bin (the Python reference must do exactly this; no other rounding is involved):
//   t = (double(x) - lower[j]) * scale[j]          two float64 operations, in this order
//   bin = 0 if t < 0, n_bins - 1 if t >= n_bins, else trunc(t) (= floor(t) for t >= 0),
// computed as trunc(min(max(t, 0), n_bins - 1)), the same for every non-NaN t (a NaN t, from
// an infinite or NaN input, gives bin 0; the callers pass finite inputs).
//
// RACE bucket (likewise exact):
//   t_j = 0.0; for k = 0, 1, ..., d - 1: t_j = t_j + double(x_k) * proj[k, j]   (product rounded,
//         then sum rounded: never a fused multiply-add); then t_j = t_j + offset[j]
//   h = floor(t_j) as int64; bucket = ((h % W) + W) % W, in [0, W)
// The projections are compiled for AVX-512F, AVX2 + FMA and the baseline, the buckets written
// for AVX-512F, AVX2, SSE2 and in portable C++, and the level is chosen at run time
// (simd::level(), as everywhere in pysketch). Floating-point contraction is switched off (the
// pragmas below; the disassembly has no vfmadd), so every level computes the same bits as
// numpy's elementwise t = t + x[:, k, None] * proj[k]; tests/test_onehot_core.py checks a case
// where a fused multiply-add would move t across an integer.
// The bucket is taken in double arithmetic, exactly. For |t| < 2^52, g = floor(t) is an
// integer with |g| <= 2^52 - 1, or g = -2^52. With q = floor(g * (1 / W)): 1 / W rounds to
// (1 + e1) / W and the product to (1 + e1)(1 + e2) g / W, |e1|, |e2| <= 2^-53, so the computed
// quotient is within |g| / W (2^-52 + 2^-106) < 1 / W of g / W (within 2^52 / W 2^-53 for
// g = -2^52, a power of two whose product is exact). When g / W is not an integer it is at
// least 1 / W away from the integers on either side, so q = floor(g / W); when it is an integer
// the product may fall just below it (49 * (1 / 49) < 1), and q = g / W - 1. q * W and
// r = g - q * W are integers below 2^53, so exact; r is in [0, 2 W), and subtracting W where
// r >= W gives g mod W. A row with some |t| >= 2^52 takes the int64 path above for all its
// hashes; a t that is NaN or beyond 2^63 in magnitude (overflow of x * proj) throws
// std::domain_error.
//
// Accumulation: each piece of rows counts in its own int64 array, added (integers) to a
// shared total under a mutex; counts[c] += double(total[c]) at the end. So counts receive
// exact integers and the result does not depend on the number of threads (nor on the order of
// the pieces). The bins and buckets are computed as for the indices.
//
// Gram: idx is n x k int32 (contiguous rows, any row stride), offsets[j] = sizes[0] + ... +
// sizes[j - 1] (running sums), m = sizes[0] + ... + sizes[k - 1]; out is m x m, row-major with
// row stride m. Each idx[i, j] must lie in [offsets[j], offsets[j] + sizes[j]) (else
// std::invalid_argument naming the first bad entry in row-major order). Steps:
//   1. transpose idx into k columns of local indices idx[i, j] - offsets[j] (uint16 when every
//      size is <= 65536, else uint32), checking the ranges (parallel over rows);
//   2. for each pair of blocks j <= l (parallel over pairs): the sizes[j] x sizes[l]
//      contingency table of the columns j and l over the n rows, counted in a uint32 table
//      (25.6 kB at sizes 80 x 80: in L1), written to out's block (j, l) and transposed to its
//      block (l, j). Diagonal blocks (j, j) are diagonal: the counts of column j on the
//      diagonal, zeros elsewhere. Tables above table_max entries (or n >= 2^32) are counted
//      straight into out's block in double (exact below 2^53 rows).
#ifndef PYSKETCH_ONEHOT_HPP
#define PYSKETCH_ONEHOT_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "pysketch/parallel.hpp"
#include "pysketch/simd.hpp"

// No fused multiply-adds where the source has none: the AVX2 + FMA and AVX-512 clones of
// RACE's projections must round like the baseline ones (and like numpy).
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif

namespace pysketch {
namespace onehot {

// An n x d input matrix: row i starts at data + i * stride (elements).
template <class T>
struct Matrix {
    const T *data;
    std::ptrdiff_t stride;
    std::size_t rows, cols;
    const T *row(std::size_t i) const { return data + static_cast<std::ptrdiff_t>(i) * stride; }
};

// HIST's parameters: d = X.cols attributes, each with n_bins bins (n_bins in [1, 2^31)).
struct Hist {
    const double *lower, *scale, *upper;
    std::int64_t n_bins;
};

// RACE's parameters: proj is d x R row-major (column j is hash j's projection, already divided
// by the bucket width), offset has R entries, W in [1, 2^31).
struct Race {
    const double *proj, *offset;
    std::size_t R;
    std::int64_t W;
};

// The arguments of gram() (see the top of the file).
struct Gram {
    const std::int32_t *idx;
    std::ptrdiff_t stride;
    std::size_t n, k;
    const std::int64_t *offsets, *sizes;
    double *out;
    std::size_t m;
};

// Tables of more entries are counted straight into out (gram step 2).
inline constexpr std::size_t table_max = std::size_t{1} << 16;

namespace detail {

// Threads for `work` units when each thread should get at least `per_thread` of them.
inline std::size_t threads_for(std::size_t work, std::size_t per_thread)
{
    const auto most = static_cast<std::size_t>(get_num_threads());
    const std::size_t fit = per_thread == 0 ? most : work / per_thread;
    return std::max<std::size_t>(1, std::min(most, fit));
}

// Integer counts of pieces of rows, summed into one total under a mutex (integers: the order
// of the pieces does not matter).
class CountTotal {
public:
    explicit CountTotal(std::size_t size) : total_(size, 0) {}
    void add(const std::vector<std::int64_t> &piece, std::int64_t flagged)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (std::size_t c = 0; c < total_.size(); ++c) total_[c] += piece[c];
        flagged_ += flagged;
    }
    // counts[c] += total[c] for every c; returns the flagged records.
    std::int64_t add_to(double *counts) const
    {
        for (std::size_t c = 0; c < total_.size(); ++c) counts[c] += static_cast<double>(total_[c]);
        return flagged_;
    }

private:
    std::mutex mutex_;
    std::vector<std::int64_t> total_;
    std::int64_t flagged_ = 0;
};

// ---------------------------------------------------------------------------------- HIST

// Bins of one row: bin[j] = HIST bin of x[j]; returns whether some x[j] is outside
// [lower[j], upper[j]].
template <class T>
inline bool hist_row(const T *x, std::size_t d, const Hist &h, double last, std::int32_t *bin)
{
    int outside = 0;
    for (std::size_t j = 0; j < d; ++j) {
        const double v = static_cast<double>(x[j]);
        const double t = (v - h.lower[j]) * h.scale[j];
        const double above = t > 0.0 ? t : 0.0;  // NaN -> 0
        const double clamped = above < last ? above : last;
        bin[j] = static_cast<std::int32_t>(clamped);
        outside |= static_cast<int>(v < h.lower[j]) | static_cast<int>(v > h.upper[j]);
    }
    return outside != 0;
}

// ---------------------------------------------------------------------------------- RACE

// project (onehot_loops.inc), compiled for AVX-512F, for AVX2 + FMA and for the baseline
// (contraction is off, so a product and a sum stay two roundings).
#if defined(PYSKETCH_SIMD_X86)
PYSKETCH_SIMD_BEGIN_AVX512
namespace avx512 {
#include "pysketch/onehot_loops.inc"
}  // namespace avx512
PYSKETCH_SIMD_END

PYSKETCH_SIMD_BEGIN_AVX2
namespace avx2 {
#include "pysketch/onehot_loops.inc"
}  // namespace avx2
PYSKETCH_SIMD_END
#endif

namespace base {
#include "pysketch/onehot_loops.inc"
}  // namespace base

// buckets: b[j] = floor(t[j]) mod W in double (see the top of the file) for j < R; false when
// some |t[j]| >= 2^52 or is NaN (b[j] is then 0 and the caller redoes the row in int64). All
// versions compute the same exact integers: the portable one below, and explicit AVX-512,
// AVX2 and SSE2 ones (the compiler does not vectorize these selects and floors by itself
// without -fno-trapping-math). w = W and inv_w = 1 / W as doubles.
inline bool bucket_one(double t, double w, double inv_w, std::int32_t &b)
{
    if (!(std::fabs(t) < 0x1p52)) {
        b = 0;
        return false;
    }
    const double g = std::floor(t);
    const double q = std::floor(g * inv_w);
    double r = g - q * w;
    if (r >= w) r -= w;
    b = static_cast<std::int32_t>(r);
    return true;
}

inline bool buckets_base(const double *t, std::size_t R, double w, double inv_w, std::int32_t *b)
{
    bool ok = true;
    for (std::size_t j = 0; j < R; ++j) ok &= bucket_one(t[j], w, inv_w, b[j]);
    return ok;
}

#if defined(PYSKETCH_SIMD_X86)

__attribute__((target(PYSKETCH_SIMD_TARGET_avx512))) inline bool buckets_avx512(const double *t, std::size_t R,
                                                                                 double w, double inv_w,
                                                                                 std::int32_t *b)
{
    constexpr int floor_mode = _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC;
    const __m512d vw = _mm512_set1_pd(w), vinv = _mm512_set1_pd(inv_w);
    const __m512d big = _mm512_set1_pd(0x1p52);
    const __mmask8 all = 0xff;  // masked forms: GCC bug 105593 (see simd.hpp)
    __mmask8 ok = all;
    std::size_t j = 0;
    for (; j + 8 <= R; j += 8) {
        const __m512d v = _mm512_loadu_pd(t + j);
        const __mmask8 fine = _mm512_cmp_pd_mask(_mm512_abs_pd(v), big, _CMP_LT_OQ);  // false for NaN
        ok = static_cast<__mmask8>(ok & fine);
        const __m512d g = _mm512_maskz_roundscale_pd(fine, v, floor_mode);  // 0 where not fine
        const __m512d q = _mm512_maskz_roundscale_pd(all, _mm512_mul_pd(g, vinv), floor_mode);
        __m512d r = _mm512_sub_pd(g, _mm512_mul_pd(q, vw));
        r = _mm512_mask_sub_pd(r, _mm512_cmp_pd_mask(r, vw, _CMP_GE_OQ), r, vw);
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(b + j), _mm512_maskz_cvttpd_epi32(all, r));
    }
    bool tail = true;
    for (; j < R; ++j) tail &= bucket_one(t[j], w, inv_w, b[j]);
    return ok == 0xff && tail;
}

__attribute__((target(PYSKETCH_SIMD_TARGET_avx2))) inline bool buckets_avx2(const double *t, std::size_t R,
                                                                             double w, double inv_w, std::int32_t *b)
{
    const __m256d vw = _mm256_set1_pd(w), vinv = _mm256_set1_pd(inv_w);
    const __m256d big = _mm256_set1_pd(0x1p52), sign = _mm256_set1_pd(-0.0);
    __m256d ok = _mm256_castsi256_pd(_mm256_set1_epi64x(-1));
    std::size_t j = 0;
    for (; j + 4 <= R; j += 4) {
        const __m256d v = _mm256_loadu_pd(t + j);
        const __m256d fine = _mm256_cmp_pd(_mm256_andnot_pd(sign, v), big, _CMP_LT_OQ);  // false for NaN
        ok = _mm256_and_pd(ok, fine);
        const __m256d g = _mm256_floor_pd(_mm256_and_pd(v, fine));
        const __m256d q = _mm256_floor_pd(_mm256_mul_pd(g, vinv));
        __m256d r = _mm256_sub_pd(g, _mm256_mul_pd(q, vw));
        r = _mm256_sub_pd(r, _mm256_and_pd(_mm256_cmp_pd(r, vw, _CMP_GE_OQ), vw));
        _mm_storeu_si128(reinterpret_cast<__m128i *>(b + j), _mm256_cvttpd_epi32(r));
    }
    bool tail = true;
    for (; j < R; ++j) tail &= bucket_one(t[j], w, inv_w, b[j]);
    return _mm256_movemask_pd(ok) == 0xf && tail;
}

// SSE2 has no rounding instruction: floor(v) for |v| <= 2^52 is r = (v + c) - c with
// c = copysign(2^52, v) (v rounded to the nearest integer: the sum's ulp is 1 and the
// difference is exact), less one where r > v.
__attribute__((target("sse2"))) inline __m128d floor_sse2(__m128d v)
{
    const __m128d sign = _mm_set1_pd(-0.0), one = _mm_set1_pd(1.0);
    const __m128d c = _mm_or_pd(_mm_and_pd(v, sign), _mm_set1_pd(0x1p52));
    const __m128d r = _mm_sub_pd(_mm_add_pd(v, c), c);
    return _mm_sub_pd(r, _mm_and_pd(_mm_cmpgt_pd(r, v), one));
}

__attribute__((target("sse2"))) inline bool buckets_sse2(const double *t, std::size_t R, double w, double inv_w,
                                                         std::int32_t *b)
{
    const __m128d vw = _mm_set1_pd(w), vinv = _mm_set1_pd(inv_w);
    const __m128d big = _mm_set1_pd(0x1p52), sign = _mm_set1_pd(-0.0);
    __m128d ok = _mm_castsi128_pd(_mm_set1_epi64x(-1));
    std::size_t j = 0;
    for (; j + 2 <= R; j += 2) {
        const __m128d v = _mm_loadu_pd(t + j);
        const __m128d fine = _mm_cmplt_pd(_mm_andnot_pd(sign, v), big);  // false for NaN
        ok = _mm_and_pd(ok, fine);
        const __m128d g = floor_sse2(_mm_and_pd(v, fine));
        const __m128d q = floor_sse2(_mm_mul_pd(g, vinv));
        __m128d r = _mm_sub_pd(g, _mm_mul_pd(q, vw));
        r = _mm_sub_pd(r, _mm_and_pd(_mm_cmpge_pd(r, vw), vw));
        _mm_storel_epi64(reinterpret_cast<__m128i *>(b + j), _mm_cvttpd_epi32(r));
    }
    bool tail = true;
    for (; j < R; ++j) tail &= bucket_one(t[j], w, inv_w, b[j]);
    return _mm_movemask_pd(ok) == 0x3 && tail;
}

#endif  // PYSKETCH_SIMD_X86

template <class T>
struct RaceLoops {
    void (*project)(const T *, std::size_t, const double *, const double *, std::size_t, double *);
    bool (*buckets)(const double *, std::size_t, double, double, std::int32_t *);
};

// The level's loops: AVX-512F, AVX2 + FMA, SSE2 (level sse) or the portable ones (scalar).
template <class T>
RaceLoops<T> race_loops()
{
#if defined(PYSKETCH_SIMD_X86)
    switch (simd::level()) {
    case simd::Level::avx512: return {avx512::project<T>, buckets_avx512};
    case simd::Level::avx2: return {avx2::project<T>, buckets_avx2};
    case simd::Level::sse: return {base::project<T>, buckets_sse2};
    default: break;
    }
#endif
    return {base::project<T>, buckets_base};
}

// floor(t) mod W through int64 (t beyond the double path's range).
inline std::int32_t bucket_int64(double t, std::int64_t W, std::size_t row, std::size_t j)
{
    if (!(t >= -0x1p63 && t < 0x1p63))
        throw std::domain_error("RACE: the projection t = x . proj[:, " + std::to_string(j) + "] + offset[" +
                                std::to_string(j) + "] of row " + std::to_string(row) + " is " +
                                (std::isnan(t) ? std::string("NaN") : std::string("beyond 2**63 in magnitude")) +
                                " (x * proj overflows): rescale X or proj");
    const auto h = static_cast<std::int64_t>(std::floor(t));
    return static_cast<std::int32_t>(((h % W) + W) % W);
}

// One piece of rows: the buckets of each row (scratch t and b of R entries each), handed to
// use(i, b).
template <class T, class Use>
void race_rows(const Matrix<T> &X, const Race &h, std::size_t begin, std::size_t end, Use &&use)
{
    const RaceLoops<T> loops = race_loops<T>();
    std::vector<double> t(h.R);
    std::vector<std::int32_t> b(h.R);
    const double w = static_cast<double>(h.W), inv_w = 1.0 / w;
    for (std::size_t i = begin; i < end; ++i) {
        loops.project(X.row(i), X.cols, h.proj, h.offset, h.R, t.data());
        if (!loops.buckets(t.data(), h.R, w, inv_w, b.data()))
            for (std::size_t j = 0; j < h.R; ++j) b[j] = bucket_int64(t[j], h.W, i, j);
        use(i, b.data());
    }
}

// ------------------------------------------------------------------------------ Gram matrix

// Step 1: cols[j * n + i] = idx[i, j] - offsets[j], checked.
template <class L>
void transpose_checked(const Gram &g, L *cols)
{
    std::mutex mutex;
    std::size_t bad_row = g.n, bad_col = 0;  // the first bad entry (row-major), if any
    parallel_for(g.n, threads_for(g.n * g.k, std::size_t{1} << 16), [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) {
            const std::int32_t *r = g.idx + static_cast<std::ptrdiff_t>(i) * g.stride;
            for (std::size_t j = 0; j < g.k; ++j) {
                const std::int64_t v = static_cast<std::int64_t>(r[j]) - g.offsets[j];
                if (v < 0 || v >= g.sizes[j]) {
                    std::lock_guard<std::mutex> lock(mutex);
                    if (i < bad_row || (i == bad_row && j < bad_col)) {
                        bad_row = i;
                        bad_col = j;
                    }
                    return;  // the rest of this piece comes after in row-major order
                }
                cols[j * g.n + i] = static_cast<L>(v);
            }
        }
    });
    if (bad_row < g.n) {
        const std::size_t i = bad_row, j = bad_col;
        const std::int64_t lo = g.offsets[j], hi = g.offsets[j] + g.sizes[j];
        throw std::invalid_argument(
            "idx[" + std::to_string(i) + ", " + std::to_string(j) + "] = " +
            std::to_string(g.idx[static_cast<std::ptrdiff_t>(i) * g.stride + static_cast<std::ptrdiff_t>(j)]) +
            " is outside column " + std::to_string(j) + "'s range [offsets[j], offsets[j] + sizes[j]) = [" +
            std::to_string(lo) + ", " + std::to_string(hi) + ")");
    }
}

// out's block (j, l) <- its block (l, j) transposed (a x b block at (r0, c0) to b x a at (c0, r0)).
inline void mirror_block(double *out, std::size_t m, std::size_t r0, std::size_t c0, std::size_t a, std::size_t b)
{
    constexpr std::size_t tile = 32;
    for (std::size_t u0 = 0; u0 < a; u0 += tile)
        for (std::size_t v0 = 0; v0 < b; v0 += tile) {
            const std::size_t u1 = std::min(a, u0 + tile), v1 = std::min(b, v0 + tile);
            for (std::size_t v = v0; v < v1; ++v) {
                double *dst = out + (c0 + v) * m + r0;
                for (std::size_t u = u0; u < u1; ++u) dst[u] = out[(r0 + u) * m + c0 + v];
            }
        }
}

// Step 2 for the pair of blocks (j, l), j <= l.
template <class L>
void gram_block(const Gram &g, const L *cols, std::size_t j, std::size_t l, std::vector<std::uint32_t> &table)
{
    const std::size_t n = g.n, m = g.m;
    const auto sj = static_cast<std::size_t>(g.sizes[j]), sl = static_cast<std::size_t>(g.sizes[l]);
    const auto oj = static_cast<std::size_t>(g.offsets[j]), ol = static_cast<std::size_t>(g.offsets[l]);
    const L *cj = cols + j * n, *cl = cols + l * n;
    double *out = g.out;
    const bool small = n <= std::numeric_limits<std::uint32_t>::max();
    if (j == l) {
        for (std::size_t u = 0; u < sj; ++u) std::fill_n(out + (oj + u) * m + oj, sj, 0.0);
        if (small) {
            table.assign(sj, 0);
            for (std::size_t i = 0; i < n; ++i) ++table[cj[i]];
            for (std::size_t u = 0; u < sj; ++u) out[(oj + u) * m + oj + u] = static_cast<double>(table[u]);
        } else {
            for (std::size_t i = 0; i < n; ++i) out[(oj + cj[i]) * m + oj + cj[i]] += 1.0;
        }
        return;
    }
    if (small && sj * sl <= table_max) {
        table.assign(sj * sl, 0);
        std::uint32_t *tab = table.data();
        for (std::size_t i = 0; i < n; ++i) ++tab[static_cast<std::size_t>(cj[i]) * sl + cl[i]];
        for (std::size_t u = 0; u < sj; ++u) {
            double *row = out + (oj + u) * m + ol;
            const std::uint32_t *src = tab + u * sl;
            for (std::size_t v = 0; v < sl; ++v) row[v] = static_cast<double>(src[v]);
        }
    } else {
        for (std::size_t u = 0; u < sj; ++u) std::fill_n(out + (oj + u) * m + ol, sl, 0.0);
        for (std::size_t i = 0; i < n; ++i) out[(oj + cj[i]) * m + ol + cl[i]] += 1.0;
    }
    mirror_block(out, m, oj, ol, sj, sl);
}

template <class L>
void gram_typed(const Gram &g)
{
    std::vector<L> cols(g.k * g.n);
    transpose_checked(g, cols.data());
    const std::size_t k = g.k, pairs = k * (k + 1) / 2;
    std::size_t work = 0;  // about the cost of all the pairs
    for (std::size_t j = 0; j < k; ++j) work += (k - j) * g.n;
    const std::size_t threads = threads_for(work + pairs * 64, std::size_t{1} << 16);
    parallel_for(pairs, threads, [&](std::size_t begin, std::size_t end) {
        std::vector<std::uint32_t> table;
        // pairs in the order (0, 0), (0, 1), ..., (0, k - 1), (1, 1), ...: row j has k - j
        std::size_t j = 0, first = 0;
        while (begin >= first + (k - j)) first += k - j++;
        std::size_t l = j + (begin - first);
        for (std::size_t p = begin; p < end; ++p) {
            gram_block(g, cols.data(), j, l, table);
            if (++l == k) l = ++j;
        }
    });
}

}  // namespace detail

template <class T>
void hist_indices(const Matrix<T> &X, const Hist &h, std::int32_t *out, std::ptrdiff_t out_stride)
{
    const std::size_t d = X.cols;
    const double last = static_cast<double>(h.n_bins - 1);
    parallel_for(X.rows, detail::threads_for(X.rows * d, std::size_t{1} << 15), [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) {
            std::int32_t *o = out + static_cast<std::ptrdiff_t>(i) * out_stride;
            detail::hist_row(X.row(i), d, h, last, o);
            for (std::size_t j = 0; j < d; ++j) o[j] += static_cast<std::int32_t>(static_cast<std::int64_t>(j) * h.n_bins);
        }
    });
}

template <class T>
std::int64_t hist_accumulate(const Matrix<T> &X, const Hist &h, double *counts)
{
    const std::size_t d = X.cols, size = d * static_cast<std::size_t>(h.n_bins);
    const double last = static_cast<double>(h.n_bins - 1);
    detail::CountTotal total(size);
    const std::size_t threads = detail::threads_for(X.rows * d, std::max<std::size_t>(std::size_t{1} << 15, 4 * size));
    parallel_for(X.rows, threads, [&](std::size_t begin, std::size_t end) {
        std::vector<std::int64_t> local(size, 0);
        std::vector<std::int32_t> bin(d);
        std::int64_t outside = 0;
        for (std::size_t i = begin; i < end; ++i) {
            outside += detail::hist_row(X.row(i), d, h, last, bin.data());
            std::int64_t *c = local.data();
            for (std::size_t j = 0; j < d; ++j, c += h.n_bins) ++c[bin[j]];
        }
        total.add(local, outside);
    });
    return total.add_to(counts);
}

template <class T>
void race_indices(const Matrix<T> &X, const Race &h, std::int32_t *out, std::ptrdiff_t out_stride)
{
    const std::size_t R = h.R;
    parallel_for(X.rows, detail::threads_for(X.rows * (X.cols + 4) * R, std::size_t{1} << 17),
                 [&](std::size_t begin, std::size_t end) {
                     detail::race_rows(X, h, begin, end, [&](std::size_t i, const std::int32_t *b) {
                         std::int32_t *o = out + static_cast<std::ptrdiff_t>(i) * out_stride;
                         for (std::size_t j = 0; j < R; ++j)
                             o[j] = static_cast<std::int32_t>(static_cast<std::int64_t>(j) * h.W + b[j]);
                     });
                 });
}

template <class T>
void race_accumulate(const Matrix<T> &X, const Race &h, double *counts)
{
    const std::size_t R = h.R, size = R * static_cast<std::size_t>(h.W);
    detail::CountTotal total(size);
    const std::size_t work = X.rows * (X.cols + 4) * R;
    const std::size_t threads = detail::threads_for(work, std::max<std::size_t>(std::size_t{1} << 17, 4 * size));
    parallel_for(X.rows, threads, [&](std::size_t begin, std::size_t end) {
        std::vector<std::int64_t> local(size, 0);
        detail::race_rows(X, h, begin, end, [&](std::size_t, const std::int32_t *b) {
            std::int64_t *c = local.data();
            for (std::size_t j = 0; j < R; ++j, c += h.W) ++c[b[j]];
        });
        total.add(local, 0);
    });
    total.add_to(counts);
}

// Requires offsets[j] = sizes[0] + ... + sizes[j - 1] and m = the sum of all sizes (checked by
// the caller); checks idx.
inline void gram(const Gram &g)
{
    const bool narrow = std::all_of(g.sizes, g.sizes + g.k, [](std::int64_t s) { return s <= 65536; });
    if (narrow)
        detail::gram_typed<std::uint16_t>(g);
    else
        detail::gram_typed<std::uint32_t>(g);
}

}  // namespace onehot
}  // namespace pysketch

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

#endif  // PYSKETCH_ONEHOT_HPP
