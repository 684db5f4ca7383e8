// bind_decoders.cpp - the inner terms of the compressive learning decoders.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>

#include "common.hpp"
#include "pysketch/atoms.hpp"

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

}  // namespace

void bind_decoders(py::module_ &m)
{
    m.def("atom_terms", &atom_terms, py::arg("P"), py::arg("amp"), py::arg("alpha"), py::arg("zr"), py::arg("zi"),
          py::arg("Gr"), py::arg("Gi"), py::arg("out_k"), py::arg("sq_norm"),
          "Atoms a_kj = amp_kj exp(i P_kj) against z = zr + i zi. With alpha: r = z - sum_k alpha_k a_k, returns "
          "||r||^2 and writes out_k = -2 Re(a_k^H r); without: r = z, returns 0 and writes out_k = Re(a_k^H r) and "
          "sq_norm = ||a_k||^2. Gr / Gi (k x m, optional) receive Re / Im of conj(a_kj) r_j.");
}

}  // namespace pysketch_bind
