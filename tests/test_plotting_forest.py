"""forest.forest (the study's main figure) and the figures whose layout was fixed: linear axes on which a drawn
length is the number's size, the interval each verdict reads, limits that show every number, one figure legend
outside the data that names every line, a verdict per row that covers no data, y-axes that do not start at 0."""
import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.collections import LineCollection, PathCollection, PolyCollection  # noqa: E402

from thesis_lib import notation  # noqa: E402
from thesis_lib.study.reference import LAYERSCALE  # noqa: E402
from thesis_lib.study.pages import gamma, plotting  # noqa: E402
from thesis_lib.study.pages.forest import LEGEND, dose_response, forest  # noqa: E402
from thesis_lib.study.pages.headline import draw as headline  # noqa: E402
from thesis_lib.study.claims.stats import mean_ci  # noqa: E402
from thesis_lib.variants import VARIANT_SHORT  # noqa: E402
from thesis_lib.study.claims import paired, read

COMPARISONS = ["TTE before − baseline", "TTE after − baseline", "a long comparison: TTE before, input LayerNorm "
               "skipped − baseline"]
METRICS = ["COCO retrieval", "ImageNet top-1", "Flickr retrieval"]


def _row(comparison, metric, diffs, margin, thesis, verdict):
    mean, half = mean_ci(diffs)
    return {"comparison": comparison, "metric": metric, "diffs": list(diffs), "mean": mean, "half95": half,
            "half90": mean_ci(diffs, 0.90)[1], "margin": margin, "thesis": thesis, "verdict": verdict}


def synthetic_frame() -> pd.DataFrame:
    """3 comparisons × 3 metrics: small effects near their margins, one large one (the 2 × 2's LayerNorm row), one
    cell with a nan margin and no thesis value, one with a single seed."""
    rng = np.random.default_rng(3)
    rows = []
    for i, c in enumerate(COMPARISONS):
        for j, m in enumerate(METRICS):
            effect = (-0.05, 0.12, -2.6)[i] * (1, 3, 1.5)[j]
            n = 1 if (i, j) == (1, 2) else 5
            diffs = effect + rng.normal(0, (0.06, 0.4, 0.2)[j], n)
            margin = math.nan if (i, j) == (0, 1) else (0.077, 0.2, 0.1)[j]
            thesis = math.nan if (i, j) == (0, 1) else (-0.077, 0.15, -0.4)[i]
            rows.append(_row(c, m, diffs, margin, thesis, ("equivalent", "(undecided)", "reproduced")[(i + j) % 3]))
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def drawn():
    frame = synthetic_frame()
    fig = forest(frame, title="synthetic")
    fig.canvas.draw()
    yield frame, fig
    plt.close(fig)


def _legend_labels(fig) -> list[str]:
    """The figure legend's entries, each unwrapped to one line."""
    (legend,) = fig.legends
    return [" ".join(t.get_text().split()) for t in legend.get_texts()]


def _panel(fig, metric, group=None):
    """The panel of ``metric`` (of its ``group``'s rows, where the frame has groups)."""
    (ax,) = [ax for ax in fig.axes if ax.get_gid() == (metric if group is None else f"{metric}|{group}")]
    return ax


def _intervals(ax, gid) -> list[tuple[float, float, float]]:
    """(y, low, high) in data coordinates of every interval drawn with ``gid`` (``ci95``: thin, ``ci_eq``: thick)."""
    segments = [np.asarray(s) for c in ax.collections if isinstance(c, LineCollection) and c.get_gid() == gid
                for s in c.get_segments()]
    return sorted((s[0, 1], min(s[:, 0]), max(s[:, 0])) for s in segments)


def _data_points(ax) -> np.ndarray:
    """Display coordinates of everything drawn in data coordinates: seeds, means, thesis markers, CI bars."""
    pts = [ax.transData.transform(c.get_offsets()) for c in ax.collections if isinstance(c, PathCollection)]
    along = np.linspace(0, 1, 25)[:, None]
    pts += [ax.transData.transform(s[0] + along * (s[-1] - s[0])) for c in ax.collections
            if isinstance(c, LineCollection) for s in map(np.asarray, c.get_segments())]   # CI bars, end to end
    pts += [ax.transData.transform(line.get_xydata()) for line in ax.lines
            if line.get_transform() == ax.transData and len(line.get_xydata())]
    return np.concatenate(pts)


def test_one_panel_per_metric_and_every_row_drawn_once(drawn):
    """No zoomed second tier repeating the rows (a reader saw the same rows twice): one panel per metric, one mean
    per row."""
    frame, fig = drawn
    assert [ax.get_gid() for ax in fig.axes] == METRICS
    assert [_panel(fig, m).get_title() for m in METRICS] == METRICS
    assert all(ax.collections and ax.lines for ax in fig.axes)
    for metric, rows in frame.groupby("metric"):
        means = [line for line in _panel(fig, metric).lines if line.get_marker() == "o"]
        assert len(means) == len(rows)


