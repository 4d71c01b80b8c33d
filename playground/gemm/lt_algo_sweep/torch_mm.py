# Times torch.matmul (bf16, row-major) on the sweep's shapes with sweep.cu's method: 3 rotating
# buffer sets, 8 warm-up runs, 40 runs with an event between each, the median; 5 rounds.
import torch
shapes = [(2048, 14336, 4096), (2048, 4096, 14336), (2048, 4096, 4096), (128, 14336, 4096), (4096, 4096, 4096), (8192, 8192, 8192)]
print('torch', torch.__version__, 'cublas', torch._C._cuda_getCompiledVersion() if hasattr(torch._C, '_cuda_getCompiledVersion') else '?')
for (M, N, K) in shapes:
    A = [torch.full((M, K), 1.0, dtype=torch.bfloat16, device='cuda') for _ in range(3)]
    B = [torch.full((K, N), 1.0, dtype=torch.bfloat16, device='cuda') for _ in range(3)]
    D = [torch.empty((M, N), dtype=torch.bfloat16, device='cuda') for _ in range(3)]
    meds = []
    for rnd in range(5):
        for r in range(8): torch.matmul(A[r % 3], B[r % 3], out=D[r % 3])
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(41)]
        ev[0].record()
        for r in range(40):
            torch.matmul(A[r % 3], B[r % 3], out=D[r % 3])
            ev[r + 1].record()
        ev[40].synchronize()
        ms = sorted(ev[r].elapsed_time(ev[r + 1]) for r in range(40))
        meds.append(ms[20])
    meds.sort()
    print(f'== {M}x{N}x{K} torch.matmul median-of-rounds {meds[2]:.4f} ms best {meds[0]:.4f}')
