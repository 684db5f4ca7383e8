// exact_noise.hpp - exact discrete Laplace and discrete Gaussian noise drawn from a ChaCha20
// keystream (header-only, C++17; knows nothing of Python). The same laws, by the same
// algorithms, as the pure-Python samplers of pysketch.privacy.mechanisms, filling whole
// vectors on the threads.
//
//   chacha20_block(key, counter, nonce, out)
//       The ChaCha20 block function of RFC 8439 (Nir & Langley 2018, sec. 2.1-2.3): 256-bit
//       key, 32-bit block counter, 96-bit nonce (the RFC's layout), 16 output words.
//   Stream(key, n0, n1, n2)
//       Uniform bits: the keystream of that key and nonce (n0, n1, n2) from block counter 0,
//       in block order, handed out as 32-bit words (next32) or pairs of them (next: the first
//       | the second << 32); bit() hands out single bits from a 64-bit word of their own. The
//       blocks are computed eight at a time with AVX2 (chacha20_blocks8_avx2, when
//       simd::level() allows AVX2; PYSKETCH_SIMD and pysketch.set_simd_level cap it) or four
//       at a time (chacha20_blocks4, portable): the same keystream either way, so the draws
//       never depend on the level. At most 2^32 blocks (256 GiB): the counter would wrap
//       beyond, so the stream throws instead.
//   UniformBelow(n)(stream)
//       A uniform integer in [0, n), 1 <= n < 2^64, exactly (no modulo bias): Lemire's
//       multiply-and-reject ("Fast random integer generation in an interval", ACM TOMACS 2019,
//       Algorithm 5) on 32 or 64 bits, its threshold computed once per n.
//   bernoulli(num, den), bernoulli_exp_unit(num, den), bernoulli_exp(num, den)
//       Bernoulli(num/den) and Bernoulli(exp(-num/den)), exactly, in integer arithmetic only
//       (64, 128 or 256 bits). Bernoulli(num/den) compares a uniform real revealed 32 bits at
//       a time with num/den (bernoulli_ratio: no division, no rejection, one half word except
//       with probability < 2^-32). Bernoulli(exp(-gamma)): Canonne, Kamath & Steinke, "The
//       discrete Gaussian for differential privacy", NeurIPS 2020 (CKS below), Algorithm 1
//       for gamma = num/den in [0, 1] (the first k with a failed Bernoulli(gamma/k) is odd
//       with probability exp(-gamma)), Bernoulli(gamma/k) drawn as Bernoulli(num/(k den))
//       (CKS sec. 5.1) while k den fits; at gamma = 1 from one 32-bit uniform (nested events,
//       bernoulli_exp_minus_one); larger gamma by exp(-gamma) = exp(-1)^floor(gamma) *
//       exp(-frac(gamma)), den subtracted per passed factor (no division).
//   discrete_laplace(t_num, t_den, out, n, key, nonce)
//       n draws of the discrete Laplace law of scale t = t_num / t_den, P(k) proportional to
//       exp(-|k| / t): CKS Algorithm 2. Supported range: 1 <= t_num, t_den < 2^63 and
//       t <= 2^56 (laplace_params checks). A draw outside int64 has probability below
//       exp(-2^7) < 2^-184 there; if one comes, the call throws std::overflow_error.
//   discrete_gaussian(a, b, out, n, key, nonce)
//       n draws of the discrete Gaussian with sigma^2 = a / b, P(k) proportional to
//       exp(-k^2 / (2 sigma^2)): CKS Algorithm 3 (discrete Laplace proposals of scale
//       t = isqrt(floor(a/b)) + 1, accepted with Bernoulli(exp(-(|y| t b - a)^2 / (2 a t^2 b)))).
//       Supported range: 1 <= a, b < 2^118 and a/b <= 2^108 (gaussian_params checks; the
//       bounds are derived at gaussian_max_bits below). A proposal whose geometric part
//       exceeds 255 (probability exp(-256) < 2^-369 per proposal) would need wider
//       arithmetic: the call throws std::overflow_error then.
//
// Both fill functions cut [0, n) into blocks of block_draws = 4096 draws; block j reads its
// own stream, nonce (nonce, j mod 2^32, j div 2^32) under the caller's key, so the output
// depends on the key, the nonce and the parameters only, never on the thread count. A key
// and nonce must never be used twice for noise that has to be independent.
//
// Every step is the one of the Python reference, but the random bits are consumed differently
// (and a few draws are skipped when their outcome is certain: a uniform below 1, Bernoulli(0)
// and Bernoulli(1)), so the two agree in law, not draw by draw.
#ifndef PYSKETCH_EXACT_NOISE_HPP
#define PYSKETCH_EXACT_NOISE_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "pysketch/parallel.hpp"
#include "pysketch/random.hpp"
#include "pysketch/simd.hpp"

