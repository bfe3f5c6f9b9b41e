"""A trained model in hand (notebook 01's last section), as open_clip's readers look at one: pictures of the COCO-like
test set with their own captions (``gallery``), the captions a model ranks first for a few of them (``retrievals``,
drawn by ``retrievals_figure``), and how often its top caption is not a picture's own (``top1``).

The set is read as the evaluation reads it (``evaluate.evaluation_inputs``), its captions as text by the same loader
(``datasets.retrieval_index`` of ``roots.pair_records``); the embeddings are the API's (``Loaded.encode_image`` and
``encode_text``: the evaluation's own), ranked by ``thesis_lib.rank``. Pictures are drawn by a seeded generator.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import textwrap
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
from matplotlib.patches import Patch

from thesis_lib.analysis import checkpoint_config, load_trained, read_checkpoint
from thesis_lib.api import Loaded, rank
from thesis_lib.config import get_config
from thesis_lib.stored_config import config_diff
from thesis_lib.data import datasets as ds
from thesis_lib.data.eval_sets import RetrievalSet
from thesis_lib.data.roots import data_root, pair_records
from thesis_lib.errors import DataError
from thesis_lib.evaluate import evaluation_inputs
from thesis_lib.evaluation import retrieval_recalls
from thesis_lib.metrics import COCO_TR1, METRICS
from thesis_lib.numerics import one_thread

INKS = {"own": "#1b7837", "fits": "#b35806", "wrong": "#b2182b"}
MARKS = {"own": "✓", "fits": "≈", "wrong": "✗"}   # its own caption; another's naming only what it shows; not that
MARK_OF = {mark: kind for kind, mark in MARKS.items()}


@dataclasses.dataclass
class TestSet:
    """The COCO-like test set: ``retrieval`` as the evaluation holds it (pictures, tokens, ``text_to_image``, what
    each caption names), ``files`` its pictures' files and ``captions`` its captions as text, in the same order."""
    retrieval: RetrievalSet
    files: list
    captions: list[str]

    def own(self, picture: int) -> list[int]:
        """The caption ids of one picture's own captions."""
        return torch.nonzero(self.retrieval.text_to_image == picture)[:, 0].tolist()

    def fits(self, pictures, captions) -> torch.Tensor:
        """Pair by pair, whether caption ``captions[i]`` names nothing picture ``pictures[i]`` lacks (the world's
        ``Descriptions.fits``: colour-shape pairs; on real data, whether it is the picture's own)."""
        p, c = (torch.as_tensor(list(x), dtype=torch.long) for x in (pictures, captions))
        d = self.retrieval.descriptions
        if d is None:
            return self.retrieval.text_to_image[c] == p
        return torch.cat([d.fits(p[i:i + 256], c[i:i + 256]).diagonal() for i in range(0, len(p), 256)])


def coco_test(cfg) -> TestSet:
    """The COCO-like test set of a run's config (``Loaded.config``), prepared on first use as the evaluation does."""
    _, (sets, _) = evaluation_inputs(cfg)
    files, captions, text_to_image = ds.retrieval_index(pair_records("coco", "test", data_root(cfg)))
    held = next(s for s in sets if s.name == "coco")
    if not held.text_to_image.equal(text_to_image):
        raise DataError("the evaluation's COCO-like set and its captions read again disagree: rebuild the data")
    return TestSet(held, files, captions)


def describe(checkpoint) -> str:
    """One line on a run's checkpoint file, read from it and its model built (``analysis.load_trained``: no world,
    no tokenizer): size, preset, variant, seed, step, parameters, and the fields its config changes in the preset's."""
    state, path = read_checkpoint(checkpoint), Path(checkpoint)
    cfg = checkpoint_config(state, f"checkpoint {path}")
    changed = config_diff(dataclasses.asdict(get_config(cfg.preset, cfg.model.variant, cfg.seed)), state["config"])
    params = sum(p.numel() for p in load_trained(state, "cpu", cfg).parameters())
    return (f"{path.name} ({path.stat().st_size / 1e6:.1f} MB): the {cfg.preset} preset's {cfg.model.variant}, seed "
            f"{cfg.seed}, step {state['step']:,} of {cfg.train.steps:,}; {params:,} parameters; its config changes "
            f"the preset's {'; '.join(changed) or 'nothing'}")


def picks(n: int, total: int, seed: int = 0) -> list[int]:
    """``n`` of ``total`` pictures by a seeded generator: the same every run, and the first n' < n are n''s picks."""
    return np.random.default_rng(seed).permutation(total)[:n].tolist()


