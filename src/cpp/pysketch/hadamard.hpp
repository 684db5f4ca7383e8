// hadamard.hpp - batched fast Walsh-Hadamard transforms over vendor/ffht (header-only, C++17).
//
// Every transform is the unnormalized Walsh-Hadamard transform in natural (Sylvester)
// order of rows of n = 2^log_n elements,
//
//     y[i] = scale * sum_j (-1)^popcount(i & j) x[j],
//
// computed by the C library fht.h (levels in increasing stride, identical rounding on
// every instruction set); scale is applied afterwards, with one rounding per element.
//
//   transform(data, stride, rows, log_n, scale)              in place
//   transform(src, src_stride, dst, dst_stride, rows, log_n, scale)   out of place
//   all_finite(data, stride, rows, n)                         no NaN and no infinity?
//
// Both transforms return whether y[0] of every row is finite. y[0] is the (scaled) sum of
// the row, so it is not finite exactly when the row holds NaN or infinity or its sum
// overflows: a check of the input for free, and a partial one of overflow.
//
// Strides are in elements and may be negative. Rows of the output must not overlap
// (|dst_stride| >= n when rows > 1); input rows may (a stride of 0 repeats one row). The
// input and output must not overlap unless they are the same rows (the in-place case).
// Bad arguments throw std::invalid_argument. Large batches are split over the threads of
// parallel.hpp; this header knows nothing of Python.
#ifndef PYSKETCH_HADAMARD_HPP
#define PYSKETCH_HADAMARD_HPP

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "fht.h"
#include "pysketch/parallel.hpp"
#include "pysketch/simd.hpp"