namespace pysketch {
namespace exact_noise {

// ------------------------------------------------------------------------------- ChaCha20

// A 256-bit key: its 32 bytes read as eight little-endian 32-bit words (RFC 8439 sec. 2.3).
struct Key {
    std::uint32_t w[8] = {};
};

inline Key key_from_bytes(const unsigned char *bytes)
{
    Key key;
    for (int i = 0; i < 8; ++i)
        key.w[i] = static_cast<std::uint32_t>(bytes[4 * i]) | static_cast<std::uint32_t>(bytes[4 * i + 1]) << 8 |
                   static_cast<std::uint32_t>(bytes[4 * i + 2]) << 16 |
                   static_cast<std::uint32_t>(bytes[4 * i + 3]) << 24;
    return key;
}

namespace detail {

inline std::uint32_t rotl32(std::uint32_t v, int k) { return (v << k) | (v >> (32 - k)); }

// RFC 8439 sec. 2.1: the quarter round on four words of the state.
inline void quarter_round(std::uint32_t &a, std::uint32_t &b, std::uint32_t &c, std::uint32_t &d)
{
    a += b;
    d = rotl32(d ^ a, 16);
    c += d;
    b = rotl32(b ^ c, 12);
    a += b;
    d = rotl32(d ^ a, 8);
    c += d;
    b = rotl32(b ^ c, 7);
}

}  // namespace detail

// RFC 8439 sec. 2.3: the state is the constants "expand 32-byte k", the key, the block counter
// and the nonce; 20 rounds (10 column and 10 diagonal rounds), then the input state is added.
inline void chacha20_block(const Key &key, std::uint32_t counter, const std::uint32_t nonce[3], std::uint32_t out[16])
{
    std::uint32_t in[16] = {0x61707865u, 0x3320646eu, 0x79622d32u, 0x6b206574u};
    for (int i = 0; i < 8; ++i) in[4 + i] = key.w[i];
    in[12] = counter;
    in[13] = nonce[0];
    in[14] = nonce[1];
    in[15] = nonce[2];
    std::uint32_t x[16];
    for (int i = 0; i < 16; ++i) x[i] = in[i];
    for (int round = 0; round < 10; ++round) {
        detail::quarter_round(x[0], x[4], x[8], x[12]);
        detail::quarter_round(x[1], x[5], x[9], x[13]);
        detail::quarter_round(x[2], x[6], x[10], x[14]);
        detail::quarter_round(x[3], x[7], x[11], x[15]);
        detail::quarter_round(x[0], x[5], x[10], x[15]);
        detail::quarter_round(x[1], x[6], x[11], x[12]);
        detail::quarter_round(x[2], x[7], x[8], x[13]);
        detail::quarter_round(x[3], x[4], x[9], x[14]);
    }
    for (int i = 0; i < 16; ++i) out[i] = x[i] + in[i];
}

// Four consecutive blocks, counters counter .. counter + 3 (mod 2^32): the same words as four
// chacha20_block calls. With GCC and Clang the four blocks run side by side in 4 x 32-bit
// vectors (element l of vector i is word i of block l; the compiler's generic vectors, SSE2
// on x86-64); elsewhere, one block after the other.
#if defined(__GNUC__) || defined(__clang__)
namespace detail {
typedef std::uint32_t u32x4 __attribute__((vector_size(16)));

inline u32x4 rotl32x4(u32x4 v, int k) { return (v << k) | (v >> (32 - k)); }

inline void quarter_round4(u32x4 &a, u32x4 &b, u32x4 &c, u32x4 &d)
{
    a += b;
    d = rotl32x4(d ^ a, 16);
    c += d;
    b = rotl32x4(b ^ c, 12);
    a += b;
    d = rotl32x4(d ^ a, 8);
    c += d;
    b = rotl32x4(b ^ c, 7);
}
}  // namespace detail

inline void chacha20_blocks4(const Key &key, std::uint32_t counter, const std::uint32_t nonce[3],
                             std::uint32_t out[4][16])
{
    using detail::u32x4;
    u32x4 in[16];
    const std::uint32_t constants[4] = {0x61707865u, 0x3320646eu, 0x79622d32u, 0x6b206574u};
    for (int i = 0; i < 4; ++i) in[i] = u32x4{constants[i], constants[i], constants[i], constants[i]};
    for (int i = 0; i < 8; ++i) in[4 + i] = u32x4{key.w[i], key.w[i], key.w[i], key.w[i]};
    in[12] = u32x4{counter, counter + 1u, counter + 2u, counter + 3u};
    for (int i = 0; i < 3; ++i) in[13 + i] = u32x4{nonce[i], nonce[i], nonce[i], nonce[i]};
    u32x4 x[16];
    for (int i = 0; i < 16; ++i) x[i] = in[i];
    for (int round = 0; round < 10; ++round) {
        detail::quarter_round4(x[0], x[4], x[8], x[12]);
        detail::quarter_round4(x[1], x[5], x[9], x[13]);
        detail::quarter_round4(x[2], x[6], x[10], x[14]);
        detail::quarter_round4(x[3], x[7], x[11], x[15]);
        detail::quarter_round4(x[0], x[5], x[10], x[15]);
        detail::quarter_round4(x[1], x[6], x[11], x[12]);
        detail::quarter_round4(x[2], x[7], x[8], x[13]);
        detail::quarter_round4(x[3], x[4], x[9], x[14]);
    }
    for (int i = 0; i < 16; ++i) {
        const u32x4 v = x[i] + in[i];
        for (int l = 0; l < 4; ++l) out[l][i] = v[l];
    }
}
#else
inline void chacha20_blocks4(const Key &key, std::uint32_t counter, const std::uint32_t nonce[3],
                             std::uint32_t out[4][16])
{
    for (std::uint32_t l = 0; l < 4; ++l) chacha20_block(key, counter + l, nonce, out[l]);
}
#endif

// Eight consecutive blocks, counters counter .. counter + 7 (mod 2^32), with AVX2: the same
// words as eight chacha20_block calls, out[16 b + i] = word i of block b. Lane l of state vector i holds word i of
// block l; the rotations by 16 and 8 are byte shuffles, those by 12 and 7 two shifts; at the
// end an 8 x 8 transpose of 32-bit words turns the lanes back into blocks. Only called when
// simd::level() allows AVX2 (see Stream).
#if defined(PYSKETCH_SIMD_X86)
namespace detail {
template <int K>
PYSKETCH_SIMD_AVX2 __m256i rotl32x8(__m256i v)
{
    return _mm256_or_si256(_mm256_slli_epi32(v, K), _mm256_srli_epi32(v, 32 - K));
}

PYSKETCH_SIMD_AVX2 void quarter_round8(__m256i &a, __m256i &b, __m256i &c, __m256i &d, __m256i rot16, __m256i rot8)
{
    a = _mm256_add_epi32(a, b);
    d = _mm256_shuffle_epi8(_mm256_xor_si256(d, a), rot16);
    c = _mm256_add_epi32(c, d);
    b = rotl32x8<12>(_mm256_xor_si256(b, c));
    a = _mm256_add_epi32(a, b);
    d = _mm256_shuffle_epi8(_mm256_xor_si256(d, a), rot8);
    c = _mm256_add_epi32(c, d);
    b = rotl32x8<7>(_mm256_xor_si256(b, c));
}

// Words first .. first + 7 of the eight blocks (x[first + j], lane l = word first + j of
// block l) stored at out32 + 16 l + first.
PYSKETCH_SIMD_AVX2 void store_transposed8(const __m256i *x, std::uint32_t *out32, int first)
{
    const __m256i t0 = _mm256_unpacklo_epi32(x[0], x[1]), t1 = _mm256_unpackhi_epi32(x[0], x[1]);
    const __m256i t2 = _mm256_unpacklo_epi32(x[2], x[3]), t3 = _mm256_unpackhi_epi32(x[2], x[3]);
    const __m256i t4 = _mm256_unpacklo_epi32(x[4], x[5]), t5 = _mm256_unpackhi_epi32(x[4], x[5]);
    const __m256i t6 = _mm256_unpacklo_epi32(x[6], x[7]), t7 = _mm256_unpackhi_epi32(x[6], x[7]);
    // u_j: word j of blocks 0-3 (low half) and of blocks 4-7 (high half) as [x0 x1 x2 x3] groups
    const __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
    const __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
    const __m256i u4 = _mm256_unpacklo_epi64(t4, t6), u5 = _mm256_unpackhi_epi64(t4, t6);
    const __m256i u6 = _mm256_unpacklo_epi64(t5, t7), u7 = _mm256_unpackhi_epi64(t5, t7);
    const __m256i lo[4] = {u0, u1, u2, u3}, hi[4] = {u4, u5, u6, u7};
    for (int l = 0; l < 4; ++l) {
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(out32 + 16 * l + first),
                            _mm256_permute2x128_si256(lo[l], hi[l], 0x20));
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(out32 + 16 * (l + 4) + first),
                            _mm256_permute2x128_si256(lo[l], hi[l], 0x31));
    }
}
}  // namespace detail

