/* A 2-D five-point stencil swept several times: its speed depends on vectorisation, unrolling
 * and the target ISA, so compiler flags move it measurably. Prints "<ns per sweep> <checksum>". */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifndef N
#define N 384
#endif

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static void sweep(float *restrict out, const float *restrict in) {
    for (int i = 1; i < N - 1; i++)
        for (int j = 1; j < N - 1; j++)
            out[i * N + j] = 0.2f * (in[i * N + j] + in[(i - 1) * N + j] + in[(i + 1) * N + j] +
                                     in[i * N + j - 1] + in[i * N + j + 1]);
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 20;
    float *a = calloc(N * N, sizeof *a), *b = calloc(N * N, sizeof *b);
    if (!a || !b) return 2;
    for (int i = 0; i < N * N; i++) a[i] = (float)((i * 7919) % 1000) / 1000.0f;
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = now_ns();
        sweep(b, a);
        sweep(a, b);
        double t = (now_ns() - t0) / 2;
        if (t < best) best = t;
    }
    double sum = 0;
    for (int i = 0; i < N * N; i++) sum += a[i];
    printf("%.0f %.3f\n", best, sum);
    free(a);
    free(b);
    return 0;
}
