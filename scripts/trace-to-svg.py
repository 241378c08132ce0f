#!/usr/bin/env python3
"""Draws a dptrain timeline (Chrome trace-event JSON from `dptrain train --trace` or dpt_trainer_trace_write)
as an SVG picture: one lane per row (each device's compute and communication threads), one box per event,
coloured by category (forward, backward, communication, gather, update), gaps as idle time.

    scripts/trace-to-svg.py TRACE.json OUT.svg [--from-ms A] [--to-ms B] [--title TEXT]

--from-ms/--to-ms pick a window of the timeline (milliseconds from the start of the recording), e.g. one
step. Python's standard library only."""
import argparse
import json
import sys
from xml.sax.saxutils import escape

COLOURS = {
    "forward": "#4e79a7",
    "backward": "#f28e2b",
    "communication": "#59a14f",
    "gather": "#b07aa1",
    "update": "#e15759",
}
LANE, GAP, LEFT, TOP, WIDTH = 22, 6, 190, 40, 1000


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("svg")
    parser.add_argument("--from-ms", type=float, default=None)
    parser.add_argument("--to-ms", type=float, default=None)
    parser.add_argument("--title", default="")
    args = parser.parse_args()
    events = json.load(open(args.trace))["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    boxes = [e for e in events if e["ph"] == "X"]
    if not boxes:
        sys.exit("no events in " + args.trace)
    start = args.from_ms * 1e3 if args.from_ms is not None else min(e["ts"] for e in boxes)
    end = args.to_ms * 1e3 if args.to_ms is not None else max(e["ts"] + e["dur"] for e in boxes)
    if end <= start:
        sys.exit("empty window")
    scale = WIDTH / (end - start)
    rows = sorted(names)
    height = TOP + len(rows) * (LANE + GAP) + 60
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{LEFT + WIDTH + 20}" height="{height}" '
        'font-family="sans-serif" font-size="12">',
        f'<rect width="100%" height="100%" fill="white"/>',
        f'<text x="{LEFT}" y="20" font-size="14">{escape(args.title)}</text>',
    ]
    for i, tid in enumerate(rows):
        y = TOP + i * (LANE + GAP)
        out.append(f'<text x="{LEFT - 8}" y="{y + LANE * 0.7:.1f}" text-anchor="end">{escape(names[tid])}</text>')
        out.append(f'<rect x="{LEFT}" y="{y}" width="{WIDTH}" height="{LANE}" fill="#f4f4f4"/>')
        for e in boxes:
            if e["tid"] != tid or e["ts"] + e["dur"] < start or e["ts"] > end:
                continue
            x0 = LEFT + max(0.0, (e["ts"] - start) * scale)
            x1 = LEFT + min(WIDTH, (e["ts"] + e["dur"] - start) * scale)
            colour = COLOURS.get(e.get("cat"), "#999999")
            out.append(
                f'<rect x="{x0:.2f}" y="{y}" width="{max(x1 - x0, 0.5):.2f}" height="{LANE}" fill="{colour}">'
                f'<title>{escape(e["name"])} {e["dur"] / 1e3:.3f} ms</title></rect>'
            )
    axis = TOP + len(rows) * (LANE + GAP) + 4
    out.append(f'<line x1="{LEFT}" y1="{axis}" x2="{LEFT + WIDTH}" y2="{axis}" stroke="black"/>')
    for k in range(6):
        x = LEFT + WIDTH * k / 5
        ms = (start + (end - start) * k / 5) / 1e3
        out.append(f'<line x1="{x:.1f}" y1="{axis}" x2="{x:.1f}" y2="{axis + 5}" stroke="black"/>')
        out.append(f'<text x="{x:.1f}" y="{axis + 18}" text-anchor="middle">{ms:.1f} ms</text>')
    x = LEFT
    for category, colour in COLOURS.items():
        out.append(f'<rect x="{x}" y="{axis + 30}" width="12" height="12" fill="{colour}"/>')
        out.append(f'<text x="{x + 16}" y="{axis + 40}">{category}</text>')
        x += 120
    out.append("</svg>")
    with open(args.svg, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
