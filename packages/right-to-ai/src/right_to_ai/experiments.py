"""The ``demo`` and ``reproduce`` commands.

``demo`` assesses three fictitious systems and the nine case studies and writes a table, JSON and a PNG of
their ladder positions and dimension scores. ``reproduce`` rebuilds the case-study table from the data,
with verified and placement-origin marks, scores each study's encoded answers and compares the tier with
the recorded placement and with the paper's Table 1 (not retrieved: the column says so).
"""

from __future__ import annotations

from typing import Any

from icml25_shared.cli import RunContext

from right_to_ai.assess import Assessment, assess
from right_to_ai.data import DIMENSIONS, load

__all__ = ["case_study_table", "demo", "reproduce"]

PAPER_TABLE_1 = "not retrieved"


def _figure(labelled: list[tuple[str, Assessment]]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = load(labelled[0][1].data_version)
    fig, (ladder, dims) = plt.subplots(1, 2, figsize=(11, 4.8), gridspec_kw={"width_ratios": [1, 1.4]},
                                       layout="constrained")
    colours = {"nonparticipation": "#d95f02", "tokenism": "#e6ab02", "citizen_power": "#1b9e77"}
    for r in data.rungs:
        ladder.barh(r.level, len(labelled) + 1, left=0.5, height=0.8, color=colours[r.band], alpha=0.25)
    for i, (_, a) in enumerate(labelled, start=1):
        ladder.plot(i + 0.5, a.arnstein_rung, "o", color="black", ms=5)
    ladder.set_xticks([i + 0.5 for i in range(1, len(labelled) + 1)], [str(i) for i in range(1, len(labelled) + 1)],
                      fontsize=7)
    ladder.set_yticks(range(1, 9), [f"{r.level}. {r.name} (tier {r.tier})" for r in data.rungs], fontsize=7)
    ladder.set_xlabel("system (numbered as in the table)")
    ladder.set_ylabel("Arnstein rung (tier)")
    ladder.set_title("Arnstein rung and tier", fontsize=9)
    width = 0.8 / len(DIMENSIONS)
    for j, dim in enumerate(DIMENSIONS):
        xs = [i + (j - 1) * width for i in range(1, len(labelled) + 1)]
        dims.bar(xs, [getattr(a.dimension_scores, dim) for _, a in labelled], width=width, label=dim)
    dims.set_xticks(range(1, len(labelled) + 1), [str(i) for i in range(1, len(labelled) + 1)], fontsize=7)
    dims.set_ylim(0, 1.05)
    dims.set_xlabel("system (numbered as in the table)")
    dims.set_ylabel("score (0-1)")
    dims.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="dimension", title_fontsize=7)
    dims.set_title("dimensions", fontsize=9)
    fig.suptitle(f"{len(labelled)} systems, deterministic scoring; data {data.version}: every tier, rung mapping, "
                 "question and case study is unverified against the paper", fontsize=8)
    return fig


def demo(ctx: RunContext) -> None:
    """Assess three fictitious systems and the nine case studies; write a table, JSON and a PNG.

    Parameters
    ----------
    ctx : RunContext
        Output folder (the seed and the quick flag do not change anything: the demo is deterministic).
    """
    data = load()
    labelled = [(s.name, assess(dict(s.answers), data=data, high_risk=s.high_risk)) for s in data.examples]
    labelled += [(c.name, assess(c.answers_dict(), data=data)) for c in data.case_studies]
    rows = []
    for i, (name, a) in enumerate(labelled, start=1):
        rows.append({"#": i, "system": name, "tier": a.tier, "tier name": a.tier_name, "rung": a.arnstein_rung_name,
                     **{d: round(getattr(a.dimension_scores, d), 3) for d in DIMENSIONS},
                     "next transition": a.next_transition.mechanism if a.next_transition else "none (top tier)",
                     "warnings": ", ".join(c for c in a.warning_codes() if c != "unverified_data") or "-"})
    ctx.write_table(rows, headers=list(rows[0]))
    ctx.write_json({"data_version": data.version, "citation": data.citation, "rows": rows,
                    "assessments": {name: a.to_dict() for name, a in labelled}})
    ctx.save_figure(_figure(labelled))


def case_study_table(version: str | None = None) -> list[dict[str, Any]]:
    """The case-study table rebuilt from the data, each study scored from its encoded answers.

    Parameters
    ----------
    version : str, optional
        Data version (default: the latest).

    Returns
    -------
    list of dict
        One row per case study: name, organisation, domain, verified, candidate, placement origin,
        recorded tier, scored tier, whether they match, rung, warnings and the paper's Table 1 entry.
    """
    data = load(version)
    rows = []
    for c in data.case_studies:
        a = assess(c.answers_dict(), data=data)
        rows.append({"case study": c.name, "organisation": c.organisation, "domain": c.domain,
                     "verified": c.verified, "candidate": c.candidate, "placement origin": c.placement_origin,
                     "recorded tier": c.placement_tier, "scored tier": a.tier,
                     "match": a.tier == c.placement_tier, "rung": a.arnstein_rung_name,
                     "participation-washing": "participation_washing" in a.warning_codes(),
                     "paper Table 1": PAPER_TABLE_1})
    return rows


def reproduce(ctx: RunContext) -> None:
    """Rebuild the case-study table and compare it with the recorded placements; write JSON, a table and a PNG.

    Parameters
    ----------
    ctx : RunContext
        Output folder (the seed and the quick flag do not change anything).
    """
    data = load()
    rows = case_study_table(data.version)
    ctx.write_table([{k: ("yes" if v is True else "no" if v is False else v) for k, v in r.items()} for r in rows])
    tiers = [r["scored tier"] for r in rows]
    ctx.write_json({
        "data_version": data.version, "citation": data.citation, "rows": rows,
        "summary": {"case_studies": len(rows), "placements_reproduced": sum(r["match"] for r in rows),
                    "verified": sum(r["verified"] for r in rows), "candidates": sum(r["candidate"] for r in rows),
                    "placement_origin_paper": sum(r["placement origin"] == "paper" for r in rows),
                    "tier_counts": {str(t): tiers.count(t) for t in (1, 2, 3, 4)},
                    "participation_washing": sum(r["participation-washing"] for r in rows),
                    "paper_table_1": PAPER_TABLE_1},
    })
    labelled = [(c.name, assess(c.answers_dict(), data=data)) for c in data.case_studies]
    ctx.save_figure(_figure(labelled))
