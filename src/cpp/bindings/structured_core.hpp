// structured_core.hpp - the bound structured operator (StructuredF32 / StructuredF64 in
// pysketch._core), shared by the binding files that take one as an argument.
#ifndef PYSKETCH_BIND_STRUCTURED_CORE_HPP
#define PYSKETCH_BIND_STRUCTURED_CORE_HPP

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <string>

#include "common.hpp"
#include "pysketch/operators.hpp"

namespace pysketch_bind {

// The structured operator of one dtype, holding its arrays alive.
template <class T>
class StructuredCore {
  public:
    StructuredCore(int kind, std::size_t d, std::size_t m, int log_dp, py::object a, py::object b, py::object c,
                   py::object post, py::object perm)
        : keep_{a, b, c, post, perm}
    {
        fill_structured(op_, kind, d, m, log_dp, a, b, c, post, perm);
    }

    // out (rows, m) = x (rows, d) Omega
    void apply(const py::array &x, const py::array &out) const
    {
        const Rows<T> in = unpack<T>(x, "x", false);
        const Rows<T> o = unpack<T>(out, "out", true);
        check_rows(in, op_.d, "x");
        check_rows(o, op_.m, "out");
        if (in.rows != o.rows) throw py::value_error("x and out must have the same number of rows");
        if (overlap(byte_range(in), byte_range(o))) throw py::value_error("out must not overlap x");
        py::gil_scoped_release release;
        pysketch::operators::apply(op_, in.data, in.stride, in.rows, o.data, o.stride);
    }

    // out (rows, d) = v (rows, m) Omega^T
    void adjoint(const py::array &v, const py::array &out) const
    {
        const Rows<T> in = unpack<T>(v, "v", false);
        const Rows<T> o = unpack<T>(out, "out", true);
        check_rows(in, op_.m, "v");
        check_rows(o, op_.d, "out");
        if (in.rows != o.rows) throw py::value_error("v and out must have the same number of rows");
        if (overlap(byte_range(in), byte_range(o))) throw py::value_error("out must not overlap v");
        py::gil_scoped_release release;
        pysketch::operators::adjoint(op_, in.data, in.stride, in.rows, o.data, o.stride);
    }

    const pysketch::operators::Structured<T> &spec() const { return op_; }

  private:
    static void check_rows(const Rows<T> &r, std::size_t n, const char *name)
    {
        if (r.n != n)
            throw py::value_error(std::string(name) + " must have " + std::to_string(n) + " columns, got " +
                                  std::to_string(r.n));
        if (r.rows > 1 && r.stride < static_cast<std::ptrdiff_t>(r.n))
            throw py::value_error(std::string(name) + ": rows must not overlap");
    }

    pysketch::operators::Structured<T> op_;
    py::object keep_[5];
};

}  // namespace pysketch_bind

#endif
