// exact_noise.hpp - exact discrete Laplace and discrete Gaussian noise drawn from a ChaCha20
// keystream (header-only, C++17; knows nothing of Python). The same laws, by the same
// algorithms, as the pure-Python samplers of pysketch.privacy.mechanisms, filling whole
// vectors on the threads.
//
//   chacha20_block(key, counter, nonce, out)
//       The ChaCha20 block function of RFC 8439 (Nir & Langley 2018, sec. 2.1-2.3): 256-bit
//       key, 32-bit block counter, 96-bit nonce (the RFC's layout), 16 output words.
//   Stream(key, n0, n1, n2)
//       Uniform 64-bit words: the keystream of that key and nonce (n0, n1, n2) from block
//       counter 0, in block order (computed four blocks at a time, chacha20_blocks4); word i
//       of a block is its bytes 8i..8i+7 read little-endian. bit() hands out single bits
//       from a word of their own. At most 2^32 blocks (256 GiB): the counter would wrap
//       beyond, so the stream throws instead.
//   uniform_below(stream, n)
//       A uniform integer in [0, n), n >= 1, exactly (no modulo bias): for a 64-bit n by
//       Lemire's multiply-and-reject ("Fast random integer generation in an interval", ACM
//       TOMACS 2019, Algorithm 5); for the wide types (U128: unsigned __int128 where the
//       compiler has it, else UInt<2>; U256 = UInt<4>, written here with add/sub/mul/compare/
//       shift and shift-subtract long division) by drawing bit_length(n - 1) bits and
//       rejecting values >= n.
//   bernoulli(num, den), bernoulli_exp_unit(num, den), bernoulli_exp(num, den)
//       Bernoulli(num/den) and Bernoulli(exp(-num/den)), exactly, in integer arithmetic only:
//       Canonne, Kamath & Steinke, "The discrete Gaussian for differential privacy", NeurIPS
//       2020 (CKS below), Algorithm 1 for gamma = num/den in [0, 1] (the first k with a
//       failed Bernoulli(gamma/k) is odd with probability exp(-gamma)), where Bernoulli(gamma/k)
//       is drawn as Bernoulli(gamma) AND Bernoulli(1/k), independent (the product of the
//       probabilities; den * k is never formed); larger gamma by
//       exp(-gamma) = exp(-1)^floor(gamma) * exp(-frac(gamma)).
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
// Every step is the one of the Python reference, but the random words are consumed
// differently (and a few draws are skipped when their outcome is certain: a uniform below 1,
// Bernoulli(0) and Bernoulli(1)), so the two agree in law, not draw by draw.
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

// Uniform 64-bit words from the ChaCha20 keystream of (key, nonce), block counter 0, 1, ...
// (computed four blocks at a time; the stream refuses to go past counter 2^32 - 1).
class Stream {
public:
    Stream(const Key &key, std::uint32_t n0, std::uint32_t n1, std::uint32_t n2) : key_(key), nonce_{n0, n1, n2} {}

