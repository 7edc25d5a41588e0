"""The simulation's files: every row as JSON, and the learning curve (slice and base accuracy) as a PNG."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.sim.data import SLICE_LABEL
from bench.sim.rows import RoundRow


def write_outputs(out_dir: Path, mode: str, report: dict[str, Any], runs: dict[str, list[RoundRow]]) -> list[Path]:
    """loop_<mode>.json (the report and every row) and loop_<mode>.png (the curves) in `out_dir`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    json_path = out_dir / f"loop_{mode}.json"
    json_path.write_text(json.dumps(report | {"rows": {o: [asdict(r) for r in rs] for o, rs in runs.items()}},
                                    indent=2, default=str))
    fig, (ax_slice, ax_base) = plt.subplots(1, 2, figsize=(11, 4.2))
    for order, rows in runs.items():
        labels = [r.labels for r in rows]
        ax_slice.plot(labels, [r.slice_acc for r in rows], marker="o", label=f"champion ({order})")
        chall = [(r.labels, r.challenger_slice_acc) for r in rows if r.challenger_slice_acc is not None]
        if chall:
            ax_slice.plot(*zip(*chall, strict=True), linestyle=":", marker="x", label=f"challenger ({order})")
        ax_base.plot(labels, [r.base_acc for r in rows], marker="o", label=f"champion ({order})")
        chall = [(r.labels, r.challenger_base_acc) for r in rows if r.challenger_base_acc is not None]
        if chall:
            ax_base.plot(*zip(*chall, strict=True), linestyle=":", marker="x", label=f"challenger ({order})")
    ax_slice.set(title=f"held-out slice ({SLICE_LABEL} articles picked by keywords)", xlabel="labels",
                 ylabel="accuracy")
    ax_base.set(title="base validation", xlabel="labels", ylabel="accuracy")
    for ax in (ax_slice, ax_base):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"NewsLoop learning loop ({mode})")
    fig.tight_layout()
    png_path = out_dir / f"loop_{mode}.png"
    fig.savefig(png_path, dpi=110)
    plt.close(fig)
    return [png_path, json_path]
