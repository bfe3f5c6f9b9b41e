"""The embedded world: scenes, their pictures and their captions, generated from a seed.

A scene holds 1-4 objects; each object has a shape, a colour, a size and a position, so captions can say
"a small red ball left of a blue box". Pictures are drawn at 4× and downsampled, on a low-frequency noisy
background, with colour jitter, random rotation and pixel noise, so that recognising them takes learning.
Two styles mirror the thesis's evaluation sets: ``coco`` (1-3 objects, short plain captions, indoor-ish
backgrounds) and ``flickr`` (2-4 objects, longer descriptive captions that name the background). The files
are written by ``thesis_lib.data.world_files`` in the formats of the real datasets.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import torch
from PIL import Image, ImageDraw, ImageFilter

SHAPES = {  # canonical name -> words a caption may use
    "circle": ("circle", "ball", "disc"),
    "square": ("square", "box", "block"),
    "triangle": ("triangle", "wedge"),
    "cross": ("cross", "plus sign"),
    "diamond": ("diamond", "rhombus"),
    "star": ("star",),
}
COLOURS = {
    "red": (215, 40, 40), "green": (40, 165, 60), "blue": (45, 85, 220), "yellow": (235, 210, 45),
    "purple": (145, 60, 185), "orange": (240, 140, 35), "white": (240, 240, 240), "black": (25, 25, 25),
}
PATTERNS = {  # each shape's surface: a category has a look of its own (as a zebra has stripes), period in pixels
    "circle": ("solid", 0), "square": ("stripes", 0), "triangle": ("stripes", 90), "cross": ("checks", 0),
    "diamond": ("stripes", 45), "star": ("dots", 0),
}
PATTERN_PERIOD = 4       # at the rendered size: light and dark bands 2 px each
SIZES = {"small": (0.13, 0.18), "large": (0.24, 0.32)}  # radius as a fraction of the image side
SIZE_WORDS = {"small": ("small", "little", "tiny"), "large": ("large", "big", "huge")}
BACKGROUNDS = {"grey": (128, 128, 128), "sand": (190, 175, 130), "dark": (55, 55, 65),
               "sky": (135, 180, 225), "grass": (105, 155, 90)}
STYLE_BACKGROUNDS = {"coco": ("grey", "sand", "dark"), "flickr": ("sky", "grass", "grey")}
STYLE_OBJECTS = {"coco": (1, 3), "flickr": (2, 4)}
CLASSES = [f"{c} {s}" for c in COLOURS for s in SHAPES]  # the ImageNet stand-in: 48 colour-shape classes
ZERO_SHOT_TEMPLATES = [
    "a photo of a {}.", "a picture of a {}.", "an image of a {}.", "a {} on a plain background.",
    "there is a {} in the image.", "a drawing of a {}.", "a rendering of a {}.", "a low resolution photo of the {}.",
]


def _pick(rng: np.random.Generator, options):
    options = tuple(options)
    return options[int(rng.integers(len(options)))]


@dataclass(frozen=True)
class Thing:
    shape: str
    colour: str
    size: str
    x: float      # centre, fraction of the side (0 = left)
    y: float      # centre, fraction of the side (0 = top)
    r: float      # radius, fraction of the side
    angle: float  # rotation in degrees (±20°: a square turned by 45° would be a diamond)


@dataclass(frozen=True)
class Scene:
    things: tuple
    background: str
    style: str

    def labels(self) -> np.ndarray:
        """Multi-hot over CLASSES: which colour-shape pairs the picture shows (the teacher's supervision)."""
        y = np.zeros(len(CLASSES), dtype=np.float32)
        for t in self.things:
            y[CLASSES.index(f"{t.colour} {t.shape}")] = 1
        return y


def sample_scene(rng: np.random.Generator, style: str = "coco", n_things: int | None = None,
                 things: list[tuple[str, str, str]] | None = None) -> Scene:
    """A random scene; ``things`` fixes (shape, colour, size) triples (used for the class images)."""
    lo, hi = STYLE_OBJECTS[style]
    if things is None:
        n = n_things or int(rng.integers(lo, hi + 1))
        things = [(_pick(rng, SHAPES), _pick(rng, COLOURS), _pick(rng, SIZES)) for _ in range(n)]
    placed: list[Thing] = []
    for shape, colour, size in things:
        r = float(rng.uniform(*SIZES[size]))
        for _ in range(50):  # rejection sampling: keep objects mostly apart
            x, y = rng.uniform(r, 1 - r, size=2)
            if all((x - t.x) ** 2 + (y - t.y) ** 2 > (0.8 * (r + t.r)) ** 2 for t in placed):
                break
        placed.append(Thing(str(shape), str(colour), str(size), float(x), float(y), r, float(rng.uniform(-20, 20))))
    return Scene(tuple(placed), _pick(rng, STYLE_BACKGROUNDS[style]), style)


# ---------------------------------------------------------------------------------------------------- pictures

def _polygon(shape: str, cx: float, cy: float, r: float, angle: float) -> list[tuple[float, float]]:
    if shape == "square":
        pts = [(-0.8, -0.8), (0.8, -0.8), (0.8, 0.8), (-0.8, 0.8)]
    elif shape == "triangle":
        pts = [(np.cos(a), np.sin(a)) for a in np.deg2rad([-90, 30, 150])]
    elif shape == "diamond":
        pts = [(0, -1), (0.6, 0), (0, 1), (-0.6, 0)]
    elif shape == "cross":
        a, b = 0.3, 1.0
        pts = [(-a, -b), (a, -b), (a, -a), (b, -a), (b, a), (a, a),
               (a, b), (-a, b), (-a, a), (-b, a), (-b, -a), (-a, -a)]
    elif shape == "star":
        pts = [((1.0 if k % 2 == 0 else 0.45) * np.cos(np.deg2rad(-90 + 36 * k)),
                (1.0 if k % 2 == 0 else 0.45) * np.sin(np.deg2rad(-90 + 36 * k))) for k in range(10)]
    else:
        raise ValueError(shape)
    c, s = np.cos(np.deg2rad(angle)), np.sin(np.deg2rad(angle))
    return [(cx + r * (c * px - s * py), cy + r * (s * px + c * py)) for px, py in pts]


def _pattern(shape: str, side: int, period: int, angle: float, rng: np.random.Generator) -> np.ndarray:
    """(side, side) bool: where the shape's surface pattern is dark; it turns with the object."""
    kind, direction = PATTERNS[shape]
    yy, xx = np.mgrid[0:side, 0:side].astype(np.float32) + rng.uniform(0, period, 2)[:, None, None]
    a = np.deg2rad(direction + angle)
    u = xx * np.cos(a) + yy * np.sin(a)
    v = -xx * np.sin(a) + yy * np.cos(a)
    half = period / 2
    if kind == "solid":
        return np.zeros((side, side), dtype=bool)
    if kind == "stripes":
        return (u % period) < half
    if kind == "checks":
        return ((u % period) < half) ^ ((v % period) < half)
    return ((u % period - half) ** 2 + (v % period - half) ** 2) < (0.3 * period) ** 2   # dots


def render(scene: Scene, size: int, rng: np.random.Generator) -> Image.Image:
    """Draw a scene as an RGB picture of ``size`` × ``size`` pixels."""
    big = size * 4
    base = np.array(BACKGROUNDS[scene.background], dtype=np.float32)
    blobs = base + rng.normal(0, 24, size=(4, 4, 3))                    # low-frequency background texture
    canvas = Image.fromarray(np.clip(blobs, 0, 255).astype(np.uint8)).resize((big, big), Image.BICUBIC)
    for t in scene.things:
        colour = np.clip(np.array(COLOURS[t.colour]) + rng.normal(0, 18, 3), 0, 255)
        cx, cy, r = t.x * big, t.y * big, t.r * big
        mask = Image.new("L", (big, big))
        draw = ImageDraw.Draw(mask)
        if t.shape == "circle":
            draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=255)
        else:
            draw.polygon(_polygon(t.shape, cx, cy, r, t.angle), fill=255)
        dark = _pattern(t.shape, big, PATTERN_PERIOD * 4, t.angle, rng)
        alt = colour * 0.5 if colour.mean() > 70 else colour + 80      # the pattern's second tone
        fill = np.where(dark[..., None], alt, colour).astype(np.uint8)
        canvas.paste(Image.fromarray(fill), (0, 0), mask)
    img = canvas.resize((size, size), Image.LANCZOS).filter(ImageFilter.GaussianBlur(float(rng.uniform(0, 0.4))))
    noisy = np.asarray(img, dtype=np.float32) + rng.normal(0, 9, size=(size, size, 3))
    return Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8))


