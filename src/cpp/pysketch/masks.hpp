// masks.hpp - the random feature masks of subsampled sketches (header-only, C++17).
//
// What a record keeps of the m features (notes seed000 sec. 4.1; see subsample.hpp):
//   Scheme::uniform    r distinct features, uniformly among the r-subsets (Floyd's algorithm).
//   Scheme::bernoulli  each feature independently with probability r / m (geometric skips).
//   Scheme::blocks     r / block distinct blocks of `block` consecutive features, uniformly.
//
//   draw_mask(spec, rng, marks, sorted, out)   appends one record's mask (feature or block
//                                              indices) drawn from rng (random.hpp)
//   record_mask(spec, key, record)             the sorted features of record `record`'s mask,
//                                              blocks expanded (what the sketches use; tests)
//   Marks, IndexList                           reusable per-thread storage of the draws
#ifndef PYSKETCH_MASKS_HPP
#define PYSKETCH_MASKS_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "pysketch/random.hpp"

namespace pysketch {
namespace masks {

using random::Key;
using random::Xoshiro256pp;
using random::record_generator;

enum class Scheme : int { uniform = 0, bernoulli = 1, blocks = 2 };

// What to draw: r of the m features per record (blocks: r / block blocks of `block`).
struct MaskSpec {
    Scheme scheme = Scheme::uniform;
    std::size_t m = 0, r = 0;
    std::size_t block = 1;  // blocks scheme only
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
}  // namespace masks
}  // namespace pysketch

#endif  // PYSKETCH_MASKS_HPP
