// module.cpp - pysketch._core: the pybind11 binding of the C++ core.
//
// Thin on purpose: each function checks that its arrays are what the core expects
// (dtype, 2-D, contiguous last axis, aligned, writeable where written), never converts
// or copies them, passes raw pointers and strides, and releases the GIL around the C++
// call. Choosing layouts, dtypes and copies is the Python layer's job. One file per
// area: bind_hadamard.cpp (transforms, runtime settings), bind_features.cpp
// (nonlinearities), bind_operators.cpp (frequency operators, sketches), bind_decoders.cpp
// (inner terms of the learning decoders), bind_subsample.cpp (subsampled sketches),
// bind_clamp.cpp (CL-AMP output nodes), bind_onehot.cpp (HIST and RACE one-hot maps, Gram matrix),
// bind_row_action.cpp (Kaczmarz and SGD row-action loops), bind_noise.cpp (exact discrete
// Laplace and discrete Gaussian noise from a ChaCha20 key).
#include <pybind11/pybind11.h>

namespace pysketch_bind {
void bind_hadamard(pybind11::module_ &m);
void bind_features(pybind11::module_ &m);
void bind_operators(pybind11::module_ &m);
void bind_decoders(pybind11::module_ &m);
void bind_subsample(pybind11::module_ &m);
void bind_clamp(pybind11::module_ &m);
void bind_onehot(pybind11::module_ &m);
void bind_sparse_jl(pybind11::module_ &m);
void bind_row_action(pybind11::module_ &m);
void bind_noise(pybind11::module_ &m);
}  // namespace pysketch_bind

#if defined(PYBIND11_VERSION_HEX) && PYBIND11_VERSION_HEX >= 0x020D0000
PYBIND11_MODULE(_core, m, pybind11::mod_gil_not_used())
#else
PYBIND11_MODULE(_core, m)
#endif
{
    m.doc() = "pysketch's compiled core (internal: use the pysketch package).";
    pysketch_bind::bind_hadamard(m);
    pysketch_bind::bind_features(m);
    pysketch_bind::bind_operators(m);
    pysketch_bind::bind_decoders(m);
    pysketch_bind::bind_subsample(m);
    pysketch_bind::bind_clamp(m);
    pysketch_bind::bind_onehot(m);
    pysketch_bind::bind_sparse_jl(m);
    pysketch_bind::bind_row_action(m);
    pysketch_bind::bind_noise(m);
}
