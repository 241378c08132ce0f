#!/usr/bin/env python3
"""The PyTorch peer of dptrain's built-in "resnet18" (src/graph/builtin_models.cpp): the ResNet-18 that d2l's
"Multiple GPUs (concise)" chapter trains on 1x28x28 Fashion-MNIST, with dptrain's choices: a 3x3 stem of 64
channels at stride 1, padding 1, no bias, BatchNorm, ReLU, no max-pool; four stages of two torchvision
BasicBlocks (64/128/256/512 channels; stride 2 and a 1x1 conv (no bias) + BatchNorm projection at the start
of stages 2-4); global average pool; dense 10. 11,172,810 parameters. BatchNorm eps 1e-5, momentum 0.1.
Initialisation as `dptrain train --init normal --init-std 0.01` (d2l's init_weights): conv and linear weights
N(0, 0.01^2), the linear bias 0 (dptrain starts every bias at 0; d2l leaves PyTorch's default there),
BatchNorm weight 1, bias 0. Plain SGD (no momentum, no weight decay), pixels / 255 as dptrain's IDX reader.

Three modes:
  pytorch_resnet18.py bench THREADS STEPS BATCH [DATA_DIR] [--precision fp32|bf16]
      training images/s on real Fashion-MNIST batches with torch.set_num_threads(THREADS), 3 warm-up steps.
      Prints one line:  pytorch <version>: <threads> threads, batch <batch>, <images/s> images/s
      (with --precision bf16: "..., batch <batch>, bf16 autocast, <images/s> images/s")
  pytorch_resnet18.py train [--threads T] [--seed S] [--epochs E] [--batch B] [--lr LR]
                            [--train-limit N] [--test-limit M] [--data DIR] [--precision fp32|bf16] [--json]
      the recipe of `dptrain train --model resnet18`: the first N training samples, shuffled every epoch,
      evaluated on the first M test samples in eval mode (running statistics). Prints the test accuracy of
      each epoch, or with --json one object {"seed", "test_accuracy", "train_loss", "epochs_detail", ...}.
  pytorch_resnet18.py evaluate WEIGHTS.safetensors [--recalibrate N] [--batch B] [--threads T] [--data DIR]
      the test accuracy of dptrain's weights (`dptrain train --model resnet18 --save-weights FILE`) three
      ways: with their running statistics (what dptrain reports), with each test batch's own statistics,
      and with running statistics recomputed over N training samples (update_bn's plain average). Prints
      one JSON object {"running_statistics", "test_batch_statistics", "recalibrated", ...}.
--precision bf16 (the peer of dptrain's `--precision bf16`): the forward pass and the loss (and, in train
mode, the evaluation) under torch.autocast("cpu", dtype=torch.bfloat16); backward and the optimizer step
outside it, so the parameters, gradients and BatchNorm statistics stay float32. fp32 (the default): no
autocast.
"""
import argparse
import json
import sys
import time

import numpy as np
import torch
from torch import nn

# The IDX readers, the data directory and the autocast choice of the LeNet peer (this directory is on the
# path when a script here runs).
from pytorch_lenet import DEFAULT_DATA, PRECISIONS, autocast, load_images, load_labels


def load(data, part, limit=0):
    prefix = "train" if part == "train" else "t10k"
    x = load_images(f"{data}/{prefix}-images-idx3-ubyte.gz")
    y = load_labels(f"{data}/{prefix}-labels-idx1-ubyte.gz")
    if limit > 0:
        x, y = x[:limit], y[:limit]
    return torch.from_numpy(np.ascontiguousarray(x)), torch.from_numpy(np.ascontiguousarray(y))


