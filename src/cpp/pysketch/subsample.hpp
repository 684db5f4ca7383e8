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

#include "fht.h"
#include "pysketch/operators.hpp"
#include "pysketch/sincos.hpp"
#include "pysketch/sketch.hpp"

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__)) && \
    !defined(PYSKETCH_SUBSAMPLE_PORTABLE_ONLY)
#define PYSKETCH_SUBSAMPLE_X86 1
#include <immintrin.h>
#endif

#if defined(_MSC_VER) && !defined(__clang__) && defined(_M_X64)
#include <intrin.h>
#endif

namespace pysketch {
namespace subsample {

enum class Scheme : int { uniform = 0, bernoulli = 1, blocks = 2 };

// What to draw: r of the m features per record (blocks: r / block blocks of `block`).
struct MaskSpec {
    Scheme scheme = Scheme::uniform;
    std::size_t m = 0, r = 0;
    std::size_t block = 1;  // blocks scheme only
};

struct Key {
    std::uint64_t k0 = 0, k1 = 0;
};

inline void validate(const MaskSpec &s)
{
    if (s.m == 0 || s.m > std::numeric_limits<std::uint32_t>::max())
        throw std::invalid_argument("subsampling: m must be in [1, 2**32 - 1], got " + std::to_string(s.m));
    if (s.r < 1 || s.r > s.m)
        throw std::invalid_argument("subsampling: r must be in [1, m = " + std::to_string(s.m) + "], got " +
                                    std::to_string(s.r));
    switch (s.scheme) {
    case Scheme::uniform:
    case Scheme::bernoulli: break;
    case Scheme::blocks:
        if (s.block < 1 || s.m % s.block != 0 || s.r % s.block != 0)
            throw std::invalid_argument("subsampling: the blocks scheme needs m and r to be multiples of the block "
                                        "size " + std::to_string(s.block) + " (m = " + std::to_string(s.m) +
                                        ", r = " + std::to_string(s.r) + ")");
        break;
    default: throw std::invalid_argument("subsampling: unknown scheme");
    }
}

// ---------------------------------------------------------------------------------------------
// Random numbers
// ---------------------------------------------------------------------------------------------

namespace detail {

// hi:lo = a * b (full 128-bit product).
inline void mulhilo64(std::uint64_t a, std::uint64_t b, std::uint64_t &hi, std::uint64_t &lo)
{
#if defined(__SIZEOF_INT128__)
    const unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
    hi = static_cast<std::uint64_t>(p >> 64);
    lo = static_cast<std::uint64_t>(p);
#elif defined(_MSC_VER) && defined(_M_X64)
    lo = _umul128(a, b, &hi);
#else
    const std::uint64_t a0 = a & 0xffffffffu, a1 = a >> 32, b0 = b & 0xffffffffu, b1 = b >> 32;
    const std::uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    const std::uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
    lo = (mid << 32) | (p00 & 0xffffffffu);
    hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
#endif
}

inline std::uint64_t rotl(std::uint64_t v, int k) { return (v << k) | (v >> (64 - k)); }

}  // namespace detail

// Philox4x64 with 10 rounds: a keyed bijection of the 256-bit counter (the same values as
// numpy.random.Philox, which first increments its counter and then applies this).
inline std::array<std::uint64_t, 4> philox4x64(std::array<std::uint64_t, 4> c, Key key)
{
    constexpr std::uint64_t mul0 = 0xD2E7470EE14C6C93ull, mul1 = 0xCA5A826395121157ull;
    constexpr std::uint64_t bump0 = 0x9E3779B97F4A7C15ull, bump1 = 0xBB67AE8584CAA73Bull;
    std::uint64_t k0 = key.k0, k1 = key.k1;
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {
            k0 += bump0;
            k1 += bump1;
        }
        std::uint64_t hi0, lo0, hi1, lo1;
        detail::mulhilo64(mul0, c[0], hi0, lo0);
        detail::mulhilo64(mul1, c[2], hi1, lo1);
        c = {hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0};
    }
    return c;
}

// xoshiro256++: a fast generator for the draws of one record.
class Xoshiro256pp {
  public:
    explicit Xoshiro256pp(const std::array<std::uint64_t, 4> &state) : s_(state)
    {
        if ((s_[0] | s_[1] | s_[2] | s_[3]) == 0) s_[0] = 1;  // the one forbidden state (probability 2^-256)
    }

    std::uint64_t next()
    {
        const std::uint64_t out = detail::rotl(s_[0] + s_[3], 23) + s_[0];
        const std::uint64_t t = s_[1] << 17;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = detail::rotl(s_[3], 45);
        return out;
    }

