// Playground timing harness shared by the *_variants.cu / add_tma.cu experiments: variants of
// one kernel timed back to back, interleaved over rounds so clock and thermal drift hit every
// variant alike.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

struct Variant {
  std::string name;
  std::function<void(int set)> launch;  // one launch on buffer set `set`
  std::vector<float> med;               // per-round medians, ms
};

// Each round, for each variant: 8 warm-up launches, then 40 launches with an event between
// each (sets rotate, so the data is not in L2), and the round's median into var.med.
inline void time_interleaved(std::vector<Variant>& variants, int sets, int rounds) {
  std::vector<cudaEvent_t> ev(41);
  for (auto& e : ev) cudaEventCreate(&e);
  for (int round = 0; round < rounds; ++round)
    for (auto& var : variants) {
      for (int r = 0; r < 8; ++r) var.launch(r % sets);
      cudaEventRecord(ev[0]);
      for (int r = 0; r < 40; ++r) {
        var.launch(r % sets);
        cudaEventRecord(ev[r + 1]);
      }
      cudaEventSynchronize(ev[40]);
      std::vector<float> ms;
      for (int r = 0; r < 40; ++r) {
        float t;
        cudaEventElapsedTime(&t, ev[r], ev[r + 1]);
        ms.push_back(t);
      }
      std::sort(ms.begin(), ms.end());
      var.med.push_back(ms[20]);
    }
  for (auto& e : ev) cudaEventDestroy(e);
}

// The median of a variant's round medians (sorts var.med).
inline float median_of_rounds(Variant& var) {
  std::sort(var.med.begin(), var.med.end());
  return var.med[var.med.size() / 2];
}
