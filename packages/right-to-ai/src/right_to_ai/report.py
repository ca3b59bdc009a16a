"""Reports of an assessment: Markdown, HTML (jinja2), JSON and a PNG of the ladder position and dimensions.

Every report shows the data version, the paper's citation and the unverified data entries it used. The
same assessment gives byte-identical Markdown, HTML and JSON.
"""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path
from typing import Any

from icml25_shared.validation import Interval, Options, check_param, check_params

from right_to_ai.assess import Assessment, similar_cases
from right_to_ai.data import DIMENSIONS, RightToAIData, load

__all__ = ["FORMATS", "plot_assessment", "render", "to_html", "to_json", "to_markdown"]

#: The text formats of :func:`render`.
FORMATS = ("md", "html", "json")


def _context(assessment: Assessment, *, title: str, k: int) -> dict[str, Any]:
    """What every text report shows, as plain data."""
    check_params({"title": title, "similar": k}, {"title": [str], "similar": [Interval(int, 0, None)]},
                 owner="report")
    data: RightToAIData = load(assessment.data_version)
    answers = dict(assessment.answers)
    tier = data.tier(assessment.tier)
    gates = []
    for t in data.tiers[1:]:
        for qid in t.gate:
            state = {"yes": "met", "partial": "partial"}.get(answers[qid], "unmet")
            gates.append({"tier": t.id, "question": qid, "text": data.question(qid).text, "answer": answers[qid],
                          "met": answers[qid] == "yes", "state": state})
    higher = [data.tier(t) for t in assessment.higher_tiers_met]
    if higher:
        gap = next(g for g in assessment.gates if g.state != "met")
        role = (f"The answers also meet the own gate of {', '.join(f'tier {t.id} ({t.name})' for t in higher)}, but "
                f"not tier {gap.tier}'s ({gap.completion()}). Public role and governance structure are not asserted: "
                f"the answers contradict tier {tier.id}'s ({tier.public_role}; {tier.governance_structure}).")
    else:
        role = f"Public role: {tier.public_role}; governance: {tier.governance_structure}."
    top = data.rung(assessment.highest_rung_met) if assessment.highest_rung_met > assessment.arnstein_rung else None
    unverified = []
    questions = [key.split(":", 1)[1] for key in assessment.unverified if key.startswith("question:")]
    for key in assessment.unverified:
        kind, _, ident = key.partition(":")
        if kind == "tier":
            placed = data.tier(int(ident))
            unverified.append({"key": key, "what": f"tier {placed.id} ({placed.name})", "source": placed.source})
        elif kind == "transition":
            transition = data.tier(int(ident.split("->")[0])).transition
            assert transition is not None  # the key names an existing transition
            unverified.append({"key": key, "what": f"transition {ident} ({transition.mechanism})",
                               "source": transition.source})
        elif kind == "rung":
            rung = data.rung(ident)
            unverified.append({"key": key, "what": f"Arnstein rung mapping ({rung.name})", "source": rung.source})
        elif kind == "signals":
            unverified.append({"key": key, "what": "warning rules (consultation, decision rights, hybrid control)",
                               "source": data.signals.source})
    if questions:
        unverified.append({"key": "questions", "what": f"{len(questions)} questions: {', '.join(questions)}",
                           "source": "questionnaire.yaml (each question's source field)"})
    # a case study sharing no yes/partial answer (Jaccard 0) is not similar, whatever its rank
    similar = tuple(s for s in similar_cases(answers, k=k, data=data) if s.similarity > 0) if k else ()
    return {
        "title": title, "a": assessment, "tier": tier, "answers": answers, "gates": gates, "role": role,
        "top_rung": None if top is None else f"{top.name} (rung {top.level}, {data.band(top.band).name})",
        "dimensions": [(d, getattr(assessment.dimension_scores, d)) for d in DIMENSIONS],
        "transition": assessment.next_transition, "unverified": unverified, "similar": similar,
        "similar_requested": bool(k), "no_similar": NO_SIMILAR,
        "rung_count": len(data.rungs), "tier_count": len(data.tiers),
        "unmet_text": {q: data.question(q).text for q in assessment.unmet_indicators},
    }


NO_SIMILAR = "None: no case study shares a yes or partial answer with this system."


def _mark(verified: bool) -> str:
    return "" if verified else " (unverified)"