    // Uniform in [0, n), n >= 1, exactly (Lemire, "Fast random integer generation in an
    // interval", ACM TOMACS 2019: multiply, and reject the few low products that would bias).
    std::uint64_t below(std::uint64_t n)
    {
        std::uint64_t hi, lo;
        detail::mulhilo64(next(), n, hi, lo);
        if (lo < n) {
            const std::uint64_t threshold = (0 - n) % n;  // 2^64 mod n
            while (lo < threshold) detail::mulhilo64(next(), n, hi, lo);
        }
        return hi;
    }

    // Uniform in [0, n), 1 <= n < 2^32: the same method on 32-bit halves of the outputs.
    std::uint32_t below32(std::uint32_t n)
    {
        std::uint64_t p = static_cast<std::uint64_t>(next32()) * n;
        if (static_cast<std::uint32_t>(p) < n) {
            const std::uint32_t threshold = (0u - n) % n;  // 2^32 mod n
            while (static_cast<std::uint32_t>(p) < threshold) p = static_cast<std::uint64_t>(next32()) * n;
        }
        return static_cast<std::uint32_t>(p >> 32);
    }

    // Uniform in (0, 1]: a multiple of 2^-53.
    double unit_open_closed() { return static_cast<double>((next() >> 11) + 1) * 0x1p-53; }

  private:
    std::uint32_t next32()
    {
        if (spare_valid_) {
            spare_valid_ = false;
            return spare_;
        }
        const std::uint64_t v = next();
        spare_ = static_cast<std::uint32_t>(v >> 32);
        spare_valid_ = true;
        return static_cast<std::uint32_t>(v);
    }

    std::array<std::uint64_t, 4> s_;
    std::uint32_t spare_ = 0;
    bool spare_valid_ = false;
};

// The generator of record number `record` of the stream.
inline Xoshiro256pp record_generator(Key key, std::uint64_t record)
{
    constexpr std::uint64_t domain = 0x5375627361ull;  // "Subsa": masks, nothing else
    return Xoshiro256pp(philox4x64({record, 0, domain, 0}, key));
}

// ---------------------------------------------------------------------------------------------
// Masks
// ---------------------------------------------------------------------------------------------

// Marks over [0, n) cleared in O(1): a per-thread array of stamps.
class Marks {
  public:
    void begin(std::size_t n)
    {
        if (stamp_.size() < n) {
            stamp_.assign(n, 0);
            current_ = 0;
        }
        if (++current_ == 0) {  // wrapped around: clear for real
            std::fill(stamp_.begin(), stamp_.end(), 0u);
            current_ = 1;
        }
    }
    // true if j was marked already; marks it
    bool test_and_mark(std::size_t j)
    {
        if (stamp_[j] == current_) return true;
        stamp_[j] = current_;
        return false;
    }
    bool marked(std::size_t j) const { return stamp_[j] == current_; }

  private:
    std::vector<std::uint32_t> stamp_;
    std::uint32_t current_ = 0;
};

// A growable list of indices whose storage is kept between uses (clearing it frees nothing and
// growing it again initializes nothing).
class IndexList {
  public:
    void clear() { n_ = 0; }
    std::size_t size() const { return n_; }
    std::uint32_t *data() { return store_.data(); }
    const std::uint32_t *data() const { return store_.data(); }
    std::uint32_t operator[](std::size_t i) const { return store_[i]; }
    void truncate(std::size_t n) { n_ = n; }
    // k more entries, uninitialized (well: whatever they held), returned for writing
    std::uint32_t *extend(std::size_t k)
    {
        if (n_ + k > store_.size()) store_.resize(std::max(2 * store_.size(), n_ + k));
        std::uint32_t *p = store_.data() + n_;
        n_ += k;
        return p;
    }
    void append(std::uint32_t v) { *extend(1) = v; }

