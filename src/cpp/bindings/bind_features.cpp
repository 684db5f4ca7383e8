// bind_features.cpp - nonlinearities: SIMD sincos and the fused feature accumulations
// (internal API of pysketch._core, for the Python layer, tests and benchmarks).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "common.hpp"
#include "pysketch/features.hpp"
#include "pysketch/sincos.hpp"
#include "pysketch/sketch.hpp"

namespace pysketch_bind {

namespace {

// A 1-D array unpacked for the core: contiguous, aligned, of element type T (checked).
template <class T>
T *unpack_vector(const py::array &a, const char *name, bool written)
{
    const std::string arg(name);
    if (a.ndim() != 1)
        throw py::value_error(arg + " must be a 1-D array, got " + std::to_string(a.ndim()) + " dimensions");
    if (a.shape(0) > 1 && a.strides(0) != static_cast<py::ssize_t>(sizeof(T)))
        throw py::value_error(arg + " must be contiguous (stride " + std::to_string(sizeof(T)) + " bytes), got stride " +
                              std::to_string(a.strides(0)));
    if (reinterpret_cast<std::uintptr_t>(a.data()) % alignof(T) != 0)
        throw py::value_error(arg + " must be aligned to its item size");
    if (written && !a.writeable()) throw py::value_error(arg + " must be writeable");
    return static_cast<T *>(const_cast<void *>(a.data()));
}

// The 2-D input t: as common.hpp's unpack, except that an empty array (which numpy may give
// any strides) is accepted as it is.
template <class T>
Rows<T> unpack_input(const py::array &a, const char *name)
{
    if (a.ndim() == 2 && a.size() == 0)
        return {nullptr, 0, static_cast<std::size_t>(a.shape(0)), static_cast<std::size_t>(a.shape(1))};
    return unpack<T>(a, name, false);
}

void check_dtype(const py::array &a, const char *name, const py::dtype &expected)
{
    if (!a.dtype().equal(expected))
        throw py::type_error(std::string(name) + " must have dtype " + py::str(expected).cast<std::string>() +
                             ", got " + dtype_name(a));
}

void check_length(const py::array &a, const char *name, std::size_t n, const char *what)
{
    if (static_cast<std::size_t>(a.shape(0)) != n)
        throw py::value_error(std::string(name) + " must have length " + std::to_string(n) + " (" + what + "), got " +
                              std::to_string(a.shape(0)));
}

// An output array given by the caller: t's dtype and length, contiguous, writeable; it may be
// t itself (in place) but must not otherwise overlap t.
template <class T>
T *unpack_output(const py::object &out, const char *name, const py::array &t, const T *x, std::size_t n)
{
    if (!py::isinstance<py::array>(out))
        throw py::type_error(std::string(name) + " must be None or a 1-D numpy array of t's dtype, got " +
                             py::str(py::type::of(out)).cast<std::string>());
    const auto a = py::reinterpret_borrow<py::array>(out);
    check_dtype(a, name, t.dtype());
    T *p = unpack_vector<T>(a, name, true);
    check_length(a, name, n, "the length of t");
    if (p != x && overlap(byte_range(p, 1, 1, n, sizeof(T)), byte_range(x, 1, 1, n, sizeof(T))))
        throw py::value_error(std::string(name) + " must be t itself or not overlap t");
    return p;
}

py::tuple sincos(const py::array &t, const py::object &cos_out, const py::object &sin_out)
{
    if (cos_out.is_none() != sin_out.is_none())
        throw py::value_error("cos_out and sin_out must be given together (or both None)");
    return dispatch(t, "t", [&](auto tag) {
        using T = decltype(tag);
        const T *x = unpack_vector<T>(t, "t", false);
        const std::size_t n = static_cast<std::size_t>(t.shape(0));
        py::array c, s;
        T *pc, *ps;
        if (cos_out.is_none()) {
            py::array_t<T> cn(static_cast<py::ssize_t>(n)), sn(static_cast<py::ssize_t>(n));
            pc = cn.mutable_data();
            ps = sn.mutable_data();
            c = std::move(cn);
            s = std::move(sn);
        } else {
            pc = unpack_output<T>(cos_out, "cos_out", t, x, n);
            ps = unpack_output<T>(sin_out, "sin_out", t, x, n);
            if (overlap(byte_range(pc, 1, 1, n, sizeof(T)), byte_range(ps, 1, 1, n, sizeof(T))))
                throw py::value_error("cos_out and sin_out must not overlap");
            c = py::reinterpret_borrow<py::array>(cos_out);
            s = py::reinterpret_borrow<py::array>(sin_out);
        }
        {
            py::gil_scoped_release release;
            pysketch::sincos::sincos<T>(x, n, pc, ps);
        }
        return py::tuple(py::make_tuple(std::move(c), std::move(s)));
    });
}

// The shared argument handling of accumulate_cis and accumulate_qcis.
template <class Kernel>
void accumulate(const py::array &t, const py::object &u, const py::array &acc_a, const py::array &acc_b,
                const char *name_a, const char *name_b, Kernel kernel)
{
    dispatch(t, "t", [&](auto tag) {
        using T = decltype(tag);
        const Rows<T> x = unpack_input<T>(t, "t");
        const T *pu = nullptr;
        py::array u_array;
        if (!u.is_none()) {
            if (!py::isinstance<py::array>(u))
                throw py::type_error("u must be None or a 1-D numpy array of t's dtype, got " +
                                     py::str(py::type::of(u)).cast<std::string>());
            u_array = py::reinterpret_borrow<py::array>(u);
            check_dtype(u_array, "u", t.dtype());
            pu = unpack_vector<T>(u_array, "u", false);
            check_length(u_array, "u", x.n, "the last axis of t");
        }
        const py::dtype f64 = py::dtype::of<double>();
        check_dtype(acc_a, name_a, f64);
        check_dtype(acc_b, name_b, f64);
        double *pa = unpack_vector<double>(acc_a, name_a, true);
        double *pb = unpack_vector<double>(acc_b, name_b, true);
        check_length(acc_a, name_a, x.n, "the last axis of t");
        check_length(acc_b, name_b, x.n, "the last axis of t");
        const auto ra = byte_range(pa, 1, 1, x.n, sizeof(double));
        const auto rb = byte_range(pb, 1, 1, x.n, sizeof(double));
        if (overlap(ra, rb))
            throw py::value_error(std::string(name_a) + " and " + name_b + " must not overlap");
        const auto rt = byte_range(x.data, x.stride, x.rows, x.n, sizeof(T));
        const auto ru = byte_range(pu, 1, pu ? 1 : 0, x.n, sizeof(T));
        for (const auto &[range, name] : {std::pair{ra, name_a}, std::pair{rb, name_b}}) {
            if (overlap(range, rt) || overlap(range, ru))
                throw py::value_error(std::string(name) + " must not overlap the inputs t and u");
        }
        py::gil_scoped_release release;
        kernel(x.data, x.rows, x.stride, x.n, pu, pa, pb);
    });
}

void accumulate_cis(const py::array &t, const py::object &u, const py::array &acc_cos, const py::array &acc_sin)
{
    accumulate(t, u, acc_cos, acc_sin, "acc_cos", "acc_sin", [](auto... args) {
        pysketch::features::accumulate_cis(args...);
    });
}

void accumulate_qcis(const py::array &t, const py::object &u, const py::array &acc_re, const py::array &acc_im)
{
    accumulate(t, u, acc_re, acc_im, "acc_re", "acc_im", [](auto... args) {
        pysketch::features::accumulate_qcis(args...);
    });
}

}  // namespace

void bind_features(py::module_ &m)
{
    namespace sk = pysketch::sketch;
    py::enum_<sk::Nonlinearity>(m, "Nonlinearity", "The nonlinearity of a feature map (pysketch/features.hpp).",
                                 py::module_local())
        .value("cis", sk::Nonlinearity::cis, "cos and sin (complex and real maps)")
        .value("qcis", sk::Nonlinearity::qcis, "2**-0.5 sign cos and sign sin (quantized map)")
        .value("square", sk::Nonlinearity::square, "the square (quadratic map)");
    m.attr("SINCOS_FAST_BOUND_FLOAT32") = static_cast<double>(pysketch::sincos::fast_bound<float>);
    m.attr("SINCOS_FAST_BOUND_FLOAT64") = pysketch::sincos::fast_bound<double>;

    m.def("sincos", &sincos, py::arg("t").noconvert(), py::arg("cos_out").none(true) = py::none(),
          py::arg("sin_out").none(true) = py::none(),
          "(cos t, sin t) of a 1-D contiguous float32/float64 array: two new arrays of its dtype, or cos_out and "
          "sin_out (1-D, contiguous, t's dtype and length; either may be t itself), filled and returned.");
    m.def("accumulate_cis", &accumulate_cis, py::arg("t").noconvert(), py::arg("u").none(true),
          py::arg("acc_cos").noconvert(), py::arg("acc_sin").noconvert(),
          "acc_cos += cos(t + u).sum(axis=0) and acc_sin += sin(t + u).sum(axis=0), in place. t: 2-D float32/float64 "
          "(rows, n) with a contiguous last axis (any row stride); u: None or 1-D of length n and t's dtype; "
          "acc_cos, acc_sin: 1-D float64 of length n, writeable.");
    m.def("accumulate_qcis", &accumulate_qcis, py::arg("t").noconvert(), py::arg("u").none(true),
          py::arg("acc_re").noconvert(), py::arg("acc_im").noconvert(),
          "acc_re += 2**-0.5 * sign(cos(t + u)).sum(axis=0), acc_im likewise with sin (sign(0) = +1), in place; "
          "arguments as for accumulate_cis.");
}

}  // namespace pysketch_bind