def test_every_axis_is_linear_and_a_drawn_length_is_the_numbers_size(drawn):
    """The reviewer's symlog axis drew a ±0.71 interval shorter than a ±0.125 one: on one panel, the drawn lengths
    of two intervals are in the ratio of their half-widths, whatever their sizes."""
    frame, fig = drawn
    assert {ax.get_xscale() for ax in fig.axes} == {"linear"}
    for metric, rows in frame.groupby("metric"):
        ax = _panel(fig, metric)
        drawn_half = [ax.transData.transform([[hi, y]])[0, 0] - ax.transData.transform([[lo, y]])[0, 0]
                      for y, lo, hi in _intervals(ax, "ci95")]
        halves = rows.half95.dropna().to_numpy()
        order = np.argsort([COMPARISONS.index(c) for c in rows.comparison[rows.half95.notna()]])
        assert np.allclose(np.asarray(drawn_half) / drawn_half[0], halves[order] / halves[order][0], rtol=1e-6)


def test_the_bars_are_the_tables_half_widths(drawn):
    """Thin: the 95 % interval; thick: the 90 % one the equivalence test reads, only where a row has a margin."""
    frame, fig = drawn
    for metric, rows in frame.groupby("metric"):
        for ax in (_panel(fig, metric),):
            for gid, column, where in (("ci95", "half95", rows.half95.notna()),
                                       ("ci_eq", "half90", rows.half90.notna() & (rows.margin > 0))):
                expected = sorted((COMPARISONS.index(r.comparison), r["mean"] - r[column], r["mean"] + r[column])
                                  for _, r in rows[where].iterrows())
                assert np.allclose(_intervals(ax, gid), expected), (metric, gid)


def test_a_row_may_bring_its_own_equivalence_interval_and_level():
    """``half_eq`` (and ``eq_level`` for the legend) where a claim is decided at another level, half90 elsewhere."""
    frame = synthetic_frame()
    frame["half_eq"], frame["eq_level"] = math.nan, None
    frame.loc[0, ["half_eq", "eq_level"]] = [0.5 * frame.loc[0, "half95"], "97.1 %"]
    fig = forest(frame)
    ax = _panel(fig, frame.loc[0, "metric"])
    (y, lo, hi), *_ = _intervals(ax, "ci_eq")
    assert y == 0 and hi - lo == pytest.approx(frame.loc[0, "half95"])
    (thick,) = [label for label in _legend_labels(fig) if label.startswith("thick bar")]
    assert "90 %" in thick and "97.1 %" in thick                      # one entry names both levels
    plt.close(fig)


def test_x_limits_symmetric_and_contain_everything(drawn):
    frame, fig = drawn
    for metric, rows in frame.groupby("metric"):
        lo, hi = _panel(fig, metric).get_xlim()
        assert lo == pytest.approx(-hi)
        values = [v for _, r in rows.iterrows() for v in (*r.diffs, r["mean"] - r.half95, r["mean"] + r.half95,
                                                           r.margin, -r.margin, r.thesis) if np.isfinite(v)]
        assert lo < min(values) and max(values) < hi, metric


def test_every_seed_mean_and_thesis_value_is_drawn(drawn):
    frame, fig = drawn
    for metric, rows in frame.groupby("metric"):
        ax = _panel(fig, metric)
        xs = np.concatenate([c.get_offsets()[:, 0] for c in ax.collections if isinstance(c, PathCollection)] +
                            [line.get_xdata() for line in ax.lines if line.get_transform() == ax.transData])
        for _, r in rows.iterrows():
            for v in (*r.diffs, r["mean"], r.thesis):
                if np.isfinite(v):
                    assert np.isclose(xs, v).any(), (metric, r.comparison, v)


def test_margin_bands_and_intervals_only_where_defined(drawn):
    frame, fig = drawn
    for metric, rows in frame.groupby("metric"):
        ax = _panel(fig, metric)
        bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
        assert len(bands) == int((rows.margin > 0).sum())           # nan margin → no band
        assert len(_intervals(ax, "ci95")) == int(np.isfinite(rows.half95).sum())  # a single seed → the point only
        assert len(_intervals(ax, "ci_eq")) == int((np.isfinite(rows.half90) & (rows.margin > 0)).sum())


