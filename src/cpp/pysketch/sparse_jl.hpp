// sparse_jl.hpp - products with a sparse Johnson-Lindenstrauss transform (SJLT, Kane and
// Nelson): Y = X S^T for many records at once, from a dense or a CSR matrix, and the streaming
// update of one sketch vector (header-only, C++17; knows nothing of Python).
//
// S is k x d with s stored entries per column, given by its column tables (both s x d,
// row-major): column j holds vals[r, j] at row rows[r, j], r = 0, ..., s - 1. The rows of a
// column should be distinct (the SJLT's are); when two coincide, both entries are added, in
// order of r, as in every loop below.
//
//   check_table(S)                     every rows[r, j] in [0, k) and every vals[r, j] finite,
//                                      else std::invalid_argument naming the first bad entry
//                                      (row-major order)
//   apply(X, S, out)                   out[i, :] = S x_i for the n records x_i = X[i, :] (float or
//                                      double, contiguous rows, any row stride); out n x k,
//                                      row-major, contiguous, overwritten
//   check_csr(A, d) / apply_csr(A, S, out)
//                                      the same product from a CSR matrix (indptr, indices,
//                                      data), O(s nnz); check_csr checks indptr (monotone, within
//                                      the arrays) and every stored index (in [0, d))
//   update(S, j, delta, out_row)       out_row[rows[r, j]] += vals[r, j] * delta for r < s, O(s)
//
// Arithmetic (every path, every SIMD level, every thread count: the same bits). Each output
// entry is a float64 accumulator that starts at +0.0 and receives, in order of j = 0, 1, ...,
// d - 1 and within j of r = 0, ..., s - 1, the terms vals[r, j] * double(x_j) for which
// rows[r, j] is that entry: every product rounded once, then added (rounded once; no fused
// multiply-add: contraction is switched off below, and the disassembly has no vfmadd). A
// sequence of update() calls for j = 0, 1, ..., d - 1 from a zero vector therefore gives the
// same bits as apply().
// Terms with x_j = 0 (of either sign) change nothing, which is why the dense path may skip the
// columns that are zero in a whole tile and the CSR path sees only the stored entries: with
// vals finite (checked) such a term is +0.0 or -0.0, and an accumulator that starts at +0.0 is
// never -0.0 in the default floating-point environment (round to nearest, no flush to zero: a
// sum is -0.0 only when both addends are -0.0 or when it rounds a negative number to zero, and
// the latter cannot happen: an exact zero sum of two nonzero numbers is +0.0 and a nonzero sum
// of two doubles does not round to zero), so adding a zero of either sign leaves it bit for bit
// as it was. A dense row and the CSR row holding the same values
// (explicit zeros, -0.0 included, may be stored or not) thus give the same bits, provided the
// CSR row lists its columns in increasing order without duplicates (scipy's canonical format):
// apply_csr adds the stored entries in their stored order, so unsorted indices add the same
// terms in another order, and a duplicated index adds vals * a and vals * b where the dense
// product adds vals * (a + b); both are then equal to rounding only. NaN and infinite entries of
// X propagate (x != 0 is true for NaN: such a column is never skipped).
//
// Dense path: the records are cut into tiles of `tile` (8) records, spread over the threads
// (parallel.hpp). A tile is transposed, `chunk` columns at a time, into a chunk x tile float64
// scratch (its rows read side by side; zeros in the lanes past the last record), and the
// products accumulate into a k x tile scratch: for each column j that is nonzero somewhere in
// the tile and each r, the row rows[r, j] of the scratch receives vals[r, j] times the column's
// tile of values, a tile-long axpy (written for AVX-512F, AVX2, SSE2 and in portable C++, the
// version chosen at run time through simd::level(), as everywhere in pysketch). The k x tile
// scratch is then transposed into out. Each lane of a tile is its own record's accumulator:
// tiling, threads and levels change no bit.
// CSR path: records spread over the threads; each zeroes its out row, then adds its stored
// entries' terms (scalar: O(s) scattered additions per stored entry).
// Every argument is checked before anything is written (check_table, check_csr; update checks
// column j), so out is untouched when a check fails.
#ifndef PYSKETCH_SPARSE_JL_HPP
#define PYSKETCH_SPARSE_JL_HPP

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

// No fused multiply-adds where the source has none: the AVX2 + FMA and AVX-512 clones must
// round like the baseline, the CSR path and update().
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif

