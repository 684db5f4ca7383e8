// bind_noise.cpp - exact discrete Laplace and discrete Gaussian noise from a ChaCha20 key
// (pysketch/exact_noise.hpp), and the ChaCha20 block function for its test vector.
// Parameters are Python ints of any size, checked here (ValueError naming the parameter
// outside the compiled sampler's range); the GIL is released while sampling.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "common.hpp"
#include "pysketch/exact_noise.hpp"

namespace pysketch_bind {

namespace {

namespace en = pysketch::exact_noise;

std::string type_name(const py::handle &obj) { return py::str(py::type::of(obj)).cast<std::string>(); }

// obj as a Python int (anything with __index__ but bool), or a TypeError naming it.
py::int_ int_arg(const py::handle &obj, const char *name)
{
    if (PyBool_Check(obj.ptr()) || !PyIndex_Check(obj.ptr()))
        throw py::type_error(std::string(name) + " must be an int, got " + type_name(obj));
    PyObject *value = PyNumber_Index(obj.ptr());
    if (value == nullptr) throw py::error_already_set();
    return py::reinterpret_steal<py::int_>(value);
}

// obj in [lo, 2^bits) as its 64-bit limbs (least significant first), or a ValueError naming
// it; `need` describes the range.
void limbs_arg(const py::handle &obj, const char *name, long lo, int bits, const std::string &need,
               std::uint64_t out[2])
{
    const py::int_ v = int_arg(obj, name);
    if (v < py::int_(lo) || v.attr("bit_length")().cast<int>() > bits)
        throw py::value_error(std::string(name) + " = " + py::repr(v).cast<std::string>() +
                              " is outside the compiled sampler's range: " + need);
    const std::string bytes = v.attr("to_bytes")(16, "little").cast<py::bytes>();
    for (int i = 0; i < 2; ++i) {
        out[i] = 0;
        for (int j = 7; j >= 0; --j)
            out[i] = out[i] << 8 | static_cast<unsigned char>(bytes[static_cast<std::size_t>(8 * i + j)]);
    }
}

std::uint64_t u64_arg(const py::handle &obj, const char *name, long lo, int bits, const std::string &need)
{
    std::uint64_t l[2];
    limbs_arg(obj, name, lo, bits, need, l);
    return l[0];
}

en::U128 u128_arg(const py::handle &obj, const char *name, long lo, int bits, const std::string &need)
{
    std::uint64_t l[2];
    limbs_arg(obj, name, lo, bits, need, l);
    return en::from_limbs<en::U128>(l);
}

// `obj` as bytes of exactly `length` bytes.
std::string bytes_arg(const py::handle &obj, const char *name, std::size_t length)
{
    if (!py::isinstance<py::bytes>(obj))
        throw py::type_error(std::string(name) + " must be bytes, got " + type_name(obj));
    std::string s = py::reinterpret_borrow<py::bytes>(obj).cast<std::string>();
    if (s.size() != length)
        throw py::value_error(std::string(name) + " must be exactly " + std::to_string(length) + " bytes, got " +
                              std::to_string(s.size()));
    return s;
}

en::Key key_arg(const py::handle &obj)
{
    const std::string s = bytes_arg(obj, "key", 32);
    return en::key_from_bytes(reinterpret_cast<const unsigned char *>(s.data()));
}

std::size_t size_arg(const py::handle &obj)
{
    const py::int_ v = int_arg(obj, "size");
    if (v < py::int_(0)) throw py::value_error("size must be >= 0, got " + py::repr(v).cast<std::string>());
    if (v.attr("bit_length")().cast<int>() > 62) throw py::value_error("size is too large");
    return static_cast<std::size_t>(v.cast<std::int64_t>());
}

std::uint32_t nonce_arg(const py::handle &obj)
{
    return static_cast<std::uint32_t>(u64_arg(obj, "nonce", 0, 32, "need 0 <= nonce < 2**32"));
}

// The checked size, key and nonce, a new int64 array of that size, and fill(data, size, key,
// nonce) run on it without the GIL.
template <class Fill>
py::array_t<std::int64_t> draws(const py::object &size_obj, const py::object &key_obj, const py::object &nonce_obj,
                                Fill &&fill)
{
    const std::size_t size = size_arg(size_obj);
    const en::Key key = key_arg(key_obj);
    const std::uint32_t nonce = nonce_arg(nonce_obj);
    py::array_t<std::int64_t> out(static_cast<py::ssize_t>(size));
    std::int64_t *data = out.mutable_data();
    {
        py::gil_scoped_release release;
        fill(data, size, key, nonce);
    }
    return out;
}

py::array_t<std::int64_t> discrete_laplace(const py::object &t_num_obj, const py::object &t_den_obj,
                                           const py::object &size_obj, const py::object &key_obj,
                                           const py::object &nonce_obj)
{
    const std::string need = "need 1 <= t_num, t_den < 2**63";
    const std::uint64_t t_num = u64_arg(t_num_obj, "t_num", 1, en::laplace_max_bits, need);
    const std::uint64_t t_den = u64_arg(t_den_obj, "t_den", 1, en::laplace_max_bits, need);
    if (en::U128(t_num) > (en::U128(t_den) << en::laplace_max_log2_scale))
        throw py::value_error("the scale t_num / t_den = " + std::to_string(t_num) + " / " + std::to_string(t_den) +
                              " is outside the compiled sampler's range: need t_num / t_den <= 2**" +
                              std::to_string(en::laplace_max_log2_scale));
    return draws(size_obj, key_obj, nonce_obj, [&](std::int64_t *data, std::size_t size, const en::Key &key,
                                                   std::uint32_t nonce) {
        en::discrete_laplace(t_num, t_den, data, size, key, nonce);
    });
}

py::array_t<std::int64_t> discrete_gaussian(const py::object &a_obj, const py::object &b_obj,
                                            const py::object &size_obj, const py::object &key_obj,
                                            const py::object &nonce_obj)
{
    const std::string need = "need 1 <= s2_num, s2_den < 2**" + std::to_string(en::gaussian_max_bits);
    const en::U128 a = u128_arg(a_obj, "s2_num", 1, en::gaussian_max_bits, need);
    const en::U128 b = u128_arg(b_obj, "s2_den", 1, en::gaussian_max_bits, need);
    if (en::widen<en::U256>(b) << en::gaussian_max_log2_sigma2 < en::widen<en::U256>(a))
        throw py::value_error("sigma^2 = s2_num / s2_den = " + py::repr(a_obj).cast<std::string>() + " / " +
                              py::repr(b_obj).cast<std::string>() +
                              " is outside the compiled sampler's range: need s2_num / s2_den <= 2**" +
                              std::to_string(en::gaussian_max_log2_sigma2));
    return draws(size_obj, key_obj, nonce_obj, [&](std::int64_t *data, std::size_t size, const en::Key &key,
                                                   std::uint32_t nonce) {
        en::discrete_gaussian(a, b, data, size, key, nonce);
    });
}

py::bytes chacha20_block(const py::object &key_obj, const py::object &counter_obj, const py::object &nonce_obj)
{
    const en::Key key = key_arg(key_obj);
    const auto counter = static_cast<std::uint32_t>(u64_arg(counter_obj, "counter", 0, 32, "need 0 <= counter < 2**32"));
    const std::string nonce_bytes = bytes_arg(nonce_obj, "nonce", 12);
    const auto *nb = reinterpret_cast<const unsigned char *>(nonce_bytes.data());
    std::uint32_t nonce[3];
    for (int i = 0; i < 3; ++i)
        nonce[i] = static_cast<std::uint32_t>(nb[4 * i]) | static_cast<std::uint32_t>(nb[4 * i + 1]) << 8 |
                   static_cast<std::uint32_t>(nb[4 * i + 2]) << 16 | static_cast<std::uint32_t>(nb[4 * i + 3]) << 24;
    std::uint32_t words[16];
    en::chacha20_block(key, counter, nonce, words);
    char out[64];
    for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 4; ++j) out[4 * i + j] = static_cast<char>((words[i] >> (8 * j)) & 0xffu);
    return py::bytes(out, 64);
}

}  // namespace

