// Kwker's parallel work on torch's intra-op threads (kwker_set_thread_runner), shared by the
// sort operators (ops.cc) and the CPU backend's (linear_ops.cc). Between two kernels torch's
// OpenMP workers spin waiting for work (GNU OpenMP's default spin lasts milliseconds on AMD
// cores), and a second pool running beside them on the same cores loses that time: 5 ms of
// every 20 ms decode step of SmolLM2, and torch.sort(t, stable=True) of 1e6 int32 right after
// torch's own sort 6.8-7.8 ms instead of 2.4-2.6 (avx2 engine, Zen 5). With one torch thread,
// or inside torch's own parallel region, the runner declines and Kwker's pool runs.
#pragma once
#include <ATen/Parallel.h>

#include <cstdint>

#include "kwker/kwker.h"

namespace kwker_torch {

inline int torch_runner(int ntasks, void (*fn)(void *, int), void *ctx) {
  if (at::get_num_threads() < 2 || at::in_parallel_region()) return 0;
  at::parallel_for(0, ntasks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) fn(ctx, int(i));
  });
  return 1;
}

// For the scope of one operator call on the calling thread.
struct OnTorchThreads {
  kwker_thread_runner prev = kwker_set_thread_runner(torch_runner);
  ~OnTorchThreads() { kwker_set_thread_runner(prev); }
};

}  // namespace kwker_torch