# ---------------------------------------------------------------------------------------------------- captions

def _region(t: Thing) -> str:
    h = "left" if t.x < 0.37 else "right" if t.x > 0.63 else ""
    v = "top" if t.y < 0.37 else "bottom" if t.y > 0.63 else ""
    return f"{v} {h}".strip() or "middle"


def _relation(a: Thing, b: Thing) -> str:
    dx, dy = b.x - a.x, b.y - a.y
    if abs(dx) > abs(dy):
        return "to the left of" if dx > 0 else "to the right of"
    return "above" if dy > 0 else "below"


def _noun(t: Thing, rng: np.random.Generator, with_size: float = 0.5) -> str:
    words = [t.colour, _pick(rng, SHAPES[t.shape])]
    if rng.random() < with_size:
        words.insert(0, _pick(rng, SIZE_WORDS[t.size]))
    phrase = " ".join(words)
    return ("an " if phrase[0] in "aeiou" else "a ") + phrase


_COUNT = {1: "one", 2: "two", 3: "three", 4: "four"}


def _coco_caption(scene: Scene, rng: np.random.Generator) -> str:
    things = list(scene.things)
    rng.shuffle(things)
    nouns = [_noun(t, rng) for t in things]
    if len(things) == 1:
        forms = [f"{nouns[0]}", f"{nouns[0]} in the {_region(things[0])}", f"a picture of {nouns[0]}",
                 f"there is {nouns[0]} in the {_region(things[0])} of the image",
                 f"{nouns[0]} on a {scene.background} background", f"an image showing {nouns[0]}"]
    else:
        listing = ", ".join(nouns[:-1]) + f" and {nouns[-1]}"
        rel = f"{nouns[0]} {_relation(things[0], things[1])} {nouns[1]}"
        forms = [listing, f"{_COUNT[len(things)]} shapes: {listing}", f"a picture of {listing}",
                 rel, f"an image with {rel}",
                 f"{rel} and more" if len(things) > 2 else f"{nouns[0]} next to {nouns[1]}"]
    return _pick(rng, forms)


