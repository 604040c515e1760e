"""``report.html``: the class report a TA opens in a browser.

One self-contained file: the figures are PNGs in ``data:`` URIs, the style sheet is inline,
there is no script and nothing is fetched from the network. Rendered from
``templates/report.html.j2`` by Jinja2 with autoescaping on, so every string that comes from
a submission (names, folder names, reasons, causes, code) is escaped; each is also made one
safe line first (:func:`autograder.textsafe.one_line`: controls and bidirectional overrides
shown as visible escapes, so a name cannot reorder the text around it).

Sections: the run (exercises, build, isolation, secret, jobs or Dask, times), students
needing a look, score distributions (total and per exercise), tests to look at and every
test ranked by pass rate with its separation (:mod:`autograder.staff.stats`),
misconceptions and who has them, the late policy, similar submissions side by side
(:mod:`autograder.staff.similarity`), the gradebook, and how each number is computed.
"""
from __future__ import annotations

from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path

from autograder import textsafe
from autograder.jsontypes import JSONObject
from autograder.staff import figures, stats
from autograder.staff.analysis import Analysis
from autograder.staff.model import ClassView, decimal_text, exact, status_text

TEMPLATES = Path(__file__).with_name("templates")
REPORT = "report.html"


def _figure(values: list[Decimal], maximum: Decimal, title: str, size=(9.0, 3.4)) -> str:
    return figures.data_uri(figures.histogram_png([float(v) for v in values], float(maximum), title, size=size))


def distributions(view: ClassView) -> list[dict]:
    """The total and each exercise: a summary and a histogram (graded submissions only)."""
    graded = view.graded
    out = []
    totals = [s.total for s in graded]
    out.append({"title": "Total", "maximum": view.facts.max_total,
                "summary": stats.summarise(totals, view.facts.max_total),
                "figure": _figure(totals, view.facts.max_total, f"Total · {len(totals)} graded submissions")})
    for ex in view.exercises:
        values = [s.score(ex.id) for s in graded]
        maximum = exact(ex.points)
        out.append({"title": f"{ex.id} {ex.title}", "maximum": maximum,
                    "summary": stats.summarise(values, maximum),
                    "figure": _figure(values, maximum, f"{ex.id} {ex.title}", size=(5.0, 2.8))})
    return out


def context(view: ClassView, analysis: Analysis) -> JSONObject:
    """Everything the template shows."""
    return {
        "view": view, "facts": view.facts, "options": view.options,
        "generated": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
        "isolation": sorted(view.isolation_levels().items()),
        "needs_look": analysis.attention, "distributions": distributions(view),
        "items": analysis.items, "look": analysis.look,
        "look_share": stats.LOOK_SHARE, "look_min": stats.LOOK_MIN,
        "misconceptions": analysis.misconceptions,
        "late_lines": [line for line in view.lines if line.late is not None],
        "similarity": analysis.similarity, "exports": analysis.exports,
    }


def _environment():
    from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

    env = Environment(loader=FileSystemLoader(str(TEMPLATES)), undefined=StrictUndefined,
                      autoescape=select_autoescape(enabled_extensions=("html", "j2"), default=True),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["safe_line"] = lambda value, limit=300: textsafe.one_line(value, limit)
    env.filters["lines"] = lambda value: [textsafe.one_line(part.strip(), 500)
                                          for part in textsafe.text(value).split("\n") if part.strip()]
    env.filters["score"] = decimal_text
    env.filters["status"] = status_text
    env.filters["pct"] = lambda value: f"{100 * float(value):.0f} %"
    env.filters["num"] = lambda value, digits=1: f"{float(value):.{digits}f}"
    return env


def render(view: ClassView, analysis: Analysis) -> str:
    return _environment().get_template("report.html.j2").render(**context(view, analysis))


def write(view: ClassView, analysis: Analysis) -> Path:
    """Render ``report.html`` next to the gradebook (atomically)."""
    path = Path(view.out_dir) / REPORT
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(render(view, analysis), encoding="utf-8")
    tmp.replace(path)
    return path

