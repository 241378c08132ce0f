#!/usr/bin/env python3
"""The PyTorch side of dptrain's safetensors test (tests/core/test_safetensors.cpp).

SmallResNet mirrors the C++ model of that test exactly, names included: a 3x8x8 input, conv1 (3x3, 4
channels, no bias) - bn1 - relu, one residual block of 8 channels at stride 2 (conv1 - bn1 - relu - conv2 -
bn2, plus a 1x1 projection shortcut downsample.0 - downsample.1, then add and relu), global average pooling
and a dense layer fc of 5 outputs. Evaluation mode: BatchNorm normalises with its running statistics.

  generate [DIR]        writes the committed fixture (default tests/fixtures/safetensors):
                          small_resnet.safetensors     the weights, safetensors.torch.save_file(state_dict)
                          small_resnet_io.safetensors  inputs [4, 3, 8, 8], PyTorch's logits [4, 5] (F32)
                                                       and the same in float64 (logits_f64)
  check WEIGHTS IO      loads dptrain's exported WEIGHTS with safetensors.torch.load_file into SmallResNet
                        with load_state_dict(strict=True), computes the logits of IO's "inputs" and compares
                        them with IO's "logits" (dptrain's); exit 0 when they agree, 1 otherwise.

Regenerate the fixture (PyTorch and safetensors from PyPI, e.g. in a venv):
  python3 -m venv /work/.venv-torch && /work/.venv-torch/bin/pip install torch safetensors numpy
  /work/.venv-torch/bin/python tests/tools/pytorch_safetensors_fixture.py generate
"""

import os
import sys

import torch
from torch import nn
from safetensors.torch import load_file, save_file

# Relative tolerance, against the largest |logit| of the batch (see test_safetensors.cpp).
TOLERANCE = 1e-5


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout, eps=1e-5, momentum=0.1)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout, eps=1e-5, momentum=0.1)
        self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, 0, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + self.downsample(x))


class SmallResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(4, eps=1e-5, momentum=0.1)
        self.block = Block(4, 8, 2)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        x = self.block(x)
        return self.fc(x.mean(dim=(2, 3)))


def make_model():
    """Random weights, and BatchNorm running statistics and affine parameters far from their defaults."""
    torch.manual_seed(20240601)
    model = SmallResNet()
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.BatchNorm2d):
                c = module.num_features
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-0.5, 0.5)
                module.running_mean.uniform_(-0.5, 0.5)
                module.running_var.uniform_(0.25, 2.0)
                module.num_batches_tracked.fill_(37)
                assert module.weight.shape == (c,)
            elif isinstance(module, nn.Linear):
                module.bias.uniform_(-0.5, 0.5)
    return model.eval()


def generate(directory):
    os.makedirs(directory, exist_ok=True)
    model = make_model()
    weights = os.path.join(directory, "small_resnet.safetensors")
    save_file(model.state_dict(), weights, metadata={"format": "pt"})
    generator = torch.Generator().manual_seed(7)
    inputs = torch.randn(4, 3, 8, 8, generator=generator)
    with torch.no_grad():
        logits = model(inputs)
        logits_f64 = model.double()(inputs.double())
    save_file({"inputs": inputs, "logits": logits, "logits_f64": logits_f64},
              os.path.join(directory, "small_resnet_io.safetensors"))
    error = ((logits.double() - logits_f64).abs().max() / logits_f64.abs().max()).item()
    print(f"wrote {weights} and small_resnet_io.safetensors; float32 vs float64 logits: {error:.2e} relative")


def check(weights, io):
    model = SmallResNet()
    state = load_file(weights)
    model.load_state_dict(state, strict=True)
    model.eval()
    data = load_file(io)
    with torch.no_grad():
        logits = model(data["inputs"])
    expected = data["logits"]
    if logits.shape != expected.shape:
        print(f"FAIL: logits of shape {tuple(logits.shape)}, dptrain's are {tuple(expected.shape)}")
        return 1
    error = ((logits.double() - expected.double()).abs().max() / expected.double().abs().max()).item()
    counters = sorted({int(v) for k, v in state.items() if k.endswith(".num_batches_tracked")})
    print(f"PyTorch {torch.__version__} loaded {len(state)} tensors strictly (num_batches_tracked {counters}); "
          f"logits vs dptrain's: {error:.2e} relative (tolerance {TOLERANCE:g})")
    if not error <= TOLERANCE:
        print("FAIL: the logits differ")
        return 1
    return 0


def main(argv):
    if len(argv) >= 2 and argv[1] == "generate" and len(argv) <= 3:
        here = os.path.dirname(os.path.abspath(__file__))
        generate(argv[2] if len(argv) == 3 else os.path.join(here, "..", "fixtures", "safetensors"))
        return 0
    if len(argv) == 4 and argv[1] == "check":
        return check(argv[2], argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
