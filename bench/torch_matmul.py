#!/usr/bin/env python3
"""Times torch.matmul (cuBLAS) on N^3 (f16 or bf16: torch_matmul.py N [f16|bf16]) with CUDA
events: median of 50 after 10 warm-ups, on random inputs. Run in the same device call as
Conflux's own timing (bench/gemm_vs_torch.sh)."""
import sys

import torch

n = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
name = sys.argv[2] if len(sys.argv) > 2 else "f16"
dtype = {"f16": torch.float16, "bf16": torch.bfloat16}[name]
a = torch.randn(n, n, device="cuda", dtype=dtype)
b = torch.randn(n, n, device="cuda", dtype=dtype)
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
print(f"torch.matmul {name} {n}^3: {ms:.3f} ms {2 * n**3 / ms / 1e9:.1f} TFLOP/s "
      f"({torch.cuda.get_device_name()}, torch {torch.__version__})")
