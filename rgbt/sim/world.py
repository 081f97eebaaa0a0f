"""A procedural flat world with CART's 10 classes, as world-space rasters.

The world is the ground plane ``z = 0`` of the ENU world frame (x east, y north, z up, metres),
covered by a square tile of ``size_px`` x ``size_px`` raster cells of ``res_m`` metres that repeats
beyond its edges (all noise fields are periodic, so the repetition has no seam in the textures).
Raster cell ``(row, col)`` covers world ``x = (col - size/2) * res``, ``y = (size/2 - row) * res``.

Per cell the world stores: the CART class id (``labels``), the thermal signal in counts
(``thermal``: T-linear, 0.01 K per count, i.e. ``counts = 100 * T_kelvin``), the colour
(``rgb``, sRGB uint8) and the mono-camera luminance (``gray``). Everything is generated from the
seed; day and night share the layout (same classes), only temperatures and colours change.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import cv2
import numpy as np

# CART class ids (cart/class_color_mapping.csv)
UNKNOWN, BACKGROUND = 0, 1
BARE_GROUND, ROCKY, STRUCTURES, ROAD, SHRUBS, TREES, SKY, WATER, VEHICLES, PERSON = range(2, 12)
CLASS_NAMES = {
    0: "Unknown", 1: "__background__", 2: "Bare ground", 3: "Rocky terrain", 4: "Developed structures",
    5: "Road", 6: "Shrubs", 7: "Trees", 8: "Sky", 9: "Water", 10: "Vehicles", 11: "Person",
}
#: land classes used for the day/night inversion check (everything on the ground that is not water
#: and not a warm body)
LAND_CLASSES = (BARE_GROUND, ROCKY, STRUCTURES, ROAD, SHRUBS, TREES)

# Surface temperatures in deg C (day = sunny afternoon, night = clear night). Water is colder than
# land by day and warmer at night: the thermal inversion.
TEMPERATURE_C = {
    #            day   night  texture amplitude (K)
    BARE_GROUND: (34.0, 9.0, 2.5),
    ROCKY: (41.0, 12.0, 4.0),
    STRUCTURES: (44.0, 11.0, 3.0),
    ROAD: (49.0, 15.0, 1.5),
    SHRUBS: (27.0, 7.0, 2.0),
    TREES: (24.0, 8.0, 2.0),
    WATER: (15.0, 18.0, 0.4),
    VEHICLES: (43.0, 14.0, 2.0),
    PERSON: (34.0, 31.0, 0.6),
}
SKY_TEMPERATURE_C = {False: -20.0, True: -35.0}
SKY_RGB = {False: (150, 190, 235), True: (4, 6, 12)}
NIGHT_BRIGHTNESS = 0.1  # colour/mono radiance scale at night (moonlight + a long exposure)
DETAIL_RES_M = 0.02  # texel of the fine detail texture (metres)

# Appearance (sRGB) by day
BASE_RGB = {
    BARE_GROUND: (160, 138, 108),
    ROCKY: (118, 106, 94),
    STRUCTURES: (150, 150, 150),
    ROAD: (70, 72, 76),
    SHRUBS: (96, 122, 52),
    TREES: (42, 84, 38),
    WATER: (38, 74, 104),
    VEHICLES: (180, 40, 40),
    PERSON: (210, 170, 140),
}


def kelvin_counts(t_c: np.ndarray | float) -> np.ndarray:
    """T-linear counts (0.01 K per count) of a temperature in deg C."""
    return np.round((np.asarray(t_c, dtype=np.float32) + 273.15) * 100.0)


@dataclass
class World:
    size_px: int
    res_m: float
    night: bool
    labels: np.ndarray  # uint8 HxW CART ids
    thermal: np.ndarray  # uint16 HxW counts
    rgb: np.ndarray  # uint8 HxWx3
    gray: np.ndarray  # uint8 HxW
    sky_counts: int
    sky_rgb: tuple[int, int, int]
    sky_gray: int

    _pyramids: dict = field(default_factory=dict, repr=False)

    def pyramid(self, kind: str, levels: int = 13) -> list[np.ndarray]:
        """Mip levels of the ``thermal`` / ``rgb`` / ``gray`` raster (level k: 2^k cells per texel)."""
        if kind not in self._pyramids:
            pyr = [getattr(self, kind)]
            while len(pyr) < levels and pyr[-1].shape[0] >= 2:
                pyr.append(cv2.pyrDown(pyr[-1]))
            self._pyramids[kind] = pyr
        return self._pyramids[kind]

    def detail(self, levels: int = 5) -> tuple[float, list[np.ndarray]]:
        """A fine periodic texture (``DETAIL_RES_M`` per texel, mean 128, uint8) and its mip levels,
        modulating the optical cameras where the world raster is magnified (low altitude)."""
        if "detail" not in self._pyramids:
            rng = np.random.default_rng(np.random.SeedSequence([self.size_px, 0xDE7]))
            n = 2048
            tex = fractal_noise(rng, n, DETAIL_RES_M, [0.5, 0.15, 0.05], [1.0, 0.8, 0.6])
            tex = np.clip(128.0 + 22.0 * tex / max(float(tex.std()), 1e-6), 0, 255).astype(np.uint8)
            pyr = [tex]
            while len(pyr) < levels:
                pyr.append(cv2.pyrDown(pyr[-1]))
            self._pyramids["detail"] = pyr
        return DETAIL_RES_M, self._pyramids["detail"]

    def raster_from_world(self) -> np.ndarray:
        """3x3 affine mapping homogeneous world (x, y, 1) to raster (col, row, 1)."""
        n, r = self.size_px, self.res_m
        return np.array([[1.0 / r, 0.0, n / 2.0], [0.0, -1.0 / r, n / 2.0], [0.0, 0.0, 1.0]])

    def class_at(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Class id at world points (x, y) in metres (nearest cell, tile repeats)."""
        n = self.size_px
        col = np.floor(np.asarray(x) / self.res_m + n / 2.0 + 0.5).astype(np.int64) % n
        row = np.floor(n / 2.0 - np.asarray(y) / self.res_m + 0.5).astype(np.int64) % n
        return self.labels[row, col]