  private:
    std::vector<std::uint32_t> store_;
    std::size_t n_ = 0;
};

namespace detail {

// Appends a uniformly random k-subset of [0, n) to out (Floyd's algorithm: for j = n-k .. n-1
// draw t uniform in [0, j], keep t unless already kept, else keep j). Sorted when `sorted`.
inline void uniform_subset(Xoshiro256pp &rng, std::size_t n, std::size_t k, Marks &marks, bool sorted,
                           IndexList &out)
{
    std::uint32_t *p = out.extend(k);
    if (k == n) {  // everything: no draw needed
        for (std::size_t j = 0; j < n; ++j) p[j] = static_cast<std::uint32_t>(j);
        return;
    }
    marks.begin(n);
    for (std::size_t j = n - k; j < n; ++j) {
        std::size_t t = rng.below32(static_cast<std::uint32_t>(j + 1));  // n <= m < 2^32
        if (marks.test_and_mark(t)) {
            t = j;
            marks.test_and_mark(j);
        }
        *p++ = static_cast<std::uint32_t>(t);
    }
    if (!sorted) return;
    p -= k;
    if (4 * k >= n) {  // dense subsets: read the marks in order (O(n), no comparisons)
        for (std::size_t j = 0; j < n; ++j)
            if (marks.marked(j)) *p++ = static_cast<std::uint32_t>(j);
    } else {
        std::sort(p, p + k);
    }
}

// Appends the features kept by independent Bernoulli(r / m) trials, in increasing order: the
// gaps between kept features are geometric, floor(log U / log(1 - alpha)) with U in (0, 1].
inline void bernoulli_subset(Xoshiro256pp &rng, std::size_t m, std::size_t r, IndexList &out)
{
    if (r == m) {
        std::uint32_t *p = out.extend(m);
        for (std::size_t j = 0; j < m; ++j) p[j] = static_cast<std::uint32_t>(j);
        return;
    }
    const double alpha = static_cast<double>(r) / static_cast<double>(m);
    const double log_miss = std::log1p(-alpha);  // < 0
    std::size_t j = 0;                           // next candidate
    for (;;) {
        const double gap = std::floor(std::log(rng.unit_open_closed()) / log_miss);  // >= 0
        if (!(gap < static_cast<double>(m - j))) return;
        j += static_cast<std::size_t>(gap);
        out.append(static_cast<std::uint32_t>(j));
        if (++j == m) return;
    }
}

}  // namespace detail

// Appends the mask of one record to out: feature indices (uniform, bernoulli) or block indices
// (blocks), drawn from `rng`. Sorted when `sorted` (Bernoulli masks always are); the draws do
// not depend on `sorted`, only the order of the output does.
inline void draw_mask(const MaskSpec &spec, Xoshiro256pp &rng, Marks &marks, bool sorted, IndexList &out)
{
    switch (spec.scheme) {
    case Scheme::uniform: detail::uniform_subset(rng, spec.m, spec.r, marks, sorted, out); return;
    case Scheme::bernoulli: detail::bernoulli_subset(rng, spec.m, spec.r, out); return;
    case Scheme::blocks:
        detail::uniform_subset(rng, spec.m / spec.block, spec.r / spec.block, marks, sorted, out);
        return;
    }
}

// The sorted feature indices of the mask of record `record` (blocks expanded into features):
// exactly the mask the sketches below use for that record. For tests.
inline std::vector<std::uint32_t> record_mask(const MaskSpec &spec, Key key, std::uint64_t record)
{
    validate(spec);
    Marks marks;
    Xoshiro256pp rng = record_generator(key, record);
    IndexList drawn;
    draw_mask(spec, rng, marks, true, drawn);
    std::vector<std::uint32_t> features;
    for (std::size_t e = 0; e < drawn.size(); ++e) {
        if (spec.scheme != Scheme::blocks) {
            features.push_back(drawn[e]);
            continue;
        }
        for (std::size_t i = 0; i < spec.block; ++i)
            features.push_back(static_cast<std::uint32_t>(drawn[e] * spec.block + i));
    }
    return features;
}

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

#if defined(PYSKETCH_SUBSAMPLE_X86)

// Gathers with an explicit (zero) source and full mask: the plain intrinsics start from an
// undefined register, which GCC 12 reports as maybe-uninitialized.
__attribute__((target("avx512f"), always_inline)) inline __m512 gather16(__m512i off, const float *base)
{
    return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), static_cast<__mmask16>(0xffff), off, base, 4);
}
__attribute__((target("avx512f"), always_inline)) inline __m512d gather8(__m256i off, const double *base)
{
    return _mm512_mask_i32gather_pd(_mm512_setzero_pd(), static_cast<__mmask8>(0xff), off, base, 8);
}
__attribute__((target("avx2"), always_inline)) inline __m256 gather8f(const float *base, __m256i off)
{
    return _mm256_mask_i32gather_ps(_mm256_setzero_ps(), base, off, _mm256_castsi256_ps(_mm256_set1_epi32(-1)), 4);
}
__attribute__((target("avx2"), always_inline)) inline __m256d gather4d(const double *base, __m128i off)
{
    return _mm256_mask_i32gather_pd(_mm256_setzero_pd(), base, off, _mm256_castsi256_pd(_mm256_set1_epi64x(-1)), 8);
}