namespace pysketch {
namespace hadamard {

inline constexpr int max_log_n = FHT_MAX_LOG_N;

// A batch of fewer elements runs on the calling thread. Waking a sleeping thread takes
// several microseconds (more on a virtual machine), about what 2^16 elements of transform
// take on one core; measured on 2 cores, splitting gains from 2^17 elements on.
inline constexpr std::size_t parallel_min_elements = std::size_t{1} << 17;

// A batch of fewer rows than threads goes row by row, each row split among the threads
// (detail::split_row), from rows of this many bytes on; shorter rows take one thread each.
// Measured on 2 cores with the row fresh in the calling core's cache (as after it was
// written): 2 MiB (float32 2^19, float64 2^18) 1.25-1.45x, 4 MiB 1.4-1.5x, 16 MiB 1.5-1.8x;
// at 1 MiB 1.1x, and below that waking the second thread and moving half the row to its
// core cost what the split saved. The finiteness check of one long run splits likewise.
namespace detail {
inline constexpr std::size_t split_row_min_bytes = std::size_t{1} << 21;
}

// Rows are handed to the kernel in blocks of about this many bytes (half a 32 KiB L1);
// each block is scaled right after its transform, while it is still in L1.
inline constexpr std::size_t block_bytes = std::size_t{1} << 14;

namespace detail {

template <class T>
struct kernel;

template <>
struct kernel<float> {
    static int in_place(float *data, int log_n, std::size_t rows, std::ptrdiff_t stride)
    {
        return fht_float_batch(data, log_n, rows, stride);
    }
    static int out_of_place(const float *src, std::ptrdiff_t src_stride, float *dst, std::ptrdiff_t dst_stride,
                            int log_n, std::size_t rows)
    {
        return fht_float_batch_oop(src, src_stride, dst, dst_stride, log_n, rows);
    }
    static int cols(float *data, int log_n, std::size_t count, std::ptrdiff_t elem_stride)
    {
        return fht_float_cols(data, log_n, count, elem_stride);
    }
};

template <>
struct kernel<double> {
    static int in_place(double *data, int log_n, std::size_t rows, std::ptrdiff_t stride)
    {
        return fht_double_batch(data, log_n, rows, stride);
    }
    static int out_of_place(const double *src, std::ptrdiff_t src_stride, double *dst,
                            std::ptrdiff_t dst_stride, int log_n, std::size_t rows)
    {
        return fht_double_batch_oop(src, src_stride, dst, dst_stride, log_n, rows);
    }
    static int cols(double *data, int log_n, std::size_t count, std::ptrdiff_t elem_stride)
    {
        return fht_double_cols(data, log_n, count, elem_stride);
    }
};

template <class T>
constexpr void check_type()
{
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                  "pysketch::hadamard supports float and double");
}

inline std::size_t magnitude(std::ptrdiff_t stride)
{
    return stride < 0 ? static_cast<std::size_t>(0) - static_cast<std::size_t>(stride)
                      : static_cast<std::size_t>(stride);
}

// Byte range [lo, hi) covered by `rows` rows of n elements of size `item`.
struct Span {
    std::uintptr_t lo, hi;
};
inline Span span_of(const void *data, std::ptrdiff_t stride, std::size_t rows, std::size_t n, std::size_t item)
{
    const std::uintptr_t base = reinterpret_cast<std::uintptr_t>(data);
    const std::size_t reach = (rows - 1) * magnitude(stride) * item;
    const std::uintptr_t first = stride < 0 ? base - reach : base;
    return {first, first + reach + n * item};
}

inline void check_result(int status)
{
    if (status != 0) throw std::invalid_argument("fht: the C kernel rejected its arguments");
}

// The two elementwise loops: plain loops that the compiler vectorizes. Where simd.hpp has
// vector code (PYSKETCH_SIMD_X86) each is also compiled for AVX2 and AVX-512 (function
// target attributes, no global -m flags) and picked at run time by simd::level(), the level
// the C kernel uses, so PYSKETCH_SIMD caps them too. Their results do not depend on the
// instruction set (one IEEE multiplication per element; exact bit tests).
#if defined(__GNUC__) || defined(__clang__)
#define PYSKETCH_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define PYSKETCH_ALWAYS_INLINE inline
#endif

template <class T>
PYSKETCH_ALWAYS_INLINE void scale_loop(T *p, std::size_t n, T scale)
{
    for (std::size_t i = 0; i < n; ++i) p[i] *= scale;
}

// Any NaN or infinity in p[0, n)? A branch-free OR over the exponent field of each
// element (all ones for infinities and NaN). Doubles are tested on their upper 32 bits
// (sign, exponent, top of the mantissa), which keeps the loop in 32-bit lanes that even
// baseline x86-64 (SSE2) compares in vectors.
template <class T>
PYSKETCH_ALWAYS_INLINE bool nonfinite_loop(const T *p, std::size_t n)
{
    constexpr std::uint32_t exponent = sizeof(T) == 4 ? 0x7F800000u : 0x7FF00000u;
    std::uint32_t bad = 0;
    for (std::size_t i = 0; i < n; ++i) {
        std::uint32_t high;
        if constexpr (sizeof(T) == 4) {
            std::memcpy(&high, p + i, sizeof high);
        } else {
            std::uint64_t bits;
            std::memcpy(&bits, p + i, sizeof bits);
            high = static_cast<std::uint32_t>(bits >> 32);
        }
        bad |= static_cast<std::uint32_t>((high & exponent) == exponent);
    }
    return bad != 0;
}
#undef PYSKETCH_ALWAYS_INLINE

template <class T>
void scale_generic(T *p, std::size_t n, T scale) { scale_loop(p, n, scale); }
template <class T>
bool nonfinite_generic(const T *p, std::size_t n) { return nonfinite_loop(p, n); }

#if defined(PYSKETCH_SIMD_X86)
template <class T>
__attribute__((target("avx2"))) void scale_avx2(T *p, std::size_t n, T scale) { scale_loop(p, n, scale); }
template <class T>
__attribute__((target("avx512f"))) void scale_avx512(T *p, std::size_t n, T scale) { scale_loop(p, n, scale); }
// AVX2: the exponent test written out on lanes of the element's own width (vpcmpeqd for
// float, vpcmpeqq for double) with four independent accumulators, which keeps two loads a
// cycle going; the compiler's vectorization of nonfinite_loop ran at half that speed on
// data in L1 and L2 (the double's high-word extraction costs shuffles). Measured on a
// Zen 2 EPYC, 32 KiB: float 0.36-0.60 -> 0.28 us, double 0.65 -> 0.29 us.
template <class T>
__attribute__((target("avx2"))) bool nonfinite_avx2(const T *p, std::size_t n)
{
    constexpr std::size_t w = 32 / sizeof(T);  // elements per vector
    const __m256i exponent =
        sizeof(T) == 4 ? _mm256_set1_epi32(0x7F800000) : _mm256_set1_epi64x(0x7FF0000000000000LL);
#define PYSKETCH_NONFINITE_LANES_(q)                                                                 \
    (sizeof(T) == 4                                                                                   \
         ? _mm256_cmpeq_epi32(                                                                        \
               _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(q)), exponent), exponent) \
         : _mm256_cmpeq_epi64(                                                                        \
               _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(q)), exponent), exponent))
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    std::size_t i = 0;
    for (; i + 4 * w <= n; i += 4 * w) {
        a0 = _mm256_or_si256(a0, PYSKETCH_NONFINITE_LANES_(p + i));
        a1 = _mm256_or_si256(a1, PYSKETCH_NONFINITE_LANES_(p + i + w));
        a2 = _mm256_or_si256(a2, PYSKETCH_NONFINITE_LANES_(p + i + 2 * w));
        a3 = _mm256_or_si256(a3, PYSKETCH_NONFINITE_LANES_(p + i + 3 * w));
    }
    for (; i + w <= n; i += w) a0 = _mm256_or_si256(a0, PYSKETCH_NONFINITE_LANES_(p + i));
