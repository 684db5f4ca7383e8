/*
 * fht_kernel.h - the instruction-set-independent part of the transform.
 *
 * Included once per (instruction set, element type) by fht_<isa>.c, which first
 * defines these macros:
 *
 *   FHT_T            element type (float or double)
 *   FHT_V            vector type holding 2^FHT_LW elements
 *   FHT_LW           log2 of the number of lanes (0 for the portable path)
 *   FHT_LR           log2 of the largest register block (vectors held at once, <= 4);
 *                    the software-pipelined base pass holds two blocks of half that
 *   FHT_LEAF_BYTES   log2 of the bytes of the largest transform done in L1 (no recursion)
 *   FHT_NAME(x)      x with the file's suffix appended
 *   FHT_LOAD(p), FHT_STORE(p, v), FHT_ADD(a, b), FHT_MUL(a, b)
 *   FHT_SUB(a, b)    a - b next to in-register levels (base pass)
 *   FHT_SUB_X(a, b)  a - b in radix passes; on FMA machines fnmadd(b, 1, a) moves half
 *                    of those butterflies from the add pipes to the FMA pipes, which
 *                    the radix passes leave idle (the base pass keeps them busy)
 *   FHT_INREG1(v, l) in-register level l (stride 2^l, l < FHT_LW) applied to v
 *   FHT_PREFETCH     (optional, default 0) bytes of the longest row whose batch loop
 *                    prefetches the next row while transforming this one (see prefetch_)
 *
 * and then gets FHT_NAME(cols)(x, log_n, count, elem_stride) (transforms along columns, see
 * below) and FHT_NAME(batch)(dst, dst_stride, src, src_stride, log_n, count, pre, post, ps),
 * which performs count transforms (in place when src == dst and the strides agree),
 * each row r becoming post_r * H (pre_r * row) elementwise: the optional diagonals (NULL
 * for none; pre_r = pre + r * ps, the same n values for every row when ps = 0) are
 * multiplied in as the first pass loads and as the last pass stores, so they cost no
 * pass of their own. src_stride may be 0 (every row reads the same input).
 *
 * Structure for one row of n = 2^L elements:
 *  - base pass: blocks of consecutive vectors are loaded, go through the
 *    in-register levels (one shuffle and one multiply-add by a +-1 vector each on the
 *    SIMD paths) and the cross-register levels, and are stored. Either plain blocks of
 *    2^FHT_LR vectors, or blocks of half that size with the cross-register levels of
 *    one block interleaved with the in-register levels of the next (software
 *    pipelining: the first kind of work needs the FMA and shuffle units, the second
 *    the adders, and the interleaving lets them overlap; about 10% faster);
 *  - radix passes: up to 4 further levels per pass on columns of 2^r vectors a
 *    power-of-two stride apart; at most 3 when the stride is 4 KiB or more, because
 *    16 lines 4 KiB apart share one set of an 8-way L1 and evict each other;
 *  - above 2^FHT_LEAF elements on the SIMD paths with FHT_BLOCKS (AVX-512; from
 *    2^FHT_LEAF itself in batches), rows of up to 512 KiB go through
 *    the block kernel (blocks_): 4 KiB chunks, each a base pass and a radix pass, with
 *    up to two radix-4 passes joining them run inside the same loop as the chunks'
 *    base passes, then radix passes over the whole row for the remaining levels;
 *    longer rows (and the portable path) are cut into chunks that are transformed
 *    recursively (each fits a faster cache level), then a radix pass joins them.
 * Every level is applied in increasing stride order on every path, so the rounding,
 * and hence the result, is identical across instruction sets.
 */

#ifndef FHT_INLINE
#define FHT_INLINE static inline __attribute__((always_inline))
#endif
#ifndef FHT_NOINLINE
#define FHT_NOINLINE static __attribute__((noinline))
#endif

#define FHT_W_ ((size_t)1 << FHT_LW)
#define FHT_LOGSZ_ (sizeof(FHT_T) == 8 ? 3 : sizeof(FHT_T) == 4 ? 2 : 0)
#define FHT_LEAF (FHT_LEAF_BYTES - FHT_LOGSZ_)
#ifndef FHT_BLOCKS
#define FHT_BLOCKS 0 /* the block kernel for long rows (see blocks_) */
#endif

/* --------------------------------------------------------------- register blocks */

/* One cross-register level l over the R vectors of v. */
#define FHT_CROSS_(v, R, l, SUBOP)                                                  \
    _Pragma("GCC unroll 16") for (int k_ = 0; k_ < 16; k_++)                       \
    {                                                                               \
        if (k_ < (R) && !(k_ & (1 << (l)))) {                                      \
            const FHT_V a_ = (v)[k_], b_ = (v)[k_ | (1 << (l))];                   \
            (v)[k_] = FHT_ADD(a_, b_);                                              \
            (v)[k_ | (1 << (l))] = SUBOP(a_, b_);                                   \
        }                                                                           \
    }

/* R = 2^rl vectors at src + k*s go through ni in-register levels and nc (<= rl)
 * cross-register levels, and are stored at dst + k*s. With dp, each vector is first
 * multiplied by the one at pre + k*s; with dq, the results are multiplied by post + k*s
 * before they are stored. rl, ni, nc, dp and dq are compile-time constants at every
 * call site, so the block lives in registers. */
FHT_INLINE void FHT_NAME(block)(FHT_T *dst, const FHT_T *src, size_t s, const int rl, const int ni,
                                 const int nc, const FHT_T *pre, const FHT_T *post, const int dp, const int dq)
{
    FHT_V v[16];
    const int R = 1 << rl;
#pragma GCC unroll 16
    for (int k = 0; k < 16; k++) {
        if (k < R) {
            FHT_V t = FHT_LOAD(src + (size_t)k * s);
            if (dp) t = FHT_MUL(t, FHT_LOAD(pre + (size_t)k * s));
#pragma GCC unroll 4
            for (int l = 0; l < 4; l++)
                if (l < ni) t = FHT_INREG1(t, l);
            v[k] = t;
        }
    }
#pragma GCC unroll 4
    for (int l = 0; l < 4; l++) {
        if (l < nc) {
            if (ni) {
                FHT_CROSS_(v, R, l, FHT_SUB)
            } else {
                FHT_CROSS_(v, R, l, FHT_SUB_X)
            }
        }
    }
#pragma GCC unroll 16
    for (int k = 0; k < 16; k++) {
        if (k < R) {
            if (dq) v[k] = FHT_MUL(v[k], FHT_LOAD(post + (size_t)k * s));
            FHT_STORE(dst + (size_t)k * s, v[k]);
        }
    }
}

/* A column of 2^r vectors s elements apart, in place, r levels (with dq, multiplied by
 * the diagonal at post + the same offsets before the store). The addresses come
 * from four base pointers and the offsets s, 2s, 3s, which x86 addressing modes
 * express directly; sixteen separate offsets would exhaust the integer registers. */
