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
#include "structured_core.hpp"

namespace pysketch_bind {

namespace {

namespace ss = pysketch::subsample;
namespace sk = pysketch::sketch;
namespace ops = pysketch::operators;

ss::MaskSpec spec_of(ss::Scheme scheme, std::size_t m, std::size_t r, std::size_t block)
{
    switch (scheme) {
    case ss::Scheme::uniform:
    case ss::Scheme::bernoulli:
    case ss::Scheme::blocks: break;
    default:
        throw py::value_error("scheme must be Scheme.uniform, Scheme.bernoulli or Scheme.blocks, got " +
                              std::to_string(static_cast<int>(scheme)));
    }
    ss::MaskSpec spec;
    spec.scheme = scheme;
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


// acc += (m / r) sum over the rows of x of the masked features of x @ omega (+ dither); omega
// (d, m) and omega_t = omega.T (m, d), both C-contiguous.
void sketch_dense_subsampled(const py::array &omega, const py::array &omega_t, sk::Nonlinearity code, const py::array &x,
                             const py::object &dither, ss::Scheme scheme, std::size_t r, std::uint64_t key0,
                             std::uint64_t key1, std::uint64_t first, const py::object &acc0, const py::object &acc1)
{
    dispatch(x, "x", [&](auto tag) {
        using T = decltype(tag);
        if (!omega.dtype().equal(x.dtype()))
            throw py::type_error("omega must have x's dtype " + dtype_name(x) + ", got " + dtype_name(omega));
        if (!omega_t.dtype().equal(x.dtype()))
            throw py::type_error("omega_t must have x's dtype " + dtype_name(x) + ", got " + dtype_name(omega_t));
        const sk::Nonlinearity f = checked(code);
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
            throw py::value_error("scheme blocks needs a structured operator");
        const T *u = vector_of<T>(dither, "dither", m, false);
        if (u && f == sk::Nonlinearity::square) throw py::value_error("quadratic features take no dither");
        double *a0 = accumulator(acc0, "acc0", m, true);
        double *a1 = accumulator(acc1, "acc1", m, f != sk::Nonlinearity::square);
        py::gil_scoped_release release;
        ss::sketch_dense_subsampled<T>(w.data, w.stride, wt.data, d, m, f, in.data, in.stride, in.rows, u, spec,
                                       ss::Key{key0, key1}, first, a0, a1);
        return 0;
    });
}

// The same with a structured operator (a StructuredF32 / StructuredF64 of x's dtype).
template <class T>
void sketch_structured_subsampled(const StructuredCore<T> &core, sk::Nonlinearity code, const py::array &x,
                                  const py::object &dither, ss::Scheme scheme, std::size_t r, std::uint64_t key0,
                                  std::uint64_t key1, std::uint64_t first, const py::object &acc0,
                                  const py::object &acc1)
{
    const ops::Structured<T> &op = core.spec();
    const sk::Nonlinearity f = checked(code);
    const std::size_t dp = op.dp(), d = op.d, m = op.m;
    const Rows<T> in = unpack<T>(x, "x", false);
    if (in.n != d) throw py::value_error("x must have " + std::to_string(d) + " columns, got " + std::to_string(in.n));
    const ss::MaskSpec spec = spec_of(scheme, m, r, scheme == ss::Scheme::blocks ? dp : 1);
    const T *u = vector_of<T>(dither, "dither", m, false);
    if (u && f == sk::Nonlinearity::square) throw py::value_error("quadratic features take no dither");
    double *a0 = accumulator(acc0, "acc0", m, true);
    double *a1 = accumulator(acc1, "acc1", m, f != sk::Nonlinearity::square);
    py::gil_scoped_release release;
    ss::sketch_structured_subsampled<T>(op, f, in.data, in.stride, in.rows, u, spec, ss::Key{key0, key1}, first, a0,
                                       a1);
}

// The masks of records first .. first + rows - 1 (sorted feature indices): tests only.
py::list masks(ss::Scheme scheme, std::size_t m, std::size_t r, std::size_t block, std::uint64_t key0, std::uint64_t key1,
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
    py::enum_<ss::Scheme>(m, "Scheme", "The subsampling masks (pysketch/masks.hpp).", py::module_local())
        .value("uniform", ss::Scheme::uniform, "r distinct features per record, uniformly")
        .value("bernoulli", ss::Scheme::bernoulli, "each feature kept with probability r / m")
        .value("blocks", ss::Scheme::blocks, "r / block whole blocks of a structured operator");
    m.def("sketch_dense_subsampled", &sketch_dense_subsampled, py::arg("omega").noconvert(),
          py::arg("omega_t").noconvert(), py::arg("code"),
          py::arg("x").noconvert(), py::arg("dither"), py::arg("scheme"), py::arg("r"), py::arg("key0"),
          py::arg("key1"), py::arg("first"), py::arg("acc0"), py::arg("acc1"),
          "acc0/acc1 += (m / r) * sums over the rows of x of the features (code: a Nonlinearity) of the "
          "frequencies in each record's mask (scheme: Scheme.uniform or Scheme.bernoulli); omega (d, m) "
          "and omega_t = omega.T (m, d), C-contiguous, of x's dtype. Masks from the 128-bit key (key0, key1) and the record's "
          "position first + i; multi-threaded; the same bits for any thread count.");
    m.def("sketch_structured_subsampled", &sketch_structured_subsampled<float>, py::arg("core"), py::arg("code"),
          py::arg("x").noconvert(), py::arg("dither"), py::arg("scheme"), py::arg("r"), py::arg("key0"),
          py::arg("key1"), py::arg("first"), py::arg("acc0"), py::arg("acc1"));
    m.def("sketch_structured_subsampled", &sketch_structured_subsampled<double>, py::arg("core"), py::arg("code"),
          py::arg("x").noconvert(), py::arg("dither"), py::arg("scheme"), py::arg("r"), py::arg("key0"),
          py::arg("key1"), py::arg("first"), py::arg("acc0"), py::arg("acc1"),
          "As sketch_dense_subsampled for a structured operator (its StructuredF32 / StructuredF64 core); "
          "Scheme.blocks keeps r / 2**log_dp whole blocks per record (m and r multiples of 2**log_dp) and "
          "transforms only those.");
    m.def("_subsample_masks", &masks, py::arg("scheme"), py::arg("m"), py::arg("r"), py::arg("block"),
          py::arg("key0"), py::arg("key1"), py::arg("first"), py::arg("rows"),
          "For tests only: the sorted feature indices of the masks of records first .. first + rows - 1, as the "
          "subsampled sketches draw them.");
    m.def("_philox4x64", &philox, py::arg("counter"), py::arg("key0"), py::arg("key1"),
          "For tests only: Philox4x64-10 of the counter (4 uint64) under the key (key0, key1).");
}

}  // namespace pysketch_bind
