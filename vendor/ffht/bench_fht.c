/*
 * bench_fht.c - best-of-many timing of the C kernels, per instruction set.
 * Usage: bench_fht [max_log_n]. Rows are batched so that each trial covers at least
 * 64 KiB; the figure is ns per transform (the minimum over short trials, which are
 * rarely preempted on a shared machine).
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "fht.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    const int max_log_n = argc > 1 ? atoi(argv[1]) : 20;
    printf("%-7s %6s %14s %14s\n", "level", "log_n", "f32 ns", "f64 ns");
    for (int level = (int)fht_max_simd_level(); level >= 0; level--) {
        fht_set_simd_level((fht_simd_level)level);
        for (int log_n = 4; log_n <= max_log_n; log_n += 2) {
            const size_t n = (size_t)1 << log_n;
            const size_t rows = n < 16384 ? 16384 / n : 1;
            double best[2] = {1e30, 1e30};
            for (int dt = 0; dt < 2; dt++) {
                const size_t es = dt ? sizeof(double) : sizeof(float);
                void *x = aligned_alloc(64, rows * n * es);
                for (size_t i = 0; i < rows * n; i++) {
                    if (dt) ((double *)x)[i] = (double)(i % 3) - 1.0;
                    else ((float *)x)[i] = (float)(i % 3) - 1.0f;
                }
                const int trials = log_n < 16 ? 2000 : log_n < 19 ? 200 : 30;
                for (int t = 0; t < trials; t++) {
                    const double t0 = now();
                    if (dt) fht_double_batch((double *)x, log_n, rows, (ptrdiff_t)n);
                    else fht_float_batch((float *)x, log_n, rows, (ptrdiff_t)n);
                    const double el = (now() - t0) / (double)rows;
                    if (el < best[dt]) best[dt] = el;
                }
                free(x);
            }
            printf("%-7s %6d %14.1f %14.1f\n", fht_simd_level_name((fht_simd_level)level), log_n,
                   best[0] * 1e9, best[1] * 1e9);
        }
    }
    return 0;
}