FHT_INLINE void FHT_NAME(col)(FHT_T *x, size_t s, const int r, const FHT_T *post, const int dq)
{
    FHT_V v[16];
    const int R = 1 << r;
    FHT_T *const b0 = x, *const b1 = x + 4 * s, *const b2 = x + 8 * s, *const b3 = x + 12 * s;
    const size_t off[4] = {0, s, 2 * s, 3 * s};
#define FHT_COL_PTR_(k) (((k) >> 2) == 0 ? b0 : ((k) >> 2) == 1 ? b1 : ((k) >> 2) == 2 ? b2 : b3) + off[(k)&3]
#pragma GCC unroll 16
    for (int k = 0; k < 16; k++)
        if (k < R) v[k] = FHT_LOAD(FHT_COL_PTR_(k));
#pragma GCC unroll 4
    for (int l = 0; l < 4; l++) {
        if (l < r) {
            FHT_CROSS_(v, R, l, FHT_SUB_X)
        }
    }
#pragma GCC unroll 16
    for (int k = 0; k < 16; k++) {
        if (k < R) {
            if (dq) v[k] = FHT_MUL(v[k], FHT_LOAD(post + (FHT_COL_PTR_(k) - x)));
            FHT_STORE(FHT_COL_PTR_(k), v[k]);
        }
    }
#undef FHT_COL_PTR_
}

/* --------------------------------------------------------------- passes */

#ifndef FHT_PREFETCH
#define FHT_PREFETCH 0
#endif
/* The next row of a batch, prefetched a few lines per column of the radix passes of the
 * current one: its memory traffic then overlaps their arithmetic, which runs in L1 and
 * L2, instead of stalling the next row's first pass (measured on Zen 3 with AVX2 in
 * 32 MiB batches: float rows of 16 KiB to 1 MiB 4-18% faster, double rows 0-4%; rows of
 * 2 MiB and more were slower with it: the next row no longer fits beside this one). */
typedef struct {
    const char *cur, *end;
} FHT_NAME(prefetch_);
#define FHT_PF_LINES_ 2
#define FHT_PF_STEP_(pf)                                                                     \
    if ((pf) && (pf)->cur < (pf)->end) {                                                     \
        _Pragma("GCC unroll 4") for (int q_ = 0; q_ < FHT_PF_LINES_; q_++)                   \
            __builtin_prefetch((pf)->cur + 64 * q_, 0, 3);                                   \
        (pf)->cur += 64 * FHT_PF_LINES_;                                                     \
    }

/* One radix-2^r pass (levels at strides s, 2s, .., 2^(r-1) s; s a multiple of the
 * vector width) over n elements, in place; post (or NULL) multiplies the results. */
#define FHT_RADIX_LOOP_(r, dq)                                                     \
    for (size_t g = 0; g < n; g += s << (r))                                       \
        for (size_t j = 0; j < s; j += FHT_W_) {                                   \
            FHT_PF_STEP_(pf)                                                        \
            FHT_NAME(col)(x + g + j, s, (r), (dq) ? post + g + j : NULL, (dq));    \
        }

FHT_NOINLINE void FHT_NAME(radix)(FHT_T *x, size_t n, size_t s, int r, const FHT_T *post,
                                   FHT_NAME(prefetch_) *pf)
{
    if (post) {
        switch (r) {
        case 1: FHT_RADIX_LOOP_(1, 1) break;
        case 2: FHT_RADIX_LOOP_(2, 1) break;
        case 3: FHT_RADIX_LOOP_(3, 1) break;
        case 4: FHT_RADIX_LOOP_(4, 1) break;
        default: break;
        }
        return;
    }
    switch (r) {
    case 1: FHT_RADIX_LOOP_(1, 0) break;
    case 2: FHT_RADIX_LOOP_(2, 0) break;
    case 3: FHT_RADIX_LOOP_(3, 0) break;
    case 4: FHT_RADIX_LOOP_(4, 0) break;
    default: break;
    }
}

/* Largest radix (in levels) for a pass of stride s elements. */
#define FHT_MAX_RADIX_(s) ((s) * sizeof(FHT_T) >= 4096 ? 3 : 4)

/* The radix of the next pass when levels more levels start at stride s: as few passes
 * as possible, their sizes as even as possible. */
FHT_INLINE int FHT_NAME(next_radix)(int levels, size_t s)
{
    const int maxr = FHT_MAX_RADIX_(s);
    const int passes = (levels + maxr - 1) / maxr;
    return (levels + passes - 1) / passes;
}

/* levels more levels, starting at stride s, over n elements, in passes of next_radix;
 * post (or NULL) is applied by the last. */
FHT_INLINE void FHT_NAME(upper)(FHT_T *x, size_t n, size_t s, int levels, const FHT_T *post,
                                 FHT_NAME(prefetch_) *pf)
{
    while (levels > 0) {
        const int r = FHT_NAME(next_radix)(levels, s);
        FHT_NAME(radix)(x, n, s, r, levels == r ? post : NULL, pf);
        s <<= r;
        levels -= r;
    }
}

/* Plain base pass: blocks of 2^FHT_LR vectors, all in-register levels and FHT_LR
 * cross-register levels; pre and post (each possibly NULL) as in block. */
#define FHT_PLAIN_LOOP_(dp, dq)                                                     \
    for (size_t b = 0; b < n; b += B)                                              \
        FHT_NAME(block)(dst + b, src + b, FHT_W_, FHT_LR, FHT_LW, FHT_LR, (dp) ? pre + b : NULL,     \
                        (dq) ? post + b : NULL, (dp), (dq));
FHT_NOINLINE void FHT_NAME(base_plain)(FHT_T *dst, const FHT_T *src, size_t n, const FHT_T *pre,
                                        const FHT_T *post)
{
    const size_t B = FHT_W_ << FHT_LR;
    if (pre && post) FHT_PLAIN_LOOP_(1, 1)
    else if (pre) FHT_PLAIN_LOOP_(1, 0)
    else if (post) FHT_PLAIN_LOOP_(0, 1)
    else FHT_PLAIN_LOOP_(0, 0)
}
#undef FHT_PLAIN_LOOP_

#if FHT_LW > 0 && FHT_LR > 1
#define FHT_PLR_ (FHT_LR - 1)
/* Software-pipelined base pass: blocks of 2^(FHT_LR-1) vectors; while the cross-
 * register levels of block b run, block b+1 is loaded (and multiplied by pre when dp)
 * and goes through its in-register levels. n is a multiple of the block. It is never
 * the last pass of a transform, so it takes no post diagonal. */