class BasicBlock(nn.Module):
    """torchvision's BasicBlock: conv-bn-relu-conv-bn, plus the input (or its projection), then relu."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout, eps=1e-5, momentum=0.1)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout, eps=1e-5, momentum=0.1)
        self.relu = nn.ReLU()
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, 0, bias=False),
                                            nn.BatchNorm2d(cout, eps=1e-5, momentum=0.1))

    def forward(self, x):
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return self.relu(y + (x if self.downsample is None else self.downsample(x)))


class ResNet18(nn.Module):
    """The parameter names are torchvision's (conv1, bn1, layer1.0.conv1, ..., fc), as dptrain's."""

    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 64, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(64, eps=1e-5, momentum=0.1)
        self.relu = nn.ReLU()
        cin = 64
        for stage, cout in enumerate((64, 128, 256, 512)):
            stride = 1 if stage == 0 else 2
            setattr(self, f"layer{stage + 1}", nn.Sequential(BasicBlock(cin, cout, stride),
                                                             BasicBlock(cout, cout, 1)))
            cin = cout
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(512, classes)
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.normal_(m.weight, std=0.01)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def bench(argv):
    p = argparse.ArgumentParser(prog="pytorch_resnet18.py bench")
    p.add_argument("threads", type=int)
    p.add_argument("steps", type=int)
    p.add_argument("batch", type=int)
    p.add_argument("data", nargs="?", default=DEFAULT_DATA, help="Fashion-MNIST directory")
    p.add_argument("--precision", choices=PRECISIONS, default="fp32")
    a = p.parse_args(argv)
    threads, steps, batch, data = a.threads, a.steps, a.batch, a.data
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    x, y = load(data, "train", (steps + 3) * batch)
    net, loss_fn = ResNet18(), nn.CrossEntropyLoss()
    net.train()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
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
    print(f"pytorch {torch.__version__}: {threads} threads, batch {batch},{label} {rate:.1f} images/s", flush=True)


def evaluate(net, x, y, batch=256, precision="fp32"):
    net.eval()
    correct, loss_sum = 0, 0.0
    with torch.no_grad(), autocast(precision):
        for i in range(0, len(x), batch):
            out = net(x[i:i + batch])
            loss_sum += nn.functional.cross_entropy(out.float(), y[i:i + batch], reduction="sum").item()
            correct += (out.argmax(1) == y[i:i + batch]).sum().item()
    net.train()
    return correct / len(x), loss_sum / len(x)


def train(argv):
    p = argparse.ArgumentParser(prog="pytorch_resnet18.py train")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--train-limit", type=int, default=0)
    p.add_argument("--test-limit", type=int, default=0)
    p.add_argument("--data", default=DEFAULT_DATA)
    p.add_argument("--precision", choices=PRECISIONS, default="fp32")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    x, y = load(a.data, "train", a.train_limit)
    xt, yt = load(a.data, "test", a.test_limit)
    net, loss_fn = ResNet18(), nn.CrossEntropyLoss()
    net.train()
    opt = torch.optim.SGD(net.parameters(), lr=a.lr)
    t_start = time.perf_counter()
    detail = []
    for epoch in range(1, a.epochs + 1):
        t0 = time.perf_counter()
        order = torch.randperm(len(x))
        loss_sum, correct = 0.0, 0
        for i in range(0, len(x), a.batch):
            idx = order[i:i + a.batch]
            xb, yb = x[idx], y[idx]
            opt.zero_grad(set_to_none=True)
            with autocast(a.precision):
                out = net(xb)
                loss = loss_fn(out, yb)
            loss.backward()
            opt.step()
            loss_sum += loss.item() * len(idx)
            correct += (out.argmax(1) == yb).sum().item()
        seconds = time.perf_counter() - t0
        acc, test_loss = evaluate(net, xt, yt, precision=a.precision)
        e = {"epoch": epoch, "train_loss": loss_sum / len(x), "train_accuracy": correct / len(x),
             "test_loss": test_loss, "test_accuracy": acc, "seconds": seconds,
             "images_per_second": len(x) / seconds}
        detail.append(e)
        if not a.json:
            print(f"epoch {epoch}/{a.epochs}  train loss {e['train_loss']:.4f}  test accuracy {acc:.4f}  "
                  f"{e['images_per_second']:.1f} images/s", flush=True)
    result = {"framework": f"pytorch {torch.__version__}", "threads": a.threads, "seed": a.seed,
              "epochs": a.epochs, "batch": a.batch, "lr": a.lr, "precision": a.precision, "train_samples": len(x),
              "test_samples": len(xt),
              "test_accuracy": detail[-1]["test_accuracy"], "test_loss": detail[-1]["test_loss"],
              "train_loss": detail[-1]["train_loss"], "seconds": time.perf_counter() - t_start,
              "parameters": sum(t.numel() for t in net.parameters()), "epochs_detail": detail}
    if a.json:
        print(json.dumps(result), flush=True)


def accuracy_with_batch_statistics(net, x, y, batch):
    """Test accuracy with BatchNorm normalising each test batch by its own statistics (train mode, which also
    moves the running statistics: evaluate with them before this, or recalibrate after it)."""
    net.train()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(x), batch):
            correct += (net(x[i:i + batch]).argmax(1) == y[i:i + batch]).sum().item()
    return correct / len(x)


def recalibrate(net, x, samples, batch, seed):
    """Recomputes every BatchNorm's running statistics as the plain average over `samples` shuffled training
    samples in batches of `batch` (torch.optim.swa_utils.update_bn's rule: momentum None), the weights kept."""
    for m in net.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.reset_running_stats()
            m.momentum = None
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(seed))[:samples]
    net.train()
    with torch.no_grad():
        for i in range(0, len(order), batch):
            net(x[order[i:i + batch]])


def evaluate_weights(argv):
    p = argparse.ArgumentParser(prog="pytorch_resnet18.py evaluate")
    p.add_argument("weights", help="safetensors file (dptrain train --model resnet18 --save-weights FILE)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--recalibrate", type=int, default=20480, help="training samples for the running statistics")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data", default=DEFAULT_DATA)
    a = p.parse_args(argv)
    from safetensors.torch import load_file
    torch.set_num_threads(a.threads)
    net = ResNet18()
    net.load_state_dict(load_file(a.weights), strict=True)
    xt, yt = load(a.data, "test")
    running, _ = evaluate(net, xt, yt, a.batch)
    batch_statistics = accuracy_with_batch_statistics(net, xt, yt, a.batch)
    recalibrate(net, load(a.data, "train")[0], a.recalibrate, a.batch, a.seed)
    recalibrated, _ = evaluate(net, xt, yt, a.batch)
    print(json.dumps({"weights": a.weights, "test_samples": len(xt), "running_statistics": running,
                      "test_batch_statistics": batch_statistics, "recalibrated": recalibrated,
                      "recalibration_samples": a.recalibrate}), flush=True)


def main():
    modes = {"bench": bench, "train": train, "evaluate": evaluate_weights}
    if len(sys.argv) < 2 or sys.argv[1] not in modes:
        raise SystemExit(__doc__)
    modes[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    main()
