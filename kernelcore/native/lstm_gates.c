/* The arithmetic of an LSTM step between NumPy's two tanh calls (ops/rnn.py cell_forward), on float32, in one
 * pass where NumPy makes four: the gates turned into sigmoids and the cell state made. */
#include <stdint.h>

#include "kc_native.h"
#include "pool.h"

/* after an LSTM step's GEMM and tanh: the gates [rows, 4 hidden] hold tanh of the pre-activations halved for i, f, o
 * (sigmoid(z) = tanh(z / 2) / 2 + 1 / 2) and whole for the candidate g. Here i, f, o become t * 0.5 + 0.5 in place
 * and c = f * c_prev + i * g: in one pass, the operations of ops/rnn.py's NumPy passes in their order (no
 * contraction in ISO C), so the same bits. */
typedef struct {
    float *gates, *c;
    const float *c_prev;
    int64_t hidden;
} gates_args;

static void gate_rows(void *p, int64_t first, int64_t last) {
    const gates_args *a = p;
    const int64_t H = a->hidden;
    for (int64_t b = first; b < last; b++) {
        float *gi = a->gates + b * 4 * H, *gf = gi + H, *gg = gf + H, *go = gg + H, *c = a->c + b * H;
        const float *cp = a->c_prev + b * H;
#pragma omp simd
        for (int64_t j = 0; j < H; j++) {
            const float i = gi[j] * 0.5f + 0.5f, f = gf[j] * 0.5f + 0.5f;
            gi[j] = i;
            gf[j] = f;
            go[j] = go[j] * 0.5f + 0.5f;
            const float fc = f * cp[j], ig = i * gg[j];
            c[j] = fc + ig;
        }
    }
}

KC_EXPORT void kc_lstm_gates_f32(float *gates, const float *c_prev, float *c, int64_t rows, int64_t hidden,
                                 int threads) {
    gates_args a = {gates, c, c_prev, hidden};
    kc_parallel_for(rows, kc_threads_for(rows * 4 * hidden, threads), gate_rows, &a);
}
