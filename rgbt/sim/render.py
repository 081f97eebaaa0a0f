"""Render a camera view of the flat world: per-pixel rays precomputed once, per frame one homography.

Every pixel's ray (through the lens distortion of the stack's camera: the images look like the real
lenses) is precomputed as an undistorted normalized coordinate ``(x_n, y_n, 1)``. On the ground plane
``z = 0`` the map from ``(x_n, y_n, 1)`` to world ``(x, y)`` is a homography that depends only on the
camera pose, so a frame costs one ``cv2.perspectiveTransform`` plus ``cv2.remap`` of the world rasters
(bilinear for the image, nearest for the class ids: labels come from the same rays, exact by
construction). Rays at or above the horizon see the sky.
"""

from __future__ import annotations

from collections.abc import Callable

import cv2
import numpy as np

from rgbt.sim.world import SKY, World
from rgbt.stack import CameraSpec

# cv2.remap(src, map1, None, ...) (one float map of x, y) is OpenCV's documented form; its stubs want
# map2 an array, hence the `type: ignore[call-overload]` on those calls.

_SKY_EPS = 1e-6


_RAYS_CACHE: dict[tuple, CameraRays] = {}


def camera_rays(camera: CameraSpec) -> CameraRays:
    """Cached :class:`CameraRays` (the iterative undistortion of every pixel takes ~0.5 s)."""
    key = (camera.width, camera.height, camera.distortion.model, tuple(camera.K().ravel()),
           tuple(camera.dist_coeffs().ravel()))
    if key not in _RAYS_CACHE:
        _RAYS_CACHE[key] = CameraRays(camera)
    return _RAYS_CACHE[key]


class CameraRays:
    """Per-pixel undistorted normalized ray coordinates of one camera."""

    def __init__(self, camera: CameraSpec) -> None:
        self.width, self.height = camera.width, camera.height
        u, v = np.meshgrid(np.arange(self.width, dtype=np.float64), np.arange(self.height, dtype=np.float64))
        pix = np.stack([u.ravel(), v.ravel()], -1).reshape(-1, 1, 2)
        K, dist = camera.K(), camera.dist_coeffs()
        if camera.distortion.model == "equidistant":
            und = cv2.fisheye.undistortPoints(pix, K, dist)
        elif camera.distortion.model == "none" or not np.any(dist):
            und = cv2.undistortPoints(pix, K, None)
        else:
            crit = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 50, 1e-12)
            und = cv2.undistortPoints(pix, K, dist, R=None, P=None, criteria=crit)
        self.xy = und.reshape(-1, 1, 2).astype(np.float32)  # N x 1 x 2 (perspectiveTransform layout)
        xy = und.reshape(self.height, self.width, 2)
        self.x_n = xy[..., 0].astype(np.float32)
        self.y_n = xy[..., 1].astype(np.float32)
        border = np.zeros((self.height, self.width), bool)
        border[[0, -1], :] = True
        border[:, [0, -1]] = True
        self._border = np.stack([self.x_n[border], self.y_n[border], np.ones(border.sum(), np.float32)], -1)

def ground_homography(T_world_cam: np.ndarray, world: World) -> np.ndarray:
    """3x3 homography from camera normalized coordinates (x_n, y_n, 1) to world raster (col, row, 1)."""
    R, c = T_world_cam[:3, :3], T_world_cam[:3, 3]
    r1, r2, r3 = R[0], R[1], R[2]
    # ground point = c + t R d with t = -c_z / (r3 . d)  =>  x = (c_x r3 - c_z r1) . d / (r3 . d)
    M = np.stack([c[0] * r3 - c[2] * r1, c[1] * r3 - c[2] * r2, r3])
    return world.raster_from_world() @ M


