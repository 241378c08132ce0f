#!/usr/bin/env python3
"""The peer of dptrain_bench's training benchmark: the same LeNet (conv 3x3 20, ReLU, avg-pool 2, conv 5x5 50,
ReLU, avg-pool 2, dense 128, ReLU, dense 10; weights N(0, 0.01^2), zero biases), plain SGD lr 0.2, batch 256,
on real Fashion-MNIST batches, with torch.set_num_threads(THREADS). Prints one line:
    pytorch <version>: <threads> threads, <images/s> images/s
(with --precision bf16: "pytorch <version>: <threads> threads, bf16 autocast, <images/s> images/s").
--precision bf16 runs the forward pass and the loss under torch.autocast("cpu", dtype=torch.bfloat16), the
backward pass and the optimizer step outside it: the parameters, their gradients and the update stay float32
(autocast's mixed precision; the peer of `dptrain_bench --precision bf16`). fp32 (the default): no autocast.
Usage: pytorch_lenet.py THREADS STEPS [DATA_DIR] [--precision fp32|bf16]"""
import argparse
import contextlib
import gzip
import struct
import time

import numpy as np
import torch
from torch import nn

DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"
PRECISIONS = ("fp32", "bf16")


def autocast(precision):
    """The context of a forward pass and its loss: torch.autocast to bfloat16 on the CPU for "bf16" (the
    parameters stay float32; run backward and the optimizer step outside it), nothing for "fp32"."""
    if precision == "bf16":
        return torch.autocast("cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def load_images(path):
    with gzip.open(path, "rb") as f:
        magic, count, rows, cols = struct.unpack(">IIII", f.read(16))
        if magic != 0x803:
            raise SystemExit(f"{path}: bad magic {magic:#x}")
        data = np.frombuffer(f.read(count * rows * cols), dtype=np.uint8)
    return data.reshape(count, 1, rows, cols).astype(np.float32) / 255.0


def load_labels(path):
    with gzip.open(path, "rb") as f:
        magic, count = struct.unpack(">II", f.read(8))
        if magic != 0x801:
            raise SystemExit(f"{path}: bad magic {magic:#x}")
        return np.frombuffer(f.read(count), dtype=np.uint8).astype(np.int64)


def lenet():
    net = nn.Sequential(
        nn.Conv2d(1, 20, kernel_size=3), nn.ReLU(), nn.AvgPool2d(2),
        nn.Conv2d(20, 50, kernel_size=5), nn.ReLU(), nn.AvgPool2d(2),
        nn.Flatten(), nn.Linear(800, 128), nn.ReLU(), nn.Linear(128, 10))
    for m in net:
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.normal_(m.weight, std=0.01)
            nn.init.zeros_(m.bias)
    return net


def main():
    p = argparse.ArgumentParser(prog="pytorch_lenet.py", description="LeNet training images/s in PyTorch")
    p.add_argument("threads", type=int)
    p.add_argument("steps", type=int)
    p.add_argument("data", nargs="?", default=DEFAULT_DATA, help="Fashion-MNIST directory")
    p.add_argument("--precision", choices=PRECISIONS, default="fp32")
    a = p.parse_args()
    threads, steps, data = a.threads, a.steps, a.data
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    x = torch.from_numpy(load_images(f"{data}/train-images-idx3-ubyte.gz"))
    y = torch.from_numpy(load_labels(f"{data}/train-labels-idx1-ubyte.gz"))
    net, loss_fn = lenet(), nn.CrossEntropyLoss()
    opt = torch.optim.SGD(net.parameters(), lr=0.2)
    batch = 256
    batches = [(x[i:i + batch], y[i:i + batch]) for i in range(0, (steps + 3) * batch, batch)]

    def step(xb, yb):
        opt.zero_grad(set_to_none=True)
        with autocast(a.precision):
            loss = loss_fn(net(xb), yb)
        loss.backward()
        opt.step()

    for xb, yb in batches[:3]:  # warm-up
        step(xb, yb)
    t0 = time.perf_counter()
    for xb, yb in batches[3:]:
        step(xb, yb)
    rate = steps * batch / (time.perf_counter() - t0)
    label = "" if a.precision == "fp32" else f" {a.precision} autocast,"
    print(f"pytorch {torch.__version__}: {threads} threads,{label} {rate:.0f} images/s", flush=True)


if __name__ == "__main__":
    main()
