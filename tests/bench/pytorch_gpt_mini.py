#!/usr/bin/env python3
"""The PyTorch peer of dptrain's built-in "gpt-mini" (src/graph/builtin_models.cpp), nanoGPT's GPT at this
size: byte tokens, a learned token table (wte) and position table (wpe), 4 pre-LayerNorm blocks of
causal self-attention (4 heads, d_model 256; c_attn and c_proj with biases) and an MLP (1024, GELU's tanh
approximation), a final LayerNorm and an LM head without bias, untied: 3,323,392 parameters.
Initialisation as `dptrain train --model gpt-mini` (--init normal --init-std 0.02): every weight matrix and
both embedding tables N(0, 0.02^2), biases 0, LayerNorm weight 1 and bias 0 (nanoGPT's, without its
1/sqrt(2 n_layer) scaling of the residual projections, which dptrain does not do).

The data as dpt_dataset_load_text() cuts it: the UTF-8 text files of the directory (regular files, no
symbolic links, no names starting with '.', bytewise name order, files with a NUL byte or invalid UTF-8
skipped), joined; the last ceil(10%) of the bytes are the validation part; windows of 129 bytes every 128
bytes (inputs the first 128, targets the next byte at each position). The first --train-limit training
windows are shuffled every epoch (the order differs from dptrain's: another generator), the first
--test-limit validation windows evaluate.

The recipe of `dptrain train --model gpt-mini`: AdamW (betas 0.9/0.95, eps 1e-8, weight decay 0.1 on the
weight matrices of the linears only: not embeddings, norms, biases), lr 1e-3 with a linear warm-up over
min(100, steps / 10) steps ((t + 1) / warmup) then a cosine decay to 1e-4 at the last step, gradient norm
clipped at 1.0, batches of 16 windows, cross-entropy averaged over every position.

  pytorch_gpt_mini.py [--threads T] [--seed S] [--steps N] [--batch B] [--test-limit M] [--text DIR]
                      [--precision fp32|bf16] [--json]
      trains N steps (train-limit = N * B windows, one epoch) and prints the validation loss in nats per
      token and bits per byte, and the training tokens/s (steps after the first 3), or one JSON object.

--precision bf16 (the peer of `dptrain train --model gpt-mini --precision bf16`): the forward pass and the
loss, and the validation, under torch.autocast("cpu", dtype=torch.bfloat16); backward, the clipping and the
optimizer step outside it, so the parameters, gradients and AdamW's state stay float32. fp32 (the default):
no autocast.
"""
import argparse
import contextlib
import json
import math
import os
import time

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

DEFAULT_TEXT = "/usr/share/games/fortunes"
CONTEXT, WIDTH, HEADS, LAYERS, VOCAB = 128, 256, 4, 4, 256
PRECISIONS = ("fp32", "bf16")