def test_one_figure_legend_outside_every_panel_naming_every_line(drawn):
    frame, fig = drawn
    assert len(fig.legends) == 1 and all(ax.get_legend() is None for ax in fig.axes)
    legend = fig.legends[0]
    labels = _legend_labels(fig)
    names = [label.split(": ", 1)[0] for label in labels]
    assert [n for n in names if n in {name for name, _ in LEGEND.values()}] == [
        LEGEND[k][0] for k in ("mean", "ci95", "seeds", "band", "thesis", "verdict")]
    assert any(label.startswith("thick bar: the interval read for equivalence, 90 %") for label in labels)
    assert len(labels) == 7 and max(map(len, labels)) < 280                    # short: what is drawn, no more
    renderer = fig.canvas.get_renderer()
    box = legend.get_window_extent(renderer)
    for ax in fig.axes:
        assert not box.overlaps(ax.get_window_extent(renderer)), ax.get_gid()
        assert not box.overlaps(ax.xaxis.label.get_window_extent(renderer)), ax.get_gid()


def test_one_verdict_per_row_covering_no_data(drawn):
    frame, fig = drawn
    renderer = fig.canvas.get_renderer()
    assert sum(t.get_gid() == "verdict" for ax in fig.axes for t in ax.texts) == len(frame)
    for metric, rows in frame.groupby("metric"):
        ax = _panel(fig, metric)
        texts = [t for t in ax.texts if t.get_gid() == "verdict"]
        assert sorted(t.get_text() for t in texts) == sorted(rows.verdict)
        points = _data_points(ax)
        panel = ax.get_window_extent(renderer)
        for t in texts:
            box = t.get_window_extent(renderer).padded(3)
            assert panel.x0 <= box.x0 and box.x1 <= panel.x1 + 3
            inside = ((points[:, 0] >= box.x0) & (points[:, 0] <= box.x1) &
                      (points[:, 1] >= box.y0) & (points[:, 1] <= box.y1))
            assert not inside.any(), (metric, t.get_text())


@pytest.mark.parametrize("n_comparisons,n_metrics", [(1, 1), (6, 4), (2, 3)])
def test_any_size_with_nan_margins_and_thesis(n_comparisons, n_metrics):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame([_row(f"comparison {i}", f"metric {j}", rng.normal(0.1 * i, 0.2, 5), math.nan, math.nan,
                               "undecided") for i in range(n_comparisons) for j in range(n_metrics)])
    fig = forest(frame)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    assert len(fig.axes) == n_metrics and len(fig.legends) == 1                # similar rows: one tier
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert not any("margin" in label or "zoom" in label for label in labels)   # nothing of the kind drawn
    assert not any(c.get_gid() == "ci_eq" for ax in fig.axes for c in ax.collections)   # no margin: no TOST
    box = fig.legends[0].get_window_extent(renderer)
    assert not any(box.overlaps(ax.get_window_extent(renderer)) for ax in fig.axes)
    assert sum(t.get_gid() == "verdict" for ax in fig.axes for t in ax.texts) == n_comparisons * n_metrics
    plt.close(fig)


def test_results_bars_axis_does_not_start_at_zero():
    rng = np.random.default_rng(1)
    df = pd.DataFrame([{"variant": v, "seed": s, "coco_mean": 40 + rng.normal(0, 0.3), "imagenet_top1":
                        41 + rng.normal(0, 0.5)} for v in ("baseline", "tte_before") for s in range(5)])
    metrics = {"coco_mean": "COCO", "imagenet_top1": "ImageNet"}
    fig = plotting.results_bars(read.levels(df, ["baseline", "tte_before"], metrics), metrics)
    for ax, m in zip(fig.axes, ("coco_mean", "imagenet_top1")):
        lo, hi = ax.get_ylim()
        assert 0 < lo < df[m].min() and df[m].max() < hi
        assert hi - lo < 10                                            # the spread is visible, not a 0-40 bar
        assert not ax.patches                    # and the mean is a marker: a bar from a cut axis has no meaning
    assert "axis does not start at 0" in fig.axes[0].get_ylabel()
    plt.close(fig)


def _legends_clear_of_axes(fig):
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    assert legends
    for legend in legends:
        box = legend.get_window_extent(renderer)
        for ax in fig.axes:
            assert not box.overlaps(ax.get_window_extent(renderer))


def test_positional_similarity_has_a_labelled_colour_bar_scaled_to_the_data():
    fig = notation.positional_similarity(torch.randn(16, 8), 4)
    assert any(ax.get_ylabel().startswith("cosine similarity") for ax in fig.axes)
    plt.close(fig)
    from thesis_lib.models.representations import sincos_2d
    table = sincos_2d(768, 14)                                  # every similarity of the figure is in 0.5..1
    fig = notation.positional_similarity(table, 14)
    low, high = fig.axes[0].images[0].get_clim()
    t = torch.nn.functional.normalize(table.float(), dim=-1)
    data = (t @ t.T).numpy()
    assert high == 1 and low <= data.min() < low + 0.1 and low > 0
    assert any(f"{low:g} to 1" in ax.get_ylabel() for ax in fig.axes)
    plt.close(fig)


