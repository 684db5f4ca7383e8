// common.hpp - helpers shared by the binding files of pysketch._core: unpacking numpy
// arrays into raw pointers and strides (never converting or copying), dtype dispatch.
#ifndef PYSKETCH_BINDINGS_COMMON_HPP
#define PYSKETCH_BINDINGS_COMMON_HPP

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "pysketch/hadamard.hpp"

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


}  // namespace pysketch_bind

#endif