class ViewRenderer:
    """Renders one camera's view of a world: ``render(T_world_cam) -> (image, labels)``.

    Minification (far ground, high altitude) samples a mip level of the world raster chosen per band
    of ``BAND`` rows from the band's smallest pixel footprint: less aliasing and far fewer cache
    misses. Labels always come from the full-resolution class raster (nearest cell of the pixel's
    centre ray: exact).
    """

    BAND = 64
    DETAIL_MAX_FOOTPRINT = 0.6  # fine detail only where a pixel covers < 0.6 world cell (close range)

    def __init__(self, camera: CameraSpec, world: World, mipmap: bool = True, detail: bool = True) -> None:
        self.sky_value: int | tuple[int, int, int]
        if camera.modality == "thermal":
            kind, self.sky_value = "thermal", world.sky_counts
        elif camera.modality == "color":
            kind, self.sky_value = "rgb", world.sky_rgb
        else:
            kind, self.sky_value = "gray", world.sky_gray
        self.levels = world.pyramid(kind) if mipmap else [getattr(world, kind)]
        self.raster = self.levels[0]
        self.world = world
        self.rays = camera_rays(camera)
        self.shape = (camera.height, camera.width)
        self.detail = None
        if detail and camera.modality != "thermal" and mipmap:
            detail_res, levels = world.detail()
            self.detail = (world.res_m / detail_res, levels)
        w = camera.width
        self._probe_cols = np.array([0, w // 4, w // 2, 3 * w // 4, w - 2])

    def sky_mask(self, T_world_cam: np.ndarray) -> np.ndarray | None:
        """Boolean H x W where the ray does not hit the ground (None when no pixel sees sky)."""
        R, c = T_world_cam[:3, :3], T_world_cam[:3, 3]
        r3 = R[2]
        if c[2] <= 0:
            return np.ones(self.shape, bool)
        # r3 . d is linear in (x_n, y_n): its maximum over the image lies on the image border
        if float((self._border_dots(r3)).max()) < -_SKY_EPS:
            return None
        den = self.rays.x_n * np.float32(r3[0]) + self.rays.y_n * np.float32(r3[1]) + np.float32(r3[2])
        return den >= -_SKY_EPS

    def _border_dots(self, r3: np.ndarray) -> np.ndarray:
        return self.rays._border @ r3.astype(np.float32)

    def maps(self, T_world_cam: np.ndarray) -> np.ndarray:
        """H x W x 2 float32 raster coordinates of each pixel's ground point."""
        H = ground_homography(T_world_cam, self.world)
        return cv2.perspectiveTransform(self.rays.xy, H).reshape(self.shape[0], self.shape[1], 2)

    def _probe(self, m: np.ndarray, r0: int) -> tuple[float, float, np.ndarray]:
        """Smallest and largest pixel footprint (raster cells per pixel, 0 if all sky) and a
        representative raster coordinate (x, y), probed on row ``r0``."""
        r = min(r0, self.shape[0] - 2)
        rows = m[r:r + 2]
        cols = self._probe_cols
        dh = rows[0, cols + 1] - rows[0, cols]
        dv = rows[1, cols] - rows[0, cols]
        fp = np.maximum(np.hypot(dh[:, 0], dh[:, 1]), np.hypot(dv[:, 0], dv[:, 1]))  # as OpenGL: the larger
        ok = (fp > 0) & np.isfinite(fp)
        if not ok.any():
            return 0.0, 0.0, np.zeros(2)
        return float(fp[ok].min()), float(fp[ok].max()), rows[0, cols[ok][len(cols[ok]) // 2]].astype(np.float64)

    @staticmethod
    def _mip(footprint: float, n_levels: int) -> int:
        return int(min(n_levels - 1, max(0, np.floor(np.log2(max(footprint, 1.0))))))

    def _coords(self, band: np.ndarray, k: float, centre: np.ndarray, size: int, fp_max: float) -> np.ndarray:
        """Band coordinates scaled by ``k`` (texel centres of a mip level) and brought inside the
        ``size`` tile (whole tiles off): remap's wrap path is ~8x slower outside the source. A band
        whose extent may exceed a tile (far ground) is wrapped per pixel."""
        off = 0.5 * k - 0.5
        c = centre * k + off
        shift = np.floor(c / size) * size
        M = np.array([[k, 0.0, off - shift[0]], [0.0, k, off - shift[1]]], np.float32)
        out = cv2.transform(band, M)
        extent = fp_max * k * (self.shape[1] + self.BAND)
        if extent > 0.4 * size:
            q = out - np.float32(size / 2)
            q *= np.float32(1.0 / size)
            np.rint(q, out=q)
            q *= np.float32(size)
            out -= q  # now in [0, size]
        return out

    def _image(self, m: np.ndarray) -> np.ndarray:
        if len(self.levels) == 1:
            return cv2.remap(self.raster, m, None, cv2.INTER_LINEAR, borderMode=cv2.BORDER_WRAP)  # type: ignore[call-overload]
        h = self.shape[0]
        out = np.empty(self.shape + self.raster.shape[2:], self.raster.dtype)
        for r0 in range(0, h, self.BAND):
            self._band(m, out, r0, min(h, r0 + self.BAND))
        return out

    def _band(self, m: np.ndarray, out: np.ndarray, r0: int, r1: int) -> None:
        """Render rows [r0, r1); a band whose footprint changes by more than 2.5x from its first to
        its last row (towards the horizon) is split in two, down to 8 rows."""
        fp0, fpm0, centre = self._probe(m, r0)
        fp1, fpm1, _ = self._probe(m, r1 - 1)
        lo, hi = min(fp0, fp1), max(fp0, fp1)
        if r1 - r0 > 8 and lo > 0 and hi > 2.5 * lo:
            mid = (r0 + r1) // 2
            self._band(m, out, r0, mid)
            self._band(m, out, mid, r1)
            return
        fp = lo if lo > 0 else hi
        fp_max = max(fpm0, fpm1)
        level = self._mip(fp, len(self.levels))
        band = m[r0:r1]
        src = self.levels[level]
        cv2.remap(src, self._coords(band, 1.0 / (1 << level), centre, src.shape[0], fp_max), None,  # type: ignore[call-overload]
                  cv2.INTER_LINEAR, dst=out[r0:r1], borderMode=cv2.BORDER_WRAP)
        if self.detail is not None and 0 < fp < self.DETAIL_MAX_FOOTPRINT:
            scale, dlevels = self.detail
            dl = self._mip(fp * scale, len(dlevels))
            tile = dlevels[dl]
            d = cv2.remap(tile, self._coords(band, scale / (1 << dl), centre, tile.shape[0], fp_max), None,  # type: ignore[call-overload]
                          cv2.INTER_LINEAR, borderMode=cv2.BORDER_WRAP)
            # fade out towards the footprint limit (no visible edge where the detail stops)
            w = min(1.0, (self.DETAIL_MAX_FOOTPRINT - fp) / (0.5 * self.DETAIL_MAX_FOOTPRINT))
            if w < 1.0:
                d = cv2.convertScaleAbs(d, alpha=w, beta=128.0 * (1.0 - w))
            if out.ndim == 3:
                d = cv2.cvtColor(d, cv2.COLOR_GRAY2RGB)
            cv2.multiply(out[r0:r1], d, dst=out[r0:r1], scale=1.0 / 128.0)

    def render_lazy(self, T_world_cam: np.ndarray) -> tuple[np.ndarray, Callable[[], np.ndarray]]:
        """``(image, labels_fn)``: the image now, the class ids when ``labels_fn()`` is called."""
        sky = self.sky_mask(T_world_cam)
        m = self.maps(T_world_cam)
        if sky is not None:
            m[sky] = 0.0  # keep sky pixels' coordinates finite; they are overwritten below
        img = self._image(m)
        if sky is not None:
            img[sky] = self.sky_value

        def labels() -> np.ndarray:
            out = cv2.remap(self.world.labels, m, None, cv2.INTER_NEAREST, borderMode=cv2.BORDER_WRAP)  # type: ignore[call-overload]
            if sky is not None:
                out[sky] = SKY
            return out

        return img, labels

    def render(self, T_world_cam: np.ndarray, with_labels: bool = True
               ) -> tuple[np.ndarray, np.ndarray | None]:
        """Noise-free image (the raster's dtype/channels) and uint8 CART class ids for a camera pose."""
        img, labels = self.render_lazy(T_world_cam)
        return img, (labels() if with_labels else None)