__attribute__((target(PYSKETCH_SIMD_TARGET_avx2))) inline void chacha20_blocks8_avx2(const Key &key,
                                                                                    std::uint32_t counter,
                                                                                    const std::uint32_t nonce[3],
                                                                                    std::uint32_t out[128])
{
    __m256i in[16];
    const std::uint32_t constants[4] = {0x61707865u, 0x3320646eu, 0x79622d32u, 0x6b206574u};
    for (int i = 0; i < 4; ++i) in[i] = _mm256_set1_epi32(static_cast<int>(constants[i]));
    for (int i = 0; i < 8; ++i) in[4 + i] = _mm256_set1_epi32(static_cast<int>(key.w[i]));
    in[12] = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(counter)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    for (int i = 0; i < 3; ++i) in[13 + i] = _mm256_set1_epi32(static_cast<int>(nonce[i]));
    const __m256i rot16 = _mm256_setr_epi8(2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13,  //
                                           2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
    const __m256i rot8 = _mm256_setr_epi8(3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14,  //
                                          3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14);
    __m256i x[16];
    for (int i = 0; i < 16; ++i) x[i] = in[i];
    for (int round = 0; round < 10; ++round) {
        detail::quarter_round8(x[0], x[4], x[8], x[12], rot16, rot8);
        detail::quarter_round8(x[1], x[5], x[9], x[13], rot16, rot8);
        detail::quarter_round8(x[2], x[6], x[10], x[14], rot16, rot8);
        detail::quarter_round8(x[3], x[7], x[11], x[15], rot16, rot8);
        detail::quarter_round8(x[0], x[5], x[10], x[15], rot16, rot8);
        detail::quarter_round8(x[1], x[6], x[11], x[12], rot16, rot8);
        detail::quarter_round8(x[2], x[7], x[8], x[13], rot16, rot8);
        detail::quarter_round8(x[3], x[4], x[9], x[14], rot16, rot8);
    }
    for (int i = 0; i < 16; ++i) x[i] = _mm256_add_epi32(x[i], in[i]);
    detail::store_transposed8(x, out, 0);
    detail::store_transposed8(x + 8, out, 8);
}
#endif

// Uniform 64-bit words from the ChaCha20 keystream of (key, nonce), block counter 0, 1, ...
// Refilled eight blocks at a time with AVX2 when simd::level() allows it at construction,
// else four at a time (chacha20_blocks4): the same words in the same order either way. The
// stream refuses to go past counter 2^32 - 1.
// Uniform bits from the ChaCha20 keystream of (key, nonce), block counter 0, 1, ..., handed
// out as 32-bit words in keystream order: next32() is the next keystream word, next() the
// next two, (first | second << 32) (bytes 8i..8i+7 of a block read little-endian when it
// starts at an even word), bit() single bits from a 64-bit word of their own. Refilled eight
// blocks at a time with AVX2 when simd::level() allows it at construction, else four at a
// time (chacha20_blocks4): the same words in the same order either way. The stream refuses to
// go past counter 2^32 - 1.
class Stream {
public:
    Stream(const Key &key, std::uint32_t n0, std::uint32_t n1, std::uint32_t n2)
        : key_(key), nonce_{n0, n1, n2}, avx2_(use_avx2())
    {
    }

    std::uint32_t next32()
    {
        if (pos_ == end_) refill();
        return buf_[pos_++];
    }

    std::uint64_t next()
    {
        if (end_ - pos_ < 2) {
            const std::uint64_t lo = next32();
            return lo | static_cast<std::uint64_t>(next32()) << 32;
        }
        const std::uint64_t w = buf_[pos_] | static_cast<std::uint64_t>(buf_[pos_ + 1]) << 32;
        pos_ += 2;
        return w;
    }

    // One uniform bit.
    bool bit()
    {
        if (nbits_ == 0) {
            bits_ = next();
            nbits_ = 64;
        }
        const bool b = (bits_ & 1u) != 0;
        bits_ >>= 1;
        --nbits_;
        return b;
    }

    // 64-bit words' worth of keystream handed out so far (for benchmarks).
    double words_drawn() const { return (static_cast<double>(counter_) * 16 - (end_ - pos_)) / 2; }

    // Whether the eight-block AVX2 refill is in use.
    bool uses_avx2() const { return avx2_; }

private:
    static constexpr int max_words = 128;  // eight blocks of sixteen 32-bit words

    static bool use_avx2()
    {
#if defined(PYSKETCH_SIMD_X86)
        return static_cast<int>(simd::level()) >= static_cast<int>(simd::Level::avx2);
#else
        return false;
#endif
    }

    void refill()
    {
        const std::uint64_t left = (std::uint64_t{1} << 32) - counter_;  // blocks before the counter wraps
#if defined(PYSKETCH_SIMD_X86)
        if (avx2_ && left >= 8) {
            chacha20_blocks8_avx2(key_, static_cast<std::uint32_t>(counter_), nonce_, buf_);
            pos_ = 0;
            end_ = 128;
            counter_ += 8;
            return;
        }
#endif
        if (left < 4) throw std::overflow_error("exact_noise: a ChaCha20 stream ran past block counter 2^32 - 1");
        std::uint32_t blocks[4][16];
        chacha20_blocks4(key_, static_cast<std::uint32_t>(counter_), nonce_, blocks);
        for (int b = 0; b < 4; ++b)
            for (int i = 0; i < 16; ++i) buf_[16 * b + i] = blocks[b][i];
        pos_ = 0;
        end_ = 64;
        counter_ += 4;
    }

    Key key_;
    std::uint32_t nonce_[3];
    bool avx2_;
    std::uint64_t counter_ = 0;  // next block
    std::uint32_t buf_[max_words] = {};
    int pos_ = 0, end_ = 0;
    std::uint64_t bits_ = 0;
    int nbits_ = 0;
};

// ------------------------------------------------------------------------- wide integers

// An unsigned integer of N 64-bit limbs, least significant first; arithmetic modulo 2^(64N)
// (the callers keep every value in range: the bounds are stated where they are used).
template <std::size_t N>
struct UInt {
    std::uint64_t w[N] = {};

    constexpr UInt() = default;
    constexpr UInt(std::uint64_t v) : w{v} {}  // NOLINT: implicit, like the built-in types
};

using U256 = UInt<4>;
#if defined(__SIZEOF_INT128__)
__extension__ typedef unsigned __int128 U128;  // __extension__: no -Wpedantic warning
#else
using U128 = UInt<2>;
#endif

namespace detail {

inline int bit_length64(std::uint64_t v)
{
#if defined(__GNUC__) || defined(__clang__)
    return v == 0 ? 0 : 64 - __builtin_clzll(v);
#else
    int n = 0;
    for (int step = 32; step > 0; step /= 2)
        if (v >> step) {
            v >>= step;
            n += step;
        }
    return n + static_cast<int>(v);
#endif
}

}  // namespace detail

template <std::size_t N>
bool operator==(const UInt<N> &a, const UInt<N> &b)
{
    for (std::size_t i = 0; i < N; ++i)
        if (a.w[i] != b.w[i]) return false;
    return true;
}
template <std::size_t N>
bool operator!=(const UInt<N> &a, const UInt<N> &b)
{
    return !(a == b);
}
template <std::size_t N>
bool operator<(const UInt<N> &a, const UInt<N> &b)
{
    for (std::size_t i = N; i-- > 0;)
        if (a.w[i] != b.w[i]) return a.w[i] < b.w[i];
    return false;
}
template <std::size_t N>
bool operator>=(const UInt<N> &a, const UInt<N> &b)
{
    return !(a < b);
}
template <std::size_t N>
bool operator>(const UInt<N> &a, const UInt<N> &b)
{
    return b < a;
}
template <std::size_t N>
bool operator<=(const UInt<N> &a, const UInt<N> &b)
{
    return !(b < a);
}

template <std::size_t N>
UInt<N> operator|(const UInt<N> &a, const UInt<N> &b)
{
    UInt<N> r;
    for (std::size_t i = 0; i < N; ++i) r.w[i] = a.w[i] | b.w[i];
    return r;
}
template <std::size_t N>
UInt<N> operator&(const UInt<N> &a, const UInt<N> &b)
{
    UInt<N> r;
    for (std::size_t i = 0; i < N; ++i) r.w[i] = a.w[i] & b.w[i];
    return r;
}

template <std::size_t N>
UInt<N> operator+(const UInt<N> &a, const UInt<N> &b)
{
    UInt<N> r;
    std::uint64_t carry = 0;
    for (std::size_t i = 0; i < N; ++i) {
        const std::uint64_t s = a.w[i] + carry;
        const std::uint64_t c1 = s < carry ? 1u : 0u;
        r.w[i] = s + b.w[i];
        carry = c1 + (r.w[i] < s ? 1u : 0u);
    }
    return r;
}

template <std::size_t N>
UInt<N> operator-(const UInt<N> &a, const UInt<N> &b)
{
    UInt<N> r;
    std::uint64_t borrow = 0;
    for (std::size_t i = 0; i < N; ++i) {
        const std::uint64_t d = a.w[i] - b.w[i];
        const std::uint64_t b1 = a.w[i] < b.w[i] ? 1u : 0u;
        r.w[i] = d - borrow;
        borrow = b1 + (d < borrow ? 1u : 0u);
    }
    return r;
}

// Schoolbook product, truncated to N limbs.
template <std::size_t N>
UInt<N> operator*(const UInt<N> &a, const UInt<N> &b)
{
    UInt<N> r;
    for (std::size_t i = 0; i < N; ++i) {
        if (a.w[i] == 0) continue;
        std::uint64_t carry = 0;
        for (std::size_t j = 0; i + j < N; ++j) {
            std::uint64_t hi, lo;
            ::pysketch::random::detail::mulhilo64(a.w[i], b.w[j], hi, lo);
            lo += carry;
            hi += lo < carry ? 1u : 0u;
            r.w[i + j] += lo;
            hi += r.w[i + j] < lo ? 1u : 0u;
            carry = hi;
        }
    }
    return r;
}

template <std::size_t N>
UInt<N> operator<<(const UInt<N> &a, int s)
{
    UInt<N> r;
    const int limbs = s / 64, bits = s % 64;
    for (int i = static_cast<int>(N) - 1; i >= limbs; --i) {
        std::uint64_t v = a.w[i - limbs] << bits;
        if (bits != 0 && i - limbs - 1 >= 0) v |= a.w[i - limbs - 1] >> (64 - bits);
        r.w[i] = v;
    }
    return r;
}

template <std::size_t N>
UInt<N> operator>>(const UInt<N> &a, int s)
{
    UInt<N> r;
    const int limbs = s / 64, bits = s % 64;
    for (int i = 0; i + limbs < static_cast<int>(N); ++i) {
        std::uint64_t v = a.w[i + limbs] >> bits;
        if (bits != 0 && i + limbs + 1 < static_cast<int>(N)) v |= a.w[i + limbs + 1] << (64 - bits);
        r.w[i] = v;
    }
    return r;
}

// ----------------------------------------------- the same small interface for every width

template <class W>
constexpr std::size_t limbs_of = sizeof(W) / sizeof(std::uint64_t);

inline std::uint64_t limb(std::uint64_t v, std::size_t) { return v; }
template <std::size_t N>
std::uint64_t limb(const UInt<N> &v, std::size_t i)
{
    return v.w[i];
}
#if defined(__SIZEOF_INT128__)
inline std::uint64_t limb(U128 v, std::size_t i) { return static_cast<std::uint64_t>(v >> (64 * i)); }
#endif

// The value of type W whose limbs are l[0 .. limbs_of<W>).
template <class W>
W from_limbs(const std::uint64_t *l)
{
    if constexpr (std::is_same_v<W, std::uint64_t>) {
        return l[0];
#if defined(__SIZEOF_INT128__)
    } else if constexpr (std::is_same_v<W, U128>) {
        return static_cast<U128>(l[1]) << 64 | l[0];
#endif
    } else {
        W r;
        for (std::size_t i = 0; i < limbs_of<W>; ++i) r.w[i] = l[i];
        return r;
    }
}

// v as the (at least as wide) type W.
template <class W, class V>
W widen(const V &v)
{
    std::uint64_t l[limbs_of<W>] = {};
    for (std::size_t i = 0; i < limbs_of<V>; ++i) l[i] = limb(v, i);
    return from_limbs<W>(l);
}

// v as the narrower type W; only when v fits (fits<W>(v)).
template <class W, class V>
W narrow(const V &v)
{
    std::uint64_t l[limbs_of<W>] = {};
    for (std::size_t i = 0; i < limbs_of<W>; ++i) l[i] = limb(v, i);
    return from_limbs<W>(l);
}

template <class W, class V>
bool fits(const V &v)
{
    for (std::size_t i = limbs_of<W>; i < limbs_of<V>; ++i)
        if (limb(v, i) != 0) return false;
    return true;
}

template <class W>
int bit_length(const W &v)
{
    for (std::size_t i = limbs_of<W>; i-- > 0;) {
        const std::uint64_t l = limb(v, i);
        if (l != 0) return static_cast<int>(64 * i) + detail::bit_length64(l);
    }
    return 0;
}

template <class W>
bool is_zero(const W &v)
{
    for (std::size_t i = 0; i < limbs_of<W>; ++i)
        if (limb(v, i) != 0) return false;
    return true;
}

// q = a / b, r = a % b (b > 0). Built-in widths use the built-in division; UInt<N> divides
// by shift-subtract, one quotient bit per step from the highest one possible.
inline void divmod(std::uint64_t a, std::uint64_t b, std::uint64_t &q, std::uint64_t &r)
{
    q = a / b;
    r = a % b;
}
#if defined(__SIZEOF_INT128__)
inline void divmod(U128 a, U128 b, U128 &q, U128 &r)
{
    q = a / b;
    r = a % b;
}
#endif
template <std::size_t N>
void divmod(const UInt<N> &a, const UInt<N> &b, UInt<N> &q, UInt<N> &r)
{
    q = UInt<N>();
    r = a;
    if (r < b) return;
    const int shift = bit_length(r) - bit_length(b);
    UInt<N> d = b << shift;  // no bit is lost: bit_length(d) == bit_length(a)
    for (int i = shift; i >= 0; --i) {
        if (r >= d) {
            r = r - d;
            q.w[i / 64] |= std::uint64_t{1} << (i % 64);
        }
        d = d >> 1;
    }
}

// floor(sqrt(v)), digit by digit (two bits of v per bit of the root).
inline std::uint64_t isqrt(U128 v)
{
    U128 root = 0, rem = 0;
    for (int i = 63; i >= 0; --i) {
        rem = (rem << 2) | ((v >> (2 * i)) & U128(3));
        const U128 trial = (root << 2) | U128(1);
        root = root << 1;
        if (rem >= trial) {
            rem = rem - trial;
            root = root | U128(1);
        }
    }
    return narrow<std::uint64_t>(root);
}

// ------------------------------------------------------------- exact uniforms, Bernoullis

// Uniform in [0, n), n >= 1, exactly (no modulo bias): Lemire 2019, Algorithm 5, with the
// rejection threshold 2^L mod n computed once for a fixed n. A uniform L-bit x is mapped to
// the high half of x n (L + L bits) and rejected when the low half falls below 2^L mod n, so
// that every value keeps exactly floor(2^L / n) preimages (a redraw with probability
// (2^L mod n) / 2^L < n / 2^L). L = 32 (half a word) when that probability is at most 1/4
// for L = 32 (fewer words on average than one 64-bit draw), else L = 64.
class UniformBelow {
public:
    explicit UniformBelow(std::uint64_t n = 1)
        : n_(n), small_(n <= (std::uint64_t{1} << 32) && (std::uint64_t{1} << 32) % n <= (std::uint64_t{1} << 30)),
          threshold_(small_ ? (std::uint64_t{1} << 32) % n : (0 - n) % n)
    {
    }

    std::uint64_t operator()(Stream &s) const
    {
        if (n_ == 1) return 0;
        if (small_) {
            for (;;) {
                const std::uint64_t p = static_cast<std::uint64_t>(s.next32()) * n_;  // < 2^64
                if ((p & 0xffffffffu) >= threshold_) return p >> 32;
            }
        }
        for (;;) {
            std::uint64_t hi, lo;
            ::pysketch::random::detail::mulhilo64(s.next(), n_, hi, lo);
            if (lo >= threshold_) return hi;
        }
    }

    std::uint64_t n() const { return n_; }

private:
    std::uint64_t n_;
    bool small_;
    std::uint64_t threshold_;
};

// Bernoulli(num / den) for 0 < num < den, by comparing a uniform real U in [0, 1), revealed
// 32 bits (half a word) at a time, with num / den: no division, no rejection. With x the next
// 32 bits, U is uniform in [x, x + 1) / 2^32, so
//   U < num / den for sure     when (x + 1) den <= num 2^32,
//   U >= num / den for sure    when x den >= num 2^32,
// and otherwise x den < num 2^32 < (x + 1) den, i.e. x = floor(num 2^32 / den): one value of
// x in 2^32. Then U' = 2^32 U - x is uniform in [0, 1) given x, and U < num / den iff
// U' < num' / den with num' = num 2^32 - x den, 0 < num' < den: the same question again, on
// fresh bits. So the result is exactly Bernoulli(num / den), from 32 bits except with
// probability below 2^-32 (each further round again below 2^-32).
namespace detail {
// The rounds after an undetermined first one (see bernoulli_ratio): probability below 2^-32.
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline, cold))
#endif
inline bool bernoulli_ratio_rounds(Stream &s, std::uint64_t num, std::uint64_t den)
{
    if (den < (std::uint64_t{1} << 32)) {
        for (;;) {
            const std::uint64_t p = static_cast<std::uint64_t>(s.next32()) * den;  // x den < 2^64
            const std::uint64_t n = num << 32;
            if (p >= n) return false;
            if (p + den <= n) return true;  // (x + 1) den <= 2^32 den < 2^64
            num = n - p;
        }
    }
    for (;;) {
        const U128 p = U128(s.next32()) * U128(den);
        const U128 n = U128(num) << 32;
        if (!(p < n)) return false;
        if (!(n < U128(p + U128(den)))) return true;  // (x + 1) den <= 2^32 den < 2^96
        num = narrow<std::uint64_t>(U128(n - p));
    }
}
}  // namespace detail