namespace pysketch {
namespace sparse_jl {

// The column tables of S (k x d): rows[r * d + j], vals[r * d + j] for r < s, j < d.
struct Table {
    const std::int32_t *rows;
    const double *vals;
    std::size_t s, d, k;
};

// An n x d dense input: row i starts at data + i * stride (elements), its d entries contiguous.
template <class T>
struct Dense {
    const T *data;
    std::ptrdiff_t stride;
    std::size_t n, d;
    const T *row(std::size_t i) const { return data + static_cast<std::ptrdiff_t>(i) * stride; }
};

// An n-row CSR matrix: row i stores the entries p in [indptr[i], indptr[i + 1]), each at column
// indices[p] with value data[p]; `stored` is the length of indices and data.
template <class T, class I, class P>
struct Csr {
    const P *indptr;
    const I *indices;
    const T *data;
    std::size_t n, stored;
};

// Records per tile of the dense path (the length of its axpys: one AVX-512 register, two AVX2,
// four SSE2; 8 was faster than 16 and 32 at k = 64 ... 1024, d = 10^4, float32 and float64) and
// columns per transposed chunk.
inline constexpr std::size_t tile = 8;
inline constexpr std::size_t chunk = 128;

namespace detail {

// Threads for `work` units when each thread should get at least `per_thread` of them.
inline std::size_t threads_for(std::size_t work, std::size_t per_thread)
{
    const auto most = static_cast<std::size_t>(get_num_threads());
    const std::size_t fit = work / per_thread;
    return std::max<std::size_t>(1, std::min(most, fit));
}

// `count` doubles starting on a 64-byte boundary, inside `store`.
inline double *aligned_doubles(std::vector<double> &store, std::size_t count)
{
    store.resize(count + 8);
    const auto address = reinterpret_cast<std::uintptr_t>(store.data());
    const std::size_t skip = ((64 - address % 64) % 64) / sizeof(double);
    return store.data() + skip;
}

// The first bad entry found by several threads, in a total order of positions.
class FirstBad {
public:
    void offer(std::size_t position)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (position < first_) first_ = position;
    }
    bool found() const { return first_ != none; }
    std::size_t position() const { return first_; }

private:
    static constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
    std::mutex mutex_;
    std::size_t first_ = none;
};

// The columns of one transposed chunk of a tile of L records: for c < width, when xt[c, :]
// (L lanes) is nonzero somewhere (NaN counts as nonzero), y[rows[r, j0 + c], :] +=
// vals[r, j0 + c] * xt[c, :] for r = 0, ..., s - 1: a product, then a sum, lane by lane. One
// version per instruction set, written with its intrinsics (L / 8 AVX-512 registers, L / 4
// AVX2, L / 2 SSE2), and a portable one.
using ColumnsFn = void (*)(const double *xt, std::size_t width, const Table &S, std::size_t j0, double *y);

template <std::size_t L>
void columns_portable(const double *__restrict xt, std::size_t width, const Table &S, std::size_t j0,
                      double *__restrict y)
{
    const std::size_t d = S.d;
    for (std::size_t c = 0; c < width; ++c) {
        const double *xc = xt + c * L;
        bool nonzero = false;
        for (std::size_t t = 0; t < L; ++t) nonzero |= xc[t] != 0.0;
        if (!nonzero) continue;
        for (std::size_t r = 0; r < S.s; ++r) {
            const double v = S.vals[r * d + j0 + c];
            double *yr = y + static_cast<std::size_t>(S.rows[r * d + j0 + c]) * L;
            for (std::size_t t = 0; t < L; ++t) yr[t] = yr[t] + v * xc[t];
        }
    }
}

#if defined(PYSKETCH_SIMD_X86)

static_assert(tile % 8 == 0, "a tile is a whole number of AVX-512 registers");

template <std::size_t L>
__attribute__((target(PYSKETCH_SIMD_TARGET_avx512))) void columns_avx512(const double *xt, std::size_t width,
                                                                          const Table &S, std::size_t j0, double *y)
{
    constexpr std::size_t q = L / 8;
    const std::size_t d = S.d, s = S.s;
    const __m512d zero = _mm512_setzero_pd();
    for (std::size_t c = 0; c < width; ++c) {
        __m512d x[q];
        __mmask8 nonzero = 0;
        for (std::size_t u = 0; u < q; ++u) {
            x[u] = _mm512_load_pd(xt + c * L + 8 * u);
            nonzero = static_cast<__mmask8>(nonzero | _mm512_cmp_pd_mask(x[u], zero, _CMP_NEQ_UQ));
        }
        if (nonzero == 0) continue;
        const std::int32_t *rows = S.rows + j0 + c;
        const double *vals = S.vals + j0 + c;
        for (std::size_t r = 0; r < s; ++r) {
            const __m512d v = _mm512_set1_pd(vals[r * d]);
            double *yr = y + static_cast<std::size_t>(rows[r * d]) * L;
            for (std::size_t u = 0; u < q; ++u)
                _mm512_store_pd(yr + 8 * u, _mm512_add_pd(_mm512_load_pd(yr + 8 * u), _mm512_mul_pd(v, x[u])));
        }
    }
}

template <std::size_t L>
__attribute__((target(PYSKETCH_SIMD_TARGET_avx2))) void columns_avx2(const double *xt, std::size_t width,
                                                                      const Table &S, std::size_t j0, double *y)
{
    constexpr std::size_t q = L / 4;
    const std::size_t d = S.d, s = S.s;
    const __m256d zero = _mm256_setzero_pd();
    for (std::size_t c = 0; c < width; ++c) {
        __m256d x[q];
        __m256d nonzero = zero;
        for (std::size_t u = 0; u < q; ++u) {
            x[u] = _mm256_load_pd(xt + c * L + 4 * u);
            nonzero = _mm256_or_pd(nonzero, _mm256_cmp_pd(x[u], zero, _CMP_NEQ_UQ));
        }
        if (_mm256_movemask_pd(nonzero) == 0) continue;
        const std::int32_t *rows = S.rows + j0 + c;
        const double *vals = S.vals + j0 + c;
        for (std::size_t r = 0; r < s; ++r) {
            const __m256d v = _mm256_set1_pd(vals[r * d]);
            double *yr = y + static_cast<std::size_t>(rows[r * d]) * L;
            for (std::size_t u = 0; u < q; ++u)
                _mm256_store_pd(yr + 4 * u, _mm256_add_pd(_mm256_load_pd(yr + 4 * u), _mm256_mul_pd(v, x[u])));
        }
    }
}

template <std::size_t L>
__attribute__((target("sse2"))) void columns_sse2(const double *xt, std::size_t width, const Table &S,
                                                  std::size_t j0, double *y)
{
    constexpr std::size_t q = L / 2;
    const std::size_t d = S.d, s = S.s;
    const __m128d zero = _mm_setzero_pd();
    for (std::size_t c = 0; c < width; ++c) {
        __m128d x[q];
        __m128d nonzero = zero;
        for (std::size_t u = 0; u < q; ++u) {
            x[u] = _mm_load_pd(xt + c * L + 2 * u);
            nonzero = _mm_or_pd(nonzero, _mm_cmpneq_pd(x[u], zero));  // unordered compare: NaN counts
        }
        if (_mm_movemask_pd(nonzero) == 0) continue;
        const std::int32_t *rows = S.rows + j0 + c;
        const double *vals = S.vals + j0 + c;
        for (std::size_t r = 0; r < s; ++r) {
            const __m128d v = _mm_set1_pd(vals[r * d]);
            double *yr = y + static_cast<std::size_t>(rows[r * d]) * L;
            for (std::size_t u = 0; u < q; ++u)
                _mm_store_pd(yr + 2 * u, _mm_add_pd(_mm_load_pd(yr + 2 * u), _mm_mul_pd(v, x[u])));
        }
    }
}

#endif  // PYSKETCH_SIMD_X86

// The level's column loop: AVX-512F, AVX2 (no FMA emitted), SSE2, or the portable one.
template <std::size_t L>
ColumnsFn columns_fn()
{
#if defined(PYSKETCH_SIMD_X86)
    switch (simd::level()) {
    case simd::Level::avx512: return columns_avx512<L>;
    case simd::Level::avx2: return columns_avx2<L>;
    case simd::Level::sse: return columns_sse2<L>;
    default: break;
    }
#endif
    return columns_portable<L>;
}

// One tile: out[i0 + t, :] = S x_{i0 + t} for t < m (m <= L records). xt (chunk x L) and
// y (k x L) are scratch on 64-byte boundaries. The transposition reads the tile's rows side by
// side, column after column (all rows advance together: the hardware prefetchers follow).
template <std::size_t L, class T>
void tile_product(const Dense<T> &X, const Table &S, ColumnsFn columns, std::size_t i0, std::size_t m,
                  double *__restrict xt, double *__restrict y, double *__restrict out)
{
    const std::size_t d = X.d, k = S.k;
    std::fill(y, y + k * L, 0.0);
    const T *rp[L];
    for (std::size_t t = 0; t < m; ++t) rp[t] = X.row(i0 + t);
    for (std::size_t j0 = 0; j0 < d; j0 += chunk) {
        const std::size_t width = std::min(chunk, d - j0);
        if (m == L) {
            for (std::size_t c = 0; c < width; ++c)
                for (std::size_t t = 0; t < L; ++t) xt[c * L + t] = static_cast<double>(rp[t][j0 + c]);
        } else {
            for (std::size_t c = 0; c < width; ++c) {
                for (std::size_t t = 0; t < m; ++t) xt[c * L + t] = static_cast<double>(rp[t][j0 + c]);
                for (std::size_t t = m; t < L; ++t) xt[c * L + t] = 0.0;
            }
        }
        columns(xt, width, S, j0, y);
    }
    for (std::size_t t = 0; t < m; ++t) {
        double *o = out + (i0 + t) * k;
        for (std::size_t c = 0; c < k; ++c) o[c] = y[c * L + t];
    }
}

// apply() with tiles of L records.
template <std::size_t L, class T>
void apply_tiles(const Dense<T> &X, const Table &S, double *out)
{
    const std::size_t n = X.n, k = S.k;
    const ColumnsFn columns = columns_fn<L>();
    const std::size_t tiles = (n + L - 1) / L;
    const std::size_t per_tile = L * (X.d * (S.s + 1) + k);
    parallel_for(tiles, threads_for(tiles * per_tile, std::size_t{1} << 17), [&](std::size_t begin, std::size_t end) {
        std::vector<double> xt_store, y_store;
        double *xt = aligned_doubles(xt_store, chunk * L);
        double *y = aligned_doubles(y_store, k * L);
        for (std::size_t b = begin; b < end; ++b) {
            const std::size_t i0 = b * L;
            tile_product<L>(X, S, columns, i0, std::min(L, n - i0), xt, y, out);
        }
    });
}

}  // namespace detail

// ------------------------------------------------------------------------------ checks

// Every rows[r, j] in [0, k) and every vals[r, j] finite; else std::invalid_argument naming
// the first bad entry in row-major order.
inline void check_table(const Table &S)
{
    const std::size_t size = S.s * S.d;
    detail::FirstBad bad;
    parallel_for(size, detail::threads_for(size, std::size_t{1} << 18), [&](std::size_t begin, std::size_t end) {
        for (std::size_t p = begin; p < end; ++p) {
            const std::int32_t row = S.rows[p];
            if (row < 0 || static_cast<std::size_t>(row) >= S.k || !std::isfinite(S.vals[p])) {
                bad.offer(p);
                return;  // the rest of this piece comes later in row-major order
            }
        }
    });
    if (!bad.found()) return;
    const std::size_t p = bad.position(), r = p / S.d, j = p % S.d;
    const std::string at = "[" + std::to_string(r) + ", " + std::to_string(j) + "]";
    const std::int32_t row = S.rows[p];
    if (row < 0 || static_cast<std::size_t>(row) >= S.k)
        throw std::invalid_argument("rows" + at + " = " + std::to_string(row) + " is not in [0, k) with k = " +
                                    std::to_string(S.k) + " (the columns of out)");
    throw std::invalid_argument("vals" + at + " = " + std::to_string(S.vals[p]) + " is not finite");
}

// indptr[0] >= 0, indptr non-decreasing, indptr[n] <= stored, and every stored index of the
// rows (positions indptr[0] .. indptr[n] - 1) in [0, d); else std::invalid_argument.
template <class T, class I, class P>
void check_csr(const Csr<T, I, P> &A, std::size_t d)
{
    const P first = A.indptr[0];
    if (first < 0)
        throw std::invalid_argument("indptr[0] = " + std::to_string(first) + " is negative");
    for (std::size_t i = 0; i < A.n; ++i)
        if (A.indptr[i + 1] < A.indptr[i])
            throw std::invalid_argument("indptr must be non-decreasing: indptr[" + std::to_string(i + 1) + "] = " +
                                        std::to_string(A.indptr[i + 1]) + " < indptr[" + std::to_string(i) +
                                        "] = " + std::to_string(A.indptr[i]));
    const P last = A.indptr[A.n];
    if (static_cast<std::uint64_t>(last) > A.stored)
        throw std::invalid_argument("indptr[" + std::to_string(A.n) + "] = " + std::to_string(last) +
                                    " exceeds the length of indices and data (" + std::to_string(A.stored) + ")");
    const auto begin = static_cast<std::size_t>(first), end = static_cast<std::size_t>(last);
    detail::FirstBad bad;
    parallel_for(end - begin, detail::threads_for(end - begin, std::size_t{1} << 18),
                 [&](std::size_t lo, std::size_t hi) {
                     for (std::size_t p = begin + lo; p < begin + hi; ++p) {
                         const I j = A.indices[p];
                         if (j < 0 || static_cast<std::uint64_t>(j) >= d) {
                             bad.offer(p);
                             return;
                         }
                     }
                 });
    if (bad.found()) {
        const std::size_t p = bad.position();
        throw std::invalid_argument("indices[" + std::to_string(p) + "] = " + std::to_string(A.indices[p]) +
                                    " is not in [0, n_cols) with n_cols = " + std::to_string(d));
    }
}

// ------------------------------------------------------------------------------ products

// out (X.n x S.k, row-major) = X S^T. Requires X.d == S.d and a checked table.
template <class T>
void apply(const Dense<T> &X, const Table &S, double *out)
{
    const std::size_t n = X.n, k = S.k;
    if (n == 0) return;
    if (X.d == 0 || S.s == 0) {
        std::fill(out, out + n * k, 0.0);
        return;
    }
    detail::apply_tiles<tile>(X, S, out);
}

// out (A.n x S.k, row-major) = A S^T. Requires a checked table and check_csr(A, S.d).
template <class T, class I, class P>
void apply_csr(const Csr<T, I, P> &A, const Table &S, double *out)
{
    const std::size_t n = A.n, k = S.k, s = S.s, d = S.d;
    if (n == 0) return;
    const auto stored = static_cast<std::size_t>(A.indptr[n] - A.indptr[0]);
    parallel_for(n, detail::threads_for(n * k + stored * (s + 1), std::size_t{1} << 17),
                 [&](std::size_t begin, std::size_t end) {
                     for (std::size_t i = begin; i < end; ++i) {
                         double *__restrict o = out + i * k;
                         std::fill(o, o + k, 0.0);
                         const auto lo = static_cast<std::size_t>(A.indptr[i]);
                         const auto hi = static_cast<std::size_t>(A.indptr[i + 1]);
                         for (std::size_t p = lo; p < hi; ++p) {
                             const auto j = static_cast<std::size_t>(A.indices[p]);
                             const double x = static_cast<double>(A.data[p]);
                             for (std::size_t r = 0; r < s; ++r) {
                                 double &target = o[static_cast<std::size_t>(S.rows[r * d + j])];
                                 target = target + S.vals[r * d + j] * x;
                             }
                         }
                     }
                 });
}

// out_row[rows[r, j]] += vals[r, j] * delta for r = 0, ..., s - 1. Checks column j of the table.
inline void update(const Table &S, std::size_t j, double delta, double *out_row)
{
    if (j >= S.d)
        throw std::invalid_argument("j = " + std::to_string(j) + " is not in [0, d) with d = " + std::to_string(S.d));
    for (std::size_t r = 0; r < S.s; ++r) {
        const std::int32_t row = S.rows[r * S.d + j];
        if (row < 0 || static_cast<std::size_t>(row) >= S.k)
            throw std::invalid_argument("rows[" + std::to_string(r) + ", " + std::to_string(j) + "] = " +
                                        std::to_string(row) + " is not in [0, k) with k = " + std::to_string(S.k) +
                                        " (the length of out_row)");
        if (!std::isfinite(S.vals[r * S.d + j]))
            throw std::invalid_argument("vals[" + std::to_string(r) + ", " + std::to_string(j) + "] = " +
                                        std::to_string(S.vals[r * S.d + j]) + " is not finite");
    }
    for (std::size_t r = 0; r < S.s; ++r) {
        double &target = out_row[static_cast<std::size_t>(S.rows[r * S.d + j])];
        target = target + S.vals[r * S.d + j] * delta;
    }
}

}  // namespace sparse_jl
}  // namespace pysketch

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

#endif  // PYSKETCH_SPARSE_JL_HPP
