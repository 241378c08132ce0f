#!/usr/bin/env python3
"""The peer of `dptrain_pipeline_bench --models deep-mlp --stages 2`: pipeline model parallel in PyTorch
(torch.distributed.pipelining), one process per stage.

The model is dptrain's "deep-mlp": 1x28x28 flattened to 784, eight Linear(., 1024) + ReLU, Linear(1024, 10)
(8.2 M parameters), cut 4 + 4 hidden layers (stage 1 also holds the head), the cut dptrain's work-balanced
default makes. Cross-entropy is the batch mean (dptrain's convention): each micro-batch's mean loss, and the
schedule divides the accumulated gradients by M (scale_grads=True), so a step's gradient is the whole
batch's mean gradient for any M. SGD lr 0.1, momentum 0.9, applied by each stage to its own parameters
after each step. Inputs are dptrain_pipeline_bench's: x[i] = (i * 2654435761 mod 1000) / 1000, y = i mod 10.

For each schedule (1F1B, GPipe) and micro-batch count M, two processes (gloo, 127.0.0.1, one intra-op
thread each) run 1 warm-up step and then STEPS timed steps; the table gives images/s, the ratio to a plain
one-process, one-thread training step of the whole model on the whole batch (measured first, in this run),
and each stage's idle fraction: 1 - (time in its own forward, loss and backward computations) / (wall time
of its schedule.step()), next to GPipe's (S - 1) / (M + S - 1). "loss diff" is the largest difference
between the pipeline's per-step losses and the single process's on the same steps: near 0 (float
rounding) shows the pipeline trains the same model the same way.

    pytorch_pipeline.py [--batch 1024] [--micro 1,2,4,8,16] [--steps 3] [--schedules 1f1b,gpipe]

Standard library and torch only; not part of CI.
"""
import argparse
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

STAGES = 2
HIDDEN = 8           # hidden Linear + ReLU layers
CUT = HIDDEN // 2    # hidden layers on stage 0
SCHEDULES = {"1f1b": Schedule1F1B, "gpipe": ScheduleGPipe}


def deep_mlp():
    """The whole model, built under a fixed seed so that every process (the baseline and both stages)
    starts from the same weights and the losses can be compared."""
    torch.manual_seed(0)
    layers = [nn.Flatten()]
    width = 28 * 28
    for _ in range(HIDDEN):
        layers += [nn.Linear(width, 1024), nn.ReLU()]
        width = 1024
    layers.append(nn.Linear(width, 10))
    return nn.Sequential(*layers)


def stage_module(rank):
    # nn.Sequential slices share the modules of the whole model; each process keeps only its half.
    # Index 0 is Flatten, then two modules per hidden layer.
    model = deep_mlp()
    split = 1 + 2 * CUT
    return model[:split] if rank == 0 else model[split:]


def batch_data(batch):
    n = batch * 28 * 28
    # The same hash as dptrain_pipeline_bench (64-bit product, no wrap-around at this size).
    x = (torch.arange(n, dtype=torch.int64) * 2654435761 % 1000).to(torch.float32) / 1000
    y = torch.arange(batch, dtype=torch.int64) % 10
    return x.view(batch, 1, 28, 28), y


def sgd(params):
    return torch.optim.SGD(params, lr=0.1, momentum=0.9)


def baseline(batch, steps):
    """One process, one thread, the whole model on the whole batch: images/s and the timed steps' losses."""
    model, loss_fn = deep_mlp(), nn.CrossEntropyLoss()
    opt = sgd(model.parameters())
    x, y = batch_data(batch)
    losses, seconds = [], 0.0
    for s in range(1 + steps):
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        if s > 0:  # step 0 is the warm-up (allocation, first touch)
            seconds += time.perf_counter() - start
            losses.append(loss.item())
    return batch * steps / seconds, losses


