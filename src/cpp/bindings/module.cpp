// module.cpp - pysketch._core: the pybind11 binding of the C++ core.
//
// Thin on purpose: each function checks that its arrays are what the core expects
// (dtype, 2-D, contiguous last axis, aligned, writeable where written), never converts
// or copies them, passes raw pointers and strides, and releases the GIL around the C++
// call. Choosing layouts, dtypes and copies is the Python layer's job (hadamard.py).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "fht.h"
#include "pysketch/hadamard.hpp"
#include "pysketch/parallel.hpp"

namespace py = pybind11;

namespace {

// A (rows, n) array unpacked for the core; strides in elements.
template <class T>
struct Rows {
    T *data;
    std::ptrdiff_t stride;
    std::size_t rows;
    std::size_t n;
};

std::string dtype_name(const py::array &a) { return py::str(a.dtype()).cast<std::string>(); }

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

int log2_length(std::size_t n, const char *name)
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

bool fwht_in_place(const py::array &a, double scale)
{
    return dispatch(a, "a", [&](auto tag) {
        using T = decltype(tag);
        const Rows<T> x = unpack<T>(a, "a", true);
        if (x.rows == 0) return true;
        const int log_n = log2_length(x.n, "a");
        py::gil_scoped_release release;
        return pysketch::hadamard::transform<T>(x.data, x.stride, x.rows, log_n, static_cast<T>(scale));
    });
}

bool fwht_out_of_place(const py::array &src, const py::array &dst, double scale)
{
    if (!src.dtype().equal(dst.dtype()))
        throw py::type_error("src and dst must have the same dtype, got " + dtype_name(src) + " and " +
                             dtype_name(dst));
    return dispatch(src, "src", [&](auto tag) {
        using T = decltype(tag);
        const Rows<T> x = unpack<T>(src, "src", false);
        const Rows<T> y = unpack<T>(dst, "dst", true);
        if (x.rows != y.rows || x.n != y.n)
            throw py::value_error("src and dst must have the same shape, got (" + std::to_string(x.rows) + ", " +
                                  std::to_string(x.n) + ") and (" + std::to_string(y.rows) + ", " +
                                  std::to_string(y.n) + ")");
        if (x.rows == 0) return true;
        const int log_n = log2_length(x.n, "src");
        py::gil_scoped_release release;
        return pysketch::hadamard::transform<T>(x.data, x.stride, y.data, y.stride, x.rows, log_n, static_cast<T>(scale));
    });
}

bool all_finite(const py::array &a)
{
    return dispatch(a, "a", [&](auto tag) {
        using T = decltype(tag);
        const Rows<T> x = unpack<T>(a, "a", false);
        py::gil_scoped_release release;
        return pysketch::hadamard::all_finite<T>(x.data, x.stride, x.rows, x.n);
    });
}

constexpr fht_simd_level simd_levels[] = {FHT_SIMD_SCALAR, FHT_SIMD_SSE, FHT_SIMD_AVX2, FHT_SIMD_AVX512};

void set_simd_level(const std::string &name)
{
    for (const fht_simd_level level : simd_levels) {
        if (name != fht_simd_level_name(level)) continue;
        if (fht_set_simd_level(level) != 0)
            throw py::value_error("SIMD level '" + name + "' is not supported here; the highest available is '" +
                                  fht_simd_level_name(fht_max_simd_level()) + "'");
        return;
    }
    throw py::value_error("unknown SIMD level '" + name + "'; allowed: 'avx512', 'avx2', 'sse', 'scalar'");
}

}  // namespace

#if defined(PYBIND11_VERSION_HEX) && PYBIND11_VERSION_HEX >= 0x020D0000
PYBIND11_MODULE(_core, m, py::mod_gil_not_used())
#else
PYBIND11_MODULE(_core, m)
#endif
{
    m.doc() = "pysketch's compiled core (internal: use the pysketch package).";
    m.attr("MAX_LOG_N") = pysketch::hadamard::max_log_n;
    m.attr("MAX_NUM_THREADS") = pysketch::max_num_threads;

    m.def("fwht", &fwht_in_place, py::arg("a").noconvert(), py::arg("scale") = 1.0,
          "In-place Walsh-Hadamard transform of the rows of a 2-D float32/float64 array (contiguous last axis), "
          "each multiplied by scale. Returns whether a[:, 0] is all finite afterwards.");
    m.def("fwht_out", &fwht_out_of_place, py::arg("src").noconvert(), py::arg("dst").noconvert(),
          py::arg("scale") = 1.0,
          "dst = scale * H src, row by row; src and dst must not overlap. Returns whether dst[:, 0] is all finite.");
    m.def("all_finite", &all_finite, py::arg("a").noconvert(),
          "True when no element of the 2-D float32/float64 array is NaN or infinite.");
    m.def(
        "address", [](const py::array &a) { return reinterpret_cast<std::uintptr_t>(a.data()); },
        py::arg("a").noconvert(), "The address of the array's first element.");
    m.def("simd_level", [] { return std::string(fht_simd_level_name(fht_get_simd_level())); },
          "The instruction set the transforms use: 'avx512', 'avx2', 'sse' or 'scalar'.");
    m.def("max_simd_level", [] { return std::string(fht_simd_level_name(fht_max_simd_level())); },
          "The best instruction set this CPU and build support.");
    m.def("set_simd_level", &set_simd_level, py::arg("level"),
          "Use this instruction set from now on (process-wide).");
    m.def("get_num_threads", &pysketch::get_num_threads, "Threads a parallel call may use.");
    m.def(
        "set_num_threads", [](int count) { pysketch::set_num_threads(count); }, py::arg("count"),
        "Set the number of threads parallel calls may use.");
}