// The vector types of one instruction set and element type, for the kernels below.
struct Avx512F32 {
    using T = float;
    using V = __m512;
    using I = __m512i;
    static constexpr std::size_t lanes = 16;
};
struct Avx512F64 {
    using T = double;
    using V = __m512d;
    using I = __m256i;
    static constexpr std::size_t lanes = 8;
};
struct Avx2F32 {
    using T = float;
    using V = __m256;
    using I = __m256i;
    static constexpr std::size_t lanes = 8;
};
struct Avx2F64 {
    using T = double;
    using V = __m256d;
    using I = __m128i;
    static constexpr std::size_t lanes = 4;
};

#define PYSKETCH_SUBSAMPLE_OPS(ISA, TARGET, LOADI, MULI, SET1I, GATHER, SET1, MUL, FMA, ADD, STORE, REG)            \
    __attribute__((target(TARGET), always_inline)) inline ISA::I loadi(ISA, const std::uint32_t *p)                 \
    {                                                                                                                \
        return LOADI(reinterpret_cast<const ISA::I *>(p));                                                          \
    }                                                                                                                \
    __attribute__((target(TARGET), always_inline)) inline ISA::I scalei(ISA, ISA::I v, std::size_t k)               \
    {                                                                                                                \
        return MULI(v, SET1I(static_cast<int>(k)));                                                                  \
    }                                                                                                                \
    __attribute__((target(TARGET), always_inline)) inline ISA::V gather(ISA, const ISA::T *base, ISA::I off)        \
    {                                                                                                                \
        return GATHER;                                                                                               \
    }                                                                                                                \
    __attribute__((target(TARGET), always_inline)) inline ISA::V broadcast(ISA, ISA::T a) { return SET1(a); }       \
    __attribute__((target(TARGET), always_inline)) inline ISA::V mul(ISA, ISA::V a, ISA::V b) { return MUL(a, b); } \
    __attribute__((target(TARGET), always_inline)) inline ISA::V fma(ISA, ISA::V a, ISA::V b, ISA::V c)             \
    {                                                                                                                \
        return FMA(a, b, c);                                                                                         \
    }                                                                                                                \
    __attribute__((target(TARGET), always_inline)) inline ISA::V add_barrier(ISA, ISA::V a, ISA::V b)               \
    {                                                                                                                \
        __asm__("" : "+" REG(a)); /* the product chain must not be contracted with this sum */                      \
        return ADD(a, b);                                                                                            \
    }                                                                                                                \
    __attribute__((target(TARGET), always_inline)) inline void store(ISA, ISA::T *p, ISA::V v) { STORE(p, v); }

PYSKETCH_SUBSAMPLE_OPS(Avx512F32, "avx512f", _mm512_loadu_si512, _mm512_mullo_epi32, _mm512_set1_epi32,
                       gather16(off, base), _mm512_set1_ps, _mm512_mul_ps, _mm512_fmadd_ps, _mm512_add_ps,
                       _mm512_storeu_ps, "v")
PYSKETCH_SUBSAMPLE_OPS(Avx512F64, "avx512f", _mm256_loadu_si256, _mm256_mullo_epi32, _mm256_set1_epi32,
                       gather8(off, base), _mm512_set1_pd, _mm512_mul_pd, _mm512_fmadd_pd, _mm512_add_pd,
                       _mm512_storeu_pd, "v")
PYSKETCH_SUBSAMPLE_OPS(Avx2F32, "avx2,fma", _mm256_loadu_si256, _mm256_mullo_epi32, _mm256_set1_epi32,
                       gather8f(base, off), _mm256_set1_ps, _mm256_mul_ps, _mm256_fmadd_ps, _mm256_add_ps,
                       _mm256_storeu_ps, "x")
PYSKETCH_SUBSAMPLE_OPS(Avx2F64, "avx2,fma", _mm_loadu_si128, _mm_mullo_epi32, _mm_set1_epi32, gather4d(base, off),
                       _mm256_set1_pd, _mm256_mul_pd, _mm256_fmadd_pd, _mm256_add_pd, _mm256_storeu_pd, "x")
#undef PYSKETCH_SUBSAMPLE_OPS