def test_difference_frame_gives_the_interval_each_test_reads():
    """The forest's data: the 95 % half-width (the difference test's) and the 90 % one (the TOST's), of one test."""
    from scipy import stats as sps

    from thesis_lib.study import reference
    rng = np.random.default_rng(2)
    df = pd.DataFrame([{"variant": v, "seed": s, "coco_mean": 20 + s + e + rng.normal(0, 0.3),
                        "imagenet_top1": 40 + s + rng.normal(0, 0.3), "flickr_mean": 30 + s + rng.normal(0, 0.3)}
                       for s in range(5) for v, e in (("baseline", 0.0), ("tte_after_ls", 0.2))])
    frame = paired.difference_frame(df, reference.TABLE2)
    assert len(frame) == 3 and {"half95", "half90"} <= set(frame.columns)
    ratio = sps.t.ppf(0.95, 4) / sps.t.ppf(0.975, 4)
    for _, r in frame.iterrows():
        assert r.half90 == pytest.approx(ratio * r.half95) and r.half90 < r.half95


def test_every_variant_has_a_colour_of_its_own():
    from thesis_lib.variants import VARIANTS
    assert set(plotting.COLOURS) == set(VARIANTS)
    assert len({tuple(np.round(c, 3)) for c in plotting.COLOURS.values()}) == len(VARIANTS)


def test_loss_curves_show_coinciding_curves_and_their_paired_difference():
    """The TTE' curve lies on the baseline's to 1e-5: both are drawn (solid, dashed with markers), the y axis says
    what it is, and a second row draws the difference paired by seed and step."""
    steps, rows = np.arange(25, 201, 25), []
    for s in range(3):
        for v, shift in (("baseline", 0.0), ("tte_after_ls", 1e-5 * (s + 1))):
            rows += [{"variant": v, "seed": s, "step": t, "loss": 6 / t ** 0.3 + shift, "itc": 5 / t ** 0.3 + shift,
                      "kd": 1 / t ** 0.3} for t in steps]
    fig = plotting.loss_curves(pd.DataFrame(rows))
    top, bottom = [ax for ax in fig.axes[:3]], [ax for ax in fig.axes[3:]]
    assert len(fig.axes) == 6 and top[0].get_ylabel() and bottom[0].get_ylabel().startswith("Δ loss")
    base, tte = top[0].lines[:2]
    assert base.get_linestyle() == "-" and tte.get_linestyle() == "--" and tte.get_marker() not in ("None", "")
    (difference,) = [line for line in bottom[0].lines if line.get_gid() == "difference"]
    assert np.allclose(difference.get_ydata(), 2e-5)                       # mean over seeds of 1e-5, 2e-5, 3e-5
    (kd,) = [line for line in bottom[2].lines if line.get_gid() == "difference"]
    assert np.allclose(kd.get_ydata(), 0)
    plt.close(fig)
    one = plotting.loss_curves(pd.DataFrame([r for r in rows if r["variant"] == "baseline"]))
    assert len(one.axes) == 3                                              # the baseline alone: no difference row
    plt.close(one)


def test_tte_ablation_has_a_panel_per_metric_and_no_label_over_the_ticks():
    from thesis_lib.study.pages.figures import ABLATION_METRICS
    assert "flickr_mean" in ABLATION_METRICS
    rng = np.random.default_rng(4)
    variants = ["tte_after", "tte_after_ls", "tte_shared"]
    df = pd.DataFrame([{"variant": v, "seed": s, **{f"{mode}{m}": 20 + rng.normal(0, 0.1) for m in ABLATION_METRICS
                                                    for mode in ("", "removed:", "swapped:")}}
                       for v in variants for s in range(4)])
    fig = plotting.tte_ablation(read.ablation_points(df, variants, ABLATION_METRICS), variants, ABLATION_METRICS)
    assert [ax.get_title() for ax in fig.axes] == list(ABLATION_METRICS.values())
    for ax in fig.axes:                               # points, not bars: a change of 0 is still seen
        assert not ax.patches
        assert {line.get_gid() for line in ax.lines if line.get_gid()} == {
            f"{v}|{mode}" for v in variants for mode in ("removed", "swapped")}
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert len(labels) == 3 and not any(VARIANT_SHORT[v] in label for v in variants for label in labels)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    label = fig.axes[0].yaxis.label.get_window_extent(renderer)
    ticks = [t.get_window_extent(renderer) for ax in fig.axes for t in ax.get_xticklabels() + ax.get_yticklabels()]
    assert not any(label.overlaps(box) for box in ticks)
    _legends_clear_of_axes(fig)
    plt.close(fig)


