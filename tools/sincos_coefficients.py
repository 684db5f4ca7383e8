"""Minimax coefficients and reduction constants of src/cpp/pysketch/sincos.hpp.

    python3 tools/sincos_coefficients.py            (needs mpmath: pip install mpmath)

Prints the C++ constants (hexadecimal floating literals) and the error bounds they give.
Everything is computed here from first principles; nothing is taken from another library.

Method
------
On the reduced interval |r| <= a (a = pi/4 plus the margin left by rounding k, below):

    sin r ~= r + r^3 * P(r^2),     P(z) = s1 + s2 z + ... (s1 ~ -1/6)
    cos r ~= 1 + z * Q(z),         Q(z) = -1/2 + c2 z + c3 z^2 + ...  (-1/2 exact)

The coefficients minimise the maximum *absolute* error over [0, a] (the accuracy targets of
pysketch are absolute). In z = r^2 this is a weighted minimax problem,

    sin:  min max_z | z^(3/2) (f(z) - P(z)) |,   f(z) = (sin sqrt z - sqrt z) / z^(3/2)
    cos:  min max_z | z^2 (g(z) - Q'(z)) |,      g(z) = (cos sqrt z - 1 + z/2) / z^2, Q(z) = -1/2 + z Q'(z)

solved by the Remez exchange algorithm (E. Remez, 1934; see e.g. J.-M. Muller, "Elementary
Functions", ch. 3) in 60-digit arithmetic. The coefficients are then rounded to the target
format one at a time, from the lowest degree up: after rounding c_i, the remaining
coefficients are re-optimised with c_0..c_i fixed (a standard way to recover most of the
accuracy the rounding loses). The printed error is measured on a dense grid, in high
precision, for the rounded coefficients (polynomial error only; the rounding errors of the
evaluation are bounded separately in sincos.hpp).

Reduction (Cody & Waite, "Software Manual for the Elementary Functions", 1980, with fused
multiply-adds): k = round(t * fl(2/pi)), r = fma(-k, P2, fma(-k, P1, t)), with
P1 = pi/2 rounded toward zero to the format (so that P2 > 0, which keeps sin(-0) = -0) and
P2 = fl(pi/2 - P1). Because P1 has the format's full precision, the first
fma is exact (the result is a multiple of ulp(P1) smaller than 1 in magnitude), so r carries
one rounding plus the truncation k * |pi/2 - P1 - P2|, printed below for the fast-range bound.
The margin on a: |t * 2/pi - k| <= 1/2 + |t| * |fl(2/pi) - 2/pi|, so
a = pi/2 * (1/2 + B |fl(2/pi) - 2/pi|) for inputs |t| <= B.
"""

import struct
import sys

try:
    import mpmath
    from mpmath import mp, mpf
except ImportError:  # pragma: no cover - a developer tool
    sys.exit("this script needs mpmath (pip install mpmath)")

mp.dps = 60

FORMATS = {
    # name: (mantissa bits incl. hidden, fast-range bound B, sin coefficients, cos coefficients after -1/2)
    "float": (24, 2.0**18, 3, 3),
    "double": (53, 2.0**30, 6, 6),
}


def round_to(x, bits, toward_zero=False):
    """Round the mpf x to `bits` significant bits (to nearest, ties to even, or toward zero)."""
    if x == 0:
        return mpf(0)
    m, e = mpmath.frexp(x)  # x = m 2^e, 0.5 <= |m| < 1
    scaled = m * mpf(2) ** bits
    n = int(scaled) if toward_zero else int(mpmath.nint(scaled))
    return mpf(n) * mpf(2) ** (e - bits)


def hex_literal(x, bits):
    """C++ hexadecimal floating literal of x (exactly representable with `bits` bits)."""
    value = float(x)  # exact: bits <= 53
    assert mpf(value) == x
    mantissa, exponent = value.hex().split("p")  # e.g. 0x1.921fb54442d18p+0
    mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}p{exponent}" + ("f" if bits == 24 else "")


def solve(nodes, func, weight, degree):
    """Coefficients c_0..c_degree and E with weight(x)(func(x) - p(x)) = (-1)^i E at the nodes."""
    size = degree + 2
    A = mpmath.matrix(size, size)
    b = mpmath.matrix(size, 1)
    for i, x in enumerate(nodes):
        w = weight(x)
        for j in range(degree + 1):
            A[i, j] = w * x**j
        A[i, degree + 1] = (-1) ** i
        b[i] = w * func(x)
    sol = mpmath.lu_solve(A, b)
    return [sol[j] for j in range(degree + 1)], sol[degree + 1]


