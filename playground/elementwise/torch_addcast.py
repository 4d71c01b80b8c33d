# Times torch add (bf16) and f32->bf16 cast at [16384, 8192] with the method of map_variants.cu
# (CUDA events around each launch, 3 rotating sets, median of 50 after 10 warm-ups).
import torch
n = (16384, 8192)
sets = 3
def time(name, fns, nbytes):
    ms = []
    for r in range(60):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fns[r % sets](); b.record(); b.synchronize()
        if r >= 10: ms.append(a.elapsed_time(b))
    ms.sort(); m = ms[len(ms) // 2]
    print(f"{name:28s} {m:8.4f} ms {nbytes / m / 1e6:8.1f} GB/s")
x = [torch.randn(n, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
y = [torch.randn(n, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
o = [torch.empty(n, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
f = [torch.randn(n, device="cuda", dtype=torch.float32) for _ in range(sets)]
numel = n[0] * n[1]
for rep in range(2):
    time("torch add", [lambda i=i: torch.add(x[i], y[i], out=o[i]) for i in range(sets)], 6.0 * numel)
    time("torch cast f32->bf16", [lambda i=i: o[i].copy_(f[i]) for i in range(sets)], 6.0 * numel)