FHT_INLINE void FHT_NAME(base_pipe_)(FHT_T *dst, const FHT_T *src, size_t n, const FHT_T *pre, const int dp)
{
    enum { R = 1 << FHT_PLR_ };
    const size_t B = FHT_W_ << FHT_PLR_;
    FHT_V v[16], w[16];
#pragma GCC unroll 16
    for (int k = 0; k < R; k++) {
        v[k] = FHT_LOAD(src + (size_t)k * FHT_W_);
        if (dp) v[k] = FHT_MUL(v[k], FHT_LOAD(pre + (size_t)k * FHT_W_));
    }
#pragma GCC unroll 4
    for (int l = 0; l < FHT_LW; l++) {
#pragma GCC unroll 16
        for (int k = 0; k < R; k++) v[k] = FHT_INREG1(v[k], l);
    }
    for (size_t b = 0; b < n; b += B) {
        const FHT_T *next = src + b + B;
        if (b + B < n) {
#pragma GCC unroll 16
            for (int k = 0; k < R; k++) {
                w[k] = FHT_LOAD(next + (size_t)k * FHT_W_);
                if (dp) w[k] = FHT_MUL(w[k], FHT_LOAD(pre + b + B + (size_t)k * FHT_W_));
            }
#pragma GCC unroll 4
            for (int st = 0; st < 4; st++) {
                if (st < FHT_LW) {
#pragma GCC unroll 16
                    for (int k = 0; k < R; k++) w[k] = FHT_INREG1(w[k], st);
                }
                if (st < FHT_PLR_) {
                    FHT_CROSS_(v, R, st, FHT_SUB)
                }
            }
        } else {
#pragma GCC unroll 4
            for (int st = 0; st < FHT_PLR_; st++) {
                FHT_CROSS_(v, R, st, FHT_SUB)
            }
        }
#pragma GCC unroll 16
        for (int k = 0; k < R; k++) FHT_STORE(dst + b + (size_t)k * FHT_W_, v[k]);
#pragma GCC unroll 16
        for (int k = 0; k < R; k++) v[k] = w[k];
    }
}
FHT_NOINLINE void FHT_NAME(base_pipe)(FHT_T *dst, const FHT_T *src, size_t n, const FHT_T *pre)
{
    if (pre) FHT_NAME(base_pipe_)(dst, src, n, pre, 1);
    else FHT_NAME(base_pipe_)(dst, src, n, pre, 0);
}

/* log2 of the vectors in a base block of the fused batch kernel below (blocks of 16
 * were measured 5-10% slower than blocks of 8 on Zen 4). */
#ifndef FHT_FLB_
#define FHT_FLB_ FHT_PLR_
#endif
#ifndef FHT_FUSED_PIPE
#define FHT_FUSED_PIPE 0
#endif
/* Rows of 2^L elements, L = FHT_LW + FHT_PLR_ + rr with 1 <= rr <= 4: each row is one
 * base pass of 2^FHT_PLR_-vector blocks (all in-register levels and FHT_PLR_ cross-
 * register levels) followed by one radix-2^rr pass at the stride of one block. Here
 * the radix pass of row i runs interleaved with the base pass of row i + 1, column by
 * column and block by block. The base pass is bound by the shuffle and FMA units, the
 * radix pass by the adders and by stores (a 64-byte store takes two cycles on Zen 4),
 * so running them side by side in one instruction stream keeps all of them busy,
 * which the out-of-order window cannot do across the function calls of a row-by-row
 * loop. The levels of each row still run in increasing stride order, so results are
 * bit-identical to the other paths. */
FHT_INLINE void FHT_NAME(fused_)(FHT_T *dst, ptrdiff_t ds, const FHT_T *src, ptrdiff_t ss, size_t count,
                                  const int rr, const FHT_T *pre, const FHT_T *post, ptrdiff_t ps, const int dp,
                                  const int dq)
{
    enum { R = 1 << FHT_FLB_ };
    const size_t B = FHT_W_ << FHT_FLB_; /* elements per base block = stride of the radix pass */
    const int nb = 1 << rr;               /* base blocks per row; a row has R radix columns */
    /* Row 0's base pass alone. */
    for (int b = 0; b < nb; b++)
        FHT_NAME(block)(dst + b * B, src + b * B, FHT_W_, FHT_FLB_, FHT_LW, FHT_FLB_,
                        dp ? pre + b * B : NULL, NULL, dp, 0);
    for (size_t r = 1; r < count; r++) {
        FHT_T *prev = dst + (ptrdiff_t)(r - 1) * ds;
        FHT_T *out = dst + (ptrdiff_t)r * ds;
        const FHT_T *in = src + (ptrdiff_t)r * ss;
        const FHT_T *pin = dp ? pre + (ptrdiff_t)r * ps : NULL, *qprev = dq ? post + (ptrdiff_t)(r - 1) * ps : NULL;
#pragma GCC unroll 16
        for (int i = 0; i < R; i++) {
            FHT_NAME(col)(prev + i * FHT_W_, B, rr, dq ? qprev + i * FHT_W_ : NULL, dq);
            for (int b = i * nb / R; b < (i + 1) * nb / R; b++)
                FHT_NAME(block)(out + b * B, in + b * B, FHT_W_, FHT_FLB_, FHT_LW, FHT_FLB_,
                                dp ? pin + b * B : NULL, NULL, dp, 0);
        }
    }
    /* The last row's radix pass alone. */
    FHT_T *last = dst + (ptrdiff_t)(count - 1) * ds;
    const FHT_T *qlast = dq ? post + (ptrdiff_t)(count - 1) * ps : NULL;
    for (int i = 0; i < R; i++) FHT_NAME(col)(last + i * FHT_W_, B, rr, dq ? qlast + i * FHT_W_ : NULL, dq);
}

/* As fused_, with the base pass software-pipelined as in base_pipe_ (across row
 * boundaries too). Chosen by FHT_FUSED_PIPE: on Zen 4 it is 15% faster for float rows
 * of 2^8 and no faster above, and 2-5% slower for double (more live registers). */
