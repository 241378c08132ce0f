#!/usr/bin/env python3
"""The PyTorch peer of dptrain_gpu_bench's training rows on one GPU: the same models (pytorch_resnet18.py's
ResNet-18 on 1x28x28, pytorch_gpt_mini.py's gpt-mini), batch and step counts, SGD with momentum 0.9 and lr
0.01, synthetic inputs, 5 warm-up steps then the timed ones (CUDA-synchronised wall clock). fp32 runs with
TF32 off (torch.backends.{cuda.matmul,cudnn}.allow_tf32 = False, as dptrain's default); bf16 runs the
forward pass and the loss under torch.autocast("cuda", dtype=torch.bfloat16), the peer of --precision bf16.
cudnn.benchmark is on: cuDNN's timed choice of algorithms, as dptrain's default (no DPT_GPU_DETERMINISTIC).

    pytorch_gpu_peer.py [--models resnet18,gpt-mini] [--steps 20]

Prints one line per model and precision: "pytorch <model>[/bf16] cuda:0 <images/s> images/s [<tokens/s>
tokens/s]". Needs a CUDA GPU (exit status 77 without one).
"""
import argparse
import contextlib
import os
import sys
import time

import torch
from torch.nn import functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pytorch_gpt_mini import CONTEXT, GPT, VOCAB  # noqa: E402
from pytorch_resnet18 import ResNet18  # noqa: E402


def autocast(precision):
    if precision == "bf16":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def time_steps(model, x, y, loss_of, steps, precision):
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        opt.zero_grad(set_to_none=True)
        with autocast(precision):
            loss = loss_of(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(5):
        step()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / steps


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--models", default="resnet18,gpt-mini")
    p.add_argument("--steps", type=int, default=20)
    a = p.parse_args()
    if not torch.cuda.is_available():
        print("pytorch_gpu_peer: no CUDA device")
        return 77
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda:0")
    print(f"pytorch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {torch.cuda.get_device_name(0)}")
    for name in a.models.split(","):
        for precision in ("fp32", "bf16"):
            torch.manual_seed(0)
            if name == "resnet18":
                batch = 256
                model = ResNet18().to(dev)
                x = torch.rand(batch, 1, 28, 28, device=dev)
                y = torch.randint(0, 10, (batch,), device=dev)
                seconds = time_steps(model, x, y, F.cross_entropy, a.steps, precision)
                extra = ""
            elif name == "gpt-mini":
                batch = 16
                model = GPT().to(dev)
                x = torch.randint(0, VOCAB, (batch, CONTEXT), device=dev)
                y = torch.randint(0, VOCAB, (batch, CONTEXT), device=dev)
                seconds = time_steps(model, x, y, lambda z, t: F.cross_entropy(z.float().view(-1, VOCAB), t.view(-1)),
                                     a.steps, precision)
                extra = f" {batch * CONTEXT / seconds:.0f} tokens/s"
            else:
                print(f"unknown model {name}")
                return 2
            suffix = "/bf16" if precision == "bf16" else ""
            print(f"pytorch {name}{suffix} cuda:0 {batch / seconds:.0f} images/s{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
