# torch.add against baracuda's contiguous add (add_shim.so) on the same bf16 [16384, 8192]
# tensors in one process: back-to-back events, 4 rotating sets, 5 interleaved rounds.
import ctypes, sys
import torch
lib = ctypes.CDLL(sys.argv[1] if len(sys.argv) > 1 else "./add_shim.so")
lib.baracuda_add_bf16.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_longlong, ctypes.c_void_p]
n, sets = (16384, 8192), 4
numel = n[0] * n[1]
x = [torch.randn(n, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
y = [torch.randn(n, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
o = [torch.empty(n, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
stream = torch.cuda.current_stream().cuda_stream
ours = lambda i: lib.baracuda_add_bf16(x[i].data_ptr(), y[i].data_ptr(), o[i].data_ptr(), numel, stream)
cases = [("torch add (out=)", lambda i: torch.add(x[i], y[i], out=o[i])), ("baracuda add", ours),
         ("torch add (alloc)", lambda i: torch.add(x[i], y[i]))]
ours(0); torch.cuda.synchronize()
assert torch.equal(o[0], x[0] + y[0]), "baracuda add differs from torch"
res = {c[0]: [] for c in cases}
for rnd in range(5):
    for name, fn in cases:
        for r in range(8): fn(r % sets)
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(41)]
        ev[0].record()
        for r in range(40):
            fn(r % sets); ev[r + 1].record()
        ev[40].synchronize()
        ms = sorted(ev[r].elapsed_time(ev[r + 1]) for r in range(40))
        res[name].append(ms[20])
for name, _ in cases:
    m = sorted(res[name])
    print(f"{name:20s} {m[2]:8.4f} ms {6 * numel / m[2] / 1e6:8.1f} GB/s (rounds {m[0]:.4f}..{m[-1]:.4f})")