FHT_INLINE void FHT_NAME(fused_pipe_)(FHT_T *dst, ptrdiff_t ds, const FHT_T *src, ptrdiff_t ss, size_t count,
                                  const int rr, const FHT_T *pre, const FHT_T *post, ptrdiff_t ps, const int dp,
                                  const int dq)
{
    enum { R = 1 << FHT_FLB_ };
    const size_t B = FHT_W_ << FHT_FLB_; /* elements per base block = stride of the radix pass */
    const int nb = 1 << rr;               /* base blocks per row; a row has R radix columns */
    FHT_V v[16], w[16];
    /* The base pass is software-pipelined as in base_pipe_: v holds the current block
     * after its in-register levels; while its cross-register levels run, the next
     * block (of this row or the next) is loaded into w and goes through its
     * in-register levels. */
#pragma GCC unroll 16
    for (int k = 0; k < R; k++) {
        v[k] = FHT_LOAD(src + (size_t)k * FHT_W_);
        if (dp) v[k] = FHT_MUL(v[k], FHT_LOAD(pre + (size_t)k * FHT_W_));
    }
#pragma GCC unroll 4
    for (int l = 0; l < FHT_LW; l++) {
#pragma GCC unroll 16
        for (int k = 0; k < R; k++) v[k] = FHT_INREG1(v[k], l);
    }
    for (size_t row = 0; row <= count; row++) {
        FHT_T *prev = row ? dst + (ptrdiff_t)(row - 1) * ds : NULL;
        FHT_T *out = dst + (ptrdiff_t)row * ds;
        for (int b = 0; b < nb; b++) {
            if (row < count) {
                const int has_next = b + 1 < nb || row + 1 < count;
                if (has_next) {
                    const FHT_T *next = b + 1 < nb ? src + (ptrdiff_t)row * ss + (b + 1) * B
                                                   : src + (ptrdiff_t)(row + 1) * ss;
                    const FHT_T *pn = dp ? (b + 1 < nb ? pre + (ptrdiff_t)row * ps + (b + 1) * B
                                                       : pre + (ptrdiff_t)(row + 1) * ps)
                                         : NULL;
#pragma GCC unroll 16
                    for (int k = 0; k < R; k++) {
                        w[k] = FHT_LOAD(next + (size_t)k * FHT_W_);
                        if (dp) w[k] = FHT_MUL(w[k], FHT_LOAD(pn + (size_t)k * FHT_W_));
                    }
#pragma GCC unroll 4
                    for (int st = 0; st < 4; st++) {
                        if (st < FHT_LW) {
#pragma GCC unroll 16
                            for (int k = 0; k < R; k++) w[k] = FHT_INREG1(w[k], st);
                        }
                        if (st < FHT_FLB_) {
                            FHT_CROSS_(v, R, st, FHT_SUB)
                        }
                    }
                } else {
#pragma GCC unroll 4
                    for (int st = 0; st < FHT_FLB_; st++) {
                        FHT_CROSS_(v, R, st, FHT_SUB)
                    }
                }
#pragma GCC unroll 16
                for (int k = 0; k < R; k++) FHT_STORE(out + b * B + (size_t)k * FHT_W_, v[k]);
#pragma GCC unroll 16
                for (int k = 0; k < R; k++) v[k] = w[k];
            }
            if (prev)
                for (int i = b * R / nb; i < (b + 1) * R / nb; i++)
                    FHT_NAME(col)(prev + i * FHT_W_, B, rr, dq ? post + (ptrdiff_t)(row - 1) * ps + i * FHT_W_ : NULL,
                                  dq);
        }
    }
}

/* As fused_, for rows needing two radix passes after the base pass: radix-2^r1 at the
 * stride of one block, then radix-2^r2 at 2^r1 times that. The base pass of row i + 1
 * is spread evenly over the columns of both passes of row i. */
FHT_INLINE void FHT_NAME(fused2_)(FHT_T *dst, ptrdiff_t ds, const FHT_T *src, ptrdiff_t ss, size_t count,
                                   const int r1, const int r2, const FHT_T *pre, const FHT_T *post, ptrdiff_t ps,
                                   const int dp, const int dq)
{
    enum { LB = FHT_FLB_ };
    const size_t B = FHT_W_ << LB;
    const int lnb = r1 + r2;                          /* log2 base blocks per row */
    const int lc1 = LB + r2, lc2 = LB + r1;           /* log2 columns of each pass */
    const size_t s1 = B, s2 = B << r1;
    /* columns per base block in each pass (as shifts: both passes share the blocks) */
    for (int b = 0; b < (1 << lnb); b++)
        FHT_NAME(block)(dst + b * B, src + b * B, FHT_W_, LB, FHT_LW, LB, dp ? pre + b * B : NULL, NULL, dp, 0);
    for (size_t row = 1; row <= count; row++) {
        FHT_T *prev = dst + (ptrdiff_t)(row - 1) * ds;
        const int more = row < count;
        FHT_T *out = dst + (ptrdiff_t)row * ds;
        const FHT_T *in = src + (ptrdiff_t)row * ss;
        const FHT_T *pin = dp && more ? pre + (ptrdiff_t)row * ps : NULL;
        const FHT_T *qprev = dq ? post + (ptrdiff_t)(row - 1) * ps : NULL;
        /* pass 1 columns: group g = c >> LB (groups of s1 << r1 elements), offset (c & (2^LB - 1)) * W */
        int b = 0;
        const int half = 1 << (lnb - 1); /* blocks done during pass 1; the rest during pass 2 */
        for (int c = 0; c < (1 << lc1); c++) {
            const size_t off = ((size_t)(c >> LB) << (LB + r1)) * FHT_W_ + (size_t)(c & ((1 << LB) - 1)) * FHT_W_;
            FHT_NAME(col)(prev + off, s1, r1, NULL, 0);
            if (more && ((c + 1) << (lnb - 1) >> lc1) > b) {
                FHT_NAME(block)(out + b * B, in + b * B, FHT_W_, LB, FHT_LW, LB, dp ? pin + b * B : NULL, NULL, dp, 0);
                b++;
            }
        }
        for (int c = 0; c < (1 << lc2); c++) {
            const size_t off = (size_t)c * FHT_W_; /* one group: s2 << r2 = n */
            FHT_NAME(col)(prev + off, s2, r2, dq ? qprev + off : NULL, dq);
            if (more && half + (((c + 1) << (lnb - 1)) >> lc2) > b) {
                FHT_NAME(block)(out + b * B, in + b * B, FHT_W_, LB, FHT_LW, LB, dp ? pin + b * B : NULL, NULL, dp, 0);
                b++;
            }
        }
        (void)b;
    }
}

#if FHT_FUSED_PIPE
#define FHT_FUSED_FN_ FHT_NAME(fused_pipe_)
#else
#define FHT_FUSED_FN_ FHT_NAME(fused_)
#endif
#define FHT_FUSED_(rr_)                                                                       \
    if (pre && post) FHT_FUSED_FN_(dst, ds, src, ss, count, (rr_), pre, post, ps, 1, 1); \
    else if (pre) FHT_FUSED_FN_(dst, ds, src, ss, count, (rr_), pre, NULL, ps, 1, 0);    \
    else if (post) FHT_FUSED_FN_(dst, ds, src, ss, count, (rr_), NULL, post, ps, 0, 1);  \
    else FHT_FUSED_FN_(dst, ds, src, ss, count, (rr_), NULL, NULL, 0, 0, 0);
