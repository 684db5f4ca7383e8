// bind_sparse_jl.cpp - products with a sparse Johnson-Lindenstrauss transform
// (pysketch/sparse_jl.hpp): dense and CSR batches, and the streaming update of one sketch
// vector. Arrays are checked, never converted or copied; the batch products release the GIL
// (sjlt_update, O(s), keeps it: releasing would cost more than the work).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common.hpp"
#include "pysketch/sparse_jl.hpp"

namespace pysketch_bind {

namespace {

namespace sj = pysketch::sparse_jl;

using Range = std::pair<std::uintptr_t, std::uintptr_t>;

template <class T>
bool has_dtype(const py::array &a)
{
    return a.dtype().equal(py::dtype::of<T>());
}

template <class T>
void require_dtype(const py::array &a, const char *name)
{
    if (!has_dtype<T>(a))
        throw py::type_error(std::string(name) + " must have dtype " + py::str(py::dtype::of<T>()).cast<std::string>() +
                             " (native byte order), got " + dtype_name(a));
}

void require_aligned(const py::array &a, const char *name, std::size_t item)
{
    if (reinterpret_cast<std::uintptr_t>(a.data()) % item != 0)
        throw py::value_error(std::string(name) + " must be aligned to its item size");
}

// A C-contiguous, aligned 2-D array of T (shape checked by the caller).
template <class T>
T *c_matrix(const py::array &a, const char *name, bool written)
{
    require_dtype<T>(a, name);
    if (a.ndim() != 2) throw py::value_error(std::string(name) + " must be a 2-D array, got shape " + shape_text(a));
    if (!(a.flags() & py::array::c_style)) throw py::value_error(std::string(name) + " must be C-contiguous");
    require_aligned(a, name, sizeof(T));
    if (written && !a.writeable()) throw py::value_error(std::string(name) + " must be writeable");
    return static_cast<T *>(const_cast<void *>(a.data()));  // written through only when checked writeable
}

// A contiguous, aligned 1-D array of T (length checked by the caller when it matters).
template <class T>
T *c_vector(const py::array &a, const char *name, bool written)
{
    require_dtype<T>(a, name);
    if (a.ndim() != 1) throw py::value_error(std::string(name) + " must be a 1-D array, got shape " + shape_text(a));
    if (a.shape(0) > 1 && a.strides(0) != static_cast<py::ssize_t>(sizeof(T)))
        throw py::value_error(std::string(name) + " must be contiguous");
    require_aligned(a, name, sizeof(T));
    if (written && !a.writeable()) throw py::value_error(std::string(name) + " must be writeable");
    return static_cast<T *>(const_cast<void *>(a.data()));
}

Range bytes_of(const void *p, std::size_t count, std::size_t item) { return byte_range(p, 1, 1, count, item); }

void require_apart(const char *name, Range written, const std::vector<Range> &inputs)
{
    for (const Range &r : inputs)
        if (overlap(written, r)) throw py::value_error(std::string(name) + " must not overlap the inputs");
}

// The tables rows (s, d) int32 and vals (s, d) float64, both C-contiguous; k set by the caller.
sj::Table table_args(const py::object &rows, const py::object &vals)
{
    const py::array r = array_arg(rows, "rows", "(s, d) int32, C-contiguous");
    const py::array v = array_arg(vals, "vals", "(s, d) float64, C-contiguous");
    sj::Table S{};
    S.rows = c_matrix<std::int32_t>(r, "rows", false);
    S.vals = c_matrix<double>(v, "vals", false);
    if (v.shape(0) != r.shape(0) || v.shape(1) != r.shape(1))
        throw py::value_error("vals must have the shape of rows " + shape_text(r) + ", got " + shape_text(v));
    S.s = static_cast<std::size_t>(r.shape(0));
    S.d = static_cast<std::size_t>(r.shape(1));
    return S;
}

// out: (n, k) float64, C-contiguous, writeable, with n rows; sets S.k.
double *out_arg(const py::object &out, std::size_t n, const char *n_text, sj::Table &S)
{
    const py::array o = array_arg(out, "out", "(n, k) float64, C-contiguous");
    double *p = c_matrix<double>(o, "out", true);
    if (static_cast<std::size_t>(o.shape(0)) != n)
        throw py::value_error("out must have shape (n, k) with n = " + std::string(n_text) + " = " +
                              std::to_string(n) + ", got shape " + shape_text(o));
    S.k = static_cast<std::size_t>(o.shape(1));
    return p;
}

std::vector<Range> table_ranges(const sj::Table &S)
{
    return {bytes_of(S.rows, S.s * S.d, sizeof(std::int32_t)), bytes_of(S.vals, S.s * S.d, sizeof(double))};
}

// ------------------------------------------------------------------------------ dense

void sjlt_apply(const py::object &X, const py::object &rows, const py::object &vals, const py::object &out)
{
    const py::array x = array_arg(X, "X", "(n, d) float32 or float64");
    if (x.ndim() != 2) throw py::value_error("X must be a 2-D array (n, d), got shape " + shape_text(x));
    sj::Table S = table_args(rows, vals);
    if (static_cast<std::size_t>(x.shape(1)) != S.d)
        throw py::value_error("rows and vals must have shape (s, d) with d = X.shape[1] = " +
                              std::to_string(x.shape(1)) + ", got " + shape_text(py::reinterpret_borrow<py::array>(rows)));
    const auto n = static_cast<std::size_t>(x.shape(0));
    double *o = out_arg(out, n, "X.shape[0]", S);
    dispatch(x, "X", [&](auto tag) {
        using T = decltype(tag);
        Rows<T> px{nullptr, 0, n, S.d};
        if (x.size() != 0) px = unpack<T>(x, "X", false);
        std::vector<Range> inputs = table_ranges(S);
        inputs.push_back(byte_range(px));
        require_apart("out", bytes_of(o, n * S.k, sizeof(double)), inputs);
        const sj::Dense<T> dense{px.data, px.stride, n, S.d};
        py::gil_scoped_release release;
        sj::check_table(S);
        sj::apply(dense, S, o);
    });
}

// ------------------------------------------------------------------------------ CSR

template <class Fn>
void index_dispatch(const py::array &a, const char *name, Fn &&fn)
{
    if (has_dtype<std::int32_t>(a)) return fn(std::int32_t{});
    if (has_dtype<std::int64_t>(a)) return fn(std::int64_t{});
    throw py::type_error(std::string(name) + " must be an int32 or int64 array in native byte order, got dtype " +
                         dtype_name(a));
}

void sjlt_apply_csr(const py::object &indptr, const py::object &indices, const py::object &data,
                    std::int64_t n_cols, const py::object &rows, const py::object &vals, const py::object &out)
{
    const py::array ip = array_arg(indptr, "indptr", "(n + 1,) int32 or int64");
    const py::array ix = array_arg(indices, "indices", "(nnz,) int32 or int64");
    const py::array dt = array_arg(data, "data", "(nnz,) float32 or float64");
    sj::Table S = table_args(rows, vals);
    if (n_cols < 0 || static_cast<std::uint64_t>(n_cols) != S.d)
        throw py::value_error("n_cols = " + std::to_string(n_cols) + " must equal rows.shape[1] = " +
                              std::to_string(S.d));
    if (ip.ndim() != 1 || ip.shape(0) < 1)
        throw py::value_error("indptr must be a 1-D array of n + 1 >= 1 elements, got shape " + shape_text(ip));
    const auto n = static_cast<std::size_t>(ip.shape(0) - 1);
    double *o = out_arg(out, n, "len(indptr) - 1", S);
    if (ix.ndim() != 1 || dt.ndim() != 1 || ix.shape(0) != dt.shape(0))
        throw py::value_error("indices and data must be 1-D arrays of the same length, got shapes " + shape_text(ix) +
                              " and " + shape_text(dt));
    const auto stored = static_cast<std::size_t>(ix.shape(0));
    index_dispatch(ip, "indptr", [&](auto ptag) {
        using P = decltype(ptag);
        index_dispatch(ix, "indices", [&](auto itag) {
            using I = decltype(itag);
            dispatch(dt, "data", [&](auto ttag) {
                using T = decltype(ttag);
                const sj::Csr<T, I, P> A{c_vector<P>(ip, "indptr", false), c_vector<I>(ix, "indices", false),
                                         c_vector<T>(dt, "data", false), n, stored};
                std::vector<Range> inputs = table_ranges(S);
                inputs.push_back(bytes_of(A.indptr, n + 1, sizeof(P)));
                inputs.push_back(bytes_of(A.indices, stored, sizeof(I)));
                inputs.push_back(bytes_of(A.data, stored, sizeof(T)));
                require_apart("out", bytes_of(o, n * S.k, sizeof(double)), inputs);
                py::gil_scoped_release release;
                sj::check_table(S);
                sj::check_csr(A, S.d);
                sj::apply_csr(A, S, o);
            });
        });
    });
}

// ------------------------------------------------------------------------------ update

void sjlt_update(const py::object &out_row, std::int64_t j, double delta, const py::object &rows,
                 const py::object &vals)
{
    sj::Table S = table_args(rows, vals);
    const py::array o = array_arg(out_row, "out_row", "(k,) float64");
    double *p = c_vector<double>(o, "out_row", true);
    S.k = static_cast<std::size_t>(o.shape(0));
    if (j < 0 || static_cast<std::uint64_t>(j) >= S.d)
        throw py::value_error("j = " + std::to_string(j) + " is not in [0, d) with d = rows.shape[1] = " +
                              std::to_string(S.d));
    require_apart("out_row", bytes_of(p, S.k, sizeof(double)), table_ranges(S));
    sj::update(S, static_cast<std::size_t>(j), delta, p);
}

}  // namespace

void bind_sparse_jl(py::module_ &m)
{
    m.def("sjlt_apply", &sjlt_apply, py::arg("X"), py::arg("rows"), py::arg("vals"), py::arg("out"),
          "Sparse JL product out = X S^T, S (k x d) given by its column tables: column j holds vals[r, j] at row "
          "rows[r, j], r < s. X: (n, d) float32/float64 with contiguous rows (any row stride); rows: (s, d) int32 "
          "and vals: (s, d) float64, C-contiguous, every rows entry in [0, k), every vals entry finite; out: (n, k) "
          "float64 C-contiguous, overwritten. Each out entry sums vals[r, j] * float64(X[i, j]) from +0.0 in order "
          "of j, then r (no fused multiply-add): the same bits for every thread count and SIMD level, and as "
          "sjlt_apply_csr on the same values. Multi-threaded, GIL released.");
    m.def("sjlt_apply_csr", &sjlt_apply_csr, py::arg("indptr"), py::arg("indices"), py::arg("data"),
          py::arg("n_cols"), py::arg("rows"), py::arg("vals"), py::arg("out"),
          "sjlt_apply for a CSR matrix (scipy.sparse's indptr, indices, data), in O(s nnz): indptr (n + 1,) "
          "int32/int64 non-decreasing from indptr[0] >= 0 to at most len(indices); indices int32/int64 in "
          "[0, n_cols); data float32/float64; n_cols = rows.shape[1]; out (n, k) float64 C-contiguous, overwritten. "
          "Stored entries are added in their stored order: with sorted indices and no duplicates (canonical "
          "format) the bits equal sjlt_apply's on the dense matrix. Multi-threaded, GIL released.");
    m.def("sjlt_update", &sjlt_update, py::arg("out_row"), py::arg("j"), py::arg("delta"), py::arg("rows"),
          py::arg("vals"),
          "Streaming update of one sketch vector: out_row[rows[r, j]] += vals[r, j] * delta for r < s, in place "
          "(out_row: (k,) float64, contiguous). O(s); updates for j = 0, 1, ..., d - 1 from zeros give "
          "sjlt_apply's bits.");
}

}  // namespace pysketch_bind
