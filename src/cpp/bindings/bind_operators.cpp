// bind_operators.cpp - structured frequency operators (and, later, fused sketches).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "common.hpp"
#include "pysketch/operators.hpp"
#include "pysketch/sketch.hpp"
#include "structured_core.hpp"

namespace pysketch_bind {

namespace {

namespace ops = pysketch::operators;

namespace sk = pysketch::sketch;

// acc += the sums over the rows of x of the features of Omega^T x (+ dither).
template <class T>
void sketch_structured_t(const StructuredCore<T> &core, sk::Nonlinearity code, const py::array &x, const py::object &dither,
                         const py::object &acc0, const py::object &acc1)
{
    const auto &op = core.spec();
    const sk::Nonlinearity f = checked(code);
    const Rows<T> in = unpack<T>(x, "x", false);
    if (in.n != op.d) throw py::value_error("x must have " + std::to_string(op.d) + " columns");
    const T *u = vector_of<T>(dither, "dither", op.m, false);
    if (u && f == sk::Nonlinearity::square) throw py::value_error("quadratic features take no dither");
    double *a0 = accumulator(acc0, "acc0", op.m, true);
    double *a1 = accumulator(acc1, "acc1", op.m, f != sk::Nonlinearity::square);
    py::gil_scoped_release release;
    sk::sketch_structured<T>(op, f, in.data, in.stride, in.rows, u, a0, a1);
}

// acc += the sums over the rows of x of the features of x @ omega (+ dither), omega dense.
void sketch_dense(const py::array &omega, sk::Nonlinearity code, const py::array &x, const py::object &dither,
                  const py::object &acc0, const py::object &acc1)
{
    dispatch(x, "x", [&](auto tag) {
        using T = decltype(tag);
        if (!omega.dtype().equal(x.dtype()))
            throw py::type_error("omega must have x's dtype " + dtype_name(x) + ", got " + dtype_name(omega));
        const sk::Nonlinearity f = checked(code);
        const Rows<T> w = unpack<T>(omega, "omega", false);
        const Rows<T> in = unpack<T>(x, "x", false);
        if (w.rows < 1 || w.n < 1) throw py::value_error("omega must be a non-empty (d, m) array");
        if (in.n != w.rows)
            throw py::value_error("x must have " + std::to_string(w.rows) + " columns (the rows of omega), got " +
                                  std::to_string(in.n));
        const T *u = vector_of<T>(dither, "dither", w.n, false);
        if (u && f == sk::Nonlinearity::square) throw py::value_error("quadratic features take no dither");
        double *a0 = accumulator(acc0, "acc0", w.n, true);
        double *a1 = accumulator(acc1, "acc1", w.n, f != sk::Nonlinearity::square);
        py::gil_scoped_release release;
        sk::sketch_dense<T>(w.data, w.stride, w.rows, w.n, f, in.data, in.stride, in.rows, u, a0, a1);
        return 0;
    });
}

// lo/hi (float64, length d) <- the per-column min/max of themselves and the rows of x.
void column_bounds(const py::array &x, const py::object &lo, const py::object &hi)
{
    dispatch(x, "x", [&](auto tag) {
        using T = decltype(tag);
        const Rows<T> in = unpack<T>(x, "x", false);
        double *l = accumulator(lo, "lo", in.n, true);
        double *h = accumulator(hi, "hi", in.n, true);
        py::gil_scoped_release release;
        sk::column_bounds<T>(in.data, in.stride, in.rows, in.n, l, h);
        return 0;
    });
}

// acc += the sums over the rows of t of the features of t (+ dither); columns on threads.
void accumulate_features(sk::Nonlinearity code, const py::array &t, const py::object &dither, const py::object &acc0,
                         const py::object &acc1)
{
    dispatch(t, "t", [&](auto tag) {
        using T = decltype(tag);
        const sk::Nonlinearity f = checked(code);
        const Rows<T> in = unpack<T>(t, "t", false);
        const T *u = vector_of<T>(dither, "dither", in.n, false);
        if (u && f == sk::Nonlinearity::square) throw py::value_error("quadratic features take no dither");
        double *a0 = accumulator(acc0, "acc0", in.n, true);
        double *a1 = accumulator(acc1, "acc1", in.n, f != sk::Nonlinearity::square);
        py::gil_scoped_release release;
        sk::accumulate_parallel<T>(f, in.data, in.rows, in.stride, in.n, u, a0, a1);
        return 0;
    });
}

template <class T>
void bind_structured(py::module_ &m, const char *name)
{
    py::class_<StructuredCore<T>>(m, name, py::module_local())
        .def(py::init<int, std::size_t, std::size_t, int, py::object, py::object, py::object, py::object, py::object>(),
             py::arg("kind"), py::arg("d"), py::arg("m"), py::arg("log_dp"), py::arg("a"), py::arg("b"),
             py::arg("c"), py::arg("post"), py::arg("perm"))
        .def("apply", &StructuredCore<T>::apply, py::arg("x").noconvert(), py::arg("out").noconvert(),
             "out (rows, m) = x (rows, d) @ Omega")
        .def("adjoint", &StructuredCore<T>::adjoint, py::arg("v").noconvert(), py::arg("out").noconvert(),
             "out (rows, d) = v (rows, m) @ Omega.T");
}

}  // namespace

void bind_operators(py::module_ &m)
{
    bind_structured<float>(m, "StructuredF32");
    bind_structured<double>(m, "StructuredF64");
    m.def("sketch_structured", &sketch_structured_t<float>, py::arg("core"), py::arg("code"), py::arg("x").noconvert(),
          py::arg("dither"), py::arg("acc0"), py::arg("acc1"));
    m.def("sketch_structured", &sketch_structured_t<double>, py::arg("core"), py::arg("code"),
          py::arg("x").noconvert(), py::arg("dither"), py::arg("acc0"), py::arg("acc1"),
          "acc0/acc1 += sums over the rows of x of the features (code: a Nonlinearity) of Omega^T x "
          "(+ dither); fused, multi-threaded, deterministic.");
    m.def("sketch_dense", &sketch_dense, py::arg("omega"), py::arg("code"), py::arg("x"), py::arg("dither"),
          py::arg("acc0"), py::arg("acc1"),
          "acc0/acc1 += sums over the rows of x of the features (code as above) of x @ omega (+ dither), omega "
          "a dense (d, m) array of x's dtype; fused tiles, multi-threaded, deterministic.");
    m.def("column_bounds", &column_bounds, py::arg("x"), py::arg("lo"), py::arg("hi"),
          "lo/hi (float64, length d) <- min/max of themselves and of every column of x (the bounding box, "
          "merged across batches); multi-threaded.");
    m.def("accumulate_features", &accumulate_features, py::arg("code"), py::arg("t").noconvert(), py::arg("dither"),
          py::arg("acc0"), py::arg("acc1"),
          "acc0/acc1 += sums over the rows of the phases t of the features (code as above); columns on threads.");
}

}  // namespace pysketch_bind
