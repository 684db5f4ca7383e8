// bind_row_action.cpp - the sequential row-action loop (pysketch/row_action.hpp): randomized
// Kaczmarz and single-sample SGD updates of x for F x = y, the row sequence given. Arrays are
// checked, never converted or copied; the GIL is released around the loop.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "common.hpp"
#include "pysketch/row_action.hpp"

namespace pysketch_bind {

namespace {

namespace ra = pysketch::row_action;

using Range = std::pair<std::uintptr_t, std::uintptr_t>;

template <class T>
void require_dtype(const py::array &a, const char *name)
{
    const py::dtype expected = py::dtype::of<T>();
    if (!a.dtype().equal(expected))
        throw py::type_error(std::string(name) + " must have dtype " + py::str(expected).cast<std::string>() +
                             " (native byte order), got " + dtype_name(a));
}

// A 1-D contiguous aligned array of T, of `size` elements unless size < 0. Returns the
// pointer and the number of elements.
template <class T>
std::pair<T *, std::size_t> vector_arg(const py::array &a, const char *name, const char *what, py::ssize_t size,
                                       bool written)
{
    require_dtype<T>(a, name);
    if (a.ndim() != 1 || (size >= 0 && a.shape(0) != size))
        throw py::value_error(std::string(name) + " must be a 1-D array" +
                              (size >= 0 ? " of " + std::to_string(size) + " elements" : std::string()) + " (" +
                              what + "), got shape " + shape_text(a));
    const auto n = static_cast<std::size_t>(a.shape(0));
    if (n > 1 && a.strides(0) != static_cast<py::ssize_t>(sizeof(T)))
        throw py::value_error(std::string(name) + " must be contiguous");
    if (reinterpret_cast<std::uintptr_t>(a.data()) % alignof(T) != 0)
        throw py::value_error(std::string(name) + " must be aligned to its item size");
    if (written && !a.writeable()) throw py::value_error(std::string(name) + " must be writeable");
    return {static_cast<T *>(const_cast<void *>(a.data())), n};  // written only when checked writeable
}

std::size_t row_action(const py::object &F, const py::object &y, const py::object &rows, const py::object &x,
                       const std::string &mode, double step)
{
    ra::Mode md;
    if (mode == "kaczmarz")
        md = ra::Mode::kaczmarz;
    else if (mode == "sgd")
        md = ra::Mode::sgd;
    else
        throw py::value_error("mode must be 'kaczmarz' or 'sgd', got '" + mode + "'");
    if (md == ra::Mode::sgd && !std::isfinite(step))
        throw py::value_error("step must be finite in mode 'sgd', got " + std::to_string(step));

    const py::array f = array_arg(F, "F", "(m, p) float64 with contiguous rows");
    require_dtype<double>(f, "F");
    if (f.ndim() != 2) throw py::value_error("F must be a 2-D array (m, p), got shape " + shape_text(f));
    const auto m = static_cast<std::size_t>(f.shape(0));
    const auto p = static_cast<std::size_t>(f.shape(1));
    ra::Problem pb{nullptr, static_cast<std::ptrdiff_t>(p), m, p, nullptr};
    Range f_range{0, 0};
    if (m > 0 && p > 0) {
        const Rows<double> u = unpack<double>(f, "F", false);
        pb.F = u.data;
        pb.stride = u.stride;
        f_range = byte_range(u);
    }

    const auto yv = vector_arg<double>(array_arg(y, "y", "(m,) float64"), "y", "float64, one per row of F",
                                       static_cast<py::ssize_t>(m), false);
    pb.y = yv.first;
    const auto rv = vector_arg<std::int64_t>(array_arg(rows, "rows", "(T,) int64"), "rows",
                                             "int64 row indices in [0, m)", -1, false);
    const auto xv = vector_arg<double>(array_arg(x, "x", "(p,) float64, updated in place"), "x",
                                       "float64, one per column of F, updated in place",
                                       static_cast<py::ssize_t>(p), true);

    const std::int64_t *r = rv.first;
    const std::size_t T = rv.second;
    for (std::size_t t = 0; t < T; ++t)
        if (r[t] < 0 || static_cast<std::uint64_t>(r[t]) >= m)
            throw py::value_error("rows must hold indices in [0, " + std::to_string(m) + "), got rows[" +
                                  std::to_string(t) + "] = " + std::to_string(r[t]));

    const Range x_range = byte_range(xv.first, 1, 1, p, sizeof(double));
    if (overlap(x_range, f_range) || overlap(x_range, byte_range(pb.y, 1, 1, m, sizeof(double))) ||
        overlap(x_range, byte_range(r, 1, 1, T, sizeof(std::int64_t))))
        throw py::value_error("x must not overlap F, y or rows");

    if (T == 0 || p == 0) return 0;
    py::gil_scoped_release release;
    return ra::run(pb, r, T, xv.first, md, step);
}

}  // namespace

void bind_row_action(py::module_ &m)
{
    m.def("row_action", &row_action, py::arg("F"), py::arg("y"), py::arg("rows"), py::arg("x"), py::arg("mode"),
          py::arg("step") = 0.0,
          "Sequential single-row updates of x for F x = y: for t in range(len(rows)): i = rows[t]; "
          "r = y[i] - F[i] @ x; x += w * r * F[i], with w = 1 / ||F[i]||^2 (mode 'kaczmarz'; rows of zero norm "
          "are skipped) or w = step (mode 'sgd'). F: (m, p) float64 with contiguous rows; y: (m,) float64; "
          "rows: (T,) int64 in [0, m); x: (p,) float64, updated in place (must not overlap the inputs). "
          "Returns the number of skipped updates. Single-threaded, the same bits at every SIMD level; GIL "
          "released.");
}

}  // namespace pysketch_bind