class TimedStage(PipelineStage):
    """A PipelineStage that adds up the time spent in its own forward and backward computations. The
    schedule receives before and sends after these calls, so what they take is compute; the rest of
    schedule.step() is waiting for the neighbour (the bubble) and the hand-over."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.compute = 0.0

    def forward_one_chunk(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return super().forward_one_chunk(*args, **kwargs)
        finally:
            self.compute += time.perf_counter() - start

    def backward_one_chunk(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return super().backward_one_chunk(*args, **kwargs)
        finally:
            self.compute += time.perf_counter() - start


def run_config(rank, schedule_name, micro, batch, steps):
    """One (schedule, M) on this rank: fresh weights and optimizer state, 1 warm-up step, `steps` timed.
    Returns (seconds of the timed steps, mean idle fraction, per-step mean losses on the last stage)."""
    module = stage_module(rank)
    stage = TimedStage(module, rank, STAGES, torch.device("cpu"))
    loss_seconds = 0.0

    def loss_fn(output, target):
        # The schedule calls the loss on the last stage outside forward_one_chunk, so it is timed here and
        # counted as compute too.
        nonlocal loss_seconds
        start = time.perf_counter()
        loss = nn.functional.cross_entropy(output, target)
        loss_seconds += time.perf_counter() - start
        return loss

    # scale_grads=True (the default) divides the summed micro-batch gradients by M: with a mean loss per
    # micro-batch that is the whole batch's mean gradient.
    schedule = SCHEDULES[schedule_name](stage, n_microbatches=micro, loss_fn=loss_fn, scale_grads=True)
    opt = sgd(module.parameters())
    x, y = batch_data(batch)

    def step():
        nonlocal loss_seconds
        losses = []
        opt.zero_grad(set_to_none=True)  # the stage accumulates micro-batch gradients into .grad
        stage.compute = loss_seconds = 0.0
        start = time.perf_counter()
        if rank == 0:
            schedule.step(x)
        else:
            schedule.step(target=y, losses=losses, return_outputs=False)
        wall = time.perf_counter() - start
        opt.step()
        idle = 1.0 - (stage.compute + loss_seconds) / wall
        return idle, (sum(l.item() for l in losses) / micro if losses else None)

    step()  # warm-up: shape inference between the stages, allocation, first touch
    dist.barrier()
    idle, losses = 0.0, []
    start = time.perf_counter()
    for _ in range(steps):
        i, loss = step()
        idle += i / steps
        losses.append(loss)
    dist.barrier()  # the step ends when the slower stage is done
    return time.perf_counter() - start, idle, losses


def worker(rank, port, configs, batch, steps, results):
    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=STAGES)
    try:
        for schedule_name, micro in configs:
            seconds, idle, losses = run_config(rank, schedule_name, micro, batch, steps)
            # Rank 0 collects both stages' figures (the losses live on the last stage) for the parent.
            gathered = [None] * STAGES if rank == 0 else None
            dist.gather_object((seconds, idle, losses), gathered, dst=0)
            if rank == 0:
                results.put((schedule_name, micro, gathered))
    finally:
        dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    p = argparse.ArgumentParser(prog="pytorch_pipeline.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--micro", default="1,2,4,8,16", help="micro-batch counts, a comma list")
    p.add_argument("--steps", type=int, default=3, help="timed steps after 1 warm-up step")
    p.add_argument("--schedules", default="1f1b,gpipe", help="a comma list of 1f1b, gpipe")
    a = p.parse_args()
    micros = [int(m) for m in a.micro.split(",") if m]
    schedules = [s.strip().lower() for s in a.schedules.split(",") if s.strip()]
    for s in schedules:
        if s not in SCHEDULES:
            p.error(f"unknown schedule {s} (1f1b, gpipe)")
    if a.steps < 1:
        p.error("--steps: at least 1")
    for m in micros:
        if m < 1 or a.batch % m:
            # Unequal micro-batches would make the mean of micro-batch means differ from the batch mean.
            p.error(f"--micro {m}: the batch {a.batch} must split into M equal micro-batches")

    torch.set_num_threads(1)
    print(f"pytorch {torch.__version__}: deep-mlp, batch {a.batch}, S={STAGES} (4 + 4 hidden layers), "
          f"gloo, 1 thread per process, mean cross-entropy, SGD lr 0.1 momentum 0.9, "
          f"1 warm-up + {a.steps} timed steps", flush=True)
    base_rate, base_losses = baseline(a.batch, a.steps)

    # Schedule1F1B refuses M < S (its warm-up needs a micro-batch per stage in flight); those rows are
    # printed as refused instead of failing the run.
    configs = [(s, m) for s in schedules for m in micros if not (s == "1f1b" and m < STAGES)]
    header = (f"{'schedule':<8} {'M':>3} {'images/s':>10} {'vs 1 proc':>9} {'idle per stage':<15} "
              f"{'GPipe':>6} {'loss diff':>9}")
    print(header)
    print(f"{'-':<8} {1:>3} {base_rate:>10.1f} {'1.00x':>9} {'-':<15} {'-':>6} {'-':>9}", flush=True)

    ctx = mp.get_context("spawn")
    results = ctx.SimpleQueue()
    procs = mp.start_processes(worker, args=(free_port(), configs, a.batch, a.steps, results),
                               nprocs=STAGES, join=False, start_method="spawn")

    def next_result():
        # A plain results.get() would block forever if a stage died; join() raises with its error instead.
        while results.empty():
            if procs.join(timeout=0.5) and results.empty():
                sys.exit("pytorch_pipeline.py: the stage processes ended without a result")
        return results.get()

    for s in schedules:
        for m in micros:
            ideal = f"{100 * (STAGES - 1) / (m + STAGES - 1):.0f}%"
            if (s, m) not in configs:
                print(f"{s:<8} {m:>3} {'refused by Schedule1F1B: M < S':>42} {ideal:>6} {'-':>9}", flush=True)
                continue
            got_s, got_m, gathered = next_result()  # the workers run the configs in this order
            assert (got_s, got_m) == (s, m)
            seconds = max(g[0] for g in gathered)
            rate = a.batch * a.steps / seconds
            idle = " ".join(f"{100 * g[1]:.0f}%" for g in gathered)
            diff = max(abs(l - b) for l, b in zip(gathered[-1][2], base_losses))
            print(f"{s:<8} {m:>3} {rate:>10.1f} {rate / base_rate:>8.2f}x {idle:<15} {ideal:>6} {diff:>9.1e}",
                  flush=True)
    while not procs.join():  # join() returns once per process that ends
        pass

if __name__ == "__main__":
    main()