#undef PYSKETCH_NONFINITE_LANES_
    a0 = _mm256_or_si256(_mm256_or_si256(a0, a1), _mm256_or_si256(a2, a3));
    return !_mm256_testz_si256(a0, a0) || nonfinite_loop(p + i, n - i);
}
template <class T>
__attribute__((target("avx512f"))) bool nonfinite_avx512(const T *p, std::size_t n)
{
    return nonfinite_loop(p, n);
}
#endif

// The versions of the two loops for the instruction set in use.
template <class T>
struct Loops {
    void (*scale)(T *, std::size_t, T);
    bool (*nonfinite)(const T *, std::size_t);
};

template <class T>
Loops<T> loops()
{
#if defined(PYSKETCH_SIMD_X86)
    switch (simd::level()) {
    case simd::Level::avx512: return {&scale_avx512<T>, &nonfinite_avx512<T>};
    case simd::Level::avx2: return {&scale_avx2<T>, &nonfinite_avx2<T>};
    default: break;
    }
#endif
    return {&scale_generic<T>, &nonfinite_generic<T>};
}

// Every element of p[0, n) finite? Exits early, once per chunk.
template <class T>
bool finite_run(const T *p, std::size_t n, const Loops<T> &f)
{
    constexpr std::size_t chunk = 4096;
    for (std::size_t start = 0; start < n; start += chunk)
        if (f.nonfinite(p + start, std::min(chunk, n - start))) return false;
    return true;
}

// One validated out-of-place or in-place batch.
template <class T>
struct Batch {
    const T *src;
    std::ptrdiff_t src_stride;
    T *dst;
    std::ptrdiff_t dst_stride;
    int log_n;
    T scale;
};

