#!/usr/bin/env python3
"""Issue 16's attention bar in one device call: Conflux's fused attention kernel
(conflux_bench_attention: the attention op on the CUDA target, and the unfused
dot -> scale -> softmax -> dot chain it replaces) against torch.nn.functional.
scaled_dot_product_attention (f16, PyTorch's fastest backend for the shape) on the same shapes:
sequence 197, 1500 and 4096, head dims 64 and 128. TFLOP/s counts 4 * B * H * S^2 * D.

    python3 bench/attention_vs_sdpa.py BENCH_BINARY [--json FILE] [--configs]

--configs also times every attention config on each shape and prints them below the table.
"""
import argparse
import json
import subprocess
import sys


def sdpa_ms(batch, heads, seq, d, mask="none"):
    """The median of 7 windows of 20 calls. mask: as the bench's shape says (none, per_key
    [B, 1, 1, S] or per_row [B, 1, S, S]), the same values: batch entry b masks its last
    8 * (b % 4) keys with -10000."""
    import torch
    import torch.nn.functional as F
    q, k, v = (torch.randn(batch, heads, seq, d, device="cuda", dtype=torch.half)
               for _ in range(3))
    bias = None
    if mask != "none":
        keys = torch.arange(seq, device="cuda")
        masked = keys[None, :] + 8 * (torch.arange(batch, device="cuda")[:, None] % 4) >= seq
        bias = torch.where(masked, -10000.0, 0.0).half()[:, None, None, :]
        if mask == "per_row":
            bias = bias.expand(batch, 1, seq, seq).contiguous()
    with torch.no_grad():
        for _ in range(10):
            F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        windows = []
        for _ in range(7):
            s.record()
            for _ in range(20):
                F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
            e.record()
            e.synchronize()
            windows.append(s.elapsed_time(e) / 20)
    return sorted(windows)[3]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bench")
    ap.add_argument("--json")
    ap.add_argument("--configs", action="store_true")
    args = ap.parse_args()
    shapes = json.loads(subprocess.run([args.bench, "--list"], capture_output=True, text=True,
                                       check=True).stdout)
    run = subprocess.run([args.bench] + (["--configs"] if args.configs else []),
                         capture_output=True, text=True)
    rows = [json.loads(l) for l in run.stdout.splitlines() if l.startswith("{")]
    by_name = {r["shape"]: r for r in rows}
    print(f"{'shape':20} {'conflux ms':>10} {'TFLOP/s':>8} {'unfused ms':>10} {'sdpa ms':>8} "
          f"{'TFLOP/s':>8} {'conflux/sdpa':>12} check")
    for s in shapes:
        r = by_name.get(s["name"], {"shape": s["name"], "error": "no result"})
        ms = sdpa_ms(s["batch"], s["heads"], s["seq"], s["head_dim"], s.get("mask", "none"))
        flops = 4.0 * s["batch"] * s["heads"] * s["seq"] ** 2 * s["head_dim"]
        r["sdpa_ms"] = ms
        r["sdpa_tflops"] = flops / (ms * 1e-3) / 1e12
        if "fused_ms" in r:
            r["share_of_sdpa"] = r["fused_tflops"] / r["sdpa_tflops"]
            print(f"{s['name']:20} {r['fused_ms']:10.4f} {r['fused_tflops']:8.1f} "
                  f"{r.get('unfused_ms', float('nan')):10.4f} {ms:8.4f} {r['sdpa_tflops']:8.1f} "
                  f"{r['share_of_sdpa']:11.2f}x {r.get('check', '-')} "
                  f"{r.get('rel_rms_vs_unfused', float('nan')):.1e}")
        else:
            print(f"{s['name']:20} error: {r.get('error', '')[:200]}")
        by_name[s["name"]] = r
    for r in by_name.values():
        if "config_ms" in r:
            best = min(r["config_ms"], key=r["config_ms"].get)
            cells = " ".join(f"{k} {v:.4f}" for k, v in sorted(r["config_ms"].items()))
            print(f"{r['shape']:20} heuristic {r.get('heuristic_config')}, best {best}: {cells}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(list(by_name.values()), f, indent=1)
    return 0 if all("fused_ms" in r and r.get("check") == "pass" for r in by_name.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
