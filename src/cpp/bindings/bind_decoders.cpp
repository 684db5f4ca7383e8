// bind_decoders.cpp - the inner terms of the compressive learning decoders, and the nearest
// center of every record (the labels and inertia of the fitted k-means).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>

#include "common.hpp"
#include "pysketch/atoms.hpp"
#include "pysketch/nearest.hpp"

namespace pysketch_bind {

namespace {


double atom_terms(const py::array &P, const py::object &amp, const py::object &alpha, const py::object &zr,
                  const py::object &zi, const py::object &Gr, const py::object &Gi, const py::object &out_k,
                  const py::object &sq_norm)
{
    if (P.ndim() != 2) throw py::value_error("P must be 2-D (k atoms, m frequencies)");
    pysketch::atoms::Terms t;
    t.k = static_cast<std::size_t>(P.shape(0));
    t.m = static_cast<std::size_t>(P.shape(1));
    const std::size_t km = t.k * t.m;
    t.P = f64_array(P, "P", km, true, false);
    t.amp = f64_array(amp, "amp", km, false, false);
    t.alpha = f64_array(alpha, "alpha", t.k, false, false);
    t.zr = f64_array(zr, "zr", t.m, true, false);
    t.zi = f64_array(zi, "zi", t.m, true, false);
    t.Gr = f64_array(Gr, "Gr", km, false, true);
    t.Gi = f64_array(Gi, "Gi", km, false, true);
    t.out_k = f64_array(out_k, "out_k", t.k, true, true);
    t.sq_norm = f64_array(sq_norm, "sq_norm", t.k, false, true);
    py::gil_scoped_release release;
    return pysketch::atoms::terms(t);
}

void nearest_centers(const py::array &X, const py::array &C, const py::array &labels, const py::object &d2)
{
    if (!C.dtype().equal(py::dtype::of<double>()))
        throw py::type_error("C must be a float64 array, got dtype " + dtype_name(C));
    if (C.ndim() == 2 && C.shape(0) == 0) throw py::value_error("C must hold at least one center");
    const auto c = unpack<double>(C, "C", false);
    if (!labels.dtype().equal(py::dtype::of<std::int64_t>()) || labels.ndim() != 1 ||
        !(labels.flags() & py::array::c_style) || !labels.writeable())
        throw py::value_error("labels must be a writeable contiguous 1-D int64 array");
    dispatch(X, "X", [&](auto zero) {
        using T = decltype(zero);
        const auto x = unpack<T>(X, "X", false);
        if (x.n != c.n)
            throw py::value_error("X has " + std::to_string(x.n) + " columns and C " + std::to_string(c.n));
        if (static_cast<std::size_t>(labels.shape(0)) != x.rows)
            throw py::value_error("labels must hold one entry per row of X");
        double *pd = f64_array(d2, "d2", x.rows, false, true);
        auto *pl = static_cast<std::int64_t *>(const_cast<void *>(labels.data()));
        py::gil_scoped_release release;
        pysketch::nearest::nearest<T>(x.data, x.stride, x.rows, x.n, c.data, c.stride, c.rows, pl, pd);
    });
}

}  // namespace

void bind_decoders(py::module_ &m)
{
    m.def("nearest_centers", &nearest_centers, py::arg("X"), py::arg("C"), py::arg("labels"), py::arg("d2"),
          "For every row of X (float32 or float64, n x d), labels = the first nearest row of C (float64, k x d) and "
          "d2 (float64 or None) = its squared distance, summed in float64 from the differences (multi-threaded, "
          "GIL released).");
    m.def("atom_terms", &atom_terms, py::arg("P"), py::arg("amp"), py::arg("alpha"), py::arg("zr"), py::arg("zi"),
          py::arg("Gr"), py::arg("Gi"), py::arg("out_k"), py::arg("sq_norm"),
          "Atoms a_kj = amp_kj exp(i P_kj) against z = zr + i zi. With alpha: r = z - sum_k alpha_k a_k, returns "
          "||r||^2 and writes out_k = -2 Re(a_k^H r); without: r = z, returns 0 and writes out_k = Re(a_k^H r) and "
          "sq_norm = ||a_k||^2. Gr / Gi (k x m, optional) receive Re / Im of conj(a_kj) r_j.");
}

}  // namespace pysketch_bind