// One lane group: features ix[0 .. lanes) of the record x (broadcast), or of the records
// xs + rec[l] * d (gathered) when Pairs.
#define PYSKETCH_SUBSAMPLE_KERNELS(ISA, TARGET)                                                                     \
    template <bool Pairs>                                                                                            \
    __attribute__((target(TARGET), always_inline)) inline void lane_group(                                           \
        ISA isa, const ISA::T *wt, std::size_t d, const ISA::T *x, const std::uint32_t *ix,                        \
        const std::uint32_t *rec, const ISA::T *u, ISA::T *dst)                                                     \
    {                                                                                                                \
        const ISA::I j = loadi(isa, ix);                                                                             \
        const ISA::I off = scalei(isa, j, d);                                                                        \
        ISA::V t;                                                                                                    \
        if constexpr (Pairs) {                                                                                       \
            const ISA::I xo = scalei(isa, loadi(isa, rec), d);                                                       \
            t = mul(isa, gather(isa, x, xo), gather(isa, wt, off));                                                  \
            for (std::size_t i = 1; i < d; ++i) t = fma(isa, gather(isa, x + i, xo), gather(isa, wt + i, off), t);   \
        } else {                                                                                                     \
            t = mul(isa, broadcast(isa, x[0]), gather(isa, wt, off));                                                \
            for (std::size_t i = 1; i < d; ++i) t = fma(isa, broadcast(isa, x[i]), gather(isa, wt + i, off), t);     \
        }                                                                                                            \
        if (u) t = add_barrier(isa, t, gather(isa, u, j));                                                           \
        store(isa, dst, t);                                                                                          \
    }                                                                                                                \
    template <bool Pairs>                                                                                            \
    __attribute__((target(TARGET))) void chosen_phases(ISA isa, const ISA::T *wt, std::size_t d, const ISA::T *x,    \
                                                       const std::uint32_t *idx, const std::uint32_t *rec,          \
                                                       std::size_t n, const ISA::T *u, ISA::T *out)                 \
    {                                                                                                                \
        constexpr std::size_t L = ISA::lanes;                                                                        \
        std::size_t k = 0;                                                                                           \
        for (; k + L <= n; k += L) lane_group<Pairs>(isa, wt, d, x, idx + k, Pairs ? rec + k : nullptr, u, out + k); \
        if (k < n) {                                                                                                 \
            alignas(64) std::uint32_t ix[16] = {}, rx[16] = {};                                                      \
            alignas(64) ISA::T dst[16];                                                                              \
            std::memcpy(ix, idx + k, (n - k) * sizeof(std::uint32_t));                                               \
            if (Pairs) std::memcpy(rx, rec + k, (n - k) * sizeof(std::uint32_t));                                    \
            lane_group<Pairs>(isa, wt, d, x, ix, rx, u, dst);                                                        \
            std::memcpy(out + k, dst, (n - k) * sizeof(ISA::T));                                                     \
        }                                                                                                            \
    }

PYSKETCH_SUBSAMPLE_KERNELS(Avx512F32, "avx512f")
PYSKETCH_SUBSAMPLE_KERNELS(Avx512F64, "avx512f")
PYSKETCH_SUBSAMPLE_KERNELS(Avx2F32, "avx2,fma")
PYSKETCH_SUBSAMPLE_KERNELS(Avx2F64, "avx2,fma")
#undef PYSKETCH_SUBSAMPLE_KERNELS

