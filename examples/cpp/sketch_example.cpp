// sketch_example.cpp - pysketch's header-only C++ API from a C++ program.
//
// Builds a structured random frequency operator (R3: three Walsh-Hadamard transforms with
// random sign diagonals per block) and its dense equivalent, sketches 1000 records with the
// complex-exponential features (acc_cos += cos(Omega^T x + u), acc_sin += sin(...)), and
// checks against direct computation with the O(n^2) Walsh-Hadamard transform:
//   1. operators::apply gives the phases Omega^T x of the definition;
//   2. one full R3 block with post = dp^(-3/2) is orthogonal (it keeps the norm);
//   3. sketch::sketch_structured and sketch::sketch_dense give the sums of the definition;
//   4. sketches merge: the sketch of two halves added is the sketch of the whole.
// Prints OK and exits 0, or prints what failed and exits 1. Build it against an installed
// pysketch (docs/c_api.md):
//
//     c++ -std=c++17 -O2 -pthread sketch_example.cpp $(python -m pysketch.config --cflags --libs) -o sketch_example
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <random>
#include <vector>

#include "pysketch/operators.hpp"
#include "pysketch/parallel.hpp"
#include "pysketch/simd.hpp"
#include "pysketch/sketch.hpp"

namespace ps = pysketch;

namespace {

int failures = 0;

void expect(bool ok, const char *what, double error)
{
    std::printf("%-60s %s (error %.3g)\n", what, ok ? "ok" : "FAILED", error);
    if (!ok) ++failures;
}

// y = H y by the definition, y[i] = sum_j (-1)^popcount(i & j) y[j]: O(n^2), for checking.
void naive_wht(std::vector<double> &y)
{
    const std::size_t n = y.size();
    std::vector<double> out(n, 0.0);
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j) {
            std::size_t bits = i & j;
            int odd = 0;
            for (; bits; bits >>= 1) odd ^= static_cast<int>(bits & 1u);
            out[i] += odd ? -y[j] : y[j];
        }
    y = out;
}

// Omega^T x for one record by the definition of an R3 operator (operators.hpp):
// block k maps the zero-padded x to post_k * H (c_k * H (b_k * H (a_k * x))).
std::vector<double> direct_phases(const ps::operators::Structured<double> &op, const double *x)
{
    const std::size_t dp = op.dp();
    std::vector<double> t(op.m);
    for (std::size_t k = 0; k < op.blocks; ++k) {
        const std::size_t off = k * dp;
        std::vector<double> y(dp, 0.0);
        for (std::size_t i = 0; i < op.d; ++i) y[i] = op.a[off + i] * x[i];
        naive_wht(y);
        for (std::size_t i = 0; i < dp; ++i) y[i] *= op.b[off + i];
        naive_wht(y);
        for (std::size_t i = 0; i < dp; ++i) y[i] *= op.c[off + i];
        naive_wht(y);
        for (std::size_t i = 0; i < dp && off + i < op.m; ++i) t[off + i] = op.post[off + i] * y[i];
    }
    return t;
}

double max_abs_diff(const std::vector<double> &a, const std::vector<double> &b)
{
    double e = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) e = std::fmax(e, std::fabs(a[i] - b[i]));
    return e;
}

}  // namespace