def test_gamma_histogram_compares_the_thesis_signed_statistics_on_a_signed_axis():
    """Each panel titled; the thesis's mean and SD of the signed γ written beside ours (seeds pooled) in the signed
    panel, not drawn as bars on its count axis; its max beside our max |γ| on the |γ| axis, never its mean; the
    figure's title names the variant, the regime, the seeds and γ's initial value."""
    rng = np.random.default_rng(5)
    gammas = {s: rng.normal(0, 1e-2, 96) for s in range(3)}
    fig = gamma.histogram(gammas, LAYERSCALE["init"], "the TTE'", "600 steps")
    signed, magnitude = fig.axes
    assert signed.get_xscale() == "linear" and magnitude.get_xscale() == "log"
    assert signed.get_title() and magnitude.get_title() and signed.get_title() != magnitude.get_title()
    assert not [c for c in signed.collections if isinstance(c, LineCollection)]     # no error bar on the counts
    pooled, thesis = np.concatenate(list(gammas.values())), LAYERSCALE["aug"]
    (stats,) = [t.get_text() for t in signed.texts if t.get_gid() == "statistics"]
    assert f"thesis (Aug 2024): {plotting.sci(thesis['mean'])} ± {plotting.sci(thesis['std'])}" in stats
    assert f"this study (seeds pooled): {plotting.sci(pooled.mean())} ± {plotting.sci(pooled.std())}" in stats
    lines = [line.get_xdata()[0] for line in magnitude.lines]
    assert thesis["max"] in lines and thesis["mean"] not in lines
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any(label.startswith("thesis: max γ") for label in labels)
    assert fig.get_suptitle().startswith("The learned LayerScale γ of the TTE': 600 steps, seeds 0-2, γ initialised "
                                         f"at {plotting.sci(LAYERSCALE['init'])}")
    plt.close(fig)


def test_gamma_per_channel_is_a_sorted_profile_of_points_in_a_hue_per_seed():
    """The channels have no order: each seed's γ is drawn sorted (x its rank), as points, never a line across
    channels; the seeds' hues differ, and the variant is named."""
    rng = np.random.default_rng(7)
    gammas = {s: rng.normal(0, 1e-2, 96) for s in range(4)}
    fig = gamma.per_channel(gammas, 1e-5, "the TTE'", "600 steps")
    (ax,) = fig.axes
    seeds = [line for line in ax.lines if line.get_label().startswith("seed")]
    assert len(seeds) == 4 and all(line.get_linestyle() == "None" for line in seeds)
    for line, g in zip(seeds, gammas.values()):
        assert np.allclose(line.get_ydata(), np.sort(g)) and np.all(np.diff(line.get_ydata()) >= 0)
    assert len({tuple(np.round(line.get_color(), 3)) for line in seeds}) == 4
    assert "the TTE'" in ax.get_title() and ax.get_title().endswith("(600 steps, seeds 0-3)")
    plt.close(fig)


def test_gamma_evolution_names_its_variant_and_explains_the_dotted_line():
    curves = pd.DataFrame([{"seed": s, "step": t, "gamma_mean": 1e-5, "gamma_std": 0.001 * t,
                            "gamma_abs_max": 0.002 * t} for s in range(3) for t in (25, 50, 75)])
    fig = gamma.evolution(curves, 1e-5, "the TTE'")
    assert "the TTE'" in fig.get_suptitle()
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels[:3] == ["seed 0", "seed 1", "seed 2"] and "initialisation" in labels[-1]
    plt.close(fig)


# ------------------------------------------------------------------ issue 45: every legend entry explained, the groups
# of Table 1, the dose-response and the headline


def _explained(fig):
    """Every legend entry is "name: explanation", both non-empty."""
    labels = _legend_labels(fig)
    assert labels
    for label in labels:
        name, _, explanation = label.partition(": ")
        assert name.strip() and len(explanation.strip()) > 10, label


def test_every_forest_legend_entry_says_what_it_is(drawn):
    _explained(drawn[1])
    assert all(text.strip() for name, text in LEGEND.values())


def test_an_equivalence_level_of_its_own_is_explained_in_the_legend():
    """Table 1's sequential claim: its 92.08 % interval, named with its look in the thick bar's one entry."""
    frame = synthetic_frame()
    frame["half_eq"], frame["eq_level"] = frame["half90"], "90 %"
    frame.loc[0, ["half_eq", "eq_level"]] = [0.9 * frame.loc[0, "half95"], "92.08 %"]
    fig = forest(frame, eq_notes={"92.08 %": "the sequential claim at its last look, 24 seeds"})
    (thick,) = [label for label in _legend_labels(fig) if label.startswith("thick bar")]
    assert thick.startswith("thick bar: the interval read for equivalence, 90 % (the sequential claim at its last "
                            "look, 24 seeds: 92.08 %)")
    _explained(fig)
    plt.close(fig)


