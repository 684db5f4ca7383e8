/* fht_scalar.c - portable C path (any CPU): the same passes on single elements. */
#include "fht_internal.h"

#define FHT_LOAD(p) (*(p))
#define FHT_STORE(p, v) (*(p) = (v))
#define FHT_ADD(a, b) ((a) + (b))
#define FHT_SUB(a, b) ((a) - (b))
#define FHT_MUL(a, b) ((a) * (b))
#define FHT_SUB_X(a, b) ((a) - (b))
#define FHT_INREG1(v, l) (v)
#define FHT_LW 0
#define FHT_LR 3
#define FHT_LEAF_BYTES 14 /* 16 KiB: half of a 32 KiB L1 */

#define FHT_T float
#define FHT_V float
#define FHT_NAME(x) fht_##x##_scalar_f32
#include "fht_kernel.h"
#undef FHT_T
#undef FHT_V
#undef FHT_NAME

#define FHT_T double
#define FHT_V double
#define FHT_NAME(x) fht_##x##_scalar_f64
#include "fht_kernel.h"