#if defined(__GNUC__) || defined(__clang__)
__attribute__((always_inline))
#endif
inline bool bernoulli_ratio(Stream &s, std::uint64_t num, std::uint64_t den)
{
    const std::uint64_t x = s.next32();
    if (den < (std::uint64_t{1} << 32)) {
        const std::uint64_t p = x * den, n = num << 32;  // x den < 2^64
        if (p >= n) return false;
        if (p + den <= n) return true;  // (x + 1) den <= 2^32 den < 2^64
        return detail::bernoulli_ratio_rounds(s, n - p, den);
    }
    const U128 p = U128(x) * U128(den), n = U128(num) << 32;
    if (!(p < n)) return false;
    if (!(n < U128(p + U128(den)))) return true;  // (x + 1) den <= 2^32 den < 2^96
    return detail::bernoulli_ratio_rounds(s, narrow<std::uint64_t>(U128(n - p)), den);
}

// The same for the wide types (0 < num < den): x den and num 2^32 compared on the
// significant limbs of den plus one.
template <class W>
bool bernoulli_ratio(Stream &s, const W &num_in, const W &den_in)
{
    constexpr std::size_t L = limbs_of<W>;
    std::uint64_t num[L], den[L];
    std::size_t used = 0;  // significant limbs of den (num < den has no more)
    for (std::size_t i = 0; i < L; ++i) {
        num[i] = limb(num_in, i);
        den[i] = limb(den_in, i);
        if (den[i] != 0) used = i + 1;
    }
    if (used == 1) return bernoulli_ratio(s, num[0], den[0]);
    for (;;) {
        // p = x den, q = p + den <= 2^32 den and n = num 2^32, on used + 1 limbs
        const std::uint64_t x = s.next32();
        std::uint64_t p[L + 1], q[L + 1], n[L + 1];
        std::uint64_t carry = 0;
        for (std::size_t i = 0; i < used; ++i) {
            std::uint64_t hi, lo;
            ::pysketch::random::detail::mulhilo64(x, den[i], hi, lo);
            lo += carry;
            hi += lo < carry ? 1u : 0u;
            p[i] = lo;
            carry = hi;
        }
        p[used] = carry;
        n[0] = num[0] << 32;
        for (std::size_t i = 1; i < used; ++i) n[i] = num[i] << 32 | num[i - 1] >> 32;
        n[used] = num[used - 1] >> 32;
        // p >= n: false
        std::size_t i = used + 1;
        while (i-- > 0 && p[i] == n[i]) {
        }
        if (i == static_cast<std::size_t>(-1) || p[i] > n[i]) return false;
        carry = 0;
        for (std::size_t j = 0; j <= used; ++j) {
            const std::uint64_t d = j < used ? den[j] : 0;
            const std::uint64_t t = p[j] + carry;
            const std::uint64_t c1 = t < carry ? 1u : 0u;
            q[j] = t + d;
            carry = c1 + (q[j] < t ? 1u : 0u);
        }
        // q <= n: true
        i = used + 1;
        while (i-- > 0 && q[i] == n[i]) {
        }
        if (i == static_cast<std::size_t>(-1) || q[i] < n[i]) return true;
        // num = n - p (< den: fits `used` limbs)
        std::uint64_t borrow = 0;
        for (std::size_t j = 0; j < used; ++j) {
            const std::uint64_t d = n[j] - p[j];
            const std::uint64_t b1 = n[j] < p[j] ? 1u : 0u;
            num[j] = d - borrow;
            borrow = b1 + (d < borrow ? 1u : 0u);
        }
    }
}