def periodic_noise(rng: np.random.Generator, size: int, cells: int) -> np.ndarray:
    """Smooth periodic noise (zero mean, unit-ish std) with ``cells`` features across the tile."""
    cells = max(2, min(cells, size))
    grid = rng.standard_normal((cells, cells)).astype(np.float32)
    k = cells / size  # grid cells per output pixel; BORDER_WRAP makes the result periodic
    M = np.array([[k, 0.0, 0.5 * k - 0.5], [0.0, k, 0.5 * k - 0.5]])
    return cv2.warpAffine(grid, M, (size, size), flags=cv2.INTER_CUBIC | cv2.WARP_INVERSE_MAP,
                          borderMode=cv2.BORDER_WRAP)


def _upsample_periodic(img: np.ndarray, size: int) -> np.ndarray:
    k = img.shape[0] / size
    M = np.array([[k, 0.0, 0.5 * k - 0.5], [0.0, k, 0.5 * k - 0.5]])
    return cv2.warpAffine(img, M, (size, size), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                          borderMode=cv2.BORDER_WRAP)


def fractal_noise(rng: np.random.Generator, size: int, res_m: float, scales_m: list[float],
                  weights: list[float], tile_px: int | None = None) -> np.ndarray:
    """Sum of periodic noise octaves with feature sizes ``scales_m`` (metres).

    Each octave is made at the smallest power-of-two resolution with >= 16 pixels per feature and
    upsampled (bilinear, periodic) once per resolution: cheap for coarse octaves. With ``tile_px``
    (a divisor of ``size``) the field is made on that tile and repeated (fine textures).
    """
    if tile_px is not None and tile_px < size and size % tile_px == 0:
        tile = fractal_noise(rng, tile_px, res_m, scales_m, weights)
        reps = size // tile_px
        return np.tile(tile, (reps, reps))
    by_res: dict[int, np.ndarray] = {}
    for scale_m, w in zip(scales_m, weights, strict=False):
        cells = max(2, int(round(size * res_m / scale_m)))
        r = size
        while r // 2 >= cells * 16 and size % (r // 2) == 0:
            r //= 2
        octave = periodic_noise(rng, r, cells) * np.float32(w)
        by_res[r] = by_res[r] + octave if r in by_res else octave
    out = np.zeros((size, size), np.float32)
    for r, img in by_res.items():
        out += img if r == size else _upsample_periodic(img, size)
    return out