def autocast(precision):
    """The context of a forward pass and its loss: torch.autocast to bfloat16 on the CPU for "bf16" (the
    parameters stay float32; run backward and the optimizer step outside it), nothing for "fp32"."""
    if precision == "bf16":
        return torch.autocast("cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def is_text(data):
    if b"\0" in data:
        return False
    try:
        data.decode("utf-8", errors="strict")
    except UnicodeDecodeError:
        return False
    return True


def load_corpus(path):
    if os.path.isfile(path):
        return open(path, "rb").read()
    parts = []
    for name in sorted(os.listdir(path), key=lambda n: n.encode()):
        full = os.path.join(path, name)
        if name.startswith(".") or os.path.islink(full) or not os.path.isfile(full):
            continue
        data = open(full, "rb").read()
        if data and is_text(data):
            parts.append(data)
    return b"".join(parts)


def windows(data, begin, end):
    count = (end - begin - 1) // CONTEXT if end - begin > CONTEXT else 0
    arr = np.frombuffer(data, dtype=np.uint8)
    idx = begin + np.arange(count)[:, None] * CONTEXT + np.arange(CONTEXT + 1)[None, :]
    w = torch.from_numpy(arr[idx].astype(np.int64))
    return w[:, :-1].contiguous(), w[:, 1:].contiguous()


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(WIDTH, eps=1e-5)
        self.c_attn = nn.Linear(WIDTH, 3 * WIDTH)
        self.c_proj = nn.Linear(WIDTH, WIDTH)
        self.ln_2 = nn.LayerNorm(WIDTH, eps=1e-5)
        self.c_fc = nn.Linear(WIDTH, 4 * WIDTH)
        self.mlp_proj = nn.Linear(4 * WIDTH, WIDTH)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(WIDTH, dim=2)
        q, k, v = (z.view(b, t, HEADS, c // HEADS).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, WIDTH)
        self.wpe = nn.Embedding(CONTEXT, WIDTH)
        self.h = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = nn.LayerNorm(WIDTH, eps=1e-5)
        self.lm_head = nn.Linear(WIDTH, VOCAB, bias=False)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, 0.0, 0.02)
                if getattr(m, "bias", None) is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe.weight[: idx.shape[1]]
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def learning_rate(t, steps, lr=1e-3, min_lr=1e-4):
    warmup = min(100, steps // 10)
    if t < warmup:
        return lr * (t + 1) / warmup
    span = steps - warmup
    return min_lr + (lr - min_lr) * 0.5 * (1 + math.cos(math.pi * min(t - warmup, span) / span))


def evaluate(model, x, y, batch=64, precision="fp32"):
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad(), autocast(precision):
        for i in range(0, len(x), batch):
            logits = model(x[i : i + batch]).float()
            total += F.cross_entropy(logits.view(-1, VOCAB), y[i : i + batch].reshape(-1), reduction="sum").item()
            count += y[i : i + batch].numel()
    model.train()
    return total / count


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--test-limit", type=int, default=256)
    p.add_argument("--text", default=DEFAULT_TEXT)
    p.add_argument("--precision", choices=PRECISIONS, default="fp32")
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    data = load_corpus(a.text)
    split = len(data) - math.ceil(len(data) * 0.1)
    train_x, train_y = windows(data, 0, split)
    val_x, val_y = windows(data, split, len(data))
    n = a.steps * a.batch
    train_x, train_y, val_x, val_y = train_x[:n], train_y[:n], val_x[: a.test_limit], val_y[: a.test_limit]
    model = GPT()
    decay = [p for n_, p in model.named_parameters() if p.dim() == 2 and not n_.startswith(("wte", "wpe"))]
    other = [p for n_, p in model.named_parameters() if not (p.dim() == 2 and not n_.startswith(("wte", "wpe")))]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": other, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.95), eps=1e-8)
    order = torch.randperm(len(train_x))
    timed_tokens, timed_seconds, losses = 0, 0.0, []
    for t in range(a.steps):
        for g in opt.param_groups:
            g["lr"] = learning_rate(t, a.steps)
        idx = order[t * a.batch : (t + 1) * a.batch]
        start = time.perf_counter()
        with autocast(a.precision):
            logits = model(train_x[idx])
            loss = F.cross_entropy(logits.view(-1, VOCAB), train_y[idx].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        elapsed = time.perf_counter() - start
        losses.append(loss.item())
        if t >= 3:
            timed_tokens += idx.numel() * CONTEXT
            timed_seconds += elapsed
    val = evaluate(model, val_x, val_y, precision=a.precision)
    result = {"peer": f"pytorch {torch.__version__}", "threads": a.threads, "seed": a.seed, "steps": a.steps,
              "batch": a.batch, "precision": a.precision, "val_windows": len(val_x), "val_loss": val,
              "val_bits_per_byte": val / math.log(2),
              "train_loss": float(np.mean(losses)),
              "tokens_per_second": timed_tokens / timed_seconds if timed_seconds > 0 else 0.0,
              "parameters": sum(p.numel() for p in model.parameters())}
    if a.json:
        print(json.dumps(result))
    else:
        label = "" if a.precision == "fp32" else f" ({a.precision} autocast)"
        print(f"{result['peer']}: {a.threads} threads, {a.steps} steps of {a.batch} x {CONTEXT}{label}: val loss "
              f"{val:.4f} nats/token ({result['val_bits_per_byte']:.4f} bits/byte), "
              f"{result['tokens_per_second']:.0f} tokens/s")


if __name__ == "__main__":
    main()