// Bernoulli(num / den), 0 <= num <= den, den >= 1 (no draw when the outcome is certain).
template <class W>
bool bernoulli(Stream &s, const W &num, const W &den)
{
    if (is_zero(num)) return false;
    if (!(num < den)) return true;
    return bernoulli_ratio(s, num, den);
}

// Bernoulli(1 / k), k >= 1.
inline bool bernoulli_inverse(Stream &s, std::uint64_t k)
{
    if (k == 1) return true;
    return bernoulli_ratio(s, std::uint64_t{1}, k);
}

// Bernoulli(exp(-1)) from one uniform of 32 bits. CKS Algorithm 1 at gamma = 1 draws
// B_k ~ Bernoulli(1/k), k = 1, 2, ..., independent, and returns whether the first k with
// B_k = 0 is odd. With M = m K! (K = exp1_levels, m = floor(2^32 / K!)) and V uniform in
// [0, M), the events E_k = {V < M / k!}, k = 1 .. K, are nested (the M / k! are integers,
// decreasing in k) and P(E_k) = 1 / k! = P(B_1 = ... = B_k = 1); more precisely, for j <= K,
//   P(E_1 .. E_(j-1) hold, E_j fails) = (M/(j-1)! - M/j!) / M = 1/(j-1)! - 1/j!
//                                     = P(B_1 = ... = B_(j-1) = 1, B_j = 0),
// and P(E_K) = 1 / K! = P(B_1 = ... = B_K = 1). So "the first j <= K with V >= M / j!" has
// the law of the first failing k <= K, and on E_K (V < m, probability 1/K!) the run goes on
// exactly as Algorithm 1 does, with fresh B_k for k = K + 1, K + 2, ... (independent of
// B_1 .. B_K there too): the result has the law of Algorithm 1's, exp(-1). V is drawn by
// Lemire's method on 32 bits with the threshold 2^32 mod M fixed at compile time; K = 10
// gives M > (1 - 2^-11) 2^32 (a redraw with probability below 2^-11, a continuation with
// probability 1/10! < 2^-21).
namespace detail {
inline constexpr int exp1_levels = 10;

struct Exp1Table {
    std::uint64_t modulus = 0;    // M = m K!
    std::uint64_t threshold = 0;  // 2^32 mod M
    std::uint64_t bound[exp1_levels + 1] = {};  // bound[k] = M / k!, k = 0 .. K (bound[K] = m)
};

constexpr Exp1Table make_exp1_table()
{
    std::uint64_t factorial = 1;
    for (int k = 2; k <= exp1_levels; ++k) factorial *= static_cast<std::uint64_t>(k);
    constexpr std::uint64_t two32 = std::uint64_t{1} << 32;
    Exp1Table t;
    t.modulus = two32 / factorial * factorial;
    t.threshold = two32 % t.modulus;
    t.bound[0] = t.modulus;
    for (int k = 1; k <= exp1_levels; ++k) t.bound[k] = t.bound[k - 1] / static_cast<std::uint64_t>(k);
    return t;
}

inline constexpr Exp1Table exp1_table = make_exp1_table();

constexpr bool exp1_table_is_consistent()
{
    const Exp1Table &t = exp1_table;
    for (int k = 1; k <= exp1_levels; ++k)
        if (t.bound[k] * static_cast<std::uint64_t>(k) != t.bound[k - 1]) return false;  // M / k! exact
    return t.bound[0] == t.modulus && t.bound[1] == t.modulus && t.bound[exp1_levels] >= 1 &&
           t.modulus <= (std::uint64_t{1} << 32) && t.modulus > (std::uint64_t{1} << 32) - (std::uint64_t{1} << 21);
}
static_assert(exp1_table_is_consistent(), "bound[k] = M / k!, M = floor(2^32 / K!) K! > (1 - 2^-11) 2^32");
}  // namespace detail