// Rows [begin, end) of the batch; returns whether y[0] of each of them is finite.
template <class T>
bool run_rows(const Batch<T> &b, std::size_t begin, std::size_t end)
{
    const std::size_t n = std::size_t{1} << b.log_n;
    // Without a scale there is nothing to do while a block is in L1, and the kernel
    // overlaps the passes of consecutive rows (vendor/ffht fused kernels), which one
    // call over all the rows does best.
    const std::size_t block =
        b.scale != T(1) ? std::max<std::size_t>(1, block_bytes / sizeof(T) >> b.log_n) : end - begin;
    const bool in_place = b.src == b.dst;  // then the strides agree (checked by transform)
    // The C batch functions want non-negative strides of at least n; otherwise the rows
    // go one at a time (a stride-0 input repeating one row, or a reversed input).
    const bool batched_src = b.src_stride >= 0 && static_cast<std::size_t>(b.src_stride) >= n;
    const bool batched_dst = b.dst_stride >= 0 && static_cast<std::size_t>(b.dst_stride) >= n;
    const Loops<T> f = loops<T>();
    bool finite = true;
    for (std::size_t r = begin; r < end; r += block) {
        const std::size_t count = std::min(block, end - r);
        const T *src = b.src + static_cast<std::ptrdiff_t>(r) * b.src_stride;
        T *dst = b.dst + static_cast<std::ptrdiff_t>(r) * b.dst_stride;
        if (count == 1 || (batched_src && batched_dst)) {
            if (in_place) check_result(kernel<T>::in_place(dst, b.log_n, count, b.dst_stride));
            else check_result(kernel<T>::out_of_place(src, b.src_stride, dst, b.dst_stride, b.log_n, count));
        } else {
            for (std::size_t k = 0; k < count; ++k) {
                const T *s = src + static_cast<std::ptrdiff_t>(k) * b.src_stride;
                T *d = dst + static_cast<std::ptrdiff_t>(k) * b.dst_stride;
                if (in_place) check_result(kernel<T>::in_place(d, b.log_n, 1, 0));
                else check_result(kernel<T>::out_of_place(s, 0, d, 0, b.log_n, 1));
            }
        }
        if (b.scale != T(1)) {
            for (std::size_t k = 0; k < count; ++k)
                f.scale(dst + static_cast<std::ptrdiff_t>(k) * b.dst_stride, n, b.scale);
        }
        for (std::size_t k = 0; k < count; ++k)
            finite &= static_cast<bool>(std::isfinite(dst[static_cast<std::ptrdiff_t>(k) * b.dst_stride]));
    }
    return finite;
}

inline bool use_threads(std::size_t rows, std::size_t n, int threads)
{
    return threads > 1 && rows >= 2 && rows * n >= parallel_min_elements;
}

// One long row on several threads, in two steps whose levels come in increasing stride
// (so the result is bit-identical to one kernel call): its 2^split_levels sub-rows of
// n / 2^split_levels elements, each transformed by the kernel, then the remaining levels
// along the columns (vendor/ffht fht_*_cols), in ranges of columns. The top three levels
// are also what the kernel's own recursion leaves to its last pass for rows longer than
// L2, so one thread would do the same work; with two, the sub-rows split evenly.
inline constexpr int split_levels = 3;

template <class T>
bool split_row(const Batch<T> &b, int threads)
{
    const std::size_t sub = std::size_t{1} << (b.log_n - split_levels);
    const std::size_t parts = std::size_t{1} << split_levels;
    const auto ss = static_cast<std::ptrdiff_t>(sub);
    const bool in_place = b.src == b.dst;
    parallel_for(parts, static_cast<std::size_t>(threads), [&](std::size_t begin, std::size_t end) {
        const auto first = static_cast<std::ptrdiff_t>(begin) * ss;
        if (in_place) check_result(kernel<T>::in_place(b.dst + first, b.log_n - split_levels, end - begin, ss));
        else
            check_result(kernel<T>::out_of_place(b.src + first, ss, b.dst + first, ss, b.log_n - split_levels,
                                                 end - begin));
    });
    // Columns in units of 64 bytes, so that each range starts where the rows' vectors do.
    constexpr std::size_t unit = 64 / sizeof(T);
    const Loops<T> f = loops<T>();
    parallel_for(sub / unit, static_cast<std::size_t>(threads), [&](std::size_t begin, std::size_t end) {
        T *first = b.dst + begin * unit;
        const std::size_t width = (end - begin) * unit;
        check_result(kernel<T>::cols(first, split_levels, width, ss));
        if (b.scale != T(1))
            for (std::size_t i = 0; i < parts; ++i) f.scale(first + i * sub, width, b.scale);
    });
    return static_cast<bool>(std::isfinite(b.dst[0]));
}

}  // namespace detail

