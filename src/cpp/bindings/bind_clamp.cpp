// bind_clamp.cpp - the output nodes of CL-AMP (pysketch/clamp.hpp). Arrays are checked,
// never converted or copied; the GIL is released around the C++ call.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>

#include "common.hpp"
#include "pysketch/clamp.hpp"

namespace pysketch_bind {

namespace {


void clamp_output(const py::array &zr, const py::array &zi, const py::array &g, const py::array &P,
                  const py::array &qp, const py::array &alpha, const py::array &tau, double noise_var, bool laplace,
                  const py::array &zhat, const py::array &qz)
{
    if (P.ndim() != 2) throw py::value_error("P must be 2-D (m frequencies, k clusters)");
    pysketch::clamp::OutputArgs a;
    a.m = static_cast<std::size_t>(P.shape(0));
    a.k = static_cast<std::size_t>(P.shape(1));
    const std::size_t mk = a.m * a.k;
    a.zr = f64_array(zr, "zr", a.m, true, false);
    a.zi = f64_array(zi, "zi", a.m, true, false);
    a.g = f64_array(g, "g", a.m, true, false);
    a.P = f64_array(P, "P", mk, true, false);
    a.qp = f64_array(qp, "qp", a.k, true, false);
    a.alpha = f64_array(alpha, "alpha", a.k, true, false);
    a.tau = f64_array(tau, "tau", a.k, true, false);
    if (!(noise_var >= 0.0)) throw py::value_error("noise_var must be >= 0");
    a.noise_var = noise_var;
    a.laplace = laplace;
    a.zhat = f64_array(zhat, "zhat", mk, true, true);
    a.qz = f64_array(qz, "qz", mk, true, true);
    py::gil_scoped_release release;
    pysketch::clamp::output(a);
}

void clamp_theta_moments(const py::array &a1, const py::array &b1, const py::array &a2, const py::array &b2,
                         const py::array &mu0, const py::array &v0, bool laplace, const py::array &mean,
                         const py::array &var)
{
    const std::size_t n = static_cast<std::size_t>(a1.size());
    const double *pa1 = f64_array(a1, "a1", n, true, false), *pb1 = f64_array(b1, "b1", n, true, false);
    const double *pa2 = f64_array(a2, "a2", n, true, false), *pb2 = f64_array(b2, "b2", n, true, false);
    const double *pmu = f64_array(mu0, "mu0", n, true, false), *pv = f64_array(v0, "v0", n, true, false);
    double *pm = f64_array(mean, "mean", n, true, true), *ps = f64_array(var, "var", n, true, true);
    py::gil_scoped_release release;
    pysketch::clamp::theta_moments_array(n, pa1, pb1, pa2, pb2, pmu, pv, laplace, pm, ps);
}

}  // namespace

void bind_clamp(py::module_ &m)
{
    m.def("clamp_output", &clamp_output, py::arg("zr"), py::arg("zi"), py::arg("g"), py::arg("P"), py::arg("qp"),
          py::arg("alpha"), py::arg("tau"), py::arg("noise_var"), py::arg("laplace"), py::arg("zhat"), py::arg("qz"),
          "CL-AMP output nodes: for the m x k pseudo-priors N(P, qp) and the sketch zr + i zi, writes the "
          "posterior means zhat and variances qz (m x k) of z = theta / g (multi-threaded, GIL released).");
    m.def("clamp_theta_moments", &clamp_theta_moments, py::arg("a1"), py::arg("b1"), py::arg("a2"), py::arg("b2"),
          py::arg("mu0"), py::arg("v0"), py::arg("laplace"), py::arg("mean"), py::arg("var"),
          "Mean and variance of theta under exp(a1 cos t + b1 sin t + a2 cos 2t + b2 sin 2t - (t - mu0)^2 / (2 v0)), "
          "elementwise over equal-size float64 arrays (adaptive grid, or Laplace's method).");
}

}  // namespace pysketch_bind