inline bool bernoulli_exp_minus_one(Stream &s)
{
    const detail::Exp1Table &t = detail::exp1_table;
    std::uint64_t p;
    do {
        p = static_cast<std::uint64_t>(s.next32()) * t.modulus;
    } while ((p & 0xffffffffu) < t.threshold);
    const std::uint64_t v = p >> 32;  // uniform in [0, M)
    if (v < t.bound[detail::exp1_levels]) {  // E_K: B_1 .. B_K all passed
        for (std::uint64_t k = detail::exp1_levels + 1;; ++k)
            if (!bernoulli_inverse(s, k)) return (k & 1u) != 0;
    }
    // the first k with v >= bound[k] is 2 + #{j in 2..K: v < bound[j]} (v < M = bound[1]:
    // E_1 always holds; the bounds decrease), counted without branches
    unsigned k = 2;
    for (int j = 2; j <= detail::exp1_levels; ++j) k += v < t.bound[j] ? 1u : 0u;
    return (k & 1u) != 0;
}

// Bernoulli(exp(-num/den)) for 0 <= num <= den, den >= 1: CKS Algorithm 1. The first k >= 1
// at which Bernoulli(gamma / k) fails is odd with probability exp(-gamma). Bernoulli(gamma/k)
// is drawn directly as Bernoulli(num / (k den)) (CKS sec. 5.1) while k den fits the type W
// (bit_length(k) + bit_length(den) <= its width), else as Bernoulli(1/k) AND Bernoulli(gamma),
// independent (the product of the probabilities).
template <class W>
bool bernoulli_exp_unit(Stream &s, const W &num, const W &den)
{
    if (is_zero(num)) return true;
    const int room = static_cast<int>(64 * limbs_of<W>) - bit_length(den);
    for (std::uint64_t k = 1;; ++k) {
        const bool pass = detail::bit_length64(k) <= room
                              ? bernoulli(s, num, W(W(k) * den))
                              : bernoulli_inverse(s, k) && bernoulli(s, num, den);
        if (!pass) return (k & 1u) != 0;
    }
}