void bind_noise(py::module_ &m)
{
    m.def("discrete_laplace", &discrete_laplace, py::arg("t_num"), py::arg("t_den"), py::arg("size"), py::arg("key"),
          py::arg("nonce") = 0,
          "size exact draws (int64 array) of the discrete Laplace law of scale t = t_num / t_den, P(k) proportional "
          "to exp(-|k| / t) (Canonne, Kamath & Steinke 2020, Algorithm 2), from the ChaCha20 stream of the 32-byte "
          "key and the 32-bit nonce; 1 <= t_num, t_den < 2**63 and t <= 2**56. The same for any thread count "
          "(multi-threaded, GIL released).");
    m.def("discrete_gaussian", &discrete_gaussian, py::arg("s2_num"), py::arg("s2_den"), py::arg("size"),
          py::arg("key"), py::arg("nonce") = 0,
          "size exact draws (int64 array) of the discrete Gaussian with sigma^2 = s2_num / s2_den, P(k) proportional "
          "to exp(-k^2 / (2 sigma^2)) (Canonne, Kamath & Steinke 2020, Algorithm 3), from the ChaCha20 stream of the "
          "32-byte key and the 32-bit nonce; 1 <= s2_num, s2_den < 2**118 and sigma^2 <= 2**108. The same for any "
          "thread count (multi-threaded, GIL released).");
    m.def("chacha20_block", &chacha20_block, py::arg("key"), py::arg("counter"), py::arg("nonce"),
          "The 64-byte ChaCha20 block of RFC 8439 sec. 2.3 for a 32-byte key, a 32-bit block counter and a 12-byte "
          "nonce.");
}

}  // namespace pysketch_bind
