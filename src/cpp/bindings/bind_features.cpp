// bind_features.cpp - nonlinearities (SIMD sincos, ...).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "common.hpp"

namespace pysketch_bind {

void bind_features(py::module_ &m)
{
    (void)m;
}

}  // namespace pysketch_bind