def test_the_verdict_entry_explains_only_the_words_drawn():
    frame = synthetic_frame()
    frame["margin"], frame["verdict"] = math.nan, "undecided"
    fig = forest(frame)
    (entry,) = [label for label in _legend_labels(fig) if label.startswith(LEGEND["verdict"][0])]
    assert "undecided: not significant" in entry                          # no band: "neither" would name one
    assert not any(w in entry for w in ("equivalent", "reproduced", "confirmed", "band", "parentheses"))
    assert not any(label.startswith(LEGEND["band"][0]) for label in _legend_labels(fig))
    plt.close(fig)


def test_groups_get_panels_of_their_own_each_scaled_to_its_rows():
    """Table 1: the claim's small interval is not shrunk by the 2 × 2's large rows, nor drawn twice: each group its
    panel (titled with its heading), its x-range its own rows', every row once."""
    frame = synthetic_frame()
    frame = frame[frame.metric.eq(METRICS[0])].copy()
    frame["group"] = ["THE CLAIM", "THE CLAIM", "THE 2 × 2"]
    fig = forest(frame, title="grouped")
    fig.canvas.draw()
    claim, two = _panel(fig, METRICS[0], "THE CLAIM"), _panel(fig, METRICS[0], "THE 2 × 2")
    assert [ax.get_title(loc="left") for ax in (claim, two)] == ["THE CLAIM", "THE 2 × 2"]
    assert [t.get_text().split("\n")[0] for t in claim.get_yticklabels()] == COMPARISONS[:2]
    assert [t.get_text().split("\n")[0] for t in two.get_yticklabels()][0].startswith("a long comparison")
    for ax, rows in ((claim, frame.iloc[:2]), (two, frame.iloc[2:])):
        lo, hi = ax.get_xlim()
        reach = max(abs(v) for _, r in rows.iterrows() for v in (*r.diffs, r["mean"] - r.half95,
                                                                  r["mean"] + r.half95, r.margin, r.thesis))
        assert lo == pytest.approx(-hi) and reach < hi < 1.2 * reach          # scaled to its own rows
        assert all(t.get_text().endswith("seeds)") or t.get_text().endswith("seed)") for t in ax.get_yticklabels())
    _explained(fig)
    plt.close(fig)


DOSES = (1e-5, 1e-3, 1e-1, 1.0)


def synthetic_doses() -> pd.DataFrame:
    rng = np.random.default_rng(6)
    rows = []
    for k, dose in enumerate(DOSES):
        for j, metric in enumerate(METRICS):
            diffs = rng.normal(-0.02 * k, (0.005, 0.01, 0.02, 0.2)[k], 4)
            row = _row(f"dose {dose:g}", metric, diffs, (0.077, 0.14, 0.066)[j], (0.077, 0.14, 0.066)[j],
                       ("equivalent", "equivalent", "equivalent", "undecided")[k])
            rows.append({**row, "dose": dose, "verdict": row["verdict"] if j == 0 else f"({row['verdict']})"})
    return pd.DataFrame(rows)


def test_dose_response_has_one_x_position_per_dose_on_a_log_axis():
    frame = synthetic_doses()
    fig = dose_response(frame, primary=METRICS[0], notes={1e-5: "(Table 2's claim)"})
    fig.canvas.draw()
    assert [ax.get_gid() for ax in fig.axes] == METRICS[:1]            # the primary only: its table has the others
    for ax in fig.axes:
        rows = frame[frame.metric.eq(ax.get_gid())]
        assert ax.get_xscale() == "log" and ax.get_yscale() == "linear"
        assert np.allclose(ax.get_xticks(), DOSES)
        lo, hi = ax.get_xlim()
        assert lo < min(DOSES) and max(DOSES) < hi
        means = sorted((line.get_xdata()[0], line.get_ydata()[0]) for line in ax.lines if line.get_gid() == "mean")
        assert np.allclose(means, sorted(zip(rows.dose, rows["mean"])))
        bars = sorted((np.asarray(s)[0, 0], *sorted(np.asarray(s)[:, 1])) for c in ax.collections
                      if isinstance(c, LineCollection) and c.get_gid() == "ci95" for s in c.get_segments())
        assert np.allclose(bars, sorted(zip(rows.dose, rows["mean"] - rows.half95, rows["mean"] + rows.half95)))
        verdicts = [t for t in ax.texts if t.get_gid() == "verdict"]
        assert sorted(t.get_text().split("\n")[0] for t in verdicts) == sorted(rows.verdict)
        assert all(t.get_rotation() == 0 for t in verdicts)
        assert [line for line in ax.lines if line.get_gid() == "thesis"]
        assert [c for c in ax.collections if c.get_gid() == "band"]
        ylo, yhi = ax.get_ylim()
        assert ylo < min(min(d) for d in rows.diffs) and max(max(d) for d in rows.diffs) < yhi
    texts = [t.get_text() for t in fig.axes[0].texts if t.get_gid() == "verdict"]
    assert "equivalent\n(Table 2's claim)" in texts
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in fig.axes[0].texts if t.get_gid() == "verdict"]
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])   # 0.1 and 1: a decade apart
    _explained(fig)
    _legends_clear_of_axes(fig)
    plt.close(fig)