FHT_NOINLINE void FHT_NAME(fused)(FHT_T *dst, ptrdiff_t ds, const FHT_T *src, ptrdiff_t ss, size_t count, int rr,
                                   const FHT_T *pre, const FHT_T *post, ptrdiff_t ps)
{
    switch (rr) {
    case 5:
        if (pre && post) FHT_NAME(fused2_)(dst, ds, src, ss, count, 3, 2, pre, post, ps, 1, 1);
        else if (pre) FHT_NAME(fused2_)(dst, ds, src, ss, count, 3, 2, pre, NULL, ps, 1, 0);
        else if (post) FHT_NAME(fused2_)(dst, ds, src, ss, count, 3, 2, NULL, post, ps, 0, 1);
        else FHT_NAME(fused2_)(dst, ds, src, ss, count, 3, 2, NULL, NULL, 0, 0, 0);
        break;
    case 1: FHT_FUSED_(1) break;
    case 2: FHT_FUSED_(2) break;
    case 3: FHT_FUSED_(3) break;
    case 4: FHT_FUSED_(4) break;
    default: break;
    }
}
#undef FHT_FUSED_
#undef FHT_FUSED_FN_

/* --------------------------------------------------------------- blocks of long rows */

/* The including file sets FHT_BLOCKS to 1 where the block kernel was measured faster
 * (AVX-512 on Zen 4). With 16 registers (AVX2) the two pipelined base blocks and a
 * join column no longer fit, and it ran 10-25% slower than the recursion in rec. */
#if FHT_BLOCKS

/* Long rows are built from chunks of 2^FHT_BC_ elements (4 KiB of float or double on
 * AVX-512), each one pipelined base pass and one radix-2^FHT_BRR_ pass at the stride of
 * a base block, as in fused_pipe_. Then come join passes of radix 2^FHT_BRJ_ at the
 * strides of 1, 2^FHT_BRJ_, 2^(2 FHT_BRJ_), .. chunks. */
#ifndef FHT_BRR_
#define FHT_BRR_ 3
#endif
#ifndef FHT_BRJ_
#define FHT_BRJ_ 2
#endif
#define FHT_BC_ (FHT_LW + FHT_FLB_ + FHT_BRR_)

/* Join k (1-based) of the block kernel below during step t: the block it works on (NULL
 * if none), with its first column index in *j0. A join-k block spans pk = 2^(k FHT_BRJ_)
 * chunks and becomes ready when join k - 1 has finished its last sub-block, dk =
 * 2^FHT_BRJ_ + .. + 2^((k-1) FHT_BRJ_) steps after its last chunk was transformed; it is
 * then done over the next pk steps, 1/pk of its columns per step. */
FHT_INLINE FHT_T *FHT_NAME(join_at_)(FHT_T *dst, ptrdiff_t ds, const FHT_T *post, ptrdiff_t ps, const FHT_T **px,
                                      size_t nch, const int m, const int k, size_t t, size_t *j0)
{
    const size_t C = (size_t)1 << FHT_BC_;
    const size_t pk = (size_t)1 << (k * FHT_BRJ_);
    size_t dk = 0;
    for (int i = 1; i < k; i++) dk += (size_t)1 << (i * FHT_BRJ_);
    if (t < pk + dk + 1) return NULL;
    const size_t Jk = (t - dk - 1) / pk - 1, q = (t - dk - 1) % pk;
    if (Jk >= nch / pk) return NULL;
    const size_t per_row = (size_t)1 << ((m - k) * FHT_BRJ_); /* join-k blocks per row */
    const size_t row = Jk / per_row, off = (Jk % per_row) * pk * C;
    *px = post ? post + (ptrdiff_t)row * ps + off : NULL;
    /* Join 2 sweeps its block starting 2/pk of the way in: its columns then fall in other
     * L1 sets than those of join 1 in the same step (in step with them, each set
     * would take 4 lines of each on top of the chunk's: 10 lines in 8 ways, and the
     * kernel ran 1.7x slower). */
    *j0 = (q + (k - 1) * 2) % pk * ((C << ((k - 1) * FHT_BRJ_)) / FHT_W_ / pk);
    return dst + (ptrdiff_t)row * ds + off;
}

/* Columns [j0 + b*nc/NB, j0 + (b+1)*nc/NB) of join k, nc = its columns per step. */
FHT_INLINE void FHT_NAME(join_cols_)(FHT_T *x, const FHT_T *px, size_t j0, const int k, int b, const int dq)
{
    enum { NB = 1 << FHT_BRR_ };
    const size_t s = ((size_t)1 << FHT_BC_) << ((k - 1) * FHT_BRJ_); /* stride = columns * W */
    const size_t nc = s / FHT_W_ >> (k * FHT_BRJ_);
    for (size_t j = j0 + b * nc / NB; j < j0 + (b + 1) * nc / NB; j++)
        FHT_NAME(col)(x + j * FHT_W_, s, FHT_BRJ_, dq ? px + j * FHT_W_ : NULL, dq);
}

/* count rows of 2^(FHT_BC_ + m FHT_BRJ_) elements (m = 1 or 2), row J read from
 * src + J*ss (times pre + J*ps when dp) and written to dst + J*ds (times post + J*ps
 * when dq, by the last join). All chunks of all rows form one instruction stream: the
 * base pass of chunk t runs interleaved, base block by base block, with the radix pass
 * of chunk t - 1 (the adders and stores of one overlap the shuffles and FMAs of the
 * other), and with a share of each join pass of blocks finished earlier. A radix pass
 * alone is bound by stores and by the caches (2.3-2.9 cycles a vector on Zen 4, with
 * idle FP units); hidden under the base pass a radix-4 join costs about 0.8. Only the
 * joins of the last blocks run alone, after the last chunk. A join column takes at most
 * 4 lines of one L1 set: radix-8 columns at a 4 KiB stride (8 lines in one set of the
 * 8-way L1) evict the chunk being transformed and made this kernel 1.5x slower. Each
 * element still goes through its levels in increasing stride order. */
