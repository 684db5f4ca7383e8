// bind_operators.cpp - frequency operators and fused sketches.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "common.hpp"

namespace pysketch_bind {

void bind_operators(py::module_ &m)
{
    (void)m;
}

}  // namespace pysketch_bind