def _headline_frame():
    return pd.DataFrame([
        {"label": "TTE before the encoders hurts (24 seeds, sequential)", "ratio": 0.14, "low": -1.04, "high": 1.32,
         "margin": 0.99, "verdict": "undecided"},
        {"label": "Table 1 as the thesis code ran it hurts (4 seeds)", "ratio": 35.8, "low": 26.4, "high": 45.1,
         "margin": 1.0, "verdict": "reproduced in direction"},
        {"label": "2 × 2 main effect of skipping the input LayerNorm (4 seeds)", "note": "(not a thesis claim)",
         "ratio": 35.6, "low": 24.3, "high": 47.0, "margin": 1.0, "verdict": "confirmed"},
        {"label": "TTE after the encoders with LayerScale helps (4 seeds)", "ratio": -0.046, "low": -0.165,
         "high": 0.073, "margin": 1.0, "verdict": "equivalent"},
    ]).fillna({"note": ""})


def test_headline_has_one_row_per_claim_with_its_ratio_interval_and_clips_the_far_ones_in_words():
    frame = _headline_frame()
    fig = headline(frame, title="synthetic")
    fig.canvas.draw()
    ax, side = fig.axes
    assert ax.get_xscale() == "linear"
    lo, hi = ax.get_xlim()
    assert lo < -1.04 and 1.32 < hi < 24                                 # clipped: the two far rows lie beyond it
    labels = [t.get_text() for t in ax.texts if t.get_gid() == "row_label"]
    assert [label.split("\n")[0] for label in labels] == list(frame.label)
    assert [t.get_text().replace("\n", " ") for t in side.texts if t.get_gid() == "verdict"] == list(frame.verdict)
    bars = {round(line.get_ydata()[0]): (min(line.get_xdata()), max(line.get_xdata())) for line in ax.lines
            if line.get_gid() == "ci95"}
    for y, r in frame.iterrows():
        if r.high < hi:
            assert bars[y] == pytest.approx((r.low, r.high))
    far = [t.get_text() for t in ax.texts if t.get_gid() == "off_scale_value"]
    assert far == ["36 × [26, 45] →", "36 × [24, 47] →"]
    assert len([line for line in ax.lines if line.get_gid() == "off_scale"]) == 2
    (one,) = [line for line in ax.lines if line.get_gid() == "thesis_effect"]
    (zero,) = [line for line in ax.lines if line.get_gid() == "no_effect"]
    assert one.get_xdata()[0] == 1 and zero.get_xdata()[0] == 0
    words = {t.get_gid(): t.get_text() for t in ax.texts}
    assert "the thesis's effect" in words["label_1"] and "no effect" in words["label_0"]
    assert any("clipped" in label for label in _legend_labels(fig))
    _explained(fig)
    _legends_clear_of_axes(fig)
    width = fig.get_size_inches()[0] * 150                                # plotting.save's dpi
    assert width <= 1000                                                  # README width (≈ 900 px) without shrinking
    plt.close(fig)


def _demo_params():
    from thesis_lib.study.runs import study_params
    params = study_params("demo", need_data=False)
    if not (params.results_root / "demo" / "baseline").exists():
        pytest.skip("no committed demo results")
    return params


def test_the_dose_figure_reads_every_dose_of_grids_including_the_tte_prime_at_its_default():
    """The 1e-5 arm is the TTE' itself (Table 2's claim), read at the config's default; the others the γ-init
    claims; one x position each, its numbers those of ``paired.difference_frame``."""
    from thesis_lib.config import get_config
    from thesis_lib.study.pages import figures
    from thesis_lib.study import grids, reference
    params = _demo_params()
    default = get_config("demo").model.tte_layer_scale
    doses = read.dose_claims("demo")
    assert sorted(doses) == sorted([1e-5, 1e-3, 1e-1, 1.0]) and default == 1e-5
    assert doses[default][1].family == reference.TABLE2 and {c.family for d, (_, c) in doses.items()
                                                              if d != default} == {reference.DOSE}
    assert [v for _, (v, _) in sorted(doses.items())] == list(grids.DOSE)
    fig = figures.fig_dose_response(params, grids.DOSE_ARMS)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and np.allclose(sorted(ax.get_xticks()), sorted(doses))
    df = paired.claims_frame(params, grids.DOSE_ARMS)
    table2 = paired.difference_frame(df, reference.TABLE2)
    expected = table2[table2.comparison.eq(doses[default][1].text) & table2.metric.eq(ax.get_gid())]["mean"].item()
    means = {line.get_xdata()[0]: line.get_ydata()[0] for line in ax.lines if line.get_gid() == "mean"}
    assert means[default] == pytest.approx(expected)
    plt.close(fig)