def _flickr_caption(scene: Scene, rng: np.random.Generator) -> str:
    things = list(scene.things)
    rng.shuffle(things)
    nouns = [_noun(t, rng, with_size=0.8) for t in things]
    listing = ", ".join(nouns[:-1]) + f" and {nouns[-1]}"
    first, second = things[0], things[1]
    forms = [
        f"{_COUNT[len(things)].capitalize()} shapes lie on a {scene.background} backdrop: {listing}.",
        f"Against a noisy {scene.background} background, {nouns[0]} sits {_relation(first, second)} {nouns[1]}.",
        f"Someone drew {listing} on a {scene.background} surface.",
        f"In the {_region(first)} there is {nouns[0]}, while {nouns[1]} can be seen in the {_region(second)}.",
        f"A {scene.background} scene with {listing} scattered around.",
        f"The picture shows {nouns[0]} {_relation(first, second)} {nouns[1]} on {scene.background}.",
    ]
    return _pick(rng, forms)


def captions(scene: Scene, rng: np.random.Generator, n: int = 5) -> list[str]:
    """``n`` different captions of one scene, in the scene's style (like COCO's and Flickr30K's five)."""
    make = _coco_caption if scene.style == "coco" else _flickr_caption
    out: list[str] = []
    for _ in range(200):
        c = make(scene, rng)
        if c not in out:
            out.append(c)
        if len(out) == n:
            return out
    raise RuntimeError(f"could not write {n} different captions for {scene}")  # pragma: no cover


def class_scene(rng: np.random.Generator, label: int) -> Scene:
    """A picture of one class of the ImageNet stand-in: a large object, sometimes with a small distractor."""
    colour, shape = CLASSES[label].split(" ")
    things = [(shape, colour, "large")]
    if rng.random() < 0.25:
        other = CLASSES[int(rng.integers(len(CLASSES)))].split(" ")
        if other != [colour, shape]:
            things.append((other[1], other[0], "small"))
    return sample_scene(rng, _pick(rng, ("coco", "flickr")), things=things)


# ---------------------------------------------------------------------------------------------------- what fits

_WORD_SHAPE = {w: s for s, words in SHAPES.items() for w in words}
_NAMED = re.compile(r"\b(" + "|".join(COLOURS) + r")\s+(" + "|".join(sorted(_WORD_SHAPE, key=len, reverse=True))
                    + r")\b")


def named_classes(caption: str) -> np.ndarray:
    """Multi-hot over CLASSES: the colour-shape pairs a world caption names ("a small red ball" names "red circle")."""
    y = np.zeros(len(CLASSES), dtype=bool)
    for colour, word in _NAMED.findall(caption.lower()):
        y[CLASSES.index(f"{colour} {_WORD_SHAPE[word]}")] = True
    return y


@dataclass
class Descriptions:
    """What the world's captions say, to tell a true negative from a caption of another picture that fits this one
    too: the world names objects by colour and shape, so a caption naming a pair the picture lacks is false. A
    picture's pairs are the union of those its own captions name (five captions miss an object of a scene with odd
    ≈ 10⁻⁴ per object); a caption naming only present pairs counts as fitting, even if its sizes or places are off."""
    named: torch.Tensor       # (captions, C) bool
    objects: torch.Tensor     # (pictures, C) bool

    @classmethod
    def of(cls, captions: list[str], image_of: torch.Tensor, n_images: int | None = None) -> "Descriptions":
        named = torch.from_numpy(np.stack([named_classes(c) for c in captions]))
        objects = torch.zeros(n_images or int(image_of.max()) + 1, len(CLASSES), dtype=torch.bool)
        objects.index_put_((image_of.long(),), named, accumulate=True)
        return cls(named, objects)

    def fits(self, images: torch.Tensor, captions: torch.Tensor) -> torch.Tensor:
        """(len(images), len(captions)) bool: caption j names nothing that picture i lacks (counts, exact in float)."""
        missing = (~self.objects[images]).float() @ self.named[captions].float().t()
        return missing == 0
