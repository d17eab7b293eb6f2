/* The flight recorder's check of an iteration's outputs against its plan: what the last iteration's outputs were
 * (kernelcore/observe/iteration_summaries.py, whose name_rows_by_plan is the reference this follows row for row).
 * A training loop runs the same ops every iteration, so every iteration after the first is named by this check;
 * in Python it costs about a microsecond per output (half a millisecond on a BERT-style encoder's step), here a
 * few nanoseconds.
 *
 * It reads the records (a list of tuples) and the arrays in them in place, through CPython's object header and
 * NumPy's public array struct (PyArrayObject_fields, the same from NumPy 1.7 to 2.x up to `flags`), declared
 * below for the few fields it reads; a tuple's items start `tuple_items_at` bytes in (tuple.__basicsize__: 24,
 * or 32 where the tuple caches its hash). kernelcore/native/row_plan.py checks both layouts from Python before
 * the first call (where they differ, a free-threaded or trace-refs interpreter, the Python check runs instead),
 * and only calls this through a handle that keeps the GIL: the caller holds the records, so nothing read here
 * changes or goes during the call. Every field is read only after the object's type was checked.
 *
 * plan: `rows` rows of PLAN_COLUMNS int64 (row_plan.py packs them): what the output was (IN_C, REPEAT, EMPTY,
 * OTHER), its record's order in the list, its position in the record, whether the plan summarised its base, the
 * C summary's kind (0 float32, 1 float64), its size, the row it repeats, and the address of its dtype.
 * Writes, for the IN_C rows, the C summary's items (address, numel, kind) and their rows; the rows Python must
 * take (OTHER: converted or gathered arrays, the single-value writer's); EMPTY rows' numbers; each row's array
 * (scratch: a REPEAT is the same array as the row it repeats). counts[0] and [1]: how many IN_C and OTHER rows.
 * Returns 0, or 1 + the first row whose output is not what the plan says (nothing more is written then). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "kc_native.h"

typedef struct {
    intptr_t refcount;
    const void *type;
} py_object;

typedef struct { /* the items follow at tuple_items_at */
    py_object head;
    intptr_t size;
} py_tuple;

typedef struct {
    py_object head;
    intptr_t size;
    const void **item;
} py_list;

typedef struct { /* NumPy's PyArrayObject_fields, up to the flags */
    py_object head;
    char *data;
    int nd;
    const intptr_t *dimensions;
    const intptr_t *strides;
    const void *base;
    const void *descr;
    int flags;
} np_array;

#define NP_C_CONTIGUOUS 0x0001
#define NP_ALIGNED 0x0100

enum { IN_C, REPEAT, EMPTY, OTHER };
enum { WHAT, ORDER, POS, VIA_BASE, KIND, SIZE, SOURCE, DESCR, PLAN_COLUMNS };

static int64_t numel(const np_array *a) {
    int64_t n = 1;
    for (int i = 0; i < a->nd; i++) n *= a->dimensions[i];
    return n;
}

/* the array whose row a plan row names: the value, or (via_base) the array it views whole, as
 * iteration_summaries.whole_array finds it; NULL where that is not so */
static const np_array *root_of(const np_array *value, int via_base, const void *ndarray_type) {
    if (!via_base) return value;
    const np_array *base = value->base;
    if (base == NULL || base->head.type != ndarray_type || base->descr != value->descr ||
        numel(base) != numel(value))
        return NULL;
    for (int i = 0; i < value->nd; i++)
        if (value->strides[i] == 0) return NULL;
    return base;
}

KC_EXPORT int64_t kc_plan_check(const void *records, const int64_t *plan, int64_t rows, const void *tuple_type,
                                int64_t tuple_items_at, const void *ndarray_type, int64_t *roots, int64_t *items,
                                int64_t *in_c, int64_t *other, double *numbers, int64_t *counts) {
    const py_list *list = records;
    int64_t n_in_c = 0, n_other = 0;
    for (int64_t row = 0; row < rows; row++) {
        const int64_t *p = plan + PLAN_COLUMNS * row;
        const int64_t order = p[ORDER], pos = p[POS];
        if (order < 0 || order >= list->size) return 1 + row;
        const py_tuple *rec = list->item[order];
        if (rec->head.type != tuple_type || pos < 0 || pos >= rec->size) return 1 + row;
        const np_array *value = ((const void *const *)((const char *)rec + tuple_items_at))[pos];
        if (value->head.type != ndarray_type) return 1 + row; /* a device array, a number: Python's to judge */
        const np_array *root = root_of(value, (int)p[VIA_BASE], ndarray_type);
        if (root == NULL) return 1 + row;
        roots[row] = (int64_t)(intptr_t)root;
        switch (p[WHAT]) {
        case IN_C:
            if (numel(root) != p[SIZE] || (intptr_t)root->descr != p[DESCR] ||
                (root->flags & (NP_C_CONTIGUOUS | NP_ALIGNED)) != (NP_C_CONTIGUOUS | NP_ALIGNED))
                return 1 + row;
            items[3 * n_in_c] = (int64_t)(intptr_t)root->data;
            items[3 * n_in_c + 1] = p[SIZE];
            items[3 * n_in_c + 2] = p[KIND];
            in_c[n_in_c++] = row;
            break;
        case REPEAT:
            if (p[SOURCE] < 0 || p[SOURCE] >= row || roots[p[SOURCE]] != roots[row] || numel(value) != p[SIZE])
                return 1 + row;
            break;
        case EMPTY:
            if (numel(root) != 0 || (intptr_t)root->descr != p[DESCR]) return 1 + row;
            break;
        default:
            other[n_other++] = row;
        }
    }
    /* every row is what the plan says: only now the EMPTY rows' numbers (health_summary.c's for no element) */
    for (int64_t row = 0; row < rows; row++) {
        if (plan[PLAN_COLUMNS * row + WHAT] != EMPTY) continue;
        double *out = numbers + 10 * row;
        for (int k = 0; k < 6; k++) out[k] = 0.0;
        out[6] = out[7] = out[8] = NAN;
        out[9] = 0.0;
    }
    counts[0] = n_in_c;
    counts[1] = n_other;
    return 0;
}
