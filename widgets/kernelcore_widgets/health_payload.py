"""What a training-health view shows of a flight recorder, as one bounded dict: the HealthView widget's traits and
the "Training health" sidebar panel's state (health_comm.py) are both built here, so the two never disagree.

    health_payload(recorder, View(stat="l2", sort="worst", filter="", page=0), loss=None, max_points=500)
    -> {"overview", "ops", "loss", "grads", "status", "page"}

Every series is downsampled to `max_points` (health_series.downsample), the table holds PAGE_SIZE ops a page and
at most MAX_GRAD_LINES gradient curves are sent.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from kernelcore.ir import op_roles
from kernelcore.observe.recorder import Recorder

from . import health_series as hs

PAGE_SIZE = 20         # ops a page
MAX_GRAD_LINES = 12    # gradient curves drawn (the largest latest norms)
SORTS = ("worst", "program")
GRAD_SUFFIX = "@GRAD"
LOSS_SEED_ROLE = op_roles.BACKWARD | op_roles.LOSS  # the fill_constant seeding `<loss>@GRAD`


@dataclasses.dataclass
class View:
    """What the person chose to see: the statistic, the order, a filter over op ids/types/outputs, the page."""
    stat: str = "l2"
    sort: str = "worst"
    filter: str = ""
    page: int = 0


def health_payload(recorder: Recorder, view: View, loss=None, max_points: int = hs.MAX_POINTS) -> dict:
    """The payload of `recorder`'s summaries so far, as `view` asks (its page clamped to the pages there are).
    `loss`: a variable's name (its recorded mean), a list of fetched losses, or None (no loss curve)."""
    table = recorder.summaries
    cols = table.columns()
    sites, site_of_row = list(table.sites), table.rows()["site"]
    series = hs.OpSeries(cols, sites, site_of_row, view.stat)
    ranked = series.ranked(view.sort, view.filter)
    pages = max((len(ranked) + PAGE_SIZE - 1) // PAGE_SIZE, 1)
    page = min(view.page, pages - 1)
    first = hs.first_bad(cols)
    hit = recorder.hit
    overview = {"iterations": series.iterations, "ops": len(series.keys), "matching": len(ranked),
                "pages": pages, "page_size": PAGE_SIZE, "first_bad": first, "stats": list(hs.STATS),
                "hit": hit.message if hit is not None else ""}
    found = _Found(cols, sites, site_of_row, series.iterations, max_points)
    return {"overview": overview, "page": page,
            "ops": series.rows(ranked[page * PAGE_SIZE:(page + 1) * PAGE_SIZE], max_points),
            "loss": found.loss_curve(loss), "grads": found.grad_curves(recorder.program),
            "status": summary_line(series.iterations, first)}


def summary_line(iterations: int, first: dict) -> str:
    bad = (f"; first NaN/Inf: iteration {first['iteration']}, {first['op_type']} ({first['id']}) wrote "
           f"{first['var']!r}") if first else "; no NaN/Inf"
    return f"recorded {iterations} iterations{bad}"


def guess_loss(program) -> str | None:
    """The loss a program trains: the variable whose gradient the backward seeds (a fill_constant of op_role
    backward|loss writing `<loss>@GRAD`, as Paddle and kernelcore's append_backward write it); None without one."""
    if program is None:
        return None
    for op in program.global_block().ops:
        if op.type == "fill_constant" and op.attr("op_role", 0) == LOSS_SEED_ROLE:
            outs = op.output("Out")
            if outs and outs[0].endswith(GRAD_SUFFIX):
                return outs[0][:-len(GRAD_SUFFIX)]
    return None


class _Found:
    """The loss and gradient curves of one refresh, over the same columns."""

    def __init__(self, cols: dict, sites: list, site_of_row: np.ndarray, iterations: int, max_points: int):
        self.cols, self.sites, self.site_of_row = cols, sites, site_of_row
        self.iterations, self.max_points = iterations, max_points

    def loss_curve(self, src) -> dict:
        if src is None:
            return {}
        if isinstance(src, str):
            got = hs.last_write_series(self.cols, self.sites, self.site_of_row, [src], "mean").get(src)
            if got is None:
                return {"name": src, "points": [], "bad": [], "last": None}
            its, values, bad = got
        else:
            its, values, bad = hs.loss_from_values(src)
            src = "loss"
        return curve(src, its, values, bad, max(self.iterations, len(values)), self.max_points)

    def grad_curves(self, program) -> list:
        if program is not None:
            params = [v.name for b in program.blocks for v in b.vars if v.is_parameter]
        else:
            params = sorted({s[3][:-len(GRAD_SUFFIX)] for s in self.sites if s[3].endswith(GRAD_SUFFIX)})
        found = hs.last_write_series(self.cols, self.sites, self.site_of_row, [p + GRAD_SUFFIX for p in params],
                                     "l2")
        curves = [curve(name[:-len(GRAD_SUFFIX)], *found[name], self.iterations, self.max_points) for name in found]
        curves.sort(key=lambda c: -(c["last"] if c["last"] is not None else np.inf))
        return curves[:MAX_GRAD_LINES]


def curve(name: str, its, values, bad, iterations: int, max_points: int = hs.MAX_POINTS) -> dict:
    finite = np.asarray(values, dtype=np.float64)
    finite = finite[np.isfinite(finite)]
    return {"name": name, "points": hs.downsample(its, values, max_points),
            "bad": hs.bad_ranges(bad, iterations, max(max_points // 2, 1)),
            "last": float(finite[-1]) if len(finite) else None}
