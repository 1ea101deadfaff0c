"""The report's heatmaps keep their labels apart: many agents with long names, two apps
stacked, and no label box may touch another label or another panel."""

from __future__ import annotations

import itertools

import matplotlib.pyplot as plt

from analysis.report import figures
from analysis.report.data import collect
from analysis.synthetic import write_episodes
from pipeline.views import connect

AGENTS = ("zero_shot", "react", "react_tools", "cot", "mcp_agent", "a2a_agent", "react@v1")


def label_collisions(fig: plt.Figure) -> list[tuple[str, str]]:
    """Pairs of (label, label or panel) whose drawn boxes intersect: tick labels and titles
    against each other and against every axes but their own."""
    renderer = fig.canvas.get_renderer()
    fig.draw(renderer)
    texts, panels = [], []
    for ax in fig.axes:
        panels.append((ax, ax.get_window_extent(renderer)))
        for text in [*ax.get_xticklabels(), *ax.get_yticklabels(), ax.title]:
            if text.get_visible() and text.get_text():
                texts.append((ax, text.get_text(), text.get_window_extent(renderer)))
    out = []
    for (_, a, box_a), (_, b, box_b) in itertools.combinations(texts, 2):
        if box_a.overlaps(box_b):
            out.append((a, b))
    for (owner, name, box), (ax, panel) in itertools.product(texts, panels):
        if ax is not owner and box.overlaps(panel):
            out.append((name, f"panel {ax.get_title() or ax.get_label()}"))
    return out


def test_heatmap_labels_do_not_overlap(tmp_path):
    agents = {(f"hosted-model-{i}-with-a-long-name", a): 0.1 * i for i, a in enumerate(AGENTS)}
    agents[("none", "oracle")] = 1.0
    write_episodes(tmp_path, agents, app="malt", levels=(1,), queries=36)
    write_episodes(tmp_path, dict(list(agents.items())[:3]), app="k8s", levels=(1,), queries=12)
    data = collect(connect(tmp_path), study_reps=5, progress=False)
    fig = figures.operations_figure(data.operations)
    try:
        assert len(fig.axes) == 4  # two heatmaps and their colour bars
        assert label_collisions(fig) == []
    finally:
        plt.close(fig)