// Bernoulli(exp(-num/den)) for num >= 0, den >= 1: exp(-gamma) = exp(-1)^floor(gamma) *
// exp(-frac(gamma)), every factor an independent Bernoulli, stopping at the first failure.
// floor(gamma) is never formed: den is subtracted once per passed factor exp(-1), which
// stops after 1 / (1 - exp(-1)) < 1.6 factors on average.
template <class W>
bool bernoulli_exp(Stream &s, W num, const W &den)
{
    while (!(num < den)) {
        if (!bernoulli_exp_minus_one(s)) return false;
        num = num - den;
    }
    return bernoulli_exp_unit(s, num, den);
}

// ----------------------------------------------------------------------- discrete Laplace

// Supported scales: 1 <= t_num, t_den < 2^laplace_max_bits and t_num <= 2^laplace_max_log2_scale
// t_den. P(|K| >= 2^63) = 2 exp(-2^63 / t) / (1 + exp(-1/t)) <= exp(-2^7) there.
inline constexpr int laplace_max_bits = 63;
inline constexpr int laplace_max_log2_scale = 56;

// The magnitude and sign of one discrete Laplace draw.
struct Signed {
    U128 magnitude;
    bool negative;
};

// A scale t_num / t_den, 1 <= t_num, t_den < 2^63, with what its draws reuse: the uniform
// below t_num and log2(t_den) when t_den is a power of two (-1 otherwise).
struct LaplaceParams {
    std::uint64_t t_num = 1, t_den = 1;
    UniformBelow below_t_num;
    int t_den_log2 = 0;

    LaplaceParams() = default;
    LaplaceParams(std::uint64_t num, std::uint64_t den)
        : t_num(num), t_den(den), below_t_num(num),
          t_den_log2((den & (den - 1)) == 0 ? detail::bit_length64(den) - 1 : -1)
    {
    }

    // floor(x / t_den)
    U128 divide(const U128 &x) const
    {
        if (t_den_log2 >= 0) return x >> t_den_log2;
        if (fits<std::uint64_t>(x)) return U128(narrow<std::uint64_t>(x) / t_den);
        U128 q, r;
        divmod(x, U128(t_den), q, r);
        return q;
    }
};

// One draw of the discrete Laplace law of scale t_num / t_den: CKS Algorithm 2, step for step
// as _discrete_laplace_one. y = (u + t_num v) // t_den is exact in 128 bits (u + t_num v <
// 2^63 + 2^63 (2^64 - 1) < 2^127). The geometric part v may not exceed v_cap
// (std::overflow_error otherwise).
inline Signed laplace_draw(Stream &s, const LaplaceParams &p, std::uint64_t v_cap)
{
    for (;;) {
        const std::uint64_t u = p.below_t_num(s);
        if (!bernoulli_exp_unit(s, u, p.t_num)) continue;
        std::uint64_t v = 0;
        while (bernoulli_exp_minus_one(s)) {
            if (v == v_cap)
                throw std::overflow_error("exact_noise: a discrete Laplace draw needs wider arithmetic than "
                                          "compiled (probability below 2^-369)");
            ++v;
        }
        const U128 y = p.divide(v == 0 ? U128(u) : U128(U128(u) + U128(p.t_num) * U128(v)));
        const bool negative = s.bit();
        if (negative && is_zero(y)) continue;
        return {y, negative};
    }
}

// The parameters, or std::invalid_argument when outside the supported range.
inline LaplaceParams laplace_params(std::uint64_t t_num, std::uint64_t t_den)
{
    constexpr std::uint64_t limit = std::uint64_t{1} << laplace_max_bits;
    if (t_num < 1 || t_num >= limit || t_den < 1 || t_den >= limit)
        throw std::invalid_argument("exact_noise: t_num and t_den must be in [1, 2^63)");
    if (U128(t_num) > (U128(t_den) << laplace_max_log2_scale))
        throw std::invalid_argument("exact_noise: the scale t_num / t_den must be at most 2^56");
    return LaplaceParams(t_num, t_den);
}

