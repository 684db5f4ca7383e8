// bind_onehot.cpp - the one-hot sketch maps of M2M, HIST and RACE, and the Gram matrix of
// one-hot features (pysketch/onehot.hpp). Arrays are checked, never converted or copied; the
// GIL is released around the C++ call.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "common.hpp"
#include "pysketch/onehot.hpp"

namespace pysketch_bind {

namespace {

namespace oh = pysketch::onehot;

using Range = std::pair<std::uintptr_t, std::uintptr_t>;

// Largest n_bins, W and number of features of an int32 index (j * n_bins + b must fit).
constexpr std::int64_t int32_limit = std::numeric_limits<std::int32_t>::max();

std::string shape_of(const py::array &a)
{
    std::string s = "(";
    for (py::ssize_t i = 0; i < a.ndim(); ++i) s += (i ? ", " : "") + std::to_string(a.shape(i));
    return s + (a.ndim() == 1 ? ",)" : ")");
}

py::array as_array(const py::object &obj, const char *name, const char *what)
{
    if (!py::isinstance<py::array>(obj))
        throw py::type_error(std::string(name) + " must be a numpy array (" + what + "), got " +
                             py::str(py::type::of(obj)).cast<std::string>());
    return py::reinterpret_borrow<py::array>(obj);
}

template <class T>
void check_dtype(const py::array &a, const char *name)
{
    const py::dtype expected = py::dtype::of<T>();
    if (!a.dtype().equal(expected))
        throw py::type_error(std::string(name) + " must have dtype " + py::str(expected).cast<std::string>() +
                             " (native byte order), got " + dtype_name(a));
}

// A 2-D array with contiguous rows (any row stride) and `cols` columns when cols >= 0. An
// empty array (which numpy may give any strides) is accepted as it is.
template <class T>
Rows<T> matrix(const py::array &a, const char *name, bool written, py::ssize_t rows = -1, py::ssize_t cols = -1)
{
    if (a.ndim() != 2)
        throw py::value_error(std::string(name) + " must be a 2-D array, got shape " + shape_of(a));
    if ((rows >= 0 && a.shape(0) != rows) || (cols >= 0 && a.shape(1) != cols))
        throw py::value_error(std::string(name) + " must have shape (" +
                              (rows >= 0 ? std::to_string(rows) : std::string("n")) + ", " +
                              (cols >= 0 ? std::to_string(cols) : std::string("k")) + "), got " + shape_of(a));
    if (written && !a.writeable()) throw py::value_error(std::string(name) + " must be writeable");
    if (a.size() == 0)
        return {nullptr, 0, static_cast<std::size_t>(a.shape(0)), static_cast<std::size_t>(a.shape(1))};
    return unpack<T>(a, name, written);
}

// A 1-D contiguous aligned array of `size` elements of T.
template <class T>
T *vector_arg(const py::object &obj, const char *name, std::size_t size, const char *what, bool written = false)
{
    const py::array a = as_array(obj, name, what);
    check_dtype<T>(a, name);
    if (a.ndim() != 1 || static_cast<std::size_t>(a.shape(0)) != size)
        throw py::value_error(std::string(name) + " must be a 1-D array of " + std::to_string(size) + " elements (" +
                              what + "), got shape " + shape_of(a));
    if (size > 1 && a.strides(0) != static_cast<py::ssize_t>(sizeof(T)))
        throw py::value_error(std::string(name) + " must be contiguous");
    if (reinterpret_cast<std::uintptr_t>(a.data()) % alignof(T) != 0)
        throw py::value_error(std::string(name) + " must be aligned to its item size");
    if (written && !a.writeable()) throw py::value_error(std::string(name) + " must be writeable");
    return static_cast<T *>(const_cast<void *>(a.data()));
}

Range range_of(const void *p, std::size_t size, std::size_t item) { return byte_range(p, 1, 1, size, item); }

// The output `name` at `written` must not overlap any of the inputs.
void check_apart(const char *name, Range written, const std::vector<Range> &inputs)
{
    for (const Range &r : inputs)
        if (overlap(written, r)) throw py::value_error(std::string(name) + " must not overlap the inputs");
}

std::int64_t checked_count(std::int64_t value, const char *name)
{
    if (value < 1 || value > int32_limit)
        throw py::value_error(std::string(name) + " must be in [1, 2**31 - 1], got " + std::to_string(value));
    return value;
}

// ------------------------------------------------------------------------------------- HIST

template <class T>
struct HistArgs {
    oh::Matrix<T> X;
    oh::Hist h;
    std::vector<Range> inputs;
};

template <class T>
HistArgs<T> hist_args(const py::array &X, const py::object &lower, const py::object &scale,
                      const py::object &upper, std::int64_t n_bins)
{
    const Rows<T> x = matrix<T>(X, "X", false);
    const std::size_t d = x.n;
    HistArgs<T> a{{x.data, x.stride, x.rows, d}, {}, {}};
    a.h.lower = vector_arg<double>(lower, "lower", d, "float64, one per column of X");
    a.h.scale = vector_arg<double>(scale, "scale", d, "float64, one per column of X");
    a.h.upper = vector_arg<double>(upper, "upper", d, "float64, one per column of X");
    a.h.n_bins = checked_count(n_bins, "n_bins");
    a.inputs = {byte_range(x), range_of(a.h.lower, d, 8), range_of(a.h.scale, d, 8), range_of(a.h.upper, d, 8)};
    return a;
}

void hist_indices(const py::object &X, const py::object &lower, const py::object &scale, const py::object &upper,
                  std::int64_t n_bins, const py::object &out)
{
    const py::array x = as_array(X, "X", "(n, d) float32 or float64");
    dispatch(x, "X", [&](auto tag) {
        using T = decltype(tag);
        const HistArgs<T> a = hist_args<T>(x, lower, scale, upper, n_bins);
        const std::size_t d = a.X.cols;
        if (static_cast<std::int64_t>(d) * a.h.n_bins - 1 > int32_limit)
            throw py::value_error("d * n_bins = " + std::to_string(d) + " * " + std::to_string(n_bins) +
                                  " features do not fit int32 indices");
        const py::array o = as_array(out, "out", "(n, d) int32");
        check_dtype<std::int32_t>(o, "out");
        const Rows<std::int32_t> po =
            matrix<std::int32_t>(o, "out", true, static_cast<py::ssize_t>(a.X.rows), static_cast<py::ssize_t>(d));
        check_apart("out", byte_range(po), a.inputs);
        py::gil_scoped_release release;
        oh::hist_indices(a.X, a.h, po.data, po.stride);
    });
}

std::int64_t hist_accumulate(const py::object &X, const py::object &lower, const py::object &scale,
                             const py::object &upper, std::int64_t n_bins, const py::object &counts)
{
    const py::array x = as_array(X, "X", "(n, d) float32 or float64");
    return dispatch(x, "X", [&](auto tag) {
        using T = decltype(tag);
        const HistArgs<T> a = hist_args<T>(x, lower, scale, upper, n_bins);
        const std::size_t size = a.X.cols * static_cast<std::size_t>(a.h.n_bins);
        double *c = vector_arg<double>(counts, "counts", size, "float64, d * n_bins", true);
        check_apart("counts", range_of(c, size, 8), a.inputs);
        py::gil_scoped_release release;
        return oh::hist_accumulate(a.X, a.h, c);
    });
}

// ------------------------------------------------------------------------------------- RACE

template <class T>
struct RaceArgs {
    oh::Matrix<T> X;
    oh::Race h;
    std::vector<Range> inputs;
};

template <class T>
RaceArgs<T> race_args(const py::array &X, const py::object &proj, const py::object &offset, std::int64_t W)
{
    const Rows<T> x = matrix<T>(X, "X", false);
    const std::size_t d = x.n;
    const py::array p = as_array(proj, "proj", "(d, R) float64, C-contiguous");
    check_dtype<double>(p, "proj");
    if (p.ndim() != 2 || static_cast<std::size_t>(p.shape(0)) != d)
        throw py::value_error("proj must have shape (d, R) with d = " + std::to_string(d) +
                              " (the columns of X), got shape " + shape_of(p));
    if (!(p.flags() & py::array::c_style)) throw py::value_error("proj must be C-contiguous");
    if (reinterpret_cast<std::uintptr_t>(p.data()) % alignof(double) != 0)
        throw py::value_error("proj must be aligned to its item size");
    const auto R = static_cast<std::size_t>(p.shape(1));
    RaceArgs<T> a{{x.data, x.stride, x.rows, d}, {}, {}};
    a.h.proj = static_cast<const double *>(p.data());
    a.h.R = R;
    a.h.offset = vector_arg<double>(offset, "offset", R, "float64, one per column of proj");
    a.h.W = checked_count(W, "W");
    a.inputs = {byte_range(x), range_of(a.h.proj, d * R, 8), range_of(a.h.offset, R, 8)};
    return a;
}

void race_indices(const py::object &X, const py::object &proj, const py::object &offset, std::int64_t W,
                  const py::object &out)
{
    const py::array x = as_array(X, "X", "(n, d) float32 or float64");
    dispatch(x, "X", [&](auto tag) {
        using T = decltype(tag);
        const RaceArgs<T> a = race_args<T>(x, proj, offset, W);
        const std::size_t R = a.h.R;
        if (static_cast<std::int64_t>(R) * a.h.W - 1 > int32_limit)
            throw py::value_error("R * W = " + std::to_string(R) + " * " + std::to_string(W) +
                                  " features do not fit int32 indices");
        const py::array o = as_array(out, "out", "(n, R) int32");
        check_dtype<std::int32_t>(o, "out");
        const Rows<std::int32_t> po =
            matrix<std::int32_t>(o, "out", true, static_cast<py::ssize_t>(a.X.rows), static_cast<py::ssize_t>(R));
        check_apart("out", byte_range(po), a.inputs);
        py::gil_scoped_release release;
        oh::race_indices(a.X, a.h, po.data, po.stride);
    });
}

void race_accumulate(const py::object &X, const py::object &proj, const py::object &offset, std::int64_t W,
                     const py::object &counts)
{
    const py::array x = as_array(X, "X", "(n, d) float32 or float64");
    dispatch(x, "X", [&](auto tag) {
        using T = decltype(tag);
        const RaceArgs<T> a = race_args<T>(x, proj, offset, W);
        const std::size_t size = a.h.R * static_cast<std::size_t>(a.h.W);
        double *c = vector_arg<double>(counts, "counts", size, "float64, R * W", true);
        check_apart("counts", range_of(c, size, 8), a.inputs);
        py::gil_scoped_release release;
        oh::race_accumulate(a.X, a.h, c);
    });
}

// ------------------------------------------------------------------------------------- Gram

void onehot_gram(const py::object &idx, const py::object &offsets, const py::object &sizes, const py::object &out)
{
    const py::array ix = as_array(idx, "idx", "(n, k) int32");
    check_dtype<std::int32_t>(ix, "idx");
    const Rows<std::int32_t> pi = matrix<std::int32_t>(ix, "idx", false);
    const std::size_t k = pi.n;
    oh::Gram g{pi.data, pi.stride, pi.rows, k, nullptr, nullptr, nullptr, 0};
    g.offsets = vector_arg<std::int64_t>(offsets, "offsets", k, "int64, one per column of idx");
    g.sizes = vector_arg<std::int64_t>(sizes, "sizes", k, "int64, one per column of idx");
    std::int64_t m = 0;
    for (std::size_t j = 0; j < k; ++j) {
        if (g.sizes[j] < 0 || g.sizes[j] > int32_limit)
            throw py::value_error("sizes[" + std::to_string(j) + "] = " + std::to_string(g.sizes[j]) +
                                  " is not in [0, 2**31 - 1]");
        if (g.offsets[j] != m)
            throw py::value_error("offsets must be the running sums of sizes (offsets[j] = sizes[0] + ... + "
                                  "sizes[j - 1]): offsets[" + std::to_string(j) + "] = " +
                                  std::to_string(g.offsets[j]) + ", expected " + std::to_string(m));
        m += g.sizes[j];
        if (m > int32_limit + 1) throw py::value_error("sum(sizes) must be at most 2**31");
    }
    const py::array o = as_array(out, "out", "(m, m) float64, m = sum(sizes)");
    check_dtype<double>(o, "out");
    if (o.ndim() != 2 || o.shape(0) != m || o.shape(1) != m)
        throw py::value_error("out must have shape (m, m) with m = sum(sizes) = " + std::to_string(m) + ", got shape " +
                              shape_of(o));
    if (!(o.flags() & py::array::c_style)) throw py::value_error("out must be C-contiguous");
    if (reinterpret_cast<std::uintptr_t>(o.data()) % alignof(double) != 0)
        throw py::value_error("out must be aligned to its item size");
    if (!o.writeable()) throw py::value_error("out must be writeable");
    g.out = static_cast<double *>(const_cast<void *>(o.data()));  // writeable: checked above
    g.m = static_cast<std::size_t>(m);
    check_apart("out", range_of(g.out, g.m * g.m, 8),
                {byte_range(pi), range_of(g.offsets, k, 8), range_of(g.sizes, k, 8)});
    py::gil_scoped_release release;
    oh::gram(g);
}

}  // namespace

void bind_onehot(py::module_ &m)
{
    m.def("hist_indices", &hist_indices, py::arg("X"), py::arg("lower"), py::arg("scale"), py::arg("upper"),
          py::arg("n_bins"), py::arg("out"),
          "HIST one-hot indices: out[i, j] = j * n_bins + b, b the bin of X[i, j] in attribute j: with "
          "t = (float64(x) - lower[j]) * scale[j], b = 0 if t < 0, n_bins - 1 if t >= n_bins, else floor(t). "
          "X: (n, d) float32/float64 with contiguous rows; lower, scale, upper: (d,) float64; out: (n, d) int32, "
          "written. Multi-threaded, GIL released.");
    m.def("hist_accumulate", &hist_accumulate, py::arg("X"), py::arg("lower"), py::arg("scale"), py::arg("upper"),
          py::arg("n_bins"), py::arg("counts"),
          "HIST counts: counts[j * n_bins + b] += 1 for every record and attribute (bins as in hist_indices); "
          "counts: (d * n_bins,) float64, in place. Returns the number of records with some x[j] < lower[j] or "
          "x[j] > upper[j]. Multi-threaded (integer counts: the same result for any thread count).");
    m.def("race_indices", &race_indices, py::arg("X"), py::arg("proj"), py::arg("offset"), py::arg("W"),
          py::arg("out"),
          "RACE one-hot indices: out[i, j] = j * W + (floor(t_j) mod W), t_j = sum over k in order of "
          "float64(X[i, k]) * proj[k, j] (from 0.0, no fused multiply-add), then + offset[j]. X: (n, d) "
          "float32/float64 with contiguous rows; proj: (d, R) float64 C-contiguous; offset: (R,) float64; "
          "out: (n, R) int32, written. ValueError if some t_j overflows (NaN or beyond 2**63).");
    m.def("race_accumulate", &race_accumulate, py::arg("X"), py::arg("proj"), py::arg("offset"), py::arg("W"),
          py::arg("counts"),
          "RACE counts: counts[j * W + b] += 1 for every record and hash (buckets as in race_indices); counts: "
          "(R * W,) float64, in place. Multi-threaded (the same result for any thread count).");
    m.def("onehot_gram", &onehot_gram, py::arg("idx"), py::arg("offsets"), py::arg("sizes"), py::arg("out"),
          "Co-occurrence Gram matrix of one-hot features: out[a, b] = number of rows of idx holding both a and b "
          "(out = P^T P, P[i, idx[i, j]] = 1). idx: (n, k) int32 with contiguous rows, column j in "
          "[offsets[j], offsets[j] + sizes[j]); offsets, sizes: (k,) int64, offsets the running sums of sizes; "
          "out: (m, m) float64 C-contiguous, m = sum(sizes), overwritten. Multi-threaded, GIL released.");
}

}  // namespace pysketch_bind
