// Playground (issue 4): for torch.matmul-style bf16 GEMMs (row-major A [M, K] x B [K, N]), times
// cublasGemmEx's default algorithm (what torch's mm calls) against cuBLASLt's heuristic list
// (the top 16 for the plan's settings: 32 MiB workspace, 16-byte alignment), interleaved over
// rounds (../../elementwise/timing.cuh). Question: is there a rule better than "heuristic #0"?
// Build: nvcc -O2 -std=c++17 -arch=sm_90a sweep.cu -lcublasLt -lcublas -o sweep
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>

#include <cstdio>
#include <vector>

#include "../../elementwise/timing.cuh"

#define CK(x) do { auto e_ = (x); if (e_ != 0) { std::printf("error %d at %s:%d\n", (int)e_, __FILE__, __LINE__); return 1; } } while (0)

int main() {
  const int shapes[][3] = {{2048, 14336, 4096}, {2048, 4096, 14336}, {2048, 4096, 4096}, {128, 14336, 4096},
                           {4096, 4096, 4096}, {8192, 8192, 8192}};
  cublasLtHandle_t lt;
  cublasHandle_t bl;
  CK(cublasLtCreate(&lt));
  CK(cublasCreate(&bl));
  const size_t ws_bytes = 32u << 20;
  void* ws;
  CK(cudaMalloc(&ws, ws_bytes));
  CK(cublasSetWorkspace(bl, ws, ws_bytes));
  for (auto& s : shapes) {
    const int M = s[0], N = s[1], K = s[2];
    const int sets = 3;
    std::vector<__nv_bfloat16*> A(sets), B(sets), D(sets);
    for (int i = 0; i < sets; ++i) {
      CK(cudaMalloc(&A[i], size_t(M) * K * 2));
      CK(cudaMalloc(&B[i], size_t(K) * N * 2));
      CK(cudaMalloc(&D[i], size_t(M) * N * 2));
      CK(cudaMemset(A[i], 0x3c, size_t(M) * K * 2));
      CK(cudaMemset(B[i], 0x3c, size_t(K) * N * 2));
    }
    const float alpha = 1.f, beta = 0.f;
    // Column-major frame: D^T [N x M] = B^T [N x K] * A^T [K x M].
    cublasLtMatmulDesc_t op;
    CK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasLtMatrixLayout_t la, lb, ld;
    CK(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, N, K, N));
    CK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, K, M, K));
    CK(cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, N, M, N));
    cublasLtMatmulPreference_t pref;
    CK(cublasLtMatmulPreferenceCreate(&pref));
    CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof(ws_bytes)));
    cublasLtMatmulHeuristicResult_t res[16];
    int n_res = 0;
    CK(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, ld, ld, pref, 16, res, &n_res));
    std::vector<Variant> vars;
    vars.push_back({"gemmex_default", [&, M, N, K](int i) {
                      cublasGemmEx(bl, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B[i], CUDA_R_16BF, N, A[i], CUDA_R_16BF, K,
                                   &beta, D[i], CUDA_R_16BF, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
                    }});
    for (int r = 0; r < n_res; ++r) {
      if (res[r].state != CUBLAS_STATUS_SUCCESS) continue;
      int algo_id = 0, tile = 0, stages = 0, splitk = 0, swz = 0, cta = 0;
      size_t sz;
      cublasLtMatmulAlgoConfigGetAttribute(&res[r].algo, CUBLASLT_ALGO_CONFIG_ID, &algo_id, sizeof(int), &sz);
      cublasLtMatmulAlgoConfigGetAttribute(&res[r].algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof(int), &sz);
      cublasLtMatmulAlgoConfigGetAttribute(&res[r].algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof(int), &sz);
      cublasLtMatmulAlgoConfigGetAttribute(&res[r].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof(int), &sz);
      cublasLtMatmulAlgoConfigGetAttribute(&res[r].algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swz, sizeof(int), &sz);
      cublasLtMatmulAlgoConfigGetAttribute(&res[r].algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cta, sizeof(int), &sz);
      char name[128];
      std::snprintf(name, sizeof name, "lt#%d id%d tile%d st%d sk%d swz%d cl%d ws%zu", r, algo_id, tile, stages, splitk, swz,
                    cta, res[r].workspaceSize);
      const cublasLtMatmulAlgo_t algo = res[r].algo;
      vars.push_back({name, [&, algo](int i) {
                        cublasLtMatmul(lt, op, &alpha, B[i], la, A[i], lb, &beta, D[i], ld, D[i], ld, &algo, ws, ws_bytes, 0);
                      }});
    }
    time_interleaved(vars, sets, 5);
    std::printf("== %dx%dx%d (%d heuristics)\n", M, N, K, n_res);
    for (auto& v : vars) {
      std::vector<float> m = v.med;
      std::sort(m.begin(), m.end());
      std::printf("  %-48s median-of-rounds %.4f ms  best %.4f  %.1f TFLOP/s\n", v.name.c_str(), m[m.size() / 2], m[0],
                  2.0 * M * N * K / (m[m.size() / 2] * 1e-3) / 1e12);
    }
    for (int i = 0; i < sets; ++i) cudaFree(A[i]), cudaFree(B[i]), cudaFree(D[i]);
  }
  CK(cudaGetLastError());
  return 0;
}