// Out of place: row r of dst = scale * H (row r of src). dst may equal src (same stride):
// then this is the in-place transform. Returns whether y[0] of every row is finite.
template <class T>
bool transform(const T *src, std::ptrdiff_t src_stride, T *dst, std::ptrdiff_t dst_stride, std::size_t rows,
               int log_n, T scale = T(1))
{
    detail::check_type<T>();
    if (log_n < 0 || log_n > max_log_n)
        throw std::invalid_argument("log_n must be in [0, " + std::to_string(max_log_n) + "], got " +
                                    std::to_string(log_n));
    if (rows == 0) return true;
    if (src == nullptr || dst == nullptr) throw std::invalid_argument("fwht: null buffer");
    const std::size_t n = std::size_t{1} << log_n;
    if (rows == 1) {
        src_stride = dst_stride = static_cast<std::ptrdiff_t>(n);
    } else if (detail::magnitude(dst_stride) < n) {
        throw std::invalid_argument("fwht: rows of the output overlap (|dst_stride| = " +
                                    std::to_string(detail::magnitude(dst_stride)) + " < n = " +
                                    std::to_string(n) + ")");
    }
    const bool in_place = src == dst && src_stride == dst_stride;
    if (!in_place) {
        const detail::Span a = detail::span_of(src, src_stride, rows, n, sizeof(T));
        const detail::Span b = detail::span_of(dst, dst_stride, rows, n, sizeof(T));
        if (a.lo < b.hi && b.lo < a.hi) throw std::invalid_argument("fwht: input and output overlap");
    }
    // Rows are independent: walk a reversed output (and its input with it) forwards.
    if (dst_stride < 0 && (in_place || src_stride <= 0)) {
        const std::ptrdiff_t last = static_cast<std::ptrdiff_t>(rows - 1);
        src += last * src_stride;
        dst += last * dst_stride;
        src_stride = -src_stride;
        dst_stride = -dst_stride;
    }
    const int threads = get_num_threads();
    if (threads > 1 && rows < static_cast<std::size_t>(threads) && n * sizeof(T) >= detail::split_row_min_bytes) {
        // fewer long rows than threads: each row on all of them
        bool finite = true;
        for (std::size_t r = 0; r < rows; ++r) {
            const auto i = static_cast<std::ptrdiff_t>(r);
            const detail::Batch<T> row{src + i * src_stride, src_stride, dst + i * dst_stride, dst_stride, log_n, scale};
            finite &= detail::split_row(row, threads);
        }
        return finite;
    }
    const detail::Batch<T> batch{src, src_stride, dst, dst_stride, log_n, scale};
    if (!detail::use_threads(rows, n, threads)) return detail::run_rows(batch, 0, rows);
    std::atomic<bool> finite{true};
    parallel_for(rows, static_cast<std::size_t>(threads), [&](std::size_t begin, std::size_t end) {
        if (!detail::run_rows(batch, begin, end)) finite.store(false, std::memory_order_relaxed);
    });
    return finite.load();
}

// In place: row r (at data + r * stride) = scale * H (row r). Returns whether y[0] of
// every row is finite.
template <class T>
bool transform(T *data, std::ptrdiff_t stride, std::size_t rows, int log_n, T scale = T(1))
{
    return transform<T>(data, stride, data, stride, rows, log_n, scale);
}

