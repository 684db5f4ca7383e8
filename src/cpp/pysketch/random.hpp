// random.hpp - counter-based random numbers for the sketches (header-only, C++17).
//
//   philox4x64(counter, key)       Philox4x64-10 (Salmon et al., "Parallel random numbers: as
//                                  easy as 1, 2, 3", SC 2011): a keyed bijection of 256 bits.
//   Xoshiro256pp                   xoshiro256++ (Blackman & Vigna, 2019), seeded from Philox.
//   record_generator(key, record)  the generator of record number `record` of a stream: the
//                                  Philox image of the counter (record, 0, 0x5375627361, 0)
//                                  under the 128-bit key is its 256-bit state. So what a
//                                  record draws depends on the key and its position only (the
//                                  same for any number of threads and any split into batches).
#ifndef PYSKETCH_RANDOM_HPP
#define PYSKETCH_RANDOM_HPP

#include <array>
#include <cstdint>

#if defined(_MSC_VER) && !defined(__clang__) && defined(_M_X64)
#include <intrin.h>
#endif

namespace pysketch {
namespace random {

// A 128-bit key.
struct Key {
    std::uint64_t k0 = 0, k1 = 0;
};

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
}  // namespace random
}  // namespace pysketch

#endif  // PYSKETCH_RANDOM_HPP
