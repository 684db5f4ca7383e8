// bind_hadamard.cpp - the Walsh-Hadamard transform and the runtime settings.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>
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

// The common calls of pysketch.fwht in one step: the checks of the Python wrapper cost
// about 0.6 us, several times the transform of a short array, against 0.1 us here. x must be exactly a numpy.ndarray of float32 or float64, with 1
// or 2 dimensions, C-contiguous, aligned and not empty; out None (a new array) or x
// itself (in place, x writeable); normalized and check_finite the bool objects True or
// False. A new result of aligned_from_bytes or more starts on a 64-byte boundary, as the
// Python wrapper's (output_array). Returns
//   the result array      done;
//   None                  not such a call, or (check_finite) x holds NaN or infinity, or an
//                         out-of-place result is not finite: nothing visible was changed, and
//                         the caller takes its general path (which raises or warns);
//   False                 done in place, but the result overflowed (check_finite): warn.
constexpr std::size_t aligned_from_bytes = std::size_t{1} << 16;
constexpr std::size_t alignment_bytes = 64;

// An uninitialized C-contiguous array from numpy's allocator (so tracemalloc and numpy's
// memory hooks see it), 64-byte aligned from aligned_from_bytes on: a view at the right
// offset into a slightly larger byte array.
template <class T>
py::array_t<T> empty_result(const std::vector<py::ssize_t> &shape, std::size_t count)
{
    const std::size_t nbytes = count * sizeof(T);
    if (nbytes < aligned_from_bytes) return py::array_t<T>(shape);
    py::array_t<std::uint8_t> raw(static_cast<py::ssize_t>(nbytes + alignment_bytes));
    const auto address = reinterpret_cast<std::uintptr_t>(raw.data());
    const std::size_t offset = (alignment_bytes - address % alignment_bytes) % alignment_bytes;
    std::vector<py::ssize_t> strides(shape.size());
    py::ssize_t step = sizeof(T);
    for (std::size_t i = shape.size(); i-- > 0;) {
        strides[i] = step;
        step *= shape[i];
    }
    return py::array_t<T>(shape, strides, reinterpret_cast<const T *>(raw.data() + offset), raw);
}

py::object fwht_fast(py::handle x, py::handle out, py::handle normalized, py::handle check_finite)
{
    auto &api = py::detail::npy_api::get();
    if (Py_TYPE(x.ptr()) != reinterpret_cast<PyTypeObject *>(api.PyArray_Type_)) return py::none();
    const bool in_place = out.ptr() == x.ptr();
    if (!in_place && !out.is_none()) return py::none();
    if ((normalized.ptr() != Py_True && normalized.ptr() != Py_False) ||
        (check_finite.ptr() != Py_True && check_finite.ptr() != Py_False))
        return py::none();
    const auto *proxy = py::detail::array_proxy(x.ptr());
    const int ndim = proxy->nd;
    if (ndim < 1 || ndim > 2) return py::none();
    const int want = py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_ | py::detail::npy_api::NPY_ARRAY_ALIGNED_ |
                     (in_place ? py::detail::npy_api::NPY_ARRAY_WRITEABLE_ : 0);
    if ((proxy->flags & want) != want) return py::none();
    // The native float32 and float64 descriptors are singletons (x.dtype is np.dtype(np.float32)
    // in Python), which also rules out byte-swapped arrays.
    static PyObject *const f32 = py::dtype::of<float>().release().ptr();
    static PyObject *const f64 = py::dtype::of<double>().release().ptr();
    const bool is_f32 = proxy->descr == f32;
    if (!is_f32 && proxy->descr != f64) return py::none();
    const auto n = static_cast<std::size_t>(proxy->dimensions[ndim - 1]);
    const auto rows = ndim == 2 ? static_cast<std::size_t>(proxy->dimensions[0]) : std::size_t{1};
    if (n == 0 || rows == 0 || (n & (n - 1)) != 0 || n > (std::size_t{1} << pysketch::hadamard::max_log_n))
        return py::none();
    const int log_n = log2_length(n, "x");  // a power of two in range: checked above
    const bool check = check_finite.ptr() == Py_True;
    const double scale = normalized.ptr() == Py_True ? 1.0 / std::sqrt(static_cast<double>(n)) : 1.0;
    const auto stride = static_cast<std::ptrdiff_t>(n);
    // Short calls keep the GIL: releasing and taking it back would cost more than the work.
    const bool release = rows * n >= (std::size_t{1} << 14);
    auto run = [&](auto tag) -> py::object {
        using T = decltype(tag);
        T *data = reinterpret_cast<T *>(proxy->data);
        if (in_place) {
            bool finite = true, input_finite = true;
            {
                // No Python object may be made or released in here (py::none() included): the
                // GIL is not held (found by the ASan build, whose pybind11 checks the GIL).
                std::optional<py::gil_scoped_release> unlocked;
                if (release) unlocked.emplace();
                if (check) input_finite = pysketch::hadamard::all_finite<T>(data, stride, rows, n);
                if (input_finite)
                    finite = pysketch::hadamard::transform<T>(data, stride, rows, log_n, static_cast<T>(scale));
            }
            if (!input_finite) return py::none();
            if (check && !finite) return py::bool_(false);
            return py::reinterpret_borrow<py::object>(x);
        }
        std::vector<py::ssize_t> shape(proxy->dimensions, proxy->dimensions + ndim);
        py::array_t<T> y = empty_result<T>(shape, rows * n);
        bool finite;
        {
            std::optional<py::gil_scoped_release> unlocked;
            if (release) unlocked.emplace();
            finite = pysketch::hadamard::transform<T>(data, stride, y.mutable_data(), stride, rows, log_n,
                                                      static_cast<T>(scale));
        }
        if (check && !finite) return py::none();
        return std::move(y);
    };
    return is_f32 ? run(float{}) : run(double{});
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
    m.def("fwht_fast", &fwht_fast, py::arg("x"), py::arg("out"), py::arg("normalized"), py::arg("check_finite"),
          "pysketch.fwht for short plain arrays in one step: the result, None (take the general path; nothing "
          "changed) or False (done in place, overflowed).");
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
