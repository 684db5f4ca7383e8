/*
 * test_fht.c - checks every instruction-set path this CPU supports.
 *
 *  1. The reference (levels in increasing stride, in the element type) equals the
 *     O(n^2) definition y[i] = sum_j (-1)^popcount(i & j) x[j] on integer data, where
 *     every partial sum is exact.
 *  2. Every path equals that reference bit for bit on random real data (the
 *     library promises identical rounding on every path), for log_n = 0 .. 22.
 *  3. Batches (contiguous, padded strides, out of place with different strides),
 *     the untouched input of out-of-place calls, H(Hx) = n x, and bad arguments.
 *  4. Transforms along columns, and a transform done as rows then columns.
 *
 * Exits 0 when everything passes; prints each failure.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fht.h"

static int failures = 0;
#define CHECK(cond, ...)                                                                            \
    do {                                                                                            \
        if (!(cond)) {                                                                              \
            failures++;                                                                             \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                             \
            printf(__VA_ARGS__);                                                                    \
            printf("\n");                                                                           \
        }                                                                                           \
    } while (0)

/* xorshift64*: a small deterministic generator for test data. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;
static uint64_t rng_next(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1DULL;
}
static double rng_uniform(void) { return (double)(rng_next() >> 11) * (1.0 / 9007199254740992.0); }

#define DEFINE_REF(T, name)                                                                        \
    static void name(T *x, int log_n)                                                              \
    {                                                                                              \
        const size_t n = (size_t)1 << log_n;                                                       \
        for (size_t h = 1; h < n; h <<= 1)                                                         \
            for (size_t i = 0; i < n; i += h << 1)                                                 \
                for (size_t j = i; j < i + h; j++) {                                               \
                    const T a = x[j], b = x[j + h];                                                \
                    x[j] = a + b;                                                                  \
                    x[j + h] = a - b;                                                              \
                }                                                                                  \
    }
DEFINE_REF(float, ref_f32)
DEFINE_REF(double, ref_f64)

static void test_reference_against_definition(void)
{
    for (int log_n = 0; log_n <= 9; log_n++) {
        const size_t n = (size_t)1 << log_n;
        double *x = malloc(n * sizeof(double)), *y = malloc(n * sizeof(double));
        for (size_t j = 0; j < n; j++) x[j] = (double)((int)(rng_next() % 21) - 10);
        for (size_t i = 0; i < n; i++) {
            double s = 0;
            for (size_t j = 0; j < n; j++) s += (__builtin_popcountll(i & j) & 1) ? -x[j] : x[j];
            y[i] = s;
        }
        ref_f64(x, log_n);
        for (size_t i = 0; i < n; i++) CHECK(x[i] == y[i], "reference != definition, log_n=%d i=%zu", log_n, i);
        free(x);
        free(y);
    }
}

/* Single transforms, in place and out of place, against the reference, bit for bit. */
#define DEFINE_SINGLE_TEST(T, sfx, fn, fn_oop, ref)                                                \
    static void test_single_##sfx(const char *lvl, int max_log_n)                                  \
    {                                                                                              \
        for (int log_n = 0; log_n <= max_log_n; log_n++) {                                         \
            const size_t n = (size_t)1 << log_n;                                                   \
            T *x = malloc(n * sizeof(T)), *r = malloc(n * sizeof(T)), *o = malloc(n * sizeof(T));  \
            T *keep = malloc(n * sizeof(T));                                                       \
            for (size_t i = 0; i < n; i++) x[i] = r[i] = keep[i] = (T)(2.0 * rng_uniform() - 1.0); \
            ref(r, log_n);                                                                         \
            CHECK(fn_oop(x, o, log_n) == 0, "%s oop returned error", lvl);                         \
            CHECK(fn(x, log_n) == 0, "%s returned error", lvl);                                    \
            size_t bad = 0, bad_o = 0, moved = 0;                                                  \
            for (size_t i = 0; i < n; i++) {                                                       \
                bad += memcmp(&x[i], &r[i], sizeof(T)) != 0;                                       \
                bad_o += memcmp(&o[i], &r[i], sizeof(T)) != 0;                                     \
            }                                                                                      \
            CHECK(bad == 0, "%s " #T " log_n=%d: %zu of %zu differ from the reference", lvl,       \
                  log_n, bad, n);                                                                  \
            CHECK(bad_o == 0, "%s " #T " oop log_n=%d: %zu of %zu differ", lvl, log_n, bad_o, n);  \
            /* the out-of-place input was left alone: transform keep out of place again */        \
            memcpy(o, keep, n * sizeof(T));                                                        \
            fn_oop(keep, x, log_n);                                                                \
            for (size_t i = 0; i < n; i++) moved += memcmp(&o[i], &keep[i], sizeof(T)) != 0;       \
            CHECK(moved == 0, "%s oop modified its input, log_n=%d", lvl, log_n);                  \
            free(x);                                                                               \
            free(r);                                                                               \
            free(o);                                                                               \
            free(keep);                                                                            \
        }                                                                                          \
    }
DEFINE_SINGLE_TEST(float, f32, fht_float, fht_float_oop, ref_f32)
DEFINE_SINGLE_TEST(double, f64, fht_double, fht_double_oop, ref_f64)

/* Batches: rows at a stride, some padding between them that must stay untouched. */
#define DEFINE_BATCH_TEST(T, sfx, fn_batch, fn_batch_oop, ref)                                     \
    static void test_batch_##sfx(const char *lvl)                                                  \
    {                                                                                              \
        const size_t counts[] = {1, 2, 3, 17, 130};                                                \
        const size_t pads[] = {0, 1, 16, 37};                                                      \
        for (int log_n = 0; log_n <= 13; log_n++) {                                                \
            const size_t n = (size_t)1 << log_n;                                                   \
            for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {                   \
                const size_t count = log_n > 10 && counts[ci] > 17 ? 5 : counts[ci];               \
                for (size_t pi = 0; pi < sizeof(pads) / sizeof(pads[0]); pi++) {                   \
                    const size_t stride = n + pads[pi], total = count * stride;                    \
                    T *x = malloc(total * sizeof(T)), *r = malloc(total * sizeof(T));              \
                    const size_t ostride = count > 1 ? n + (pads[pi] + 1) % 3 : n;                 \
                    const size_t ototal = count * ostride;                                         \
                    T *o = malloc(ototal * sizeof(T));                                             \
                    for (size_t i = 0; i < total; i++) x[i] = r[i] = (T)(2.0 * rng_uniform() - 1.0); \
                    for (size_t c = 0; c < count; c++) ref(r + c * stride, log_n);                 \
                    /* out of place into a buffer with a different stride */                       \
                    for (size_t i = 0; i < ototal; i++) o[i] = (T)-7;                              \
                    const int e1 = fn_batch_oop(x, (ptrdiff_t)stride, o, (ptrdiff_t)ostride, log_n, count); \
                    const int e2 = fn_batch(x, log_n, count, (ptrdiff_t)stride);                   \
                    CHECK(e1 == 0 && e2 == 0, "%s batch returned an error", lvl);                  \
                    size_t bad = 0, bad_o = 0;                                                     \
                    for (size_t c = 0; c < count; c++)                                             \
                        for (size_t i = 0; i < stride; i++) {                                      \
                            const size_t k = c * stride + i;                                       \
                            bad += memcmp(&x[k], &r[k], sizeof(T)) != 0;                           \
                            if (i < n) bad_o += memcmp(&o[c * ostride + i], &r[k], sizeof(T)) != 0; \
                        }                                                                          \
                    CHECK(bad == 0, "%s " #T " batch log_n=%d count=%zu stride=%zu: %zu differ",   \
                          lvl, log_n, count, stride, bad);                                         \
                    CHECK(bad_o == 0, "%s " #T " batch oop log_n=%d count=%zu: %zu differ", lvl,   \
                          log_n, count, bad_o);                                                    \
                    free(x);                                                                       \
                    free(r);                                                                       \
                    free(o);                                                                       \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }
DEFINE_BATCH_TEST(float, f32, fht_float_batch, fht_float_batch_oop, ref_f32)
DEFINE_BATCH_TEST(double, f64, fht_double_batch, fht_double_batch_oop, ref_f64)


/* Diagonals: row -> post * H(pre * row), bit for bit against the reference on the same
 * operations (one product rounded before, one after), for every combination of pre and
 * post, in place and out of place, packed short rows (the diagonals tiled over blocks)
 * and rows above the leaf size (pre split over the recursive chunks). */
#define DEFINE_DIAG_TEST(T, sfx, fn_diag, fn_oop_diag, ref)                                        \
    static void test_diag_##sfx(const char *lvl)                                                   \
    {                                                                                              \
        const int log_ns[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17};             \
        const size_t counts[] = {1, 3, 70};                                                        \
        for (size_t li = 0; li < sizeof(log_ns) / sizeof(log_ns[0]); li++) {                       \
            const int log_n = log_ns[li];                                                          \
            const size_t n = (size_t)1 << log_n;                                                   \
            T *pre = malloc(n * sizeof(T)), *post = malloc(n * sizeof(T));                         \
            for (size_t i = 0; i < n; i++) {                                                       \
                pre[i] = (T)(rng_uniform() - 0.5);                                                 \
                post[i] = (T)(3.0 * rng_uniform() - 1.0);                                          \
            }                                                                                      \
            for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {                   \
                const size_t count = log_n > 12 ? 2 : counts[ci];                                  \
                for (int combo = 1; combo < 4; combo++) {                                          \
                    const T *p = combo & 1 ? pre : NULL, *q = combo & 2 ? post : NULL;            \
                    for (int padded = 0; padded < 2; padded++) {                                   \
                        const size_t stride = n + (size_t)padded * 5, total = count * stride;      \
                        T *x = malloc(total * sizeof(T)), *r = malloc(total * sizeof(T));          \
                        T *o = malloc(total * sizeof(T));                                          \
                        for (size_t i = 0; i < total; i++) x[i] = (T)(2.0 * rng_uniform() - 1.0);  \
                        for (size_t c = 0; c < count; c++) {                                       \
                            T *row = r + c * stride;                                               \
                            for (size_t i = 0; i < n; i++) row[i] = p ? x[c * stride + i] * p[i] : x[c * stride + i]; \
                            ref(row, log_n);                                                       \
                            if (q)                                                                 \
                                for (size_t i = 0; i < n; i++) row[i] *= q[i];                     \
                        }                                                                          \
                        const int e1 = fn_oop_diag(x, (ptrdiff_t)stride, o, (ptrdiff_t)stride, log_n, count, p, q); \
                        const int e2 = fn_diag(x, log_n, count, (ptrdiff_t)stride, p, q);          \
                        CHECK(e1 == 0 && e2 == 0, "%s diag returned an error", lvl);               \
                        size_t bad = 0, bad_o = 0;                                                 \
                        for (size_t c = 0; c < count; c++)                                         \
                            for (size_t i = 0; i < n; i++) {                                       \
                                const size_t k = c * stride + i;                                   \
                                bad += memcmp(&x[k], &r[k], sizeof(T)) != 0;                       \
                                bad_o += memcmp(&o[k], &r[k], sizeof(T)) != 0;                     \
                            }                                                                      \
                        CHECK(bad == 0 && bad_o == 0,                                              \
                              "%s " #T " diag log_n=%d count=%zu pre=%d post=%d padded=%d: %zu/%zu differ", \
                              lvl, log_n, count, p != NULL, q != NULL, padded, bad, bad_o);        \
                        free(x);                                                                   \
                        free(r);                                                                   \
                        free(o);                                                                   \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
            free(pre);                                                                             \
            free(post);                                                                            \
        }                                                                                          \
    }
DEFINE_DIAG_TEST(float, f32, fht_float_batch_diag, fht_float_batch_oop_diag, ref_f32)
DEFINE_DIAG_TEST(double, f64, fht_double_batch_diag, fht_double_batch_oop_diag, ref_f64)

/* Per-row diagonals (fht_*_batch_oop_diags): every row bit for bit equal to a one-row
 * call with its own slice of the diagonals, for a broadcast input (in_stride 0, the use
 * by structured operators: one vector through every block) and for rows of their own;
 * the sizes cover packed short rows, the fused kernels (one and two radix passes), the
 * block kernel's batch form (2^14 float) and the recursion. */
#define DEFINE_DIAGS_TEST(T, sfx, fn_diags, fn_oop_diag)                                           \
    static void test_diags_##sfx(const char *lvl)                                                  \
    {                                                                                              \
        const int log_ns[] = {0, 3, 5, 8, 9, 10, 11, 12, 13, 14, 15};                              \
        for (size_t li = 0; li < sizeof(log_ns) / sizeof(log_ns[0]); li++) {                       \
            const int log_n = log_ns[li];                                                          \
            const size_t n = (size_t)1 << log_n, count = log_n > 12 ? 3 : 10, ds = n + 3;          \
            T *pre = malloc(count * ds * sizeof(T)), *post = malloc(count * ds * sizeof(T));       \
            T *x = malloc(count * n * sizeof(T)), *o = malloc(count * n * sizeof(T));              \
            T *r = malloc(n * sizeof(T));                                                          \
            for (size_t i = 0; i < count * ds; i++) {                                              \
                pre[i] = (T)(rng_uniform() - 0.5);                                                 \
                post[i] = (T)(3.0 * rng_uniform() - 1.0);                                          \
            }                                                                                      \
            for (size_t i = 0; i < count * n; i++) x[i] = (T)(2.0 * rng_uniform() - 1.0);          \
            for (int broadcast = 0; broadcast < 2; broadcast++)                                    \
                for (int combo = 0; combo < 4; combo++) {                                          \
                    const T *p = combo & 1 ? pre : NULL, *q = combo & 2 ? post : NULL;            \
                    const ptrdiff_t in_stride = broadcast ? 0 : (ptrdiff_t)n;                      \
                    const int e = fn_diags(x, in_stride, o, (ptrdiff_t)n, log_n, count, p, q, (ptrdiff_t)ds); \
                    CHECK(e == 0, "%s diags returned an error", lvl);                              \
                    size_t bad = 0;                                                                \
                    for (size_t c = 0; c < count; c++) {                                           \
                        fn_oop_diag(x + (size_t)in_stride * c, 0, r, 0, log_n, 1, p ? p + c * ds : NULL, \
                                    q ? q + c * ds : NULL);                                        \
                        bad += memcmp(r, o + c * n, n * sizeof(T)) != 0;                           \
                    }                                                                              \
                    CHECK(bad == 0, "%s " #T " diags log_n=%d broadcast=%d pre=%d post=%d: %zu rows differ", \
                          lvl, log_n, broadcast, p != NULL, q != NULL, bad);                       \
                }                                                                                  \
            free(pre);                                                                             \
            free(post);                                                                            \
            free(x);                                                                               \
            free(o);                                                                               \
            free(r);                                                                               \
        }                                                                                          \
    }
DEFINE_DIAGS_TEST(float, f32, fht_float_batch_oop_diags, fht_float_batch_oop_diag)
DEFINE_DIAGS_TEST(double, f64, fht_double_batch_oop_diags, fht_double_batch_oop_diag)

/* H(Hx) = n x, exactly, on integers (all partial sums fit the mantissa). */
/* Columns: fht_*_cols against the reference applied to each gathered column (bit for
 * bit), with padding columns beside them left untouched; and the two-step transform
 * (rows by fht_*_batch, then the columns, cut into ranges at odd places) bit-identical
 * to one call on the whole array. */
#define DEFINE_COLS_TEST(T, sfx, fn_cols, fn_batch, fn_one, ref)                                   \
    static void test_cols_##sfx(const char *lvl)                                                   \
    {                                                                                              \
        const size_t counts[] = {1, 3, 8, 16, 17, 40, 64};                                         \
        for (int log_n = 0; log_n <= 6; log_n++) {                                                 \
            const size_t n = (size_t)1 << log_n;                                                   \
            for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {                   \
                const size_t count = counts[ci], es = count + (ci % 3) * 5, total = n * es;        \
                T *x = malloc(total * sizeof(T)), *keep = malloc(total * sizeof(T));               \
                T *col = malloc(n * sizeof(T));                                                    \
                for (size_t i = 0; i < total; i++) x[i] = keep[i] = (T)(2.0 * rng_uniform() - 1.0); \
                CHECK(fn_cols(x, log_n, count, (ptrdiff_t)es) == 0, "%s cols returned an error", lvl); \
                size_t bad = 0, moved = 0;                                                         \
                for (size_t c = 0; c < es; c++) {                                                  \
                    for (size_t i = 0; i < n; i++) col[i] = keep[c + i * es];                      \
                    if (c < count) ref(col, log_n);                                                \
                    for (size_t i = 0; i < n; i++) {                                               \
                        const int differs = memcmp(&x[c + i * es], &col[i], sizeof(T)) != 0;      \
                        if (c < count) bad += differs;                                             \
                        else moved += differs;                                                     \
                    }                                                                              \
                }                                                                                  \
                CHECK(bad == 0, "%s cols differ from the reference, log_n=%d count=%zu es=%zu (%zu)", lvl, \
                      log_n, count, es, bad);                                                      \
                CHECK(moved == 0, "%s cols wrote beside its columns, log_n=%d count=%zu", lvl, log_n, count); \
                free(x);                                                                           \
                free(keep);                                                                        \
                free(col);                                                                         \
            }                                                                                      \
        }                                                                                          \
        /* two steps: rows of 2^a, then columns (log_n = b) in three ranges */                   \
        const int splits[][2] = {{0, 3}, {4, 3}, {7, 3}, {10, 2}, {13, 3}, {15, 4}, {17, 3}};      \
        for (size_t k = 0; k < sizeof(splits) / sizeof(splits[0]); k++) {                         \
            const int a = splits[k][0], b = splits[k][1];                                          \
            const size_t m = (size_t)1 << a, n = m << b;                                           \
            T *x = malloc(n * sizeof(T)), *y = malloc(n * sizeof(T));                              \
            for (size_t i = 0; i < n; i++) x[i] = y[i] = (T)(2.0 * rng_uniform() - 1.0);          \
            CHECK(fn_one(y, a + b) == 0, "%s transform returned an error", lvl);                   \
            CHECK(fn_batch(x, a, (size_t)1 << b, (ptrdiff_t)m) == 0, "%s batch returned an error", lvl); \
            const size_t c1 = m / 3, c2 = m - m / 5;                                               \
            CHECK(fn_cols(x, b, c1, (ptrdiff_t)m) == 0 && fn_cols(x + c1, b, c2 - c1, (ptrdiff_t)m) == 0 && \
                      fn_cols(x + c2, b, m - c2, (ptrdiff_t)m) == 0,                               \
                  "%s cols returned an error", lvl);                                               \
            size_t bad = 0;                                                                        \
            for (size_t i = 0; i < n; i++) bad += memcmp(&x[i], &y[i], sizeof(T)) != 0;           \
            CHECK(bad == 0, "%s rows then columns differ from one transform, 2^%d x 2^%d (%zu)", lvl, b, a, bad); \
            free(x);                                                                               \
            free(y);                                                                               \
        }                                                                                          \
    }
DEFINE_COLS_TEST(float, f32, fht_float_cols, fht_float_batch, fht_float, ref_f32)
DEFINE_COLS_TEST(double, f64, fht_double_cols, fht_double_batch, fht_double, ref_f64)

static void test_involution(const char *lvl)
{
    for (int log_n = 0; log_n <= 16; log_n += 4) {
        const size_t n = (size_t)1 << log_n;
        double *x = malloc(n * sizeof(double)), *y = malloc(n * sizeof(double));
        for (size_t i = 0; i < n; i++) x[i] = y[i] = (double)((int)(rng_next() % 9) - 4);
        fht_double(y, log_n);
        fht_double(y, log_n);
        size_t bad = 0;
        for (size_t i = 0; i < n; i++) bad += y[i] != (double)n * x[i];
        CHECK(bad == 0, "%s H(Hx) != n x at log_n=%d (%zu)", lvl, log_n, bad);
        free(x);
        free(y);
    }
}

static void test_bad_arguments(void)
{
    float f[64] = {0};
    double d[64] = {0};
    CHECK(fht_float(NULL, 3) == -1, "NULL accepted");
    CHECK(fht_double(NULL, 3) == -1, "NULL accepted");
    CHECK(fht_float(f, -1) == -1, "log_n = -1 accepted");
    CHECK(fht_float(f, 31) == -1, "log_n = 31 accepted");
    CHECK(fht_double(d, 31) == -1, "log_n = 31 accepted");
    CHECK(fht_float_batch(f, 3, 2, 7) == -1, "overlapping rows accepted");
    CHECK(fht_float_batch(f, 3, 2, -8) == -1, "negative stride accepted");
    CHECK(fht_float_batch(f, 3, 1, 0) == 0, "stride is irrelevant for one row");
    CHECK(fht_float_batch(f, 3, 0, 0) == 0, "count = 0 is a no-op");
    CHECK(fht_float_oop(f, f + 4, 3) == -1, "overlapping out-of-place buffers accepted");
    CHECK(fht_double_oop(d, d + 7, 3) == -1, "overlapping out-of-place buffers accepted");
    CHECK(fht_float_oop(f, f, 3) == 0, "in = out is the in-place transform");
    CHECK(fht_float_batch_oop(f, 8, f + 8, 8, 3, 2) == -1, "overlapping batches accepted");
    CHECK(fht_float_batch_oop(f, 8, f, 9, 3, 2) == -1, "same buffer, different strides accepted");
    CHECK(fht_float_batch_diag(f, 3, 2, 8, f + 12, NULL) == -1, "pre overlapping the output accepted");
    CHECK(fht_float_batch_diag(f, 3, 2, 8, NULL, f + 4) == -1, "post overlapping the output accepted");
    CHECK(fht_float_batch_diag(f, 3, 2, 8, f + 16, f + 24) == 0, "diagonals beside the output refused");
    CHECK(fht_double_batch_oop_diag(d, 8, d + 16, 8, 3, 2, d, NULL) == 0, "pre over the input refused");
    CHECK(fht_double_batch_oop_diag(d, 8, d + 16, 8, 3, 2, NULL, d + 20) == -1, "post over the output accepted");
    CHECK(fht_float_batch_oop_diags(f, 0, f + 8, 8, 3, 3, NULL, NULL, 0) == 0, "broadcast input refused");
    CHECK(fht_float_batch_oop_diags(f, 0, f, 8, 3, 3, NULL, NULL, 0) == -1, "broadcast in place accepted");
    CHECK(fht_float_batch_oop_diags(f + 16, 0, f, 8, 3, 3, NULL, NULL, 0) == -1, "broadcast input over the output accepted");
    CHECK(fht_double_batch_oop_diags(d, 0, d + 8, 8, 3, 2, d + 40, NULL, -8) == -1, "negative diag_stride accepted");
    CHECK(fht_double_batch_oop_diags(d, 0, d + 8, 8, 3, 2, d, NULL, 12) == -1, "second row's pre over the output accepted");
    CHECK(fht_double_batch_oop_diags(d, 0, d + 8, 8, 3, 2, d, NULL, 0) == 0, "shared pre beside the output refused");
    CHECK(fht_float_cols(NULL, 3, 4, 4) == -1, "cols: NULL accepted");
    CHECK(fht_float_cols(f, 31, 4, 4) == -1, "cols: log_n = 31 accepted");
    CHECK(fht_float_cols(f, 3, 4, 3) == -1, "cols: elem_stride < count accepted");
    CHECK(fht_double_cols(d, 3, 4, -4) == -1, "cols: negative elem_stride accepted");
    CHECK(fht_float_cols(f, 0, 64, 0) == 0, "cols: log_n = 0 (nothing to do) refused");
    CHECK(fht_double_cols(d, 3, 0, 0) == 0, "cols: count = 0 refused");
    CHECK(fht_double_cols(d, 3, 8, 8) == 0, "cols: adjacent columns refused");
    CHECK(fht_set_simd_level((fht_simd_level)7) == -1, "unknown level accepted");
    CHECK(fht_set_simd_level((fht_simd_level)-1) == -1, "negative level accepted");
}

int main(int argc, char **argv)
{
    const int max_log_n = argc > 1 ? atoi(argv[1]) : 22;
    const fht_simd_level best = fht_max_simd_level();
    printf("best level on this CPU: %s; in use: %s\n", fht_simd_level_name(best),
           fht_simd_level_name(fht_get_simd_level()));
    test_reference_against_definition();
    test_bad_arguments();
    for (int level = 0; level <= (int)FHT_SIMD_AVX512; level++) {
        const char *name = fht_simd_level_name((fht_simd_level)level);
        if (fht_set_simd_level((fht_simd_level)level) != 0) {
            printf("%-7s not supported here: skipped\n", name);
            CHECK(level > (int)best, "level %s is <= the best level but was refused", name);
            continue;
        }
        CHECK(fht_get_simd_level() == (fht_simd_level)level, "set_simd_level did not take");
        const int before = failures;
        test_single_f32(name, max_log_n);
        test_single_f64(name, max_log_n);
        test_batch_f32(name);
        test_batch_f64(name);
        test_involution(name);
        test_diag_f32(name);
        test_diag_f64(name);
        test_diags_f32(name);
        test_diags_f64(name);
        test_cols_f32(name);
        test_cols_f64(name);
        printf("%-7s %s\n", name, failures == before ? "ok" : "FAILED");
    }
    printf("%s (%d failures)\n", failures ? "FAILED" : "all passed", failures);
    return failures ? 1 : 0;
}