def to_markdown(assessment: Assessment, *, title: str = "AI system", similar: int = 3) -> str:
    """The assessment as a Markdown report.

    Parameters
    ----------
    assessment : Assessment
        The result of :func:`right_to_ai.assess`.
    title : str, default "AI system"
        The system's name, shown in the heading.
    similar : int, default 3
        How many similar case studies to list (0 for none).

    Returns
    -------
    str
        The report; the same text for the same inputs.

    Examples
    --------
    >>> from right_to_ai import assess, load
    >>> from right_to_ai.report import to_markdown
    >>> a = assess(load().case_study("aya").answers_dict())
    >>> print(to_markdown(a, title="Aya").splitlines()[0])
    # Right-to-AI assessment: Aya
    """
    c = _context(assessment, title=title, k=similar)
    a: Assessment = c["a"]
    tier = c["tier"]
    lines = [f"# Right-to-AI assessment: {title}", ""]
    conservative = " (conservative: the highest tier whose gate and every lower gate are met)" if not a.consistent else ""
    lines.append(f"**Tier {a.tier} of {c['tier_count']}: {a.tier_name}**{_mark(tier.verified)}{conservative}. "
                 f"{c['role']}")
    rung = f"Arnstein rung {a.arnstein_rung} of {c['rung_count']}: {a.arnstein_rung_name} ({a.arnstein_band})"
    if c["top_rung"]:
        rung += f" at the conservative tier; without the cumulative gates the answers meet {c['top_rung']}"
    lines.append(rung + ".")
    if a.incomplete:
        lines.append(f"**Incomplete**: {len(a.missing)} unanswered question(s) scored as unknown.")
    if a.high_risk:
        lines.append("Assessed as a high-risk domain.")
    lines += ["", "## Dimensions", "", "| dimension | score |", "|---|---|"]
    lines += [f"| {d} | {s:.3f} |" for d, s in c["dimensions"]]
    lines += ["", "## Next transition", ""]
    t = c["transition"]
    if t is None:
        lines.append("Tier 4 is the highest tier: there is no next tier.")
    else:
        lines.append(f"From tier {t.from_tier} to tier {t.to_tier} ({t.to_tier_name}): **{t.mechanism}**"
                     f"{_mark(t.verified)}.")
        lines += [""] + [f"- {step}" for step in t.actions]
        lines += ["", "Unmet gate indicators:", ""]
        lines += [f"- `{q}` (tier {next(g['tier'] for g in c['gates'] if g['question'] == q)}): {c['unmet_text'][q]} "
                  f"Answer: {c['answers'][q]}." for q in a.unmet_indicators]
    lines += ["", "## Gate indicators", "", "| tier | question | answer | state |", "|---|---|---|---|"]
    lines += [f"| {g['tier']} | `{g['question']}` | {g['answer']} | {g['state']} |" for g in c["gates"]]
    lines += ["", "## Warnings", ""]
    lines += [f"- **{w.code}**: {w.message}" for w in a.warnings] or ["None."]
    lines += ["", "## Why", ""] + [f"- {e}" for e in a.explanations]
    if c["similar"]:
        lines += ["", "## Similar case studies", "", "| case study | Jaccard | tier | placement | lessons |",
                  "|---|---|---|---|---|"]
        lines += [f"| {s.name}{_mark(s.verified)} | {s.similarity:.3f} | {s.tier} | {s.placement_origin} | "
                  f"{' '.join(s.lessons)} |" for s in c["similar"]]
    elif c["similar_requested"]:
        lines += ["", "## Similar case studies", "", NO_SIMILAR]
    lines += ["", "## Data", "", f"Data version {a.data_version}. Citation: {a.citation}", ""]
    if c["unverified"]:
        lines.append("Unverified entries used (not checked against the paper):")
        lines += [""] + [f"- {u['what']}; source: {u['source']}" for u in c["unverified"]]
    else:
        lines.append("Every entry used is verified against the paper.")
    return "\n".join(lines) + "\n"


@functools.cache
def _template() -> Any:
    """The compiled HTML template (compiled once per process)."""
    import jinja2

    template_text = (resources.files("right_to_ai") / "templates" / "report.html.j2").read_text(encoding="utf-8")
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             trim_blocks=True, lstrip_blocks=True)
    return env.from_string(template_text)


def to_html(assessment: Assessment, *, title: str = "AI system", similar: int = 3) -> str:
    """The assessment as a standalone HTML page (rendered with jinja2, autoescaped).

    Parameters
    ----------
    assessment : Assessment
        The result of :func:`right_to_ai.assess`.
    title : str, default "AI system"
        The system's name.
    similar : int, default 3
        How many similar case studies to list (0 for none).

    Returns
    -------
    str
        The page; the same text for the same inputs.
    """
    return _template().render(**_context(assessment, title=title, k=similar))