// True when no element of the rows is NaN or infinite.
template <class T>
bool all_finite(const T *data, std::ptrdiff_t stride, std::size_t rows, std::size_t n)
{
    detail::check_type<T>();
    if (rows == 0 || n == 0) return true;
    if (data == nullptr) throw std::invalid_argument("all_finite: null buffer");
    if (rows > 1 && stride == static_cast<std::ptrdiff_t>(n)) {  // one contiguous run
        n *= rows;
        rows = 1;
    }
    const detail::Loops<T> f = detail::loops<T>();
    const int threads = get_num_threads();
    if (rows == 1 && threads > 1 && n * sizeof(T) >= detail::split_row_min_bytes) {
        // one long run: checked as rows of 2^15 (the tail apart), which split over the threads below
        constexpr std::size_t piece = std::size_t{1} << 15;
        const std::size_t tail = n % piece;
        if (tail && !detail::finite_run(data + (n - tail), tail, f)) return false;
        rows = n / piece;
        n = piece;
        stride = static_cast<std::ptrdiff_t>(piece);
    }
    if (!detail::use_threads(rows, n, threads)) {
        for (std::size_t r = 0; r < rows; ++r)
            if (!detail::finite_run(data + static_cast<std::ptrdiff_t>(r) * stride, n, f)) return false;
        return true;
    }
    std::atomic<bool> finite{true};
    parallel_for(rows, static_cast<std::size_t>(threads), [&](std::size_t begin, std::size_t end) {
        for (std::size_t r = begin; r < end && finite.load(std::memory_order_relaxed); ++r)
            if (!detail::finite_run(data + static_cast<std::ptrdiff_t>(r) * stride, n, f))
                finite.store(false, std::memory_order_relaxed);
    });
    return finite.load();
}

// The C kernel with fused diagonals, on the calling thread, for code that schedules its
// own work (the structured operators): row r of dst = post * H(pre * row r of src),
// elementwise (pre, post: n values or nullptr). src may equal dst (same stride); strides
// are non-negative and at least n when rows > 1; pre and post do not overlap dst.
template <class T>
void transform_diag(const T *src, std::ptrdiff_t src_stride, T *dst, std::ptrdiff_t dst_stride, std::size_t rows,
                    int log_n, const T *pre, const T *post)
{
    detail::check_type<T>();
    int status;
    if constexpr (std::is_same_v<T, float>) {
        status = src == dst ? fht_float_batch_diag(dst, log_n, rows, dst_stride, pre, post)
                            : fht_float_batch_oop_diag(src, src_stride, dst, dst_stride, log_n, rows, pre, post);
    } else {
        status = src == dst ? fht_double_batch_diag(dst, log_n, rows, dst_stride, pre, post)
                            : fht_double_batch_oop_diag(src, src_stride, dst, dst_stride, log_n, rows, pre, post);
    }
    detail::check_result(status);
}

// As transform_diag with diagonals of their own per row: row r of dst = post_r * H(pre_r *
// row r of src), pre_r = pre + r * diag_stride (likewise post_r). src_stride may be 0 (every
// row starts from the same input row, which must not overlap dst). Bit-identical, row by
// row, to transform_diag with pre_r and post_r.
template <class T>
void transform_diags(const T *src, std::ptrdiff_t src_stride, T *dst, std::ptrdiff_t dst_stride, std::size_t rows,
                     int log_n, const T *pre, const T *post, std::ptrdiff_t diag_stride)
{
    detail::check_type<T>();
    int status;
    if constexpr (std::is_same_v<T, float>)
        status = fht_float_batch_oop_diags(src, src_stride, dst, dst_stride, log_n, rows, pre, post, diag_stride);
    else
        status = fht_double_batch_oop_diags(src, src_stride, dst, dst_stride, log_n, rows, pre, post, diag_stride);
    detail::check_result(status);
}

}  // namespace hadamard
}  // namespace pysketch

#endif  // PYSKETCH_HADAMARD_HPP
