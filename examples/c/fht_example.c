/*
 * fht_example.c - pysketch's C API (fht.h) from a C program.
 *
 * Transforms vectors with fht_float and fht_double (and a batch with fht_double_batch),
 * checks each against the O(n^2) definition of the Walsh-Hadamard transform,
 *
 *     y[i] = sum_j (-1)^popcount(i & j) x[j],
 *
 * and prints OK (exit status 0) or what differs (exit status 1). Build it against an
 * installed pysketch (docs/c_api.md):
 *
 *     cc -std=c99 fht_example.c $(python -m pysketch.config --cflags --libs) -o fht_example
 */
#include <stdio.h>
#include <stdlib.h>

#include "fht.h"

/* The definition, in double: O(n^2), for checking only. */
static void naive_wht(const double *x, double *y, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double sum = 0.0;
        for (size_t j = 0; j < n; j++) {
            size_t bits = i & j;
            int odd = 0;
            while (bits) { /* parity of popcount(i & j) */
                odd ^= (int)(bits & 1u);
                bits >>= 1;
            }
            sum += odd ? -x[j] : x[j];
        }
        y[i] = sum;
    }
}

/* Small integers in [-8, 8]: every partial sum of both the transform and the definition is
 * exact in float and double for the sizes below, so the results must be equal exactly. */
static unsigned long seed = 12345u;
static int next_small(void)
{
    seed = seed * 1103515245u + 12345u;
    return (int)((seed >> 16) % 17u) - 8;
}

static int failures = 0;

static void check(const char *what, int log_n, size_t i, double got, double want)
{
    if (got != want) {
        if (failures < 10) printf("%s, log_n = %d: y[%zu] = %g, expected %g\n", what, log_n, i, got, want);
        failures++;
    }
}

int main(void)
{
    printf("instruction set: %s (best on this CPU: %s)\n", fht_simd_level_name(fht_get_simd_level()),
           fht_simd_level_name(fht_max_simd_level()));
    for (int log_n = 0; log_n <= 10; log_n++) {
        const size_t n = (size_t)1 << log_n;
        float *xf = malloc(n * sizeof *xf);
        double *xd = malloc(n * sizeof *xd), *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
        if (!xf || !xd || !x || !y) {
            printf("out of memory\n");
            return 1;
        }
        for (size_t i = 0; i < n; i++) x[i] = next_small();
        for (size_t i = 0; i < n; i++) {
            xf[i] = (float)x[i];
            xd[i] = x[i];
        }
        naive_wht(x, y, n);
        if (fht_float(xf, log_n) != 0 || fht_double(xd, log_n) != 0) {
            printf("fht_float / fht_double refused log_n = %d\n", log_n);
            return 1;
        }
        for (size_t i = 0; i < n; i++) {
            check("fht_float", log_n, i, xf[i], y[i]);
            check("fht_double", log_n, i, xd[i], y[i]);
        }
        free(xf);
        free(xd);
        free(x);
        free(y);
    }

    /* A batch: 3 rows of 2^6 values, 70 doubles apart; the gaps are left untouched. */
    enum { LOG_N = 6, N = 1 << LOG_N, ROWS = 3, STRIDE = 70 };
    static double batch[ROWS * STRIDE], rows[ROWS][N], want[N];
    for (size_t k = 0; k < ROWS * STRIDE; k++) batch[k] = -1000.0;
    for (size_t r = 0; r < ROWS; r++)
        for (size_t i = 0; i < N; i++) batch[r * STRIDE + i] = rows[r][i] = next_small();
    if (fht_double_batch(batch, LOG_N, ROWS, STRIDE) != 0) {
        printf("fht_double_batch refused its arguments\n");
        return 1;
    }
    for (size_t r = 0; r < ROWS; r++) {
        naive_wht(rows[r], want, N);
        for (size_t i = 0; i < N; i++) check("fht_double_batch", LOG_N, r * STRIDE + i, batch[r * STRIDE + i], want[i]);
        for (size_t i = N; i < STRIDE && r + 1 < ROWS; i++)
            check("fht_double_batch gap", LOG_N, r * STRIDE + i, batch[r * STRIDE + i], -1000.0);
    }

    /* Bad arguments are refused with -1, touching nothing. */
    if (fht_float(NULL, 3) != -1 || fht_double(want, FHT_MAX_LOG_N + 1) != -1) {
        printf("bad arguments were not refused\n");
        failures++;
    }

    if (failures) {
        printf("FAILED: %d values differ\n", failures);
        return 1;
    }
    printf("OK\n");
    return 0;
}
