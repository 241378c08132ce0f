#!/usr/bin/env python3
"""Replays tests/capi/gpt_mini_steps in PyTorch: the peer model of tests/bench/pytorch_gpt_mini.py loaded
from dptrain's init.safetensors (names mapped), the same recipe, the same batches (the first STEPS * 16
training windows, in order). Compares every step's loss and gradient norm, and the final parameters, with
dptrain's, prints the table and exits 1 when a difference exceeds its tolerance:
  loss: relative 1e-4, gradient norm 5e-4 (float32 summation orders differ; the loss spike at step 11, a
  batch of unusual text, is reproduced too and amplifies them); final parameters: ||dptrain - pytorch|| /
  ||pytorch - init|| <= 2e-4. Measured over 30 steps (PyTorch 2.15, this CPU): 9.5e-6, 6.1e-5, 8.5e-6.
usage: pytorch_gpt_mini_steps.py TEXT STEPS DIR  (DIR holds init.safetensors, final.safetensors, steps.txt)
"""
import math
import os
import sys

import torch
from safetensors.torch import load_file
from torch.nn import functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
import pytorch_gpt_mini as peer  # noqa: E402

LOSS_TOLERANCE, NORM_TOLERANCE, PARAM_TOLERANCE = 1e-4, 5e-4, 2e-4


def peer_name(name):
    """dptrain's names (nanoGPT's, under transformer.) -> the peer module's."""
    name = name.replace("transformer.", "")
    for a, b in ((".attn.c_attn", ".c_attn"), (".attn.c_proj", ".c_proj"), (".mlp.c_fc", ".c_fc"),
                 (".mlp.c_proj", ".mlp_proj")):
        name = name.replace(a, b)
    return name


def main():
    text, steps, directory = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    torch.set_num_threads(1)
    init = {peer_name(k): v for k, v in load_file(os.path.join(directory, "init.safetensors")).items()}
    final = {peer_name(k): v for k, v in load_file(os.path.join(directory, "final.safetensors")).items()}
    model = peer.GPT()
    model.load_state_dict(init, strict=True)
    data = peer.load_corpus(text)
    x, y = peer.windows(data, 0, len(data) - math.ceil(len(data) * 0.1))
    named = list(model.named_parameters())
    matrix = lambda n, p: p.dim() == 2 and not n.startswith(("wte", "wpe"))  # noqa: E731
    opt = torch.optim.AdamW([{"params": [p for n, p in named if matrix(n, p)], "weight_decay": 0.1},
                             {"params": [p for n, p in named if not matrix(n, p)], "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.95), eps=1e-8)
    theirs = [line.split() for line in open(os.path.join(directory, "steps.txt"))]
    worst_loss = worst_norm = 0.0
    print(f"{'step':>4} {'dptrain loss':>13} {'pytorch loss':>13} {'dptrain norm':>13} {'pytorch norm':>13}")
    for t in range(steps):
        for group in opt.param_groups:
            group["lr"] = peer.learning_rate(t, steps)
        xb, yb = x[t * 16:(t + 1) * 16], y[t * 16:(t + 1) * 16]
        loss = F.cross_entropy(model(xb).view(-1, peer.VOCAB), yb.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0).item()
        opt.step()
        dl, dn = float(theirs[t][1]), float(theirs[t][2])
        worst_loss = max(worst_loss, abs(dl - loss.item()) / abs(loss.item()))
        worst_norm = max(worst_norm, abs(dn - norm) / norm)
        print(f"{t:4d} {dl:13.6f} {loss.item():13.6f} {dn:13.5f} {norm:13.5f}")
    diff = moved = 0.0
    for n, p in model.named_parameters():
        diff += float(((final[n] - p.detach()) ** 2).sum())
        moved += float(((p.detach() - init[n]) ** 2).sum())
    params = math.sqrt(diff / moved)
    print(f"worst relative difference: loss {worst_loss:.2e} (tolerance {LOSS_TOLERANCE:.0e}), gradient norm "
          f"{worst_norm:.2e} ({NORM_TOLERANCE:.0e}); final parameters {params:.2e} ({PARAM_TOLERANCE:.0e})")
    ok = worst_loss <= LOSS_TOLERANCE and worst_norm <= NORM_TOLERANCE and params <= PARAM_TOLERANCE
    print("ok" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