FHT_INLINE void FHT_NAME(blocks_)(FHT_T *dst, ptrdiff_t ds, const FHT_T *src, ptrdiff_t ss, size_t count, const int m,
                                   const FHT_T *pre, const FHT_T *post, ptrdiff_t ps, const int dp, const int dq)
{
    enum { R = 1 << FHT_FLB_, NB = 1 << FHT_BRR_ };
    const size_t B = FHT_W_ << FHT_FLB_;   /* elements per base block */
    const size_t C = (size_t)1 << FHT_BC_; /* elements per chunk */
    const int lpr = m * FHT_BRJ_;          /* log2 chunks per row */
    const size_t nch = count << lpr;
    size_t tail = 0; /* steps after the last chunk until the last join is done */
    for (int i = 1; i <= m; i++) tail += (size_t)1 << (i * FHT_BRJ_);
    FHT_V v[16], w[16];
/* chunk c of array p whose rows lie st apart */
#define FHT_CHUNK_(p, st, c) ((p) + (ptrdiff_t)((c) >> lpr) * (st) + ((c) & (((size_t)1 << lpr) - 1)) * C)
#pragma GCC unroll 16
    for (int k = 0; k < R; k++) {
        v[k] = FHT_LOAD(src + (size_t)k * FHT_W_);
        if (dp) v[k] = FHT_MUL(v[k], FHT_LOAD(pre + (size_t)k * FHT_W_));
    }
#pragma GCC unroll 4
    for (int l = 0; l < FHT_LW; l++) {
#pragma GCC unroll 16
        for (int k = 0; k < R; k++) v[k] = FHT_INREG1(v[k], l);
    }
    for (size_t t = 0; t <= nch + tail; t++) {
        FHT_T *out = t < nch ? FHT_CHUNK_(dst, ds, t) : NULL;
        FHT_T *prev = t && t <= nch ? FHT_CHUNK_(dst, ds, t - 1) : NULL;
        const FHT_T *p1 = NULL, *p2 = NULL;
        size_t j1 = 0, j2 = 0;
        FHT_T *x1 = m > 0 ? FHT_NAME(join_at_)(dst, ds, post, ps, &p1, nch, m, 1, t, &j1) : NULL;
        FHT_T *x2 = m > 1 ? FHT_NAME(join_at_)(dst, ds, post, ps, &p2, nch, m, 2, t, &j2) : NULL;
#pragma GCC unroll 8
        for (int b = 0; b < NB; b++) {
            if (out) {
                const FHT_T *next = NULL, *pnext = NULL;
                if (b + 1 < NB) {
                    next = FHT_CHUNK_(src, ss, t) + (b + 1) * B;
                    if (dp) pnext = FHT_CHUNK_(pre, ps, t) + (b + 1) * B;
                } else if (t + 1 < nch) {
                    next = FHT_CHUNK_(src, ss, t + 1);
                    if (dp) pnext = FHT_CHUNK_(pre, ps, t + 1);
                }
                if (next) {
#pragma GCC unroll 16
                    for (int k = 0; k < R; k++) {
                        w[k] = FHT_LOAD(next + (size_t)k * FHT_W_);
                        if (dp) w[k] = FHT_MUL(w[k], FHT_LOAD(pnext + (size_t)k * FHT_W_));
                    }
#pragma GCC unroll 4
                    for (int st = 0; st < 4; st++) {
                        if (st < FHT_LW) {
#pragma GCC unroll 16
                            for (int k = 0; k < R; k++) w[k] = FHT_INREG1(w[k], st);
                        }
                        if (st < FHT_FLB_) {
                            FHT_CROSS_(v, R, st, FHT_SUB)
                        }
                    }
                } else {
#pragma GCC unroll 4
                    for (int st = 0; st < FHT_FLB_; st++) {
                        FHT_CROSS_(v, R, st, FHT_SUB)
                    }
                }
#pragma GCC unroll 16
                for (int k = 0; k < R; k++) FHT_STORE(out + b * B + (size_t)k * FHT_W_, v[k]);
#pragma GCC unroll 16
                for (int k = 0; k < R; k++) v[k] = w[k];
            }
            if (prev)
                for (int i = b * R / NB; i < (b + 1) * R / NB; i++)
                    FHT_NAME(col)(prev + i * FHT_W_, B, FHT_BRR_, NULL, 0);
            if (x1) FHT_NAME(join_cols_)(x1, p1, j1, 1, b, dq && m == 1);
            if (x2) FHT_NAME(join_cols_)(x2, p2, j2, 2, b, dq);
        }
    }
#undef FHT_CHUNK_
}

/* log2 of the elements of the longest row done as blocks plus radix passes over the
 * whole row: 512 KiB, half of the L2; longer rows are cut into such rows first. */
#ifndef FHT_BIG_L2_
#define FHT_BIG_L2_ 19
#endif
#define FHT_BIG_ (FHT_BIG_L2_ - FHT_LOGSZ_)

#define FHT_BLOCKS_(m_)                                                                             \
    if (pre && post) FHT_NAME(blocks_)(dst, ds, src, ss, count, (m_), pre, post, ps, 1, 1);         \
    else if (pre) FHT_NAME(blocks_)(dst, ds, src, ss, count, (m_), pre, NULL, ps, 1, 0);           \
    else if (post) FHT_NAME(blocks_)(dst, ds, src, ss, count, (m_), NULL, post, ps, 0, 1);         \
    else FHT_NAME(blocks_)(dst, ds, src, ss, count, (m_), NULL, NULL, ps, 0, 0);
FHT_NOINLINE void FHT_NAME(blocks)(FHT_T *dst, ptrdiff_t ds, const FHT_T *src, ptrdiff_t ss, size_t count, int m,
                                    const FHT_T *pre, const FHT_T *post, ptrdiff_t ps)
{
    if (m == 0) {
        FHT_BLOCKS_(0)
    } else if (m == 1) {
        FHT_BLOCKS_(1)
    } else {
        FHT_BLOCKS_(2)
    }
}
#undef FHT_BLOCKS_
#endif /* FHT_BLOCKS */
#endif

/* A row shorter than one plain base block but at least one vector: 2^c vectors. */
#define FHT_SHORT_(c_, dp, dq) FHT_NAME(block)(dst, src, FHT_W_, (c_), FHT_LW, (c_), pre, post, (dp), (dq));
#define FHT_SHORT4_(c_)                                                              \
    if (pre && post) FHT_SHORT_(c_, 1, 1) else if (pre) FHT_SHORT_(c_, 1, 0)          \
    else if (post) FHT_SHORT_(c_, 0, 1) else FHT_SHORT_(c_, 0, 0)
FHT_NOINLINE void FHT_NAME(short_row)(FHT_T *dst, const FHT_T *src, int c, const FHT_T *pre, const FHT_T *post)
{
    switch (c) {
    case 0: FHT_SHORT4_(0) break;
#if FHT_LR > 1
    case 1: FHT_SHORT4_(1) break;
#endif
#if FHT_LR > 2
    case 2: FHT_SHORT4_(2) break;
#endif
#if FHT_LR > 3
    case 3: FHT_SHORT4_(3) break;
#endif
    default: break;
    }
}
#undef FHT_SHORT_
#undef FHT_SHORT4_

/* Rows of 2^L elements lying back to back, with L < FHT_LW + FHT_LR: whole register
 * blocks hold several rows, and only the first L levels are applied. n_total is a
 * multiple of the block size. pre and post (or NULL) are the diagonals tiled over one
 * block (B elements: the same for every block, since B is a multiple of the row). */