def to_json(assessment: Assessment) -> str:
    """The assessment as JSON (sorted keys); ``Assessment.from_json`` reads it back.

    Parameters
    ----------
    assessment : Assessment
        The result of :func:`right_to_ai.assess`.

    Returns
    -------
    str
        The JSON text.
    """
    return assessment.to_json()


def render(assessment: Assessment, fmt: str = "md", *, title: str = "AI system") -> str:
    """The assessment in one of :data:`FORMATS`.

    Parameters
    ----------
    assessment : Assessment
        The result of :func:`right_to_ai.assess`.
    fmt : {"md", "html", "json"}, default "md"
        The format.
    title : str, default "AI system"
        The system's name (Markdown and HTML).

    Returns
    -------
    str
        The report.

    Raises
    ------
    ValueError
        For an unknown format.
    """
    check_param("fmt", fmt, [Options(str, set(FORMATS))], owner="render")
    if fmt == "md":
        return to_markdown(assessment, title=title)
    if fmt == "html":
        return to_html(assessment, title=title)
    if fmt == "json":
        return to_json(assessment)
    raise AssertionError(fmt)  # unreachable: checked above


_BAND_COLOURS = {"nonparticipation": "#d95f02", "tokenism": "#e6ab02", "citizen_power": "#1b9e77"}


def plot_assessment(assessment: Assessment, path: str | Path | None = None, *, title: str = "AI system",
                    others: tuple[tuple[str, Assessment], ...] = ()) -> Any:
    """A figure of the ladder position (rungs, bands and tiers) and the three dimension scores.

    Parameters
    ----------
    assessment : Assessment
        The system to show.
    path : str or Path, optional
        Save the figure there as PNG (and close it).
    title : str, default "AI system"
        The system's name.
    others : tuple of (str, Assessment), optional
        Further systems marked on the ladder (e.g. case studies) with their labels.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (closed when ``path`` is given).

    Raises
    ------
    ImportError
        Without matplotlib (the ``cli`` extra), naming the install command.
    """
    try:
        import matplotlib
    except ImportError:
        raise ImportError('plot_assessment needs matplotlib: pip install "right-to-ai[cli]"') from None

    if path is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = load(assessment.data_version)
    fig, (ladder, dims) = plt.subplots(1, 2, figsize=(9, 4.2), gridspec_kw={"width_ratios": [1.5, 1]})
    for r in data.rungs:
        ladder.barh(r.level, 1.0, left=0, height=0.8, color=_BAND_COLOURS.get(r.band, "grey"), alpha=0.35)
        ladder.text(0.02, r.level, f"{r.level}. {r.name}", va="center", fontsize=8)
    for t in data.tiers:
        levels = [data.rung(rid).level for rid in t.arnstein_rungs]
        ladder.plot([1.05, 1.05], [min(levels) - 0.4, max(levels) + 0.4], color="black", lw=1.5)
        ladder.text(1.08, (min(levels) + max(levels)) / 2, f"tier {t.id}\n{t.name}", va="center", fontsize=7)
    for i, (label, other) in enumerate(others):
        x = 0.55 + 0.04 * (i % 8)
        ladder.plot(x, other.arnstein_rung, "o", color="grey", ms=5)
        ladder.text(x, other.arnstein_rung + 0.3, label[:12], fontsize=5, ha="center", rotation=45)
    ladder.plot(0.9, assessment.arnstein_rung, marker=">", color="black", ms=12)
    ladder.set_xlim(0, 2.6)
    ladder.set_ylim(0.4, len(data.rungs) + 0.6)
    ladder.set_xticks([])
    ladder.set_yticks([])
    ladder.set_title(f"{title}: tier {assessment.tier}, rung {assessment.arnstein_rung}", fontsize=9)
    names = list(DIMENSIONS)
    scores = [getattr(assessment.dimension_scores, d) for d in names]
    dims.bar(names, scores, color=["#7570b3", "#66a61e", "#e7298a"])
    dims.tick_params(axis="x", labelsize=8)
    for i, s in enumerate(scores):
        dims.text(i, s + 0.02, f"{s:.2f}", ha="center", fontsize=8)
    dims.set_ylim(0, 1.1)
    dims.set_ylabel("score (0-1)")
    dims.set_title("dimensions", fontsize=9)
    fig.text(0.01, 0.01, f"data {assessment.data_version}; {len(assessment.unverified)} unverified entries used; "
             f"{assessment.citation}", fontsize=5)
    if path is not None:
        from icml25_shared.cli import save_figure

        save_figure(fig, path)
    return fig
