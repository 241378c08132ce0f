#!/usr/bin/env python3
"""Where a dptrain timeline's compute time went (Chrome trace-event JSON from `dptrain train --trace`,
dpt_trainer_trace_write or `dptrain_gpu_bench --trace`): for each device's compute row, the time per step
of each op kind in forward and backward, the gradient reductions and the update, their shares of the row's
busy time, and the slowest nodes.

    scripts/trace-summary.py TRACE.json [--top 8] [--brief]

--brief: one line per compute row (busy and wall time per step, the three largest op kinds' shares), for
tests/gpu/device-check.sh's table. Steps are counted by the row's "update" events (one per step). Python's standard library only."""
import argparse
import collections
import json
import sys


def kind_of(event):
    """("conv2d", "forward") for "layer1.0.conv1 conv2d forward"; (name, "") for the rest."""
    parts = event["name"].rsplit(" ", 2)
    if len(parts) == 3 and parts[2] in ("forward", "backward"):
        return parts[1], parts[2]
    return event["name"].split(" bucket")[0], ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--top", type=int, default=8, help="slowest nodes to list per row")
    parser.add_argument("--brief", action="store_true", help="one line per compute row")
    args = parser.parse_args()
    with open(args.trace, encoding="utf-8") as f:
        events = json.load(f)
    events = events["traceEvents"] if isinstance(events, dict) else events
    names = {e["tid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}
    rows = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X":
            rows[e["tid"]].append(e)
    printed = False
    for tid in sorted(rows):
        name = names.get(tid, f"row {tid}")
        if not name.endswith(" compute"):
            continue
        work = rows[tid]
        steps = sum(1 for e in work if e["name"] == "update") or 1
        busy = sum(e["dur"] for e in work)
        wall = max(e["ts"] + e["dur"] for e in work) - min(e["ts"] for e in work)
        totals = collections.defaultdict(lambda: [0.0, 0.0, 0.0])  # forward, backward, other (us)
        for e in work:
            kind, direction = kind_of(e)
            totals[kind][{"forward": 0, "backward": 1}.get(direction, 2)] += e["dur"]
        largest = sorted(totals.items(), key=lambda item: -sum(item[1]))
        if args.brief:
            shares = ", ".join(f"{kind} {100 * sum(t) / busy:.0f}%" for kind, t in largest[:3])
            print(f"{name}: busy {busy / steps / 1e3:.2f} of {wall / steps / 1e3:.2f} ms per step; {shares}")
            printed = True
            continue
        print(f"{name}: {steps} step(s), busy {busy / steps / 1e3:.3f} ms per step of {wall / steps / 1e3:.3f} "
              f"ms wall ({100 * busy / wall:.1f}% busy)")
        print(f"  {'op kind':<24} {'forward_ms':>11} {'backward_ms':>12} {'other_ms':>9} {'share':>7}")
        for kind, (fwd, bwd, other) in largest:
            print(f"  {kind:<24} {fwd / steps / 1e3:11.3f} {bwd / steps / 1e3:12.3f} {other / steps / 1e3:9.3f} "
                  f"{100 * (fwd + bwd + other) / busy:6.1f}%")
        nodes = collections.defaultdict(float)
        for e in work:
            nodes[e["name"]] += e["dur"]
        print(f"  slowest ({args.top}):")
        for node, us in sorted(nodes.items(), key=lambda item: -item[1])[: args.top]:
            print(f"    {node:<48} {us / steps / 1e3:9.3f} ms per step ({100 * us / busy:.1f}%)")
        printed = True
    if not printed:
        print("no compute rows in the trace", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