FHT_NOINLINE void FHT_NAME(packed_rows)(FHT_T *dst, const FHT_T *src, size_t n_total, int L, const FHT_T *pre,
                                         const FHT_T *post)
{
    const size_t B = FHT_W_ << FHT_LR;
    const int ni = L < FHT_LW ? L : FHT_LW;
    const int nc = L - ni;
#define FHT_PACKED_D_(ni_, nc_, dp, dq)                                              \
    for (size_t b = 0; b < n_total; b += B)                                         \
        FHT_NAME(block)(dst + b, src + b, FHT_W_, FHT_LR, (ni_), (nc_), pre, post, (dp), (dq));
#define FHT_PACKED_(ni_, nc_)                                                        \
    if (pre && post) { FHT_PACKED_D_(ni_, nc_, 1, 1) }                               \
    else if (pre) { FHT_PACKED_D_(ni_, nc_, 1, 0) }                                  \
    else if (post) { FHT_PACKED_D_(ni_, nc_, 0, 1) }                                 \
    else { FHT_PACKED_D_(ni_, nc_, 0, 0) }
    switch (ni * 8 + nc) {
    case 0: FHT_PACKED_(0, 0) break; /* L = 0: a copy (and the diagonals) */
#if FHT_LW >= 1
    case 1 * 8 + 0: FHT_PACKED_(1, 0) break;
#endif
#if FHT_LW >= 2
    case 2 * 8 + 0: FHT_PACKED_(2, 0) break;
#endif
#if FHT_LW >= 3
    case 3 * 8 + 0: FHT_PACKED_(3, 0) break;
#endif
#if FHT_LW >= 4
    case 4 * 8 + 0: FHT_PACKED_(4, 0) break;
#endif
    case FHT_LW * 8 + 1: FHT_PACKED_(FHT_LW, 1) break;
#if FHT_LR > 2
    case FHT_LW * 8 + 2: FHT_PACKED_(FHT_LW, 2) break;
#endif
#if FHT_LR > 3
    case FHT_LW * 8 + 3: FHT_PACKED_(FHT_LW, 3) break;
#endif
    default: break;
    }
#undef FHT_PACKED_
#undef FHT_PACKED_D_
}

/* Scalar transform for rows shorter than one vector: levels in increasing stride. */
FHT_INLINE void FHT_NAME(tiny)(FHT_T *dst, const FHT_T *src, int L, const FHT_T *pre, const FHT_T *post)
{
    const size_t n = (size_t)1 << L;
    for (size_t i = 0; i < n; i++) dst[i] = pre ? src[i] * pre[i] : src[i];
    for (size_t h = 1; h < n; h <<= 1)
        for (size_t i = 0; i < n; i += h << 1)
            for (size_t j = i; j < i + h; j++) {
                const FHT_T a = dst[j], b = dst[j + h];
                dst[j] = a + b;
                dst[j + h] = a - b;
            }
    if (post)
        for (size_t i = 0; i < n; i++) dst[i] *= post[i];
}

/* --------------------------------------------------------------- whole rows */

/* One row kept in L1: FHT_LW + FHT_LR <= L <= FHT_LEAF. */
static void FHT_NAME(leaf)(FHT_T *dst, const FHT_T *src, int L, const FHT_T *pre, const FHT_T *post,
                            FHT_NAME(prefetch_) *pf)
{
    const size_t n = (size_t)1 << L;
    const int cross = L - FHT_LW; /* levels beyond the vector */
    const int rest_plain = cross - FHT_LR;
#ifdef FHT_PLR_
    /* The pipelined base pass covers one cross level fewer; use it unless that costs
     * an extra radix pass. */
    const int rest_pipe = cross - FHT_PLR_;
    const size_t s_pipe = FHT_W_ << FHT_PLR_;
    const int m = FHT_MAX_RADIX_(s_pipe);
    const int passes_plain = (rest_plain + m - 1) / m, passes_pipe = (rest_pipe + m - 1) / m;
    if (passes_pipe <= passes_plain) {
        FHT_NAME(base_pipe)(dst, src, n, pre);
        FHT_NAME(upper)(dst, n, s_pipe, rest_pipe, post, pf);
        return;
    }
#endif
    FHT_NAME(base_plain)(dst, src, n, pre, rest_plain ? NULL : post);
    FHT_NAME(upper)(dst, n, FHT_W_ << FHT_LR, rest_plain, post, pf);
}

/* One row, L >= FHT_LW + FHT_LR. Above the leaf size, a row of at most 2^FHT_BIG_
 * elements is one call of the block kernel plus radix passes for the levels it leaves;
 * a longer row is cut into chunks of 2^(L-3) elements, transformed recursively, and
 * joined by one radix-8 pass over the whole row: three levels is the most a pass can
 * take at the large (multiple of 4 KiB) strides involved without L1 set conflicts, and
 * taking three at each step minimises the number of passes over the slower caches.
 * (Measured on Zen 4 against chunks of 2^(L-4) and of L2 size joined by radix-4
 * passes: 5-9% faster at 2^16 to 2^20.) */
static void FHT_NAME(rec)(FHT_T *dst, const FHT_T *src, int L, const FHT_T *pre, const FHT_T *post,
                           FHT_NAME(prefetch_) *pf)
{
    if (L <= FHT_LEAF) {
        FHT_NAME(leaf)(dst, src, L, pre, post, pf);
        return;
    }
    const size_t n = (size_t)1 << L;
#if defined(FHT_PLR_) && FHT_BLOCKS
    if (L <= FHT_BIG_) {
        /* Joins hidden under the chunks' base passes cost about half as much per level
         * as a radix pass of their own, but whatever is left after them runs alone, and
         * there radix-8 is the cheapest per level, radix-2 the dearest (2.9, 2.3 and
         * 2.5 cycles a vector for radix-8, 4 and 2 on Zen 4). So with rem levels above
         * the chunk: 3 = a radix-8 pass; 4 = two joins; 5 = one join and radix-8;
         * 6, 7 = two joins and radix-4 or 8. (At rem = 3 and 5, joins followed by
         * a radix-2 pass were measured 8-14% slower.) */
        const int rem = L - FHT_BC_;
        const int m = rem <= 3 ? 0 : rem == 5 ? 1 : 2;
        const int lb = FHT_BC_ + m * FHT_BRJ_;
        const size_t blk = (size_t)1 << lb;
        FHT_NAME(blocks)(dst, (ptrdiff_t)blk, src, (ptrdiff_t)blk, n >> lb, m, pre, L == lb ? post : NULL,
                         (ptrdiff_t)blk);
        FHT_NAME(upper)(dst, n, blk, L - lb, post, pf);
        return;
    }
#endif
    int sub = L - 3;
    if (sub < FHT_LEAF - 1) sub = FHT_LEAF - 1;
    const size_t chunk = (size_t)1 << sub;
#ifdef FHT_PLR_
    /* Chunks in the fused kernel's range go through it as a batch (with a pre diagonal
     * each chunk needs its own slice of it, which the batch kernel does not take). */
    if (!pre && sub - FHT_LW - FHT_FLB_ >= 1 && sub - FHT_LW - FHT_FLB_ <= 5) {
        FHT_NAME(fused)(dst, (ptrdiff_t)chunk, src, (ptrdiff_t)chunk, n >> sub, sub - FHT_LW - FHT_FLB_, NULL, NULL, 0);
    } else
#endif
    for (size_t c = 0; c < n; c += chunk)
        FHT_NAME(rec)(dst + c, src + c, sub, pre ? pre + c : NULL, NULL, pf);
    FHT_NAME(upper)(dst, n, chunk, L - sub, post, pf);
}