def test_the_headline_figure_has_one_row_per_chapter_claim_and_regime_from_the_claims_table():
    """Its rows are the claims table's primary rows of the chapter's claims (and the 2 × 2's LayerNorm factor), each
    regime that decided them, nearest the thesis's first; every ratio and seed count is the table's."""
    from thesis_lib.study.claims import table as claims_table
    from thesis_lib.study.pages import figures
    from thesis_lib.study.pages import headline as headline_rows
    table = claims_table.read()
    frame = headline_rows.frame(table)
    regimes = list(dict.fromkeys(table.regime))
    assert [regimes.index(r) for r in frame.regime] == sorted(regimes.index(r) for r in frame.regime)
    assert frame.regime.iloc[0].startswith("summed learning rate") and len(frame) >= 8
    shown = table[table.primary & table.topic.isin(headline_rows.SHOWN) & table.status.ne("pending")]
    for _, r in frame.iterrows():
        match = shown[shown.regime.eq(r.regime) & shown.ratio.eq(r.ratio)]
        assert len(match) == 1 and f"({match.n.iloc[0]} seeds)" in r.label.replace("\n", " ")
    from thesis_lib.study import grids
    fig = figures.fig_headline(_demo_params(), grids.CLAIMED)
    assert len([t for t in fig.axes[0].texts if t.get_gid() == "row_label"]) == len(frame)
def test_patch_grid_says_the_presets_numbers():
    """The demo's 32-px image and 8-px patches, as its config has them (not a 64-px image scaled for show)."""
    from thesis_lib.config import get_config
    img = get_config("demo").model.image
    fig = notation.patch_grid_of("demo")
    image, flat = fig.axes[:2]
    n = img.img_size // img.patch_size
    assert image.get_title().startswith(f"{img.img_size} × {img.img_size} image (demo preset): {n} × {n} patches of "
                                        f"{img.patch_size} × {img.patch_size} px")
    assert f"= {img.in_chans * img.patch_size ** 2} values" in flat.get_xlabel()
    assert image.images[0].get_array().shape[:2] == (img.img_size, img.img_size)
    plt.close(fig)


def test_the_world_strip_shows_each_shipped_picture_unsmoothed_above_its_own_caption():
    """The README's strip of the generated world: every shipped example at its own 32 pixels (no resampling) with
    its own caption under it, in the order ``examples`` gives them."""
    from thesis_lib import examples
    pictures, captions = examples()
    fig = notation.world_strip(pictures, captions)
    assert len(fig.axes) == len(pictures) == len(captions) >= 4
    for ax, picture, caption in zip(fig.axes, pictures, captions):
        assert ax.images[0].get_array().shape[:2] == (picture.height, picture.width) == (32, 32)
        assert ax.images[0].get_interpolation() == "nearest"
        assert " ".join(ax.get_xlabel().split()) == caption
    plt.close(fig)

def test_every_study_figure_names_its_regime_in_its_title():
    """Drawn from the committed results, each study figure's title (its suptitle, or its one panel's) names the
    regime its runs were trained in: their steps, read from the config or the designs."""
    from thesis_lib.config import get_config
    from thesis_lib.study.claims import designs
    from thesis_lib.study.pages import figures
    params = _demo_params()
    short, long = f"{get_config('demo').train.steps:,} steps", f"{designs.long_steps('demo'):,} steps"
    study = [name for name, f in figures.FIGURES.items() if f.reads.variants]
    assert len(study) == 16 and not {"03_table2_bars", "04_long_schedule", "05_fusion_bars"} & set(figures.FIGURES)
    for name in study:
        fig = figures.FIGURES[name].build(params, figures.FIGURES[name].reads.variants)
        title = fig.get_suptitle() or (fig.axes[0].get_title() if len(fig.axes) == 1 else "")
        plt.close(fig)
        assert short in title or long in title, (name, title)
        if "budget" in name:
            assert f"TTE budget, {short}" in title, (name, title)
        if name in ("headline", "04_effect_vs_dose", "04_confirmation_forest"):
            assert long in title and "summed learning rate" in title, (name, title)
