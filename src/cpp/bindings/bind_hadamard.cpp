// bind_hadamard.cpp - the Walsh-Hadamard transform and the runtime settings.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "common.hpp"
#include "fht.h"
#include "pysketch/hadamard.hpp"
#include "pysketch/parallel.hpp"

namespace pysketch_bind {

namespace {

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

void bind_hadamard(py::module_ &m)
{
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

}  // namespace pysketch_bind