static void FHT_NAME(row)(FHT_T *dst, const FHT_T *src, int L, const FHT_T *pre, const FHT_T *post,
                          FHT_NAME(prefetch_) *pf)
{
    if (L < FHT_LW)
        FHT_NAME(tiny)(dst, src, L, pre, post);
    else if (L < FHT_LW + FHT_LR)
        FHT_NAME(short_row)(dst, src, L - FHT_LW, pre, post);
    else
        FHT_NAME(rec)(dst, src, L, pre, post, pf);
}

void FHT_NAME(batch)(FHT_T *dst, ptrdiff_t dst_stride, const FHT_T *src, ptrdiff_t src_stride, int L,
                     size_t count, const FHT_T *pre, const FHT_T *post, ptrdiff_t ps)
{
    const size_t n = (size_t)1 << L;
    size_t r = 0;
    if (!(pre || post)) ps = 0;
    if (L < FHT_LW + FHT_LR && count > 1 && (size_t)dst_stride == n && (size_t)src_stride == n && ps == 0) {
        /* Short rows back to back: whole register blocks at a time, with the diagonals
         * tiled over one block. */
        const size_t B = FHT_W_ << FHT_LR;
        const size_t packed = (count * n) / B * B;
        if (packed) {
            FHT_T tp[FHT_W_ << FHT_LR], tq[FHT_W_ << FHT_LR];
            /* n divides B (both powers of two, n < B): B / n copies of each diagonal. As a
             * loop over the B elements this took 6 to 9% of a structured sketch of float rows
             * of 64 (AVX-512, Zen 4), depending on where the linker placed the loop. */
            for (size_t i = 0; i < B; i += n) {
                if (pre) memcpy(tp + i, pre, n * sizeof *pre);
                if (post) memcpy(tq + i, post, n * sizeof *post);
            }
            FHT_NAME(packed_rows)(dst, src, packed, L, pre ? tp : NULL, post ? tq : NULL);
        }
        r = packed >> L;
    }
#ifdef FHT_PLR_
    {
        const int rr = L - FHT_LW - FHT_FLB_;
#if FHT_BLOCKS
        /* Rows of one chunk of the block kernel and one join go through it, with that join
         * hidden under the base passes of the following chunks: on Zen 4, 7-9% faster than
         * fused2_ for float rows of 2^12 and about 5% for double rows of 2^11 (AVX-512). */
        if (L == FHT_BC_ + FHT_BRJ_ && L <= FHT_BIG_ && count > r) {
            FHT_NAME(blocks)(dst, dst_stride, src, src_stride, count, 1, pre, post, ps);
            return;
        }
#endif
        if (rr >= 1 && rr <= 5 && L <= FHT_LEAF && count > r) {
            FHT_NAME(fused)(dst, dst_stride, src, src_stride, count, rr, pre, post, ps);
            return;
        }
        /* Rows that are exactly one row of the block kernel go through it together, so
         * that only the last row's joins run alone. */
#if FHT_BLOCKS
        if (L > FHT_LEAF && L <= FHT_BIG_ && L == FHT_BC_ + 2 * FHT_BRJ_ && count > r) {
            FHT_NAME(blocks)(dst, dst_stride, src, src_stride, count, 2, pre, post, ps);
            return;
        }
#endif
    }
#endif
    const int prefetch = n * sizeof(FHT_T) <= (size_t)FHT_PREFETCH && src_stride != 0;
    for (; r < count; r++) {
        FHT_NAME(prefetch_) next = {NULL, NULL};
        if (prefetch && r + 1 < count) {
            next.cur = (const char *)(src + (ptrdiff_t)(r + 1) * src_stride);
            next.end = next.cur + n * sizeof(FHT_T);
        }
        FHT_NAME(row)(dst + (ptrdiff_t)r * dst_stride, src + (ptrdiff_t)r * src_stride, L,
                      pre ? pre + (ptrdiff_t)r * ps : NULL, post ? post + (ptrdiff_t)r * ps : NULL,
                      next.cur ? &next : NULL);
    }
}

/* count columns of 2^L elements: element i of column c at x + c + i * es (es >= count).
 * Each column is transformed in place, levels in increasing stride, so these are the top
 * L levels of a transform of 2^L rows of es elements whose rows have been transformed
 * (see fht_*_cols in fht.h). W columns at a time go through the radix passes of the
 * row kernel (at most 3 levels a pass at strides of 4 KiB or more); the columns left
 * over, one at a time. */
void FHT_NAME(cols)(FHT_T *x, int L, size_t count, ptrdiff_t es)
{
    const size_t n = (size_t)1 << L;
    const size_t step = (size_t)es;
    size_t c = 0;
    for (; c + FHT_W_ <= count; c += FHT_W_) {
        int l0 = 0;
        while (l0 < L) {
            const size_t s = step << l0; /* stride of level l0, in elements */
            const int r = FHT_NAME(next_radix)(L - l0, s);
            for (size_t b = 0; b < n; b += (size_t)1 << (l0 + r))
                for (size_t i = 0; i < ((size_t)1 << l0); i++) {
                    FHT_T *p = x + c + (b + i) * step;
                    switch (r) {
                    case 1: FHT_NAME(col)(p, s, 1, NULL, 0); break;
                    case 2: FHT_NAME(col)(p, s, 2, NULL, 0); break;
                    case 3: FHT_NAME(col)(p, s, 3, NULL, 0); break;
                    default: FHT_NAME(col)(p, s, 4, NULL, 0); break;
                    }
                }
            l0 += r;
        }
    }
    for (; c < count; c++)
        for (size_t h = 1; h < n; h <<= 1)
            for (size_t i = 0; i < n; i += h << 1)
                for (size_t j = i; j < i + h; j++) {
                    FHT_T *pa = x + c + j * step, *pb = x + c + (j + h) * step;
                    const FHT_T a = *pa, b = *pb;
                    *pa = a + b;
                    *pb = a - b;
                }
}

#undef FHT_W_
#undef FHT_LOGSZ_
#undef FHT_LEAF
#undef FHT_RADIX_LOOP_
#undef FHT_PF_STEP_
#undef FHT_PF_LINES_
#undef FHT_PREFETCH
#undef FHT_MAX_RADIX_
#undef FHT_CROSS_
#ifdef FHT_PLR_
#undef FHT_PLR_
#endif
#ifdef FHT_FLB_
#undef FHT_FLB_
#endif
#undef FHT_FUSED_PIPE
#undef FHT_BLOCKS
#ifdef FHT_BC_
#undef FHT_BRR_
#undef FHT_BRJ_
#undef FHT_BC_
#undef FHT_BIG_
#endif
