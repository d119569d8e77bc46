/* y = x W^T (+ bias) for the few rows x of a decoding step, in float32, reading W once; and one
 * decoder layer of such a step in one call (mrlm_decode_layer, below).
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
#include <math.h>
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

/* ------------------------------------------------------------------ one decoder layer */

/* A pre-norm decoder layer (RMSNorm, rotary self-attention with grouped key/value heads, a gated
 * MLP with SiLU), as mrlm/train/generation/direct.py lays it out: the q, k and v projections are one
 * weight, q and k rows in rotary-pair order (the two coordinates a rotation mixes are adjacent).
 * Every bias may be NULL. Mirrored by few_rows.DecodeLayer. */
struct decode_layer {
    long hidden, heads, kv_heads, head_dim, intermediate;
    float eps;
    const float *input_norm, *post_norm;          /* [hidden] */
    const float *qkv, *qkv_bias;                   /* [(heads + 2 kv_heads) head_dim, hidden] */
    const float *o, *o_bias;                       /* [hidden, heads head_dim] */
    const float *gate, *gate_bias, *up, *up_bias;  /* [intermediate, hidden] */
    const float *down, *down_bias;                 /* [hidden, intermediate] */
};

/* The floats of scratch mrlm_decode_layer needs for `rows` rows and `slots` cache slots. */
long mrlm_decode_scratch(const struct decode_layer *l, int rows, long slots) {
    long qkv = (l->heads + 2 * l->kv_heads) * l->head_dim;
    return rows * (l->hidden + qkv + l->heads * l->head_dim + 2 * l->intermediate) + slots;
}

/* y = x * weight / sqrt(mean(x^2) + eps), over one row of n (the squares summed in double). */
static inline __attribute__((always_inline)) void
rms_norm(const float *x, const float *weight, float eps, float *y, long n) {
    double squares = 0.0;
    for (long i = 0; i < n; i++) squares += (double)x[i] * x[i];
    float scale = 1.0f / sqrtf((float)(squares / n) + eps);
    for (long i = 0; i < n; i++) y[i] = x[i] * scale * weight[i];
}

/* y = rms_norm(x) * norm W^T (+ bias) for `rows` rows x [rows, k] (a model's final norm and output
 * projection); `scratch` holds `scratch_size` floats, at least rows * k. Returns 0, or -1 when `rows`
 * is not in 1..MAX_ROWS or the scratch is too small (nothing written). */
CPU_VERSIONS int
mrlm_normed_few_rows(int rows, const float *x, const float *norm, float eps, const float *w, const float *bias,
                     float *y, long n, long k, float *scratch, long scratch_size) {
    if (rows < 1 || rows > MAX_ROWS || scratch_size < rows * k) return -1;
    for (int r = 0; r < rows; r++) rms_norm(x + r * k, norm, eps, scratch + r * k, k);
    return mrlm_few_rows(rows, scratch, w, bias, y, n, k);
}

static inline __attribute__((always_inline)) float dot(const float *a, const float *b, long n) {
    long whole = n - n % LANES;
    lanes acc = {0};
    for (long i = 0; i < whole; i += LANES) acc += load(a + i) * load(b + i);
    float sum = lane_sum(acc);
    for (long i = whole; i < n; i++) sum += a[i] * b[i];
    return sum;
}

/* One decoding step through one layer, for `rows` rows (1..MAX_ROWS) of `hidden` [rows, hidden],
 * updated in place:
 *   h += o(attention(rotary(q), rotary(k), v)),  q, k, v = qkv(rms_norm(h) * input_norm)
 *   h += down(silu(gate(n)) * up(n)),            n = rms_norm(h) * post_norm
 * `rotation` [rows, head_dim / 2, 2] holds each row's (cos, sin) of this position; each row's key and
 * value are written to slot `slot` of `keys` and `values` [rows, kv_heads, slots, head_dim], and
 * its query heads attend (scaled by 1 / sqrt(head_dim)) to slots 0..slot, `mask` [rows, slots] being
 * added to the scores (0, or -inf where a row must not attend). Query head h reads key/value head
 * h / (heads / kv_heads). `scratch` holds `scratch_size` floats, at least mrlm_decode_scratch's.
 * Returns 0, or -1 for arguments out of range or too small a scratch (nothing written). */
