# PyTorch side of map_config.cu: relu, exp, add, cast f32->bf16 at bf16 [16384, 8192],
# same method (events around each launch, 4 rotating sets, median of 32 after 8, 3 rounds).
import torch
import torch.nn.functional as F
n, sets = (16384, 8192), 4
numel = n[0] * n[1]
x = [torch.randn(n, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
y = [torch.randn(n, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
f = [torch.randn(n, device="cuda", dtype=torch.float32) for _ in range(sets)]
o = [torch.empty(n, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
cases = [("torch relu", lambda i: F.relu(x[i]), 4.0), ("torch exp", lambda i: torch.exp(x[i], out=o[i]), 4.0),
         ("torch add", lambda i: torch.add(x[i], y[i], out=o[i]), 6.0), ("torch cast", lambda i: o[i].copy_(f[i]), 6.0)]
cases += [("torch gelu_erf", lambda i: torch._C._nn.gelu(x[i], out=o[i]), 4.0),
          ("torch silu", lambda i: torch._C._nn.silu(x[i], out=o[i]), 4.0)]
import sys
b2b = len(sys.argv) > 1 and sys.argv[1] == "b2b"
res = {c[0]: [] for c in cases}
for rnd in range(3):
    for name, fn, bpe in cases:
        ms = []
        if b2b:
            for r in range(8): fn(r % sets)
            ev = [torch.cuda.Event(enable_timing=True) for _ in range(41)]
            ev[0].record()
            for r in range(40):
                fn(r % sets); ev[r + 1].record()
            ev[40].synchronize()
            ms = sorted(ev[r].elapsed_time(ev[r + 1]) for r in range(40))
            res[name].append(ms[20]); continue
        for r in range(40):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record(); fn(r % sets); b.record(); b.synchronize()
            if r >= 8: ms.append(a.elapsed_time(b))
        ms.sort(); res[name].append(ms[len(ms) // 2])
for name, fn, bpe in cases:
    m = sorted(res[name]); med = m[1]
    print(f"{name:28s} {med:8.4f} ms {bpe * numel / med / 1e6:8.1f} GB/s  (rounds {m[0]:.4f}..{m[-1]:.4f})")
# launch configuration of torch's kernels (grid, block) from the profiler trace
import json, tempfile
from torch.profiler import profile, ProfilerActivity
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    for name, fn, bpe in cases:
        fn(0)
    torch.cuda.synchronize()
with tempfile.NamedTemporaryFile(suffix=".json") as t:
    prof.export_chrome_trace(t.name)
    for e in json.load(open(t.name))["traceEvents"]:
        if e.get("cat") == "kernel":
            a = e.get("args", {})
            print(e["name"][:150], "grid", a.get("grid"), "block", a.get("block"), "regs", a.get("registers per thread"))