def _layout(seed: int, size: int, res: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Class ids, a per-instance random value in [0, 1) (buildings, vehicles), a fine texture field
    and the flat indices of lane markings."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x57]))
    m = 1.0 / res  # pixels per metre
    terrain = fractal_noise(rng, size, res, [60.0, 25.0, 8.0], [1.0, 0.5, 0.25])
    moist = fractal_noise(rng, size, res, [80.0, 30.0, 10.0], [1.0, 0.5, 0.25])
    water = fractal_noise(rng, size, res, [120.0, 40.0, 12.0], [1.0, 0.45, 0.15])
    labels = np.full((size, size), BARE_GROUND, np.uint8)
    labels[terrain > 0.55] = ROCKY
    labels[moist > 0.45] = SHRUBS
    instance = np.zeros((size, size), np.float32)

    # small rocks and shrubs scattered on bare ground
    n_small = int(size * size * res * res / 40.0)
    for cls, count, rmin, rmax in ((ROCKY, n_small, 0.3, 1.2), (SHRUBS, n_small, 0.4, 1.5)):
        xs = rng.integers(0, size, count)
        ys = rng.integers(0, size, count)
        rs = rng.uniform(rmin, rmax, count) * m
        for x, y, r in zip(xs, ys, rs, strict=False):
            cv2.circle(labels, (int(x), int(y)), max(1, int(r)), int(cls), -1)

    # woods: dense canopies where the moisture field is high, plus lone trees
    forest = moist > 0.9
    n_trees = int(size * size * res * res / 25.0)
    xs = rng.integers(0, size, n_trees * 3)
    ys = rng.integers(0, size, n_trees * 3)
    keep = forest[ys, xs] | (rng.random(xs.size) < 0.08)
    for x, y, r in zip(xs[keep], ys[keep], rng.uniform(1.5, 4.0, keep.sum()) * m, strict=False):
        cv2.circle(labels, (int(x), int(y)), int(r), TREES, -1)

    # lakes, with a guaranteed pond near the origin so every flight sees water
    labels[water > 0.95] = WATER
    c = size // 2
    pond = np.zeros((size, size), np.uint8)
    cv2.ellipse(pond, (c - int(25 * m), c - int(45 * m)), (int(22 * m), int(14 * m)), 20.0, 0, 360, 1, -1)
    pond_edge = periodic_noise(rng, size, int(size * res / 6.0)) > 1.2
    labels[(pond > 0) & ~pond_edge] = WATER

    # roads: a periodic grid of straight roads (east-west and north-south), 7 m wide, with
    # one road passing near the origin
    road_mask = np.zeros((size, size), np.uint8)
    rows = [c + int(12 * m)] + list(rng.integers(0, size, 2))
    cols = [c + int(18 * m)] + list(rng.integers(0, size, 2))
    half = int(3.5 * m)
    for r0 in rows:
        road_mask[max(0, r0 - half):r0 + half, :] = 1
    for c0 in cols:
        road_mask[:, max(0, c0 - half):c0 + half] = 1
    labels[road_mask > 0] = ROAD

    # buildings along the roads
    def place_rects(n: int, cls: int, wmin: float, wmax: float, lmin: float, lmax: float,
                    near_road: float) -> None:
        for _ in range(n):
            if rng.random() < 0.5:
                r0 = int(rng.choice(rows)) + int(np.sign(rng.random() - 0.5) * (half + near_road * m))
                c0 = int(rng.integers(0, size))
            else:
                c0 = int(rng.choice(cols)) + int(np.sign(rng.random() - 0.5) * (half + near_road * m))
                r0 = int(rng.integers(0, size))
            w, ln = rng.uniform(wmin, wmax) * m, rng.uniform(lmin, lmax) * m
            angle = float(rng.choice([0.0, 90.0]) + rng.normal(0, 4))
            box = cv2.boxPoints(((c0, r0), (ln, w), angle)).astype(np.int32)
            if labels[min(max(r0, 0), size - 1), min(max(c0, 0), size - 1)] == WATER:
                continue
            cv2.fillPoly(labels, [box], int(cls))
            cv2.fillPoly(instance, [box], float(rng.random()))

    place_rects(int(len(rows) * size * res / 30.0), STRUCTURES, 8.0, 16.0, 10.0, 25.0, 12.0)
    # vehicles on the roads and parked beside buildings
    place_rects(int(len(rows) * size * res / 15.0), VEHICLES, 1.8, 2.0, 4.2, 4.8, -3.0)
    place_rects(int(len(rows) * size * res / 25.0), VEHICLES, 1.8, 2.0, 4.2, 4.8, 3.0)
    # people near roads and in the open
    n_people = int(size * size * res * res / 600.0)
    xs = rng.integers(0, size, n_people)
    ys = rng.integers(0, size, n_people)
    for x, y in zip(xs, ys, strict=False):
        if labels[y, x] != WATER:
            cv2.circle(labels, (int(x), int(y)), max(1, int(0.35 * m)), PERSON, -1)
    # a few people and a car near the origin (the showcase every flight starts over)
    for dx, dy in ((6, 4), (9, 2), (-5, 8)):
        cv2.circle(labels, (c + int(dx * m), c - int(dy * m)), max(1, int(0.35 * m)), PERSON, -1)

    fine = fractal_noise(rng, size, res, [3.0, 1.0, 0.4], [1.0, 0.6, 0.4], tile_px=min(size, 512))
    lane = np.zeros((size, size), np.uint8)
    dash = int(3 * m)
    for r0 in rows:
        for x0 in range(0, size, 3 * dash):
            cv2.line(lane, (x0, int(r0)), (x0 + dash, int(r0)), 1, max(1, int(0.15 * m)))
    for c0 in cols:
        for y0 in range(0, size, 3 * dash):
            cv2.line(lane, (int(c0), y0), (int(c0), y0 + dash), 1, max(1, int(0.15 * m)))
    lane_idx = np.flatnonzero((lane > 0) & (labels == ROAD))  # lane markings on the roads
    return labels, instance, fine, lane_idx


@functools.lru_cache(maxsize=2)
def _cached_layout(seed: int, size: int, res: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    return _layout(seed, size, res)


@functools.lru_cache(maxsize=2)
def build_world(seed: int, night: bool, size_px: int = 4096, res_m: float = 0.1) -> World:
    """The world for a seed (cached: the same seed gives the same rasters)."""
    labels, instance, tex, lane = _cached_layout(seed, size_px, res_m)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x7E, int(night)]))
    medium = fractal_noise(rng, size_px, res_m, [12.0, 5.0], [1.0, 0.5])
    objects = np.flatnonzero((labels == STRUCTURES) | (labels == VEHICLES))
    obj_cls = labels.ravel()[objects]
    obj_val = instance.ravel()[objects]

    base_t = np.zeros(256, np.float32)
    amp_t = np.zeros(256, np.float32)
    for cls, (day, nite, amp) in TEMPERATURE_C.items():
        base_t[cls] = nite if night else day
        amp_t[cls] = amp
    mix = cv2.addWeighted(tex, 0.6, medium, 0.5, 0.0)
    temp: np.ndarray = cv2.add(cv2.LUT(labels, base_t), cv2.multiply(cv2.LUT(labels, amp_t), mix))
    flat: np.ndarray = temp.reshape(-1)
    flat[objects] += (obj_val - 0.5) * np.where(obj_cls == VEHICLES, 10.0, 8.0).astype(np.float32)
    flat[lane] -= 3.0 if not night else 0.5  # paint reflects more sun than asphalt
    temp = cv2.GaussianBlur(temp, (0, 0), 1.0, borderType=cv2.BORDER_REFLECT)
    # OpenCV takes a scalar for an array operand; its stubs say arrays only
    thermal = cv2.add(cv2.multiply(temp, 100.0), 27315.0)  # type: ignore[call-overload]
    thermal = np.round(thermal).astype(np.uint16)

    shade = cv2.add(cv2.addWeighted(tex, 0.18, medium, 0.12, 0.0), 1.0)  # type: ignore[call-overload]
    hue = (np.sin(6.28 * obj_val), np.cos(6.28 * obj_val), np.sin(9.0 * obj_val))
    scale = NIGHT_BRIGHTNESS if night else 1.0
    channels = []
    for c in range(3):
        lut = np.zeros(256, np.float32)
        for cls, rgb in BASE_RGB.items():
            lut[cls] = rgb[c]
        ch: np.ndarray = cv2.multiply(cv2.LUT(labels, lut), shade)
        flat = ch.reshape(-1)
        flat[objects] += 70.0 * hue[c]
        flat[lane] = (235.0, 235.0, 225.0)[c]
        channels.append(cv2.convertScaleAbs(ch, alpha=scale))
    rgb8 = cv2.GaussianBlur(cv2.merge(channels), (0, 0), 0.7, borderType=cv2.BORDER_REFLECT)
    gray = cv2.cvtColor(rgb8, cv2.COLOR_RGB2GRAY)
    sky_rgb = SKY_RGB[night]
    sky_gray = int(round(0.299 * sky_rgb[0] + 0.587 * sky_rgb[1] + 0.114 * sky_rgb[2]))
    return World(size_px=size_px, res_m=res_m, night=night, labels=labels, thermal=thermal, rgb=rgb8,
                 gray=gray, sky_counts=int(kelvin_counts(SKY_TEMPERATURE_C[night])), sky_rgb=sky_rgb,
                 sky_gray=sky_gray)
