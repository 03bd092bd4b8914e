#!/usr/bin/env python3
"""PyTorch on a libcuda: GPU results checked against the CPU's, one line per check.

Run by scripts/torch-device-run.sh once with NVIDIA's libcuda and once with ours (the library
first on LD_LIBRARY_PATH). Each check computes something on the GPU and on the CPU and compares
the largest difference with a tolerance for its data type:

  mm.float32 / mm.float16 / mm.bfloat16   matrix products (cuBLAS, cuBLASLt; the half-precision
                                          ones use cuBLASLt's sm_90 kernels on Hopper)
  linear, bmm                             a Linear layer (GEMM with bias), a batched product
  conv2d / conv2d.float16                 convolutions (cuDNN)
  train                                   20 SGD steps of a two-layer network (forward, backward)
  transformer.forward / .grad             a Transformer encoder layer and one weight's gradient
  sdpa.float16                            scaled dot-product attention in float16
  compile                                 torch.compile: Triton kernels launched through libcuda

Output: `libcuda <path>` (the library the process loaded, from /proc/self/maps), then
`<check> ok|FAILED <difference>` per check (`<check> ERROR <exception>` when it raised), and
`checks: N, passed P`. Exit status 0 when every check passed.
"""
import copy
import sys

import torch

torch.manual_seed(0)
checks = []


def check(name):
    def register(fn):
        checks.append((name, fn))
        return fn
    return register


def diff(got, ref):
    return (got.detach().float().cpu() - ref.detach().float().cpu()).abs().max().item()


@check("mm.float32")
def _():
    a, b = torch.randn(96, 80), torch.randn(80, 72)
    return diff(a.cuda() @ b.cuda(), a @ b), 1e-3


def mm_half(dt):
    a, b = torch.randn(96, 80).to(dt), torch.randn(80, 72).to(dt)
    return diff(a.cuda() @ b.cuda(), a.float() @ b.float()), 0.1 if dt == torch.float16 else 0.5


check("mm.float16")(lambda: mm_half(torch.float16))
check("mm.bfloat16")(lambda: mm_half(torch.bfloat16))


@check("linear")
def _():
    lin, x = torch.nn.Linear(256, 64), torch.randn(256, 256)
    ref = lin(x)
    return diff(copy.deepcopy(lin).cuda()(x.cuda()), ref), 1e-3


@check("bmm")
def _():
    x, y = torch.randn(8, 33, 17), torch.randn(8, 17, 9)
    return diff(torch.bmm(x.cuda(), y.cuda()), torch.bmm(x, y)), 1e-3


@check("conv2d")
def _():
    conv, img = torch.nn.Conv2d(3, 16, 3, padding=1), torch.randn(4, 3, 32, 32)
    ref = conv(img)
    return diff(copy.deepcopy(conv).cuda()(img.cuda()), ref), 1e-3


@check("conv2d.float16")
def _():
    conv, img = torch.nn.Conv2d(8, 16, 3, padding=1), torch.randn(2, 8, 32, 32)
    w, b = conv.weight.half().float(), conv.bias.half().float()
    ref = torch.nn.functional.conv2d(img.half().float(), w, b, padding=1)
    return diff(copy.deepcopy(conv).cuda().half()(img.cuda().half()), ref), 5e-2


@check("train")
def _():
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    data, target = torch.randn(256, 64), torch.randint(0, 10, (256,))

    def run(m, dev):
        m = m.to(dev)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        for _ in range(20):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(m(data.to(dev)), target.to(dev))
            loss.backward()
            opt.step()
        return loss.item()

    return abs(run(copy.deepcopy(model), "cpu") - run(copy.deepcopy(model), "cuda")), 1e-3


def transformer():
    layer = torch.nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
    x = torch.randn(4, 16, 64)
    ref = layer(x)
    ref.sum().backward()
    g = copy.deepcopy(layer).cuda()
    g.zero_grad()
    y = g(x.cuda())
    y.sum().backward()
    return ref, layer.linear1.weight.grad, y, g.linear1.weight.grad


@check("transformer.forward")
def _():
    ref, _, y, _ = transformer()
    return diff(y, ref), 1e-4


@check("transformer.grad")
def _():
    _, gref, _, g = transformer()
    return diff(g, gref), 1e-3


@check("sdpa.float16")
def _():
    q, k, v = (torch.randn(2, 4, 128, 64) for _ in range(3))
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    got = torch.nn.functional.scaled_dot_product_attention(
        *(t.cuda().half() for t in (q, k, v)))
    return diff(got, ref), 2e-2


@check("compile")
def _():
    def f(a, b):
        return (torch.sin(a) * b + a.exp().sum(dim=1, keepdim=True)).relu()

    a, b = torch.randn(256, 64), torch.randn(256, 64)
    return diff(torch.compile(f)(a.cuda(), b.cuda()), f(a, b)), 1e-3


def main():
    torch.zeros(1).cuda()
    with open("/proc/self/maps") as maps:
        libs = sorted({line.split()[-1] for line in maps if "libcuda.so" in line})
    print("libcuda", " ".join(libs), flush=True)
    passed = 0
    for name, fn in checks:
        try:
            d, tol = fn()
            torch.cuda.synchronize()
        except Exception as e:  # a failing check is reported, the others still run
            print(f"{name} ERROR {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
                  flush=True)
            continue
        ok = d <= tol
        passed += ok
        print(f"{name} {'ok' if ok else 'FAILED'} {d:.3g}", flush=True)
    print(f"checks: {len(checks)}, passed {passed}")
    return 0 if passed == len(checks) else 1


if __name__ == "__main__":
    sys.exit(main())