    std::uint64_t next()
    {
        if (pos_ == words) refill();
        return buf_[pos_++];
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

private:
    static constexpr int words = 32;  // 64-bit words per refill (four blocks)

    void refill()
    {
        if (counter_ + 4 > (std::uint64_t{1} << 32))
            throw std::overflow_error("exact_noise: a ChaCha20 stream ran past block counter 2^32 - 1");
        std::uint32_t blocks[4][16];
        chacha20_blocks4(key_, static_cast<std::uint32_t>(counter_), nonce_, blocks);
        for (int b = 0; b < 4; ++b)
            for (int i = 0; i < 8; ++i)
                buf_[8 * b + i] =
                    static_cast<std::uint64_t>(blocks[b][2 * i]) | static_cast<std::uint64_t>(blocks[b][2 * i + 1]) << 32;
        pos_ = 0;
        counter_ += 4;
    }

    Key key_;
    std::uint32_t nonce_[3];
    std::uint64_t counter_ = 0;  // next block
    std::uint64_t buf_[words] = {};
    int pos_ = words;
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

// Uniform in [0, n), n >= 1 (Lemire 2019, Algorithm 5: the high word of x * n for a uniform
// word x, rejecting x when the low word falls below 2^64 mod n).
inline std::uint64_t uniform_below(Stream &s, std::uint64_t n)
{
    if (n == 1) return 0;
    std::uint64_t hi, lo;
    ::pysketch::random::detail::mulhilo64(s.next(), n, hi, lo);
    if (lo < n) {
        const std::uint64_t threshold = (0 - n) % n;  // 2^64 mod n
        while (lo < threshold) ::pysketch::random::detail::mulhilo64(s.next(), n, hi, lo);
    }
    return hi;
}

// Uniform in [0, n), n >= 1, for the wide types: bit_length(n - 1) uniform bits, rejected
// when >= n (fewer than two tries on average).
template <class W>
W uniform_below(Stream &s, const W &n)
{
    const int bits = bit_length(W(n - W(1)));
    if (bits == 0) return W(0);
    const std::size_t words = static_cast<std::size_t>(bits + 63) / 64;
    const std::uint64_t top_mask = bits % 64 == 0 ? ~std::uint64_t{0} : (std::uint64_t{1} << (bits % 64)) - 1;
    for (;;) {
        std::uint64_t l[limbs_of<W>] = {};
        for (std::size_t i = 0; i < words; ++i) l[i] = s.next();
        l[words - 1] &= top_mask;
        const W x = from_limbs<W>(l);
        if (x < n) return x;
    }
}

// Bernoulli(num / den), 0 <= num <= den, den >= 1 (CKS sec. 5.1: uniform below den < num).
template <class W>
bool bernoulli(Stream &s, const W &num, const W &den)
{
    if (is_zero(num)) return false;
    if (!(num < den)) return true;
    return uniform_below(s, den) < num;
}

// Bernoulli(1 / k), k >= 1.
inline bool bernoulli_inverse(Stream &s, std::uint64_t k)
{
    if (k == 1) return true;
    if (k == 2) return s.bit();
    return uniform_below(s, k) == 0;
}

// Bernoulli(exp(-num/den)) for 0 <= num <= den, den >= 1: CKS Algorithm 1. The first k >= 1
// at which Bernoulli(gamma / k) fails is odd with probability exp(-gamma); Bernoulli(gamma/k)
// is Bernoulli(1/k) AND Bernoulli(gamma), independent, the second drawn only when needed.
template <class W>
bool bernoulli_exp_unit(Stream &s, const W &num, const W &den)
{
    if (is_zero(num)) return true;
    for (std::uint64_t k = 1;; ++k)
        if (!bernoulli_inverse(s, k) || !bernoulli(s, num, den)) return (k & 1u) != 0;
}

// Bernoulli(exp(-1)): CKS Algorithm 1 at gamma = 1.
inline bool bernoulli_exp_minus_one(Stream &s)
{
    for (std::uint64_t k = 1;; ++k)
        if (!bernoulli_inverse(s, k)) return (k & 1u) != 0;
}

// Bernoulli(exp(-num/den)) for num >= 0, den >= 1: exp(-gamma) = exp(-1)^floor(gamma) *
// exp(-frac(gamma)), every factor an independent Bernoulli, stopping at the first failure.
template <class W>
bool bernoulli_exp(Stream &s, const W &num, const W &den)
{
    W whole, rest;
    divmod(num, den, whole, rest);
    while (!is_zero(whole)) {
        if (!bernoulli_exp_minus_one(s)) return false;
        whole = whole - W(1);
    }
    return bernoulli_exp_unit(s, rest, den);
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

// One draw of the discrete Laplace law of scale t_num / t_den (1 <= t_num, t_den < 2^63):
// CKS Algorithm 2, step for step as _discrete_laplace_one. y = (u + t_num v) // t_den is
// exact in 128 bits (u + t_num v < 2^63 + 2^63 (2^64 - 1) < 2^127). The geometric part v
// may not exceed v_cap (std::overflow_error otherwise).
inline Signed laplace_draw(Stream &s, std::uint64_t t_num, std::uint64_t t_den, std::uint64_t v_cap)
{
    for (;;) {
        const std::uint64_t u = uniform_below(s, t_num);
        if (!bernoulli_exp_unit(s, u, t_num)) continue;
        std::uint64_t v = 0;
        while (bernoulli_exp_minus_one(s)) {
            if (v == v_cap)
                throw std::overflow_error("exact_noise: a discrete Laplace draw needs wider arithmetic than "
                                          "compiled (probability below 2^-369)");
            ++v;
        }
        U128 y;
        if (v == 0) {
            y = U128(u / t_den);
        } else {
            U128 q, r;
            divmod(U128(U128(u) + U128(t_num) * U128(v)), U128(t_den), q, r);
            y = q;
        }
        const bool negative = s.bit();
        if (negative && is_zero(y)) continue;
        return {y, negative};
    }
}

struct LaplaceParams {
    std::uint64_t t_num = 1, t_den = 1;
};

// The parameters, or std::invalid_argument when outside the supported range.
inline LaplaceParams laplace_params(std::uint64_t t_num, std::uint64_t t_den)
{
    constexpr std::uint64_t limit = std::uint64_t{1} << laplace_max_bits;
    if (t_num < 1 || t_num >= limit || t_den < 1 || t_den >= limit)
        throw std::invalid_argument("exact_noise: t_num and t_den must be in [1, 2^63)");
    if (U128(t_num) > (U128(t_den) << laplace_max_log2_scale))
        throw std::invalid_argument("exact_noise: the scale t_num / t_den must be at most 2^56");
    return {t_num, t_den};
}

inline std::int64_t laplace_one(Stream &s, const LaplaceParams &p)
{
    const Signed d = laplace_draw(s, p.t_num, p.t_den, std::numeric_limits<std::uint64_t>::max());
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
        const Signed d = laplace_draw(s, p.t, 1, gaussian_v_cap);
        const std::uint64_t m = narrow<std::uint64_t>(d.magnitude);  // < 2^62 (see above)
        const U256 P = widen<U256>(U128(m) * U128(p.t)) * widen<U256>(p.b);  // < 2^128
        if (!fits<U128>(P)) throw std::logic_error("exact_noise: internal bound exceeded");
        const U128 P128 = narrow<U128>(P);
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
