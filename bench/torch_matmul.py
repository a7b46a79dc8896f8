#!/usr/bin/env python3
"""Times torch.matmul (cuBLAS) on N^3 or MxNxK (f16 or bf16: torch_matmul.py N|MxNxK [f16|bf16]) with CUDA
events: median of 50 after 10 warm-ups, on random inputs. Run in the same device call as
Conflux's own timing (bench/gemm_vs_torch.sh)."""
import sys

import torch

size = sys.argv[1] if len(sys.argv) > 1 else "4096"  # N (N^3) or MxNxK
m, n, k = (int(v) for v in size.split("x")) if "x" in size else (int(size),) * 3
name = sys.argv[2] if len(sys.argv) > 2 else "f16"
dtype = {"f16": torch.float16, "bf16": torch.bfloat16}[name]
a = torch.randn(m, k, device="cuda", dtype=dtype)
b = torch.randn(k, n, device="cuda", dtype=dtype)
for _ in range(10):
    torch.matmul(a, b)
times = []
for _ in range(50):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    torch.matmul(a, b)
    e.record()
    torch.cuda.synchronize()
    times.append(s.elapsed_time(e))
times.sort()
ms = times[len(times) // 2]
label = f"{n}^3" if m == n == k else f"{m}x{n}x{k}"
print(f"torch.matmul {name} {label}: {ms:.3f} ms {2 * m * n * k / ms / 1e9:.1f} TFLOP/s "
      f"({torch.cuda.get_device_name()}, torch {torch.__version__})")
