// bind_subsample.cpp - feature subsampling in the sketch accumulator (pysketch/subsample.hpp):
// internal API of pysketch._core for the Python layer (FeatureMap.sketch_subsampled), tests
// and benchmarks. The GIL is released around the C++ calls; arrays are never copied.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common.hpp"
#include "pysketch/subsample.hpp"

namespace pysketch_bind {

namespace {

namespace ss = pysketch::subsample;
namespace sk = pysketch::sketch;
namespace ops = pysketch::operators;

sk::Nonlinearity nonlinearity_of(int code)
{
    if (code < 0 || code > 2) throw py::value_error("code must be 0 (cis), 1 (qcis) or 2 (square), got " +
                                                    std::to_string(code));
    return static_cast<sk::Nonlinearity>(code);
}

ss::MaskSpec spec_of(int scheme, std::size_t m, std::size_t r, std::size_t block)
{
    if (scheme < 0 || scheme > 2)
        throw py::value_error("scheme must be 0 (uniform), 1 (bernoulli) or 2 (blocks), got " + std::to_string(scheme));
    ss::MaskSpec spec;
    spec.scheme = static_cast<ss::Scheme>(scheme);
    spec.m = m;
    spec.r = r;
    spec.block = block;
    try {
        ss::validate(spec);
    } catch (const std::invalid_argument &e) {
        throw py::value_error(e.what());
    }
    return spec;
}

// A 1-D contiguous array of exactly `size` elements of T (None allowed unless required).
template <class T>
const T *vector_of(const py::object &obj, const char *name, std::size_t size, bool required)
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

// A writeable contiguous float64 accumulator of n elements (or None when allowed).
double *accumulator_of(const py::object &obj, const char *name, std::size_t n, bool required)
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

// acc += (m / r) sum over the rows of x of the masked features of x @ omega (+ dither); omega
// (d, m) and omega_t = omega.T (m, d), both C-contiguous.
void sketch_dense_subsampled(const py::array &omega, const py::array &omega_t, int code, const py::array &x,
                             const py::object &dither, int scheme, std::size_t r, std::uint64_t key0,
                             std::uint64_t key1, std::uint64_t first, const py::object &acc0, const py::object &acc1)
{
    dispatch(x, "x", [&](auto tag) {
        using T = decltype(tag);
        if (!omega.dtype().equal(x.dtype()))
            throw py::type_error("omega must have x's dtype " + dtype_name(x) + ", got " + dtype_name(omega));
        if (!omega_t.dtype().equal(x.dtype()))
            throw py::type_error("omega_t must have x's dtype " + dtype_name(x) + ", got " + dtype_name(omega_t));
        const sk::Nonlinearity f = nonlinearity_of(code);
        const Rows<T> w = unpack<T>(omega, "omega", false);
        const Rows<T> wt = unpack<T>(omega_t, "omega_t", false);
        if (w.rows < 1 || w.n < 1) throw py::value_error("omega must be a non-empty (d, m) array");
        if (wt.rows != w.n || wt.n != w.rows)
            throw py::value_error("omega_t must have shape (" + std::to_string(w.n) + ", " + std::to_string(w.rows) +
                                  "), the transpose of omega");
        if (wt.rows > 1 && wt.stride != static_cast<std::ptrdiff_t>(wt.n))
            throw py::value_error("omega_t must be C-contiguous");
        const std::size_t d = w.rows, m = w.n;
        const Rows<T> in = unpack<T>(x, "x", false);
        if (in.n != d)
            throw py::value_error("x must have " + std::to_string(d) + " columns (the rows of omega), got " +
                                  std::to_string(in.n));
        const ss::MaskSpec spec = spec_of(scheme, m, r, 1);
        if (spec.scheme == ss::Scheme::blocks)
            throw py::value_error("scheme 2 (blocks) needs a structured operator");
        const T *u = vector_of<T>(dither, "dither", m, false);
        if (u && f == sk::Nonlinearity::square) throw py::value_error("quadratic features take no dither");
        double *a0 = accumulator_of(acc0, "acc0", m, true);
        double *a1 = accumulator_of(acc1, "acc1", m, f != sk::Nonlinearity::square);
        py::gil_scoped_release release;
        ss::sketch_dense_subsampled<T>(w.data, w.stride, wt.data, d, m, f, in.data, in.stride, in.rows, u, spec,
                                       ss::Key{key0, key1}, first, a0, a1);
        return 0;
    });
}

// The same with a structured operator given by its arrays (as StructuredOperator holds them).
void sketch_structured_subsampled(int kind, std::size_t d, std::size_t m, int log_dp, const py::object &a,
                                  const py::object &b, const py::object &c, const py::object &post,
                                  const py::object &perm, int code, const py::array &x, const py::object &dither,
                                  int scheme, std::size_t r, std::uint64_t key0, std::uint64_t key1,
                                  std::uint64_t first, const py::object &acc0, const py::object &acc1)
{
    dispatch(x, "x", [&](auto tag) {
        using T = decltype(tag);
        const sk::Nonlinearity f = nonlinearity_of(code);
        if (kind < 0 || kind > 2) throw py::value_error("kind must be 0 (r3), 1 (gr2) or 2 (fastfood)");
        if (log_dp < 0 || log_dp > 24) throw py::value_error("log_dp must be in [0, 24]");
        ops::Structured<T> op;
        op.kind = static_cast<ops::Kind>(kind);
        op.d = d;
        op.m = m;
        op.log_dp = log_dp;
        const std::size_t dp = op.dp();
        if (d == 0 || d > dp) throw py::value_error("d must be in [1, 2**log_dp]");
        if (m == 0) throw py::value_error("m must be positive");
        op.blocks = (m + dp - 1) / dp;
        const std::size_t width = op.width();
        op.a = vector_of<T>(a, "a", width, true);
        op.b = vector_of<T>(b, "b", width, true);
        op.post = vector_of<T>(post, "post", width, true);
        if (op.kind == ops::Kind::fastfood) {
            op.perm = vector_of<std::int32_t>(perm, "perm", width, true);
            std::vector<char> seen(dp);
            for (std::size_t k = 0; k < op.blocks; ++k) {  // each block's perm: a permutation of [0, dp)
                std::fill(seen.begin(), seen.end(), 0);
                for (std::size_t i = 0; i < dp; ++i) {
                    const std::int32_t p = op.perm[k * dp + i];
                    if (p < 0 || static_cast<std::size_t>(p) >= dp || seen[static_cast<std::size_t>(p)])
                        throw py::value_error("perm must hold a permutation of range(dp) for every block");
                    seen[static_cast<std::size_t>(p)] = 1;
                }
            }
        } else {
            op.c = vector_of<T>(c, "c", width, true);
        }
        const Rows<T> in = unpack<T>(x, "x", false);
        if (in.n != d) throw py::value_error("x must have " + std::to_string(d) + " columns, got " + std::to_string(in.n));
        const ss::MaskSpec spec = spec_of(scheme, m, r, scheme == 2 ? dp : 1);
        const T *u = vector_of<T>(dither, "dither", m, false);
        if (u && f == sk::Nonlinearity::square) throw py::value_error("quadratic features take no dither");
        double *a0 = accumulator_of(acc0, "acc0", m, true);
        double *a1 = accumulator_of(acc1, "acc1", m, f != sk::Nonlinearity::square);
        py::gil_scoped_release release;
        ss::sketch_structured_subsampled<T>(op, f, in.data, in.stride, in.rows, u, spec, ss::Key{key0, key1}, first, a0,
                                           a1);
        return 0;
    });
}

// The masks of records first .. first + rows - 1 (sorted feature indices): tests only.
py::list masks(int scheme, std::size_t m, std::size_t r, std::size_t block, std::uint64_t key0, std::uint64_t key1,
               std::uint64_t first, std::size_t rows)
{
    const ss::MaskSpec spec = spec_of(scheme, m, r, block);
    py::list out;
    for (std::size_t i = 0; i < rows; ++i) {
        const std::vector<std::uint32_t> mask = ss::record_mask(spec, ss::Key{key0, key1}, first + i);
        py::array_t<std::uint32_t> a(static_cast<py::ssize_t>(mask.size()));
        std::copy(mask.begin(), mask.end(), a.mutable_data());
        out.append(std::move(a));
    }
    return out;
}

py::tuple philox(std::array<std::uint64_t, 4> counter, std::uint64_t key0, std::uint64_t key1)
{
    const auto v = ss::philox4x64(counter, ss::Key{key0, key1});
    return py::make_tuple(v[0], v[1], v[2], v[3]);
}

}  // namespace

void bind_subsample(py::module_ &m)
{
    m.def("sketch_dense_subsampled", &sketch_dense_subsampled, py::arg("omega").noconvert(),
          py::arg("omega_t").noconvert(), py::arg("code"),
          py::arg("x").noconvert(), py::arg("dither"), py::arg("scheme"), py::arg("r"), py::arg("key0"),
          py::arg("key1"), py::arg("first"), py::arg("acc0"), py::arg("acc1"),
          "acc0/acc1 += (m / r) * sums over the rows of x of the features (code: 0 cis, 1 qcis, 2 square) of the "
          "frequencies in each record's mask (scheme 0: r distinct uniformly, 1: Bernoulli(r / m)); omega (d, m) "
          "and omega_t = omega.T (m, d), C-contiguous, of x's dtype. Masks from the 128-bit key (key0, key1) and the record's "
          "position first + i; multi-threaded; the same bits for any thread count.");
    m.def("sketch_structured_subsampled", &sketch_structured_subsampled, py::arg("kind"), py::arg("d"), py::arg("m"),
          py::arg("log_dp"), py::arg("a"), py::arg("b"), py::arg("c"), py::arg("post"), py::arg("perm"),
          py::arg("code"), py::arg("x").noconvert(), py::arg("dither"), py::arg("scheme"), py::arg("r"),
          py::arg("key0"), py::arg("key1"), py::arg("first"), py::arg("acc0"), py::arg("acc1"),
          "As sketch_dense_subsampled for a structured operator given by its arrays; scheme 2 (blocks) keeps "
          "r / 2**log_dp whole blocks per record (m and r multiples of 2**log_dp) and transforms only those.");
    m.def("_subsample_masks", &masks, py::arg("scheme"), py::arg("m"), py::arg("r"), py::arg("block"),
          py::arg("key0"), py::arg("key1"), py::arg("first"), py::arg("rows"),
          "For tests only: the sorted feature indices of the masks of records first .. first + rows - 1, as the "
          "subsampled sketches draw them.");
    m.def("_philox4x64", &philox, py::arg("counter"), py::arg("key0"), py::arg("key1"),
          "For tests only: Philox4x64-10 of the counter (4 uint64) under the key (key0, key1).");
}

}  // namespace pysketch_bind
