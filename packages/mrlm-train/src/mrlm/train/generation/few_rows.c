/* y = x W^T (+ bias) for the few rows x of a decoding step, in float32, reading W once.
 *
 * x is [rows, k], W is [n, k] (a linear layer's weight, row-major), y is [rows, n]; all contiguous.
 * Each row of W is read once, front to back, and multiplied with every row of x, which stay in L1;
 * a prefetch 8 KiB ahead on W's stream brings its next rows into L2 while this one is summed, so
 * the product runs at about the speed one core reads memory. Sums run in vector lanes of 16 and are
 * added up lane by lane at the end of each row (another order than a BLAS, the same sums).
 *
 * On x86-64 Linux the function is built three times (AVX-512, AVX2 with FMA, and baseline x86-64)
 * and the loader picks the one the CPU runs, so the same library serves every x86-64 machine
 * (MRLM_ONE_VERSION builds only the one the compiler's flags ask for, as tests do to check each).
 * Built by mrlm/train/generation/few_rows.py; see there for when it is used.
 */
#include <string.h>

#if defined(__x86_64__) && defined(__linux__) && !defined(MRLM_ONE_VERSION)
#define CPU_VERSIONS __attribute__((target_clones("avx512f", "arch=x86-64-v3", "default")))
#else
#define CPU_VERSIONS
#endif

#define LANES 16
#define MAX_ROWS 8
#define PREFETCH_AHEAD 2048 /* floats of W (8 KiB) */

typedef float lanes __attribute__((vector_size(LANES * sizeof(float))));
typedef float half_lanes __attribute__((vector_size(LANES / 2 * sizeof(float))));
typedef float quarter_lanes __attribute__((vector_size(LANES / 4 * sizeof(float))));

static inline __attribute__((always_inline)) lanes load(const float *p) {
    lanes v;
    memcpy(&v, p, sizeof v); /* an unaligned vector load */
    return v;
}

/* The sum of the 16 lanes: halves added twice, then the last four. */
static inline __attribute__((always_inline)) float lane_sum(lanes v) {
    half_lanes low, high;
    memcpy(&low, &v, sizeof low);
    memcpy(&high, (const char *)&v + sizeof low, sizeof high);
    low += high;
    quarter_lanes a, b;
    memcpy(&a, &low, sizeof a);
    memcpy(&b, (const char *)&low + sizeof a, sizeof b);
    a += b;
    return (a[0] + a[2]) + (a[1] + a[3]);
}

/* Inlined with a constant `rows`, so the accumulators live in registers. */
static inline __attribute__((always_inline)) void
rows_times_weight(int rows, const float *x, const float *w, const float *bias, float *y, long n, long k) {
    long whole = k - k % LANES;
    for (long j = 0; j < n; j++) {
        const float *w_row = w + j * k;
        lanes acc[MAX_ROWS] = {0};
        for (long i = 0; i < whole; i += LANES) {
            __builtin_prefetch(w_row + i + PREFETCH_AHEAD, 0, 2); /* read, keep in L2 */
            lanes w_lanes = load(w_row + i);
            for (int r = 0; r < rows; r++) acc[r] += w_lanes * load(x + r * k + i);
        }
        for (int r = 0; r < rows; r++) {
            float sum = lane_sum(acc[r]);
            for (long i = whole; i < k; i++) sum += w_row[i] * x[r * k + i];
            y[r * n + j] = bias ? sum + bias[j] : sum;
        }
    }
}

/* Returns 0, or -1 when `rows` is not in 1..MAX_ROWS (nothing written). `bias` may be NULL. */
CPU_VERSIONS int
mrlm_few_rows(int rows, const float *x, const float *w, const float *bias, float *y, long n, long k) {
    switch (rows) {
    case 1: rows_times_weight(1, x, w, bias, y, n, k); return 0;
    case 2: rows_times_weight(2, x, w, bias, y, n, k); return 0;
    case 3: rows_times_weight(3, x, w, bias, y, n, k); return 0;
    case 4: rows_times_weight(4, x, w, bias, y, n, k); return 0;
    case 5: rows_times_weight(5, x, w, bias, y, n, k); return 0;
    case 6: rows_times_weight(6, x, w, bias, y, n, k); return 0;
    case 7: rows_times_weight(7, x, w, bias, y, n, k); return 0;
    case 8: rows_times_weight(8, x, w, bias, y, n, k); return 0;
    default: return -1;
    }
}
