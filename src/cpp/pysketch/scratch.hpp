// scratch.hpp - the per-thread scratch arena of the sketching and operator kernels
// (header-only, C++17; knows nothing of Python).
//
// Every kernel that needs working memory asks for it by name (scratch::Buffer), never by a
// number: each name is one buffer per thread and per element type, kept between calls, so
// that a call neither allocates nor zeroes once the buffers have grown to their working size.
//
//   scratch::aligned<T>(name, n)   n uninitialized elements starting on a 64-byte boundary
//   scratch::vector<V>(name)       the thread's std::vector<V> of that name (the caller sizes it)
//   scratch::local<V>(name)        the thread's object of type V of that name (masks' IndexList,
//                                  Marks, ...)
//
// Distinct names are distinct memory, so two buffers alive at the same time must have two
// names (the list below says who uses which). One name asked for with two element types is two
// buffers. A buffer moves when it grows: size it once before taking pointers into it.
#ifndef PYSKETCH_SCRATCH_HPP
#define PYSKETCH_SCRATCH_HPP

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pysketch {
namespace scratch {

enum class Buffer : unsigned {
    // operators.hpp, sketch.hpp and the structured subsampled sketches
    padded_input,  // rows of x zero-padded from d to dp
    block_output,  // the blocks' outputs (structured), or a tile of phases (dense)
    fastfood_tmp,  // Fastfood's permutation scratch
    piece_sums,    // a piece's partial sums before they are merged in order (sketch.hpp)
    scatter_sums,  // a piece's sums of chosen features (sketch.hpp, features::scatter)
    // subsample.hpp
    chosen_phases,      // the chosen phases of a group of records
    gathered_records,   // a group's records copied together
    chosen_indices,     // masks: the chosen features of a group of records
    chosen_records,     // masks: the record of each chosen feature
    mask_marks,         // masks: marks of the features drawn for one record
    order,              // counting sort: entries in bucket order
    picked,             // the feature of each entry in bucket order
    bucket_start,       // counting sort: first entry of each bucket
    bucket_histogram,   // counting sort: entries per bucket (four interleaved histograms)
    count_              // the number of names (not a buffer)
};

// The thread's object of type V named b.
template <class V>
V &local(Buffer b)
{
    thread_local V objects[static_cast<std::size_t>(Buffer::count_)];
    return objects[static_cast<std::size_t>(b)];
}

// The thread's std::vector<V> named b.
template <class V>
std::vector<V> &vector(Buffer b)
{
    return local<std::vector<V>>(b);
}

// n uninitialized elements of the buffer named b, starting on a 64-byte boundary (a cache
// line, one AVX-512 register): from malloc they started 16 bytes past one, so that every
// vector load and store of the transforms spanned two lines; one R3 block at dp = 1024 then
// took about 20% longer.
inline constexpr std::size_t alignment = 64;
template <class T>
T *aligned(Buffer b, std::size_t n)
{
    static_assert(alignment % sizeof(T) == 0, "whole elements per alignment step");
    constexpr std::size_t extra = alignment / sizeof(T);
    std::vector<T> &v = vector<T>(b);
    if (v.size() < n + extra) v.resize(n + extra);
    const auto address = reinterpret_cast<std::uintptr_t>(v.data());
    const std::size_t skip = (alignment - address % alignment) % alignment / sizeof(T);
    return v.data() + skip;
}

// n elements of the buffer named b (not aligned; grown, never shrunk).
template <class V>
V *grown(Buffer b, std::size_t n)
{
    std::vector<V> &v = vector<V>(b);
    if (v.size() < n) v.resize(n);
    return v.data();
}

}  // namespace scratch
}  // namespace pysketch

#endif  // PYSKETCH_SCRATCH_HPP