CPU_VERSIONS int
mrlm_decode_layer(const struct decode_layer *l, int rows, float *hidden, const float *rotation,
                  float *keys, float *values, const float *mask, long slot, long slots, float *scratch,
                  long scratch_size) {
    long d = l->head_dim, width = l->hidden, heads = l->heads, kv_heads = l->kv_heads;
    if (rows < 1 || rows > MAX_ROWS || d < 2 || d % 2 || kv_heads < 1 || heads % kv_heads || slot < 0 ||
        slot >= slots || scratch_size < mrlm_decode_scratch(l, rows, slots))
        return -1;
    long qkv_width = (heads + 2 * kv_heads) * d, groups = heads / kv_heads;
    float *normed = scratch;                        /* [rows, hidden] */
    float *qkv = normed + rows * width;             /* [rows, qkv_width] */
    float *attended = qkv + rows * qkv_width;       /* [rows, heads d] */
    float *gate = attended + rows * heads * d;      /* [rows, intermediate] */
    float *up = gate + rows * l->intermediate;      /* [rows, intermediate] */
    float *scores = up + rows * l->intermediate;    /* [slots] */

    for (int r = 0; r < rows; r++) rms_norm(hidden + r * width, l->input_norm, l->eps, normed + r * width, width);
    mrlm_few_rows(rows, normed, l->qkv, l->qkv_bias, qkv, qkv_width, width);

    float scale = 1.0f / sqrtf((float)d);
    for (int r = 0; r < rows; r++) {
        float *row = qkv + r * qkv_width;
        const float *turn = rotation + r * d; /* d / 2 pairs of (cos, sin) */
        for (long h = 0; h < heads + kv_heads; h++) { /* the q heads, then the k heads */
            float *head = row + h * d;
            for (long i = 0; i < d / 2; i++) {
                float a = head[2 * i], b = head[2 * i + 1], c = turn[2 * i], s = turn[2 * i + 1];
                head[2 * i] = a * c - b * s;
                head[2 * i + 1] = a * s + b * c;
            }
        }
        for (long h = 0; h < kv_heads; h++) {
            long cache = ((r * kv_heads + h) * slots + slot) * d;
            memcpy(keys + cache, row + (heads + h) * d, d * sizeof(float));
            memcpy(values + cache, row + (heads + kv_heads + h) * d, d * sizeof(float));
        }
        for (long h = 0; h < heads; h++) {
            const float *query = row + h * d;
            const float *head_keys = keys + (r * kv_heads + h / groups) * slots * d;
            const float *head_values = values + (r * kv_heads + h / groups) * slots * d;
            float top = -INFINITY;
            for (long s = 0; s <= slot; s++) {
                scores[s] = dot(query, head_keys + s * d, d) * scale + mask[r * slots + s];
                if (scores[s] > top) top = scores[s];
            }
            float total = 0.0f;
            for (long s = 0; s <= slot; s++) total += scores[s] = expf(scores[s] - top);
            float *out = attended + (r * heads + h) * d;
            for (long i = 0; i < d; i++) out[i] = 0.0f;
            for (long s = 0; s <= slot; s++) {
                float weight = scores[s] / total;
                const float *value = head_values + s * d;
                for (long i = 0; i < d; i++) out[i] += weight * value[i];
            }
        }
    }

    /* `normed` is free again: it takes each product's output before it is added to `hidden`. */
    mrlm_few_rows(rows, attended, l->o, l->o_bias, normed, width, heads * d);
    for (long i = 0; i < rows * width; i++) hidden[i] += normed[i];
    for (int r = 0; r < rows; r++) rms_norm(hidden + r * width, l->post_norm, l->eps, normed + r * width, width);
    mrlm_few_rows(rows, normed, l->gate, l->gate_bias, gate, l->intermediate, width);
    mrlm_few_rows(rows, normed, l->up, l->up_bias, up, l->intermediate, width);
    for (long i = 0; i < rows * l->intermediate; i++) gate[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
    mrlm_few_rows(rows, gate, l->down, l->down_bias, normed, width, l->intermediate);
    for (long i = 0; i < rows * width; i++) hidden[i] += normed[i];
    return 0;
}
