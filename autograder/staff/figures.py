"""The report's figures: score histograms (matplotlib, Agg), as PNG bytes or ``data:`` URIs
for a page that needs no network. Bins: :func:`autograder.staff.stats.bin_edges`."""
from __future__ import annotations

import base64
import io
import threading
from typing import Sequence

from autograder.staff.stats import bin_edges

BAR = "#4C72B0"
MEAN = "#C44E52"


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def load_in_background() -> threading.Thread:
    """Import pyplot (half a second of CPU) on a daemon thread started now: a batch starts it
    while the class is graded, so its report's first figure does not wait for it at the end.
    A failure is left to the first figure, which imports it again and says what went wrong."""
    def _load() -> None:
        try:
            _pyplot()
        except Exception:  # noqa: BLE001 - raised again, in the caller's thread, by the first figure
            pass
    thread = threading.Thread(target=_load, name="report-imports", daemon=True)
    thread.start()
    return thread


def histogram_png(values: Sequence[float], maximum: float, title: str, *, size=(7.0, 3.6),
                  dpi: int = 100) -> bytes:
    """A histogram of ``values`` (out of ``maximum``) over the observed range, each bar
    labelled with its count, the mean dashed."""
    plt = _pyplot()
    edges = bin_edges(values, maximum)
    fig, ax = plt.subplots(figsize=size, dpi=dpi)
    try:
        counts, _, bars = ax.hist(list(values), bins=edges, color=BAR, edgecolor="white")
        for count, patch in zip(counts, bars):
            if count:
                ax.annotate(f"{int(count)}", (patch.get_x() + patch.get_width() / 2, count), ha="center",
                            va="bottom", fontsize=8, xytext=(0, 1), textcoords="offset points")
        if values:
            mean = sum(values) / len(values)
            ax.axvline(mean, color=MEAN, linestyle="--", linewidth=1.2)
            title += f" · mean {mean:.1f} (dashed)"
        width = edges[1] - edges[0]
        from matplotlib.ticker import MaxNLocator
        ax.xaxis.set_major_locator(MaxNLocator(nbins=12, steps=[1, 2, 2.5, 5, 10]))
        ax.tick_params(axis="x", labelsize=8)
        ax.set_xlim(edges[0], edges[-1])
        top = max(1.0, float(max(counts, default=0))) * 1.2
        ax.set_ylim(0, top)
        ax.yaxis.get_major_locator().set_params(integer=True)
        ax.set_xlabel(f"score (out of {maximum:g}; bins of {width:g} point{'s' if width != 1 else ''})", fontsize=9)
        ax.set_ylabel("submissions", fontsize=9)
        ax.set_title(title, fontsize=10)
        ax.spines[["top", "right"]].set_visible(False)
        _margins(fig, digits=len(str(int(top))))
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", metadata={"Software": None})
        return buffer.getvalue()
    finally:
        plt.close(fig)


def _margins(fig, digits: int) -> None:
    """Margins in inches for the histogram's fixed font sizes, what ``tight_layout`` finds for
    them (it measures every text by drawing the figure: 40 % of a histogram's time), the left
    one wider by each digit of the tallest count's tick label."""
    width, height = fig.get_size_inches()
    fig.subplots_adjust(left=(0.45 + 0.09 * digits) / width, right=1 - 0.2 / width,
                        bottom=0.56 / height, top=1 - 0.34 / height)


def data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")