inline std::int64_t laplace_one(Stream &s, const LaplaceParams &p)
{
    const Signed d = laplace_draw(s, p, std::numeric_limits<std::uint64_t>::max());
    if (!fits<std::uint64_t>(d.magnitude) ||
        narrow<std::uint64_t>(d.magnitude) > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        throw std::overflow_error("exact_noise: a discrete Laplace draw fell outside int64 (probability below "
                                  "2^-184 per draw in the supported range)");
    const auto m = static_cast<std::int64_t>(narrow<std::uint64_t>(d.magnitude));
    return d.negative ? -m : m;
}

// ---------------------------------------------------------------------- discrete Gaussian

// The range, derived. Proposals are discrete Laplace of integer scale t = isqrt(floor(a/b)) + 1,
// so (t - 1)^2 <= a/b and t^2 b <= (sqrt(a) + sqrt(b))^2 <= 2 (a + b). Their geometric part
// is capped at gaussian_v_cap = 2^gaussian_v_log2 - 1, so |y| <= t (v_cap + 1) - 1. With
// a, b < 2^K:
//   P = |y| t b < 2^v_log2 t^2 b <= 2^(v_log2 + 1) (a + b) < 2^(K + v_log2 + 2),
//   |diff| = |P - a| < 2^(K + v_log2 + 2), num = diff^2 < 2^(2 (K + v_log2 + 2)),
//   den = 2 a t^2 b <= 4 a (a + b) < 2^(2K + 3),
// and uniforms below den, the quotient and remainder of num by den are below them too.
// 256 bits hold all of it when K + v_log2 + 2 <= 128: K = gaussian_max_bits = 118 (and P
// fits 128 bits). sigma^2 = a/b <= 2^gaussian_max_log2_sigma2 = 2^108 gives t <= 2^54 + 1,
// so every proposal, hence every output, has |y| <= 2^v_log2 t - 1 <= 2^62 + 2^8 - 1 < 2^63:
// outputs outside int64 cannot occur (still checked).
inline constexpr int gaussian_v_log2 = 8;
inline constexpr std::uint64_t gaussian_v_cap = (std::uint64_t{1} << gaussian_v_log2) - 1;
inline constexpr int gaussian_max_bits = 128 - gaussian_v_log2 - 2;
inline constexpr int gaussian_max_log2_sigma2 = 2 * (62 - gaussian_v_log2);
static_assert(gaussian_max_bits == 118 && gaussian_max_log2_sigma2 == 108, "the documented range");
static_assert(gaussian_max_bits <= 128, "a and b must fit 128 bits");

struct GaussianParams {
    U128 a = 1, b = 1;
    std::uint64_t t = 1;
    LaplaceParams proposal;     // scale t / 1
    U256 den;                   // 2 a t^2 b
    bool den_fits_64 = false;   // den < 2^64
    bool den_fits_128 = false;  // den < 2^128
};

// The parameters for sigma^2 = a/b, or std::invalid_argument outside the supported range.
inline GaussianParams gaussian_params(const U128 &a, const U128 &b)
{
    const U128 one = 1;
    if (a < one || b < one || bit_length(a) > gaussian_max_bits || bit_length(b) > gaussian_max_bits)
        throw std::invalid_argument("exact_noise: s2_num and s2_den must be in [1, 2^118)");
    if (widen<U256>(b) << gaussian_max_log2_sigma2 < widen<U256>(a))
        throw std::invalid_argument("exact_noise: sigma^2 = s2_num / s2_den must be at most 2^108");
    GaussianParams p;
    p.a = a;
    p.b = b;
    U128 quotient, rest;
    divmod(a, b, quotient, rest);
    p.t = isqrt(quotient) + 1;  // <= 2^54 + 1
    p.proposal = LaplaceParams(p.t, 1);
    const U256 t = p.t;
    p.den = U256(2) * widen<U256>(a) * (t * t * widen<U256>(b));  // < 2^239 (see above)
    p.den_fits_64 = fits<std::uint64_t>(p.den);
    p.den_fits_128 = fits<U128>(p.den);
    return p;
}

// One draw: CKS Algorithm 3, step for step as _discrete_gaussian_one. Each proposal's
// acceptance is computed in the narrowest of 64, 128 and 256 bits that holds diff^2 and den
// (the same exact values in each).
inline std::int64_t gaussian_one(Stream &s, const GaussianParams &p)
{
    for (;;) {
        const Signed d = laplace_draw(s, p.proposal, gaussian_v_cap);
        const std::uint64_t m = narrow<std::uint64_t>(d.magnitude);  // < 2^62 (see above)
        const U128 mt = U128(m) * U128(p.t);
        U128 P128;
        if (fits<std::uint64_t>(mt) && fits<std::uint64_t>(p.b)) {
            P128 = U128(narrow<std::uint64_t>(mt)) * U128(narrow<std::uint64_t>(p.b));
        } else {
            const U256 P = widen<U256>(mt) * widen<U256>(p.b);  // < 2^128
            if (!fits<U128>(P)) throw std::logic_error("exact_noise: internal bound exceeded");
            P128 = narrow<U128>(P);
        }
        const U128 diff = P128 < p.a ? U128(p.a - P128) : U128(P128 - p.a);
        bool accept;
        if (p.den_fits_64 && bit_length(diff) <= 32) {
            const std::uint64_t d64 = narrow<std::uint64_t>(diff);
            accept = bernoulli_exp(s, std::uint64_t(d64 * d64), narrow<std::uint64_t>(p.den));
        } else if (p.den_fits_128 && bit_length(diff) <= 64) {
            accept = bernoulli_exp(s, U128(diff * diff), narrow<U128>(p.den));
        } else {
            const U256 d256 = widen<U256>(diff);
            accept = bernoulli_exp(s, U256(d256 * d256), p.den);
        }
        if (accept) {
            if (m > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
                throw std::overflow_error("exact_noise: a discrete Gaussian draw fell outside int64");
            const auto v = static_cast<std::int64_t>(m);
            return d.negative ? -v : v;
        }
    }
}

// ----------------------------------------------------------------------------- fill calls

// Draws per block; each block reads its own stream (see the header comment).
inline constexpr std::size_t block_draws = 4096;

// out[i] = draw(stream of i's block) for i in [0, n), blocks on the threads.
template <class Draw>
void fill_blocks(std::int64_t *out, std::size_t n, const Key &key, std::uint32_t nonce, const Draw &draw)
{
    const std::size_t blocks = (n + block_draws - 1) / block_draws;
    const std::size_t threads = blocks > 1 ? static_cast<std::size_t>(get_num_threads()) : 1;
    parallel_for(blocks, threads, [&](std::size_t b0, std::size_t b1) {
        for (std::size_t j = b0; j < b1; ++j) {
            const auto index = static_cast<std::uint64_t>(j);
            Stream s(key, nonce, static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(index >> 32));
            const std::size_t end = std::min(n, (j + 1) * block_draws);
            for (std::size_t i = j * block_draws; i < end; ++i) out[i] = draw(s);
        }
    });
}

// n draws of the discrete Laplace law of scale t_num / t_den into out (range: laplace_params).
inline void discrete_laplace(std::uint64_t t_num, std::uint64_t t_den, std::int64_t *out, std::size_t n,
                             const Key &key, std::uint32_t nonce)
{
    const LaplaceParams p = laplace_params(t_num, t_den);
    fill_blocks(out, n, key, nonce, [&p](Stream &s) { return laplace_one(s, p); });
}

// n draws of the discrete Gaussian with sigma^2 = a / b into out (range: gaussian_params).
inline void discrete_gaussian(const U128 &a, const U128 &b, std::int64_t *out, std::size_t n, const Key &key,
                              std::uint32_t nonce)
{
    const GaussianParams p = gaussian_params(a, b);
    fill_blocks(out, n, key, nonce, [&p](Stream &s) { return gaussian_one(s, p); });
}

}  // namespace exact_noise
}  // namespace pysketch

#endif  // PYSKETCH_EXACT_NOISE_HPP