int main()
{
    try {
        const char *levels[] = {"scalar", "sse", "avx2", "avx512"};
        std::printf("instruction set: %s, threads: %d\n", levels[static_cast<int>(ps::simd::level())],
                    ps::get_num_threads());

        // ---- the operator: d = 5 inputs, blocks of dp = 16, m = 40 frequencies (3 blocks, the
        // last one cut), Rademacher diagonals, radii in [0.5, 2] folded into post
        const std::size_t d = 5, m = 40, n = 1000;
        const int log_dp = 4;
        const std::size_t dp = std::size_t{1} << log_dp, blocks = (m + dp - 1) / dp, w = blocks * dp;
        std::mt19937_64 gen(2024);
        std::uniform_int_distribution<int> coin(0, 1);
        std::uniform_real_distribution<double> radius(0.5, 2.0), phase(0.0, 6.283185307179586);
        std::normal_distribution<double> gauss(0.0, 1.0);
        std::vector<double> a(w), b(w), c(w), post(w);
        for (std::size_t i = 0; i < w; ++i) {
            a[i] = coin(gen) ? 1.0 : -1.0;
            b[i] = coin(gen) ? 1.0 : -1.0;
            c[i] = coin(gen) ? 1.0 : -1.0;
            post[i] = radius(gen) / std::pow(static_cast<double>(dp), 1.5);
        }
        ps::operators::Structured<double> op;
        op.kind = ps::operators::Kind::r3;
        op.d = d;
        op.m = m;
        op.blocks = blocks;
        op.log_dp = log_dp;
        op.a = a.data();
        op.b = b.data();
        op.c = c.data();
        op.post = post.data();
        ps::operators::validate(op);  // throws std::invalid_argument when inconsistent

        // ---- the records (n x d, row-major) and the dither u (m values)
        std::vector<double> X(n * d), u(m);
        for (double &v : X) v = gauss(gen);
        for (double &v : u) v = phase(gen);

        // 1. phases: apply(op, x, x_stride, rows, out, out_stride) = Omega^T x_r, row by row
        std::vector<double> T(n * m), direct(n * m);
        ps::operators::apply(op, X.data(), static_cast<std::ptrdiff_t>(d), n, T.data(), static_cast<std::ptrdiff_t>(m));
        for (std::size_t r = 0; r < n; ++r) {
            const std::vector<double> t = direct_phases(op, X.data() + r * d);
            std::copy(t.begin(), t.end(), direct.begin() + static_cast<std::ptrdiff_t>(r * m));
        }
        const double e1 = max_abs_diff(T, direct);
        expect(e1 <= 1e-12, "1. operators::apply == Omega^T x by the definition", e1);

        // 2. one full block with radius 1 is orthogonal: ||Omega^T x|| = ||x||
        ps::operators::Structured<double> unit = op;
        std::vector<double> unit_post(dp, 1.0 / std::pow(static_cast<double>(dp), 1.5));
        unit.m = dp;
        unit.blocks = 1;
        unit.post = unit_post.data();
        std::vector<double> y(dp);
        ps::operators::apply(unit, X.data(), static_cast<std::ptrdiff_t>(d), 1, y.data(), static_cast<std::ptrdiff_t>(dp));
        double nx = 0.0, ny = 0.0;
        for (std::size_t i = 0; i < d; ++i) nx += X[i] * X[i];
        for (double v : y) ny += v * v;
        const double e2 = std::fabs(std::sqrt(ny) - std::sqrt(nx));
        expect(e2 <= 1e-12, "2. an R3 block / dp^(3/2) keeps the norm", e2);

        // 3. the sketch: acc_cos[j] = sum_r cos(t_rj + u_j), acc_sin likewise, by the definition
        std::vector<double> want_cos(m, 0.0), want_sin(m, 0.0);
        for (std::size_t r = 0; r < n; ++r)
            for (std::size_t j = 0; j < m; ++j) {
                want_cos[j] += std::cos(direct[r * m + j] + u[j]);
                want_sin[j] += std::sin(direct[r * m + j] + u[j]);
            }
        const auto cis = ps::sketch::Nonlinearity::cis;
        std::vector<double> acc_cos(m, 0.0), acc_sin(m, 0.0);  // the sketch functions add into these
        ps::sketch::sketch_structured(op, cis, X.data(), static_cast<std::ptrdiff_t>(d), n, u.data(), acc_cos.data(),
                                      acc_sin.data());
        const double e3 = std::fmax(max_abs_diff(acc_cos, want_cos), max_abs_diff(acc_sin, want_sin));
        expect(e3 <= 1e-9, "3a. sketch::sketch_structured == sum of the features", e3);

        // the same operator as a dense matrix Omega (d x m, row-major): row i = Omega^T e_i
        std::vector<double> eye(d * d, 0.0), omega(d * m);
        for (std::size_t i = 0; i < d; ++i) eye[i * d + i] = 1.0;
        ps::operators::apply(op, eye.data(), static_cast<std::ptrdiff_t>(d), d, omega.data(), static_cast<std::ptrdiff_t>(m));
        std::vector<double> dense_cos(m, 0.0), dense_sin(m, 0.0);
        ps::sketch::sketch_dense(omega.data(), static_cast<std::ptrdiff_t>(m), d, m, cis, X.data(),
                                 static_cast<std::ptrdiff_t>(d), n, u.data(), dense_cos.data(), dense_sin.data());
        const double e3b = std::fmax(max_abs_diff(dense_cos, want_cos), max_abs_diff(dense_sin, want_sin));
        expect(e3b <= 1e-9, "3b. sketch::sketch_dense (the same Omega, dense) == the sums", e3b);

        // 4. merging: two parts accumulated into the same sums give the sketch of the whole
        std::vector<double> half_cos(m, 0.0), half_sin(m, 0.0);
        const std::size_t n1 = 400;
        ps::sketch::sketch_structured(op, cis, X.data(), static_cast<std::ptrdiff_t>(d), n1, u.data(), half_cos.data(),
                                      half_sin.data());
        ps::sketch::sketch_structured(op, cis, X.data() + n1 * d, static_cast<std::ptrdiff_t>(d), n - n1, u.data(),
                                      half_cos.data(), half_sin.data());
        const double e4 = std::fmax(max_abs_diff(half_cos, acc_cos), max_abs_diff(half_sin, acc_sin));
        expect(e4 <= 1e-9, "4. sketch(first 400) + sketch(last 600) == sketch(all)", e4);

        // the features themselves: |cis| = 1, so |acc| <= n for every frequency (n when the
        // column of Omega is zero: small structured blocks have a few)
        double biggest = 0.0;
        for (std::size_t j = 0; j < m; ++j) biggest = std::fmax(biggest, std::hypot(acc_cos[j], acc_sin[j]));
        std::printf("sketch of %zu records: %zu complex sums, largest modulus %.3f (at most %zu)\n", n, m, biggest, n);
        if (!(biggest <= static_cast<double>(n) * (1 + 1e-12))) ++failures;
    } catch (const std::exception &e) {
        std::printf("FAILED: %s\n", e.what());
        return 1;
    }
    if (failures) {
        std::printf("FAILED: %d checks\n", failures);
        return 1;
    }
    std::printf("OK\n");
    return 0;
}
