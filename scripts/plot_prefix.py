#!/usr/bin/env python3
"""Plots the simulated agent session of docs/prefix-cache.md: cached tokens per turn,
Off (a fresh selection every turn) against Hold, with Hold's re-anchors marked.

    cargo run --release --example prefix_sim > docs/prefix-sim.csv
    python3 scripts/plot_prefix.py docs/prefix-sim.csv docs/prefix-sim.png

Needs matplotlib (pip install matplotlib). CI does not run it; the PNG is committed.
"""

import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(source: str, target: str) -> None:
    with open(source, newline="") as f:
        rows = list(csv.DictReader(f))
    turn = [int(r["turn"]) for r in rows]
    off = [int(r["cached_off"]) / 1000 for r in rows]
    hold = [int(r["cached_hold"]) / 1000 for r in rows]
    window = [int(r["window_hold"]) / 1000 for r in rows]
    reanchor = [t for t, r in zip(turn, rows) if r["outcome_hold"] == "reanchored"]

    fig, ax = plt.subplots(figsize=(9, 4), dpi=100)
    ax.plot(turn, window, color="0.75", linewidth=1, label="Hold: window tokens")
    ax.plot(turn, off, color="tab:red", linewidth=1, label="Off: cached tokens")
    ax.plot(turn, hold, color="tab:blue", linewidth=1.3, label="Hold: cached tokens")
    for i, t in enumerate(reanchor):
        ax.axvline(t, color="tab:blue", alpha=0.25, linewidth=0.8,
                   label="Hold: re-anchor" if i == 0 else None)
    ax.set_xlabel("turn")
    ax.set_ylabel("thousand tokens")
    ax.set_xlim(1, max(turn))
    ax.set_ylim(0, max(window) * 1.08)
    ax.set_title("Cached prefix per turn (OpenAI rule), 200-turn agent session, 64 000-token target",
                 fontsize=10)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), fontsize=8, ncol=4, frameon=False)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(target)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: plot_prefix.py SIM.csv OUT.png")
    main(sys.argv[1], sys.argv[2])