def write_examples(test: TestSet, folder, n: int = 8) -> list[dict]:
    """The pictures ``thesis_lib.examples`` ships: the gallery's first ``n`` (``picks``), copied with each one's first
    own caption into ``folder`` (``examples.json`` beside them)."""
    folder, shown = Path(folder), []
    for k, p in enumerate(picks(n, len(test.files))):
        name = f"example-{k}{Path(test.files[p]).suffix}"
        (folder / name).write_bytes(Path(test.files[p]).read_bytes())
        shown.append({"file": name, "caption": test.captions[test.own(p)[0]], "test_picture": p})
    (folder / "examples.json").write_text(json.dumps(shown, indent=1) + "\n")
    return shown


def embed(loaded: Loaded, test: TestSet) -> tuple[torch.Tensor, torch.Tensor]:
    """Every picture (N, D) and caption (T, D) of the set, through the API; on one thread on a CPU, as a run
    evaluates itself (so ``top1``'s ``wrong`` is 100 − the run's stored image→text R@1 to the last digit)."""
    with one_thread() if loaded.context.device.type == "cpu" else contextlib.nullcontext():
        return loaded.encode_image(test.retrieval.images), loaded.encode_text(test.retrieval.tokens)


def gallery(test: TestSet, n: int = 8, *, columns: int = 4, width: int = 34):
    """A figure of ``n`` test pictures (``picks``), each with its own captions wrapped under it."""
    pictures = picks(n, len(test.files))
    texts = ["\n".join(textwrap.fill(test.captions[j], width, subsequent_indent="   ") for j in test.own(p))
             for p in pictures]
    rows, lines = -(-len(pictures) // columns), max(t.count("\n") + 1 for t in texts)
    fig = plt.figure(figsize=(2.8 * columns, rows * (2.8 + 0.16 * lines)), layout="constrained")
    grid = fig.add_gridspec(2 * rows, columns, height_ratios=[2.3, 0.16 * lines] * rows)
    for k, (p, text) in enumerate(zip(pictures, texts)):
        r, c = divmod(k, columns)
        image, under = fig.add_subplot(grid[2 * r, c]), fig.add_subplot(grid[2 * r + 1, c])
        image.imshow(ds.open_image(test.files[p]), interpolation="nearest")
        image.set_title(f"test picture {p}", fontsize=9)
        under.text(0, 1, text, va="top", ha="left", fontsize=8, transform=under.transAxes)
        for ax in (image, under):
            ax.axis("off")
    fig.suptitle(f"{len(pictures)} of the COCO-like test set's {len(test.files):,} pictures, each with its own "
                 "captions", fontsize=11)
    return fig


def retrievals(loaded: Loaded, test: TestSet, n: int = 6, *, pictures=None, k: int = 3,
               embedded=None) -> pd.DataFrame:
    """For ``n`` test pictures (``picks``: the gallery's first, or ``pictures``), the model's top-``k`` captions of
    the whole set (``rank``'s, best first) and the picture's own, a row each: ``picture``, ``kind`` (retrieved, own),
    ``rank`` (retrieved: its place; own: 1 + how many of all captions score higher, so one tied with the top is 1),
    ``mark`` (``MARKS``), ``cosine``, ``caption``, ``own`` (the picture's own caption), ``fits`` (names nothing the
    picture lacks) and ``caption_id``. ``embedded``: ``embed``'s, where the caller has it."""
    pictures = picks(n, len(test.files)) if pictures is None else list(pictures)
    if embedded:
        img, txt = embedded[0][pictures], embedded[1]
    else:                                                  # only the chosen pictures encoded, every caption
        held = test.retrieval
        chosen = held.images[pictures] if isinstance(held.images, torch.Tensor) else [held.images[p] for p in pictures]
        img, txt = loaded.encode_image(chosen), loaded.encode_text(held.tokens)
    _, top = rank(img, txt, k)
    sims = img.float() @ txt.to(img.device).float().T                        # rank's similarities
    rows = []
    for q, p in enumerate(pictures):
        own = set(test.own(p))
        mine = sorted(own, key=lambda j: -sims[q, j].item())
        chosen = [("retrieved", i + 1, j) for i, j in enumerate(top[q].tolist())]
        chosen += [("own", int((sims[q] > sims[q, j]).sum()) + 1, j) for j in mine]
        for (kind, r, j), fit in zip(chosen, test.fits([p] * len(chosen), [c[2] for c in chosen]).tolist()):
            mark = "own" if j in own else "fits" if fit else "wrong"
            rows.append(dict(picture=p, kind=kind, rank=r, mark=MARKS[mark], cosine=round(sims[q, j].item(), 4),
                             caption=test.captions[j], own=j in own, fits=fit, caption_id=j))
    return pd.DataFrame(rows)


def retrievals_figure(frame: pd.DataFrame, test: TestSet):
    """``retrievals``' rows drawn: each picture beside the model's top captions and its own, marked and inked
    ✓ its own, ≈ another picture's that names only what it shows, ✗ one that names something it lacks."""
    groups = list(frame.groupby("picture", sort=False))
    heights = [len(g) + 3 for _, g in groups]
    tall = 0.19 * sum(heights) + 0.5
    fig = plt.figure(figsize=(11, tall))
    grid = fig.add_gridspec(len(groups), 2, width_ratios=[1, 7], height_ratios=heights, hspace=0.15, wspace=0.02,
                            left=0.01, right=0.99, bottom=0.01, top=1 - 0.45 / tall)
    total = f"{len(test.captions):,}"
    for r, (p, g) in enumerate(groups):
        image, text = fig.add_subplot(grid[r, 0]), fig.add_subplot(grid[r, 1])
        image.imshow(ds.open_image(test.files[p]), interpolation="nearest")
        image.set_title(f"test picture {p}", fontsize=9)
        got, own = g[g.kind == "retrieved"], g[g.kind == "own"]
        lines = [("", f"the model's top {len(got)} of all {total} captions (cosine)", "black", "bold")]
        lines += [(x.mark, f"{x.cosine:+.3f}  {x.caption}", INKS[MARK_OF[x.mark]], "normal") for x in got.itertuples()]
        lines += [("", f"its own captions (rank among the {total}, cosine)", "black", "bold")]
        lines += [(f"#{x.rank:,}", f"{x.cosine:+.3f}  {x.caption}", "#444444", "normal") for x in own.itertuples()]
        text.set(xlim=(0, 1), ylim=(heights[r] - 0.5, -0.5))
        for y, (left, line, ink, weight) in enumerate(lines):
            for x, words in ((0, left), (0.06 * bool(left), line)):
                text.text(x, y + (y > len(got)) * 0.5, words, color=ink, fontweight=weight, fontsize=9, va="center")
        for ax in (image, text):
            ax.axis("off")
    said = {"own": "its own caption", "fits": "another picture's, naming only colours and shapes it shows",
            "wrong": "one naming a colour or shape it lacks"}
    fig.legend([Patch(color=INKS[m]) for m in said], [f"{MARKS[m]} {w}" for m, w in said.items()], ncols=3,
               loc="upper left", bbox_to_anchor=(0.01, 1), frameon=False, fontsize=9, handlelength=0.8)
    return fig


def top1(loaded: Loaded, test: TestSet, embedded=None) -> dict:
    """The top captions over the whole set, in percent of its N pictures: ``wrong`` (not one of the picture's own:
    100 − the evaluation's image→text R@1, ``evaluation.retrieval_recalls`` on the API's embeddings, which breaks a
    tie between an own caption and another picture's in the same words as the evaluation does),
    ``argmax_wrong`` (by ``rank``'s top caption), ``ties`` (an own caption ties with the top one, another
    picture's), ``fits`` (the top caption is another picture's and names nothing this one lacks), ``chance``."""
    img, txt = embedded or embed(loaded, test)
    t2i, n = test.retrieval.text_to_image, len(img)
    foreign, tied = torch.zeros(n, dtype=torch.bool), torch.zeros(n, dtype=torch.bool)
    top = torch.zeros(n, dtype=torch.long)
    for start in range(0, n, 512):                                      # (512, T) similarities at a time
        chunk = torch.arange(start, min(start + 512, n))
        best, got = rank(img[chunk], txt, 1)
        sims = img[chunk].float() @ txt.to(img.device).float().T         # rank's, to tell exact ties
        own = (t2i[None, :] == chunk[:, None]).to(sims.device)
        top[chunk] = got[:, 0].cpu()
        foreign[chunk] = t2i[top[chunk]] != chunk
        tied[chunk] = foreign[chunk] & (sims.masked_fill(~own, float("-inf")).max(1).values == best[:, 0]).cpu()
    fits = foreign & test.fits(range(n), top.tolist())
    sizes = {"coco": (n, len(t2i))}
    return dict(wrong=100 - retrieval_recalls(img, txt, t2i, loaded.context.chunk)["tr@1"],
                argmax_wrong=100 * foreign.sum().item() / n,
                ties=100 * tied.sum().item() / n, fits=100 * fits.sum().item() / n,
                chance=METRICS[COCO_TR1].chance(sizes), pictures=n, captions=len(t2i))


def said(found: dict) -> str:
    """``top1``'s numbers in sentences."""
    x = found["wrong"]
    return (f"At this scale the top caption is wrong for {x:.0f} % of the COCO-like test pictures (image→text R@1 "
            f"{100 - x:.1f} %; chance {found['chance']:.2f} %: {found['pictures']:,} pictures, {found['captions']:,} "
            f"captions). Wrong is not always false: for {found['fits']:.0f} % of the pictures the top caption is "
            f"another picture's that names only colours and shapes this one shows (for {found['ties']:.1f} % it is "
            f"tied with one of its own, in the same words), and for {found['argmax_wrong'] - found['fits']:.0f} % it "
            f"names a colour or shape the picture lacks.")
