// common.hpp - helpers shared by the binding files of pysketch._core: unpacking numpy
// arrays into raw pointers and strides (never converting or copying), dtype dispatch.
#ifndef PYSKETCH_BINDINGS_COMMON_HPP
#define PYSKETCH_BINDINGS_COMMON_HPP

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "pysketch/hadamard.hpp"
#include "pysketch/operators.hpp"
#include "pysketch/sketch.hpp"

namespace pysketch_bind {

namespace py = pybind11;


// A (rows, n) array unpacked for the core; strides in elements.
template <class T>
struct Rows {
    T *data;
    std::ptrdiff_t stride;
    std::size_t rows;
    std::size_t n;
};

inline std::string dtype_name(const py::array &a) { return py::str(a.dtype()).cast<std::string>(); }

// "(3, 4)" / "(5,)": an array's shape for error messages.
inline std::string shape_text(const py::array &a)
{
    std::string s = "(";
    for (py::ssize_t i = 0; i < a.ndim(); ++i) s += (i ? ", " : "") + std::to_string(a.shape(i));
    return s + (a.ndim() == 1 ? ",)" : ")");
}

// obj as a numpy array (no conversion), or a TypeError naming the argument and what it holds.
inline py::array array_arg(const py::object &obj, const char *name, const char *what)
{
    if (!py::isinstance<py::array>(obj))
        throw py::type_error(std::string(name) + " must be a numpy array (" + what + "), got " +
                             py::str(py::type::of(obj)).cast<std::string>());
    return py::reinterpret_borrow<py::array>(obj);
}

template <class T>
Rows<T> unpack(const py::array &a, const char *name, bool written)
{
    const std::string arg(name);
    if (a.ndim() != 2)
        throw py::value_error(arg + " must be a 2-D array (rows, n), got " + std::to_string(a.ndim()) + " dimensions");
    const auto item = static_cast<py::ssize_t>(sizeof(T));
    const std::size_t rows = static_cast<std::size_t>(a.shape(0));
    const std::size_t n = static_cast<std::size_t>(a.shape(1));
    if (n > 1 && a.strides(1) != item)
        throw py::value_error(arg + " must be contiguous along its last axis (stride " + std::to_string(item) +
                              " bytes), got stride " + std::to_string(a.strides(1)));
    if (rows > 1 && a.strides(0) % item != 0)
        throw py::value_error(arg + ": the row stride (" + std::to_string(a.strides(0)) +
                              " bytes) must be a multiple of the item size " + std::to_string(item));
    if (reinterpret_cast<std::uintptr_t>(a.data()) % alignof(T) != 0)
        throw py::value_error(arg + " must be aligned to its item size");
    if (written && !a.writeable()) throw py::value_error(arg + " must be writeable");
    const std::ptrdiff_t stride = rows > 1 ? static_cast<std::ptrdiff_t>(a.strides(0) / item)
                                           : static_cast<std::ptrdiff_t>(n);
    // The core only writes through this pointer when `written` was checked above.
    T *data = static_cast<T *>(const_cast<void *>(a.data()));
    return {data, stride, rows, n};
}

// Byte range [lo, hi) touched by `rows` rows of n items of `item` bytes, `stride` items apart.
inline std::pair<std::uintptr_t, std::uintptr_t> byte_range(const void *data, std::ptrdiff_t stride,
                                                            std::size_t rows, std::size_t n, std::size_t item)
{
    const auto base = reinterpret_cast<std::uintptr_t>(data);
    if (rows == 0 || n == 0) return {base, base};
    const std::size_t magnitude = stride < 0 ? static_cast<std::size_t>(0) - static_cast<std::size_t>(stride)
                                             : static_cast<std::size_t>(stride);
    const std::size_t reach = (rows - 1) * magnitude * item;
    const std::uintptr_t first = stride < 0 ? base - reach : base;
    return {first, first + reach + n * item};
}

inline bool overlap(std::pair<std::uintptr_t, std::uintptr_t> a, std::pair<std::uintptr_t, std::uintptr_t> b)
{
    return a.first < b.second && b.first < a.second;
}

// Byte range of an unpacked (rows, n) array.
template <class T>
std::pair<std::uintptr_t, std::uintptr_t> byte_range(const Rows<T> &a)
{
    return byte_range(a.data, a.stride, a.rows, a.n, sizeof(T));
}

inline int log2_length(std::size_t n, const char *name)
{
    int log_n = 0;
    while (log_n <= pysketch::hadamard::max_log_n && (std::size_t{1} << log_n) < n) ++log_n;
    if (n == 0 || log_n > pysketch::hadamard::max_log_n || (std::size_t{1} << log_n) != n)
        throw py::value_error(std::string(name) + ": the last axis has length " + std::to_string(n) +
                              "; it must be a power of two between 1 and 2**" +
                              std::to_string(pysketch::hadamard::max_log_n));
    return log_n;
}

// Calls fn(T{}) with T the element type of `a` (float or double, native byte order).
template <class Fn>
auto dispatch(const py::array &a, const char *name, Fn &&fn)
{
    if (a.dtype().equal(py::dtype::of<float>())) return fn(float{});
    if (a.dtype().equal(py::dtype::of<double>())) return fn(double{});
    throw py::type_error(std::string(name) + " must be a float32 or float64 array in native byte order, got dtype " +
                         dtype_name(a));
}


// A 1-D contiguous array of exactly `size` elements of T (None allowed unless required).
template <class T>
const T *vector_of(const py::object &obj, const char *name, std::size_t size, bool required = true)
{
    if (obj.is_none()) {
        if (required) throw py::value_error(std::string(name) + " is required");
        return nullptr;
    }
    if (!py::isinstance<py::array>(obj)) throw py::type_error(std::string(name) + " must be a numpy array");
    const auto a = py::reinterpret_borrow<py::array>(obj);
    if (!a.dtype().equal(py::dtype::of<T>()))
        throw py::type_error(std::string(name) + " must have dtype " + py::str(py::dtype::of<T>()).cast<std::string>() +
                             ", got " + dtype_name(a));
    if (a.ndim() != 1 || static_cast<std::size_t>(a.shape(0)) != size)
        throw py::value_error(std::string(name) + " must be 1-D with " + std::to_string(size) + " elements");
    if (size > 1 && a.strides(0) != static_cast<py::ssize_t>(sizeof(T)))
        throw py::value_error(std::string(name) + " must be contiguous");
    return static_cast<const T *>(a.data());
}

// A writeable 1-D contiguous float64 accumulator of n elements (or None when allowed).
inline double *accumulator(const py::object &obj, const char *name, std::size_t n, bool required)
{
    if (obj.is_none()) {
        if (required) throw py::value_error(std::string(name) + " is required");
        return nullptr;
    }
    if (!py::isinstance<py::array>(obj)) throw py::type_error(std::string(name) + " must be a numpy array");
    auto a = py::reinterpret_borrow<py::array>(obj);
    if (!a.dtype().equal(py::dtype::of<double>()) || a.ndim() != 1 || static_cast<std::size_t>(a.shape(0)) != n ||
        (n > 1 && a.strides(0) != static_cast<py::ssize_t>(sizeof(double))) || !a.writeable())
        throw py::value_error(std::string(name) + " must be a writeable contiguous float64 array of length " +
                              std::to_string(n));
    return static_cast<double *>(a.mutable_data());
}

// A C-contiguous float64 array of exactly `size` elements, any shape (None allowed unless required).
inline double *f64_array(const py::object &obj, const char *name, std::size_t size, bool required, bool written)
{
    if (obj.is_none()) {
        if (required) throw py::value_error(std::string(name) + " is required");
        return nullptr;
    }
    if (!py::isinstance<py::array>(obj)) throw py::type_error(std::string(name) + " must be a numpy array");
    auto a = py::reinterpret_borrow<py::array>(obj);
    if (!a.dtype().equal(py::dtype::of<double>()))
        throw py::type_error(std::string(name) + " must be float64, got " + dtype_name(a));
    if (static_cast<std::size_t>(a.size()) != size)
        throw py::value_error(std::string(name) + " must have " + std::to_string(size) + " elements, got " +
                              std::to_string(a.size()));
    if (!(a.flags() & py::array::c_style)) throw py::value_error(std::string(name) + " must be C-contiguous");
    if (written && !a.writeable()) throw py::value_error(std::string(name) + " must be writeable");
    return static_cast<double *>(const_cast<void *>(a.data()));
}

// A nonlinearity from Python (a _core.Nonlinearity), refused if built from an int that names
// none of them.
inline pysketch::sketch::Nonlinearity checked(pysketch::sketch::Nonlinearity f)
{
    using N = pysketch::sketch::Nonlinearity;
    switch (f) {
    case N::cis:
    case N::qcis:
    case N::square: return f;
    }
    throw py::value_error("the nonlinearity must be Nonlinearity.cis, Nonlinearity.qcis or Nonlinearity.square");
}

// Fills `op` from the arrays a StructuredOperator holds, checking every size and, for
// Fastfood, that each block's perm is a permutation of [0, dp). The arrays must outlive op.
template <class T>
void fill_structured(pysketch::operators::Structured<T> &op, int kind, std::size_t d, std::size_t m, int log_dp,
                     const py::object &a, const py::object &b, const py::object &c, const py::object &post,
                     const py::object &perm)
{
    namespace ops = pysketch::operators;
    if (kind < 0 || kind > 2) throw py::value_error("kind must be 0 (r3), 1 (gr2) or 2 (fastfood)");
    if (log_dp < 0 || log_dp > 24) throw py::value_error("log_dp must be in [0, 24]");
    op.kind = static_cast<ops::Kind>(kind);
    op.d = d;
    op.m = m;
    op.log_dp = log_dp;
    const std::size_t dp = op.dp();
    if (d == 0 || d > dp) throw py::value_error("d must be in [1, 2**log_dp]");
    if (m == 0) throw py::value_error("m must be positive");
    op.blocks = (m + dp - 1) / dp;
    const std::size_t w = op.width();
    op.a = vector_of<T>(a, "a", w);
    op.b = vector_of<T>(b, "b", w);
    op.post = vector_of<T>(post, "post", w);
    if (op.kind == ops::Kind::fastfood) {
        op.perm = vector_of<std::int32_t>(perm, "perm", w);
        std::vector<char> seen(dp);
        for (std::size_t k = 0; k < op.blocks; ++k) {
            std::fill(seen.begin(), seen.end(), 0);
            for (std::size_t i = 0; i < dp; ++i) {
                const std::int32_t p = op.perm[k * dp + i];
                if (p < 0 || static_cast<std::size_t>(p) >= dp || seen[static_cast<std::size_t>(p)])
                    throw py::value_error("perm must hold a permutation of range(dp) for every block");
                seen[static_cast<std::size_t>(p)] = 1;
            }
        }
    } else {
        op.c = vector_of<T>(c, "c", w);
    }
    ops::validate(op);
}

}  // namespace pysketch_bind

#endif