def remez(func, weight, degree, lo, hi, iterations=30, grid=3000):
    """Weighted minimax polynomial of the given degree on [lo, hi] (Remez exchange)."""
    n = degree + 2
    # Chebyshev extrema as the first reference.
    nodes = [(lo + hi) / 2 - (hi - lo) / 2 * mpmath.cos(mpmath.pi * i / (n - 1)) for i in range(n)]
    xs = [(lo + hi) / 2 - (hi - lo) / 2 * mpmath.cos(mpmath.pi * i / (grid - 1)) for i in range(grid)]
    coefs = None
    for _ in range(iterations):
        coefs, level = solve(nodes, func, weight, degree)

        def err(x):
            return weight(x) * (func(x) - mpmath.polyval(coefs[::-1], x))

        values = [err(x) for x in xs]
        # Split the grid into runs of constant sign and take the extremum of each run.
        extrema = []
        start = 0
        for i in range(1, grid + 1):
            if i == grid or (values[i] > 0) != (values[start] > 0):
                best = max(range(start, i), key=lambda j: abs(values[j]))
                extrema.append(best)
                start = i
        if len(extrema) < n:
            break
        # Keep n consecutive extrema containing the largest one.
        largest = max(range(len(extrema)), key=lambda j: abs(values[extrema[j]]))
        first = min(max(0, largest - n + 1), len(extrema) - n)
        chosen = extrema[first : first + n]
        new_nodes = [xs[j] for j in chosen]
        smallest = min(abs(values[j]) for j in chosen)
        nodes = new_nodes
        if smallest > 0 and max(abs(values[j]) for j in chosen) / smallest < 1 + mpf(10) ** -8:
            break
    return coefs


def fit_rounded(func, weight, degree, lo, hi, bits):
    """Minimax coefficients rounded to `bits`, one at a time from the lowest degree."""
    fixed = []
    for i in range(degree + 1):
        done = list(fixed)

        def f_rest(x, done=done):
            return (func(x) - sum(c * x**j for j, c in enumerate(done))) / x ** len(done)

        def w_rest(x, done=done):
            return weight(x) * x ** len(done)

        rest = remez(f_rest, w_rest, degree - i, lo, hi)
        fixed.append(round_to(rest[0], bits))
    return fixed


def series_guard(x, exact, series):
    """exact(x) computed in 60 digits loses digits for tiny x; use the series there."""
    return series(x) if x < mpf(10) ** -12 else exact(x)


def sin_f(z):
    # (sin r - r) / r^3 with r = sqrt z
    return series_guard(
        z,
        lambda z: (mpmath.sin(mpmath.sqrt(z)) - mpmath.sqrt(z)) / (z * mpmath.sqrt(z)),
        lambda z: -mpf(1) / 6 + z / 120 - z**2 / 5040,
    )


def cos_g(z):
    # (cos r - 1 + z/2) / z^2
    return series_guard(
        z,
        lambda z: (mpmath.cos(mpmath.sqrt(z)) - 1 + z / 2) / z**2,
        lambda z: mpf(1) / 24 - z / 720 + z**2 / 40320,
    )


def max_error(approx, exact, a, points=20000):
    worst = mpf(0)
    for i in range(points + 1):
        r = a * i / points
        worst = max(worst, abs(approx(r) - exact(r)))
    return worst


def main():
    pi2 = mpmath.pi / 2
    for name, (bits, bound, n_sin, n_cos) in FORMATS.items():
        # P1 below pi/2, so that P2 > 0: then for t = -0 (k = +0) the second fma adds
        # -(+0 * P2) = -0 and keeps r = -0, which sin(-0) = -0 needs.
        p1 = round_to(pi2, bits, toward_zero=True)
        p2 = round_to(pi2 - p1, bits)
        trunc = abs(pi2 - p1 - p2)
        two_over_pi = round_to(2 / mpmath.pi, bits)
        k_max = int(mpmath.nint(bound * two_over_pi)) + 1
        a = pi2 * (mpf(1) / 2 + bound * abs(two_over_pi - 2 / mpmath.pi))
        a_fit = a * (1 + mpf(2) ** -10)  # a little room
        hi = a_fit**2
        lo = mpf(10) ** -30

        s = fit_rounded(sin_f, lambda z: z * mpmath.sqrt(z), n_sin - 1, lo, hi, bits)
        q = fit_rounded(cos_g, lambda z: z**2, n_cos - 1, lo, hi, bits)

        def sin_poly(r):
            z = r * r
            return r + r**3 * mpmath.polyval(s[::-1], z)

        def cos_poly(r):
            z = r * r
            return 1 + z * (-mpf(1) / 2 + z * mpmath.polyval(q[::-1], z))

        e_sin = max_error(sin_poly, mpmath.sin, a_fit)
        e_cos = max_error(cos_poly, mpmath.cos, a_fit)

        print(f"// {name}: fast range |t| <= {bound:g}; |r| <= a = {mpmath.nstr(a, 8)} (fitted on {mpmath.nstr(a_fit, 8)})")
        print(f"//   reduction truncation k_max * |pi/2 - P1 - P2| = {mpmath.nstr(k_max * trunc, 3)}")
        print(f"//   polynomial error (coefficients as rounded): sin {mpmath.nstr(e_sin, 3)}, cos {mpmath.nstr(e_cos, 3)}")
        print(f"two_over_pi = {hex_literal(two_over_pi, bits)};  // {mpmath.nstr(two_over_pi, 20)}")
        print(f"pio2_1 = {hex_literal(p1, bits)};")
        print(f"pio2_2 = {hex_literal(p2, bits)};")
        for i, c in enumerate(s):
            print(f"sin_{i + 1} = {hex_literal(c, bits)};  // {mpmath.nstr(c, 20)}")
        for i, c in enumerate(q):
            print(f"cos_{i + 2} = {hex_literal(c, bits)};  // {mpmath.nstr(c, 20)}")
        print()


if __name__ == "__main__":
    main()