#endif  // PYSKETCH_SUBSAMPLE_X86

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
#if defined(PYSKETCH_SUBSAMPLE_X86)
    // 32-bit gather offsets: j * d + i and q * d + i must fit in an int
    const std::size_t reach = std::max(m, records) * d;
    if (reach <= static_cast<std::size_t>(std::numeric_limits<int>::max())) {
        switch (fht_get_simd_level()) {
        case FHT_SIMD_AVX512:
            if constexpr (sizeof(T) == 4) {
                if (rec) detail::chosen_phases<true>(detail::Avx512F32{}, wt, d, x, idx, rec, n, u, out);
                else detail::chosen_phases<false>(detail::Avx512F32{}, wt, d, x, idx, rec, n, u, out);
            } else {
                if (rec) detail::chosen_phases<true>(detail::Avx512F64{}, wt, d, x, idx, rec, n, u, out);
                else detail::chosen_phases<false>(detail::Avx512F64{}, wt, d, x, idx, rec, n, u, out);
            }
            return;
        case FHT_SIMD_AVX2:
            if constexpr (sizeof(T) == 4) {
                if (rec) detail::chosen_phases<true>(detail::Avx2F32{}, wt, d, x, idx, rec, n, u, out);
                else detail::chosen_phases<false>(detail::Avx2F32{}, wt, d, x, idx, rec, n, u, out);
            } else {
                if (rec) detail::chosen_phases<true>(detail::Avx2F64{}, wt, d, x, idx, rec, n, u, out);
                else detail::chosen_phases<false>(detail::Avx2F64{}, wt, d, x, idx, rec, n, u, out);
            }
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

namespace detail {

// Per-thread buffers kept between calls (no allocation per group). Slots: indices 0-3;
// double 0-1 features, 3 sums; size_t 0-1; T 4-6 (T may be double: distinct from those).
template <class V>
std::vector<V> &buffer(int slot)
{
    thread_local std::vector<V> buffers[8];
    return buffers[slot];
}

inline IndexList &thread_list(int slot)
{
    thread_local IndexList lists[2];
    return lists[slot];
}

inline Marks &thread_marks()
{
    thread_local Marks marks;
    return marks;
}

template <class V>
V *grown(std::vector<V> &v, std::size_t n)
{
    if (v.size() < n) v.resize(n);
    return v.data();
}

// The sums of one piece: features scattered into interleaved pairs (one cache line per
// chosen feature), then added to l0 / l1, which start at zero (so no rounding is added).
class Scatter {
  public:
    Scatter(std::size_t m, bool two) : m_(m), two_(two)
    {
        sums_ = grown(buffer<double>(3), two ? 2 * m : m);
        std::fill_n(sums_, two ? 2 * m : m, 0.0);
    }

    // c[k], s[k] = the features of the phases t[k] (the values sincos.hpp's accumulations add
    // for them: one row into zeroed accumulators; square: t^2 in double), added at idx[k].
    template <class T>
    void add(sketch::Nonlinearity f, const T *t, const std::uint32_t *idx, std::size_t n)
    {
        if (n == 0) return;
        double *c = grown(buffer<double>(0), n);
        if (f == sketch::Nonlinearity::square) {
            for (std::size_t k = 0; k < n; ++k) {
                const double v = static_cast<double>(t[k]);
                sums_[idx[k]] += v * v;
            }
            return;
        }
        double *s = grown(buffer<double>(1), n);
        std::fill_n(c, n, 0.0);
        std::fill_n(s, n, 0.0);
        sketch::accumulate<T>(f, t, 1, static_cast<std::ptrdiff_t>(n), n, nullptr, c, s);
        for (std::size_t k = 0; k < n; ++k) {
            double *p = sums_ + 2 * static_cast<std::size_t>(idx[k]);
            p[0] += c[k];
            p[1] += s[k];
        }
    }

    void finish(double *l0, double *l1) const
    {
        if (!two_) {
            for (std::size_t j = 0; j < m_; ++j) l0[j] += sums_[j];
            return;
        }
        for (std::size_t j = 0; j < m_; ++j) {
            l0[j] += sums_[2 * j];
            l1[j] += sums_[2 * j + 1];
        }
    }

  private:
    std::size_t m_;
    bool two_;
    double *sums_;
};

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

// Runs the ordered reduction into zeroed sums, then acc += scale * sums.
template <class Body>
void scaled_pieces(std::size_t rows, std::size_t piece, std::size_t m, bool two, double scale, double *acc0,
                   double *acc1, Body &&body)
{
    std::vector<double> sums(two ? 2 * m : m, 0.0);
    double *s0 = sums.data(), *s1 = two ? s0 + m : nullptr;
    sketch::detail::ordered_pieces(rows, piece, m, two, s0, s1, body);
    for (std::size_t j = 0; j < m; ++j) acc0[j] += scale * s0[j];
    if (two)
        for (std::size_t j = 0; j < m; ++j) acc1[j] += scale * s1[j];
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
    Marks &marks = thread_marks();
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
    if (!acc0 || (f != sketch::Nonlinearity::square && !acc1))
        throw std::invalid_argument("sketch: missing accumulator");
    if (rows == 0) return;
    const bool two = f != sketch::Nonlinearity::square;
    const bool strips = strip_ratio * spec.r >= m;
    constexpr std::size_t tr = sketch::dense_tile_rows, tc = sketch::dense_tile_cols<T>();
    const std::size_t group = strips ? tr : detail::group_records(spec.r);
    detail::scaled_pieces(rows, detail::piece_records(m, spec.r, d, group), m, two, detail::scale_of(spec), acc0,
                          acc1, [&](std::size_t p0, std::size_t p1, double *l0, double *l1) {
        IndexList &idx = detail::thread_list(0);
        IndexList &rec = detail::thread_list(1);
        detail::Scatter scatter(m, two);
        if (!strips) {
            for (std::size_t g0 = p0; g0 < p1; g0 += group) {
                const std::size_t count = std::min(group, p1 - g0);
                detail::draw_group(spec, key, first + g0, count, false, idx, rec);
                T *ph = detail::grown(detail::buffer<T>(4), idx.size());
                const T *xg = x + static_cast<std::ptrdiff_t>(g0) * x_stride;
                if (spec.r >= 16) {  // whole lane groups of one record: x broadcast
                    std::size_t e0 = 0;
                    for (std::size_t q = 0; q < count; ++q) {
                        std::size_t e1 = e0;
                        while (e1 < idx.size() && rec[e1] == q) ++e1;
                        phases_selected<T>(omega_t, d, m, xg + static_cast<std::ptrdiff_t>(q) * x_stride,
                                           idx.data() + e0, nullptr, 0, e1 - e0, u, ph + e0);
                        e0 = e1;
                    }
                } else {  // (record, feature) pairs: the group's records copied together
                    T *xs = detail::grown(detail::buffer<T>(5), count * d);
                    for (std::size_t q = 0; q < count; ++q)
                        std::memcpy(xs + q * d, xg + static_cast<std::ptrdiff_t>(q) * x_stride, d * sizeof(T));
                    phases_selected<T>(omega_t, d, m, xs, idx.data(), rec.data(), count, idx.size(), u, ph);
                }
                scatter.add<T>(f, ph, idx.data(), idx.size());
            }
            scatter.finish(l0, l1);
            return;
        }
        // strips: the masks of the whole piece, bucketed by strip of columns; then strip after
        // strip (Omega's strip stays in cache), tiles of all the phases of 16 records, from
        // which the chosen ones are picked.
        std::vector<std::uint32_t> &order_store = detail::buffer<std::uint32_t>(2);
        std::vector<std::uint32_t> &picked_store = detail::buffer<std::uint32_t>(3);
        std::vector<std::size_t> &start = detail::buffer<std::size_t>(0);
        std::vector<std::size_t> &hist = detail::buffer<std::size_t>(1);
        T *const tile = operators::detail::scratch<T>(1, tr * tc);
        const std::size_t nstrips = (m + tc - 1) / tc;
        detail::draw_group(spec, key, first + p0, p1 - p0, false, idx, rec);
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
        std::uint32_t *const order = detail::grown(order_store, n);
        std::uint32_t *const picked = detail::grown(picked_store, n);
        std::copy(start.begin(), start.end() - 1, hist.begin());
        for (std::size_t e = 0; e < n; ++e) order[hist[ix[e] / tc]++] = static_cast<std::uint32_t>(e);
        T *const ph = detail::grown(detail::buffer<T>(4), n);
        for (std::size_t b = 0; b < nstrips; ++b) {
            const std::size_t c0 = b * tc, width = std::min(tc, m - c0);
            std::size_t s0 = start[b];
            for (std::size_t r0 = p0; r0 < p1 && s0 < start[b + 1]; r0 += tr) {
                const std::size_t count = std::min(tr, p1 - r0), q0 = r0 - p0;
                std::size_t s1 = s0;
                while (s1 < start[b + 1] && rx[order[s1]] < q0 + count) ++s1;
                if (s1 == s0) continue;
                dense::phases<T>(x + static_cast<std::ptrdiff_t>(r0) * x_stride, x_stride, count, d, omega + c0,
                                 omega_stride, width, tile, static_cast<std::ptrdiff_t>(tc));
                for (std::size_t t = s0; t < s1; ++t) {
                    const std::size_t e = order[t], j = ix[e];
                    const T v = tile[(rx[e] - q0) * tc + (j - c0)];
                    ph[t] = u ? static_cast<T>(v + u[j]) : v;
                    picked[t] = static_cast<std::uint32_t>(j);
                }
                s0 = s1;
            }
        }
        scatter.add<T>(f, ph, picked, n);
        scatter.finish(l0, l1);
    });
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
    if (!acc0 || (f != sketch::Nonlinearity::square && !acc1))
        throw std::invalid_argument("sketch: missing accumulator");
    if (rows == 0) return;
    const bool two = f != sketch::Nonlinearity::square;
    const std::size_t dp = op.dp(), m = op.m, log_cost = static_cast<std::size_t>(op.log_dp) + 1;
    const double scale = detail::scale_of(spec);

    if (spec.scheme == Scheme::blocks) {
        // A wide group of records draws its blocks; each chosen block is transformed for the
        // records that chose it (in record order, L1-sized groups) and accumulated at once.
        const std::size_t k = spec.r / dp, nblocks = m / dp;
        const std::size_t g = operators::detail::group_rows<T>(op.log_dp);
        const std::size_t wide = std::max<std::size_t>(g, 64 / g * g);
        const std::size_t want = std::max<std::size_t>({1, (std::size_t{1} << 21) / (spec.r * log_cost), 8 * m / spec.r});
        const std::size_t piece = (want + wide - 1) / wide * wide;
        detail::scaled_pieces(rows, piece, m, two, scale, acc0, acc1,
                              [&](std::size_t p0, std::size_t p1, double *l0, double *l1) {
            IndexList &chosen = detail::thread_list(0);
            std::vector<std::uint32_t> &order_store = detail::buffer<std::uint32_t>(1);
            std::vector<std::size_t> &start = detail::buffer<std::size_t>(0);
            Marks &marks = detail::thread_marks();
            T *const pad = operators::detail::scratch<T>(0, g * dp);
            T *const buf = operators::detail::scratch<T>(1, g * dp);
            T *const tmp = op.kind == operators::Kind::fastfood ? operators::detail::scratch<T>(2, g * dp) : nullptr;
            for (std::size_t w0 = p0; w0 < p1; w0 += wide) {
                const std::size_t count = std::min(wide, p1 - w0);
                chosen.clear();
                for (std::size_t q = 0; q < count; ++q) {
                    Xoshiro256pp rng = record_generator(key, first + w0 + q);
                    draw_mask(spec, rng, marks, false, chosen);
                }
                // bucket the records by block (counting sort, record order kept)
                start.assign(nblocks + 1, 0);
                for (std::size_t e = 0; e < chosen.size(); ++e) ++start[chosen[e] + 1];
                for (std::size_t b = 0; b < nblocks; ++b) start[b + 1] += start[b];
                std::uint32_t *const order = detail::grown(order_store, chosen.size());
                for (std::size_t e = 0; e < chosen.size(); ++e)
                    order[start[chosen[e]]++] = static_cast<std::uint32_t>(e / k);
                for (std::size_t b = nblocks; b > 0; --b) start[b] = start[b - 1];  // restore the starts
                start[0] = 0;
                for (std::size_t b = 0; b < nblocks; ++b) {
                    for (std::size_t e0 = start[b]; e0 < start[b + 1]; e0 += g) {
                        const std::size_t n = std::min(g, start[b + 1] - e0);
                        for (std::size_t e = 0; e < n; ++e) {
                            const T *xr = x + static_cast<std::ptrdiff_t>(w0 + order[e0 + e]) * x_stride;
                            operators::detail::load_padded(xr, x_stride, 1, op.d, dp, pad + e * dp);
                        }
                        operators::detail::forward_block(op, b, pad, static_cast<std::ptrdiff_t>(dp), buf,
                                                         static_cast<std::ptrdiff_t>(dp), buf, tmp, n);
                        const std::size_t col = b * dp;
                        sketch::accumulate<T>(f, buf, n, static_cast<std::ptrdiff_t>(dp), dp, u ? u + col : nullptr,
                                              l0 + col, l1 ? l1 + col : nullptr);
                    }
                }
            }
        });
        return;
    }

    // uniform / bernoulli: per record, the blocks holding a chosen feature are transformed and
    // the chosen phases picked out.
    const std::size_t group = detail::group_records(spec.r);
    const std::size_t want = std::max<std::size_t>(
        {1, (std::size_t{1} << 22) / (std::min(spec.r, op.blocks) * dp * log_cost + spec.r * 16), 8 * m / spec.r});
    const std::size_t piece = (want + group - 1) / group * group;
    detail::scaled_pieces(rows, piece, m, two, scale, acc0, acc1,
                          [&](std::size_t p0, std::size_t p1, double *l0, double *l1) {
        IndexList &idx = detail::thread_list(0);
        IndexList &rec = detail::thread_list(1);
        detail::Scatter scatter(m, two);
        T *const pad = operators::detail::scratch<T>(0, dp);
        T *const buf = operators::detail::scratch<T>(1, dp);
        T *const tmp = op.kind == operators::Kind::fastfood ? operators::detail::scratch<T>(2, dp) : nullptr;
        for (std::size_t g0 = p0; g0 < p1; g0 += group) {
            const std::size_t count = std::min(group, p1 - g0);
            detail::draw_group(spec, key, first + g0, count, true, idx, rec);
            T *ph = detail::grown(detail::buffer<T>(4), idx.size());
            std::size_t loaded = static_cast<std::size_t>(-1), current = 0;
            for (std::size_t e = 0; e < idx.size(); ++e) {
                const std::size_t q = rec[e], j = idx[e], b = j / dp;
                if (q != loaded) {
                    const T *xr = x + static_cast<std::ptrdiff_t>(g0 + q) * x_stride;
                    operators::detail::load_padded(xr, x_stride, 1, op.d, dp, pad);
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
            scatter.add<T>(f, ph, idx.data(), idx.size());
        }
        scatter.finish(l0, l1);
    });
}

}  // namespace subsample
}  // namespace pysketch

#endif  // PYSKETCH_SUBSAMPLE_HPP
