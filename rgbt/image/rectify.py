"""Undistortion, RGB-T stereo rectification and thermal-to-colour projection with precomputed maps.

Every class computes its pixel maps once at construction and reuses them for each frame
(``cv2.remap``, bilinear, constant 0 border): OpenCV's fixed-point ``CV_16SC2`` + ``CV_16UC1`` pair
for 8-bit images and the float maps for 16-bit / float images, whichever OpenCV runs faster (see
:class:`RemapTable`). Images are numpy arrays: ``HxW`` (``uint8``, ``uint16`` counts or
``float32``) or ``HxWx3`` ``uint8`` RGB.

Pixel coordinates follow OpenCV: the centre of the top-left pixel is (0, 0). Camera frames are x
right, y down, z forward; ``T_cam1_cam0`` maps points from cam0 into cam1 (the Kalibr pair's
``T_cn_cnm1``).

CART resampled each camchain pair to one 960x600 canvas: the 640x512 thermal image is padded by the
pair's ``cam1_offset`` (160, 44) px, and the Kalibr intrinsics of the thermal camera are those of
the canvas. Here the offset is folded into the maps, so the native 640x512 frame is remapped
directly (nothing is padded per frame).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import cv2
import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from rgbt.errors import ConfigError, ImageError
from rgbt.stack import CameraSpec, Distortion, Intrinsics, Stack, StereoPair

_CRITERIA = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 50, 1e-10)
_INTERP = {"nearest": cv2.INTER_NEAREST, "linear": cv2.INTER_LINEAR, "cubic": cv2.INTER_CUBIC}


@dataclass(frozen=True)
class PinholeCamera:
    """A pinhole camera with distortion, at some resolution, and where its native image lies in it."""

    K: np.ndarray  # 3x3 [px]
    D: np.ndarray  # OpenCV order (radtan k1 k2 p1 p2 [k3]; equidistant k1..k4)
    model: Literal["radtan", "equidistant", "none"]
    size: tuple[int, int]  # (width, height) of the image these intrinsics describe [px]
    offset: tuple[float, float] = (0.0, 0.0)  # native image origin in that image [px]

    @classmethod
    def from_calibration(cls, intrinsics: Intrinsics, distortion: Distortion, size: tuple[int, int],
                         offset: tuple[float, float] = (0.0, 0.0)) -> PinholeCamera:
        return cls(intrinsics.K(), distortion.as_array(), distortion.model, (int(size[0]), int(size[1])),
                   (float(offset[0]), float(offset[1])))

    @property
    def fisheye(self) -> bool:
        return self.model == "equidistant"

    def dist(self) -> np.ndarray:
        return self.D.reshape(-1, 1) if self.model != "none" else np.zeros((4, 1))

    def project(self, points: np.ndarray) -> np.ndarray:
        """Nx3 points in the camera frame [m] -> Nx2 distorted pixels of the *native* image."""
        pts = np.asarray(points, dtype=np.float64).reshape(-1, 1, 3)
        zero = np.zeros(3)
        if self.fisheye:
            uv, _ = cv2.fisheye.projectPoints(pts, zero, zero, self.K, self.dist())
        else:
            uv, _ = cv2.projectPoints(pts, zero, zero, self.K, self.dist())
        return uv.reshape(-1, 2) - np.asarray(self.offset)

    def undistort(self, pixels: np.ndarray, R: np.ndarray | None = None,
                  P: np.ndarray | None = None) -> np.ndarray:
        """Nx2 distorted native pixels -> Nx2 ideal points (normalized, or pixels of ``P`` after ``R``)."""
        uv = (np.asarray(pixels, dtype=np.float64).reshape(-1, 2) + np.asarray(self.offset)).reshape(-1, 1, 2)
        R = np.eye(3) if R is None else R
        if self.fisheye:
            out = cv2.fisheye.undistortPoints(uv, self.K, self.dist(), R=R, P=P, criteria=_CRITERIA)
        else:
            out = cv2.undistortPoints(uv, self.K, self.dist(), R=R, P=P, criteria=_CRITERIA)
        return out.reshape(-1, 2)

    def maps(self, R: np.ndarray, P: np.ndarray, out_size: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
        """Float maps (x, y) from an ideal camera ``P`` rotated by ``R`` into this camera's native image."""
        if self.fisheye:
            mx, my = cv2.fisheye.initUndistortRectifyMap(self.K, self.dist(), R, P, out_size, cv2.CV_32FC1)
        else:
            mx, my = cv2.initUndistortRectifyMap(self.K, self.dist(), R, P, out_size, cv2.CV_32FC1)
        ox, oy = self.offset
        if ox or oy:
            mx, my = mx - np.float32(ox), my - np.float32(oy)
        return mx, my


def fixed_point(mx: np.ndarray, my: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Float maps -> OpenCV fixed-point maps (``CV_16SC2`` integer part, ``CV_16UC1`` fraction index)."""
    m1, m2 = cv2.convertMaps(mx.astype(np.float32), my.astype(np.float32), cv2.CV_16SC2)
    return m1, m2


MapFormat = Literal["auto", "fixed", "float"]


class RemapTable:
    """Precomputed maps of one warp, kept in both of OpenCV's forms and chosen per image dtype.

    ``fixed`` (``CV_16SC2`` + ``CV_16UC1``, 1/32 px) is OpenCV's fast path for 8-bit images;
    OpenCV 5 vectorises 16-bit and float images only with float maps (measured here: 960x600
    uint16 remap 1.6 ms fixed vs 0.65 ms float), so ``auto`` uses the float maps for those.
    """

    def __init__(self, mx: np.ndarray, my: np.ndarray, interpolation: int, map_format: MapFormat = "auto") -> None:
        self.fixed = fixed_point(mx, my)
        self.float = (np.ascontiguousarray(mx, np.float32), np.ascontiguousarray(my, np.float32))
        self.interpolation, self.map_format = interpolation, map_format

    def maps_for(self, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
        if self.map_format == "fixed" or (self.map_format == "auto" and dtype == np.uint8):
            return self.fixed
        return self.float

    def __call__(self, img: np.ndarray) -> np.ndarray:
        m1, m2 = self.maps_for(img.dtype)
        return cv2.remap(img, m1, m2, self.interpolation, borderMode=cv2.BORDER_CONSTANT, borderValue=0)


def _check_image(img: np.ndarray, size: tuple[int, int], what: str) -> None:
    if not isinstance(img, np.ndarray):
        raise ImageError(f"{what}: expected a numpy array, got {type(img).__name__}")
    if img.dtype not in (np.uint8, np.uint16, np.float32):
        raise ImageError(f"{what}: dtype {img.dtype}, expected uint8, uint16 or float32")
    w, h = size
    if img.shape[:2] != (h, w) or img.ndim not in (2, 3) or (img.ndim == 3 and img.shape[2] not in (1, 3)):
        raise ImageError(f"{what}: shape {img.shape}, expected ({h}, {w}) or ({h}, {w}, 3)")


class UndistortOptions(BaseModel):
    """How the undistorted camera is chosen.

    The new camera matrix is OpenCV's optimal one for ``alpha`` (``getOptimalNewCameraMatrix``; for
    equidistant cameras ``fisheye.estimateNewCameraMatrixForUndistortRectify`` with
    ``balance=alpha``): ``alpha=0`` keeps only valid pixels (no black border, the view is cropped),
    ``alpha=1`` keeps every source pixel (black curved borders). ``keep_K`` uses the camera's own
    matrix instead (same focal and principal point, as ``cv2.undistort`` does by default).
    """

    model_config = ConfigDict(extra="forbid")
    alpha: float = Field(default=0.0, ge=0.0, le=1.0)
    keep_K: bool = False
    interpolation: Literal["nearest", "linear", "cubic"] = "linear"
    map_format: MapFormat = "auto"  # see RemapTable


class Undistorter:
    """Undistort one camera's images (native resolution in, same size out)."""

    def __init__(self, camera: CameraSpec, options: UndistortOptions | None = None) -> None:
        self.options = options or UndistortOptions()
        self.camera = PinholeCamera.from_calibration(camera.intrinsics, camera.distortion,
                                                     (camera.width, camera.height))
        self.size = self.camera.size
        cam, K, size = self.camera, self.camera.K, self.camera.size
        if self.options.keep_K or cam.model == "none":
            self.new_K = K.copy()
        elif cam.fisheye:
            self.new_K = cv2.fisheye.estimateNewCameraMatrixForUndistortRectify(
                K, cam.dist(), size, np.eye(3), balance=self.options.alpha)
        else:
            self.new_K, _ = cv2.getOptimalNewCameraMatrix(K, cam.dist(), size, self.options.alpha, size)
        self.table = RemapTable(*cam.maps(np.eye(3), self.new_K, size), _INTERP[self.options.interpolation],
                                self.options.map_format)
        self.map1, self.map2 = self.table.fixed

    def __call__(self, img: np.ndarray) -> np.ndarray:
        _check_image(img, self.size, "Undistorter input")
        return self.table(img)

    def undistort_points(self, pixels: np.ndarray) -> np.ndarray:
        """Nx2 distorted pixels -> Nx2 pixels of the undistorted image (``new_K``)."""
        return self.camera.undistort(pixels, P=self.new_K)

    def distort_points(self, pixels: np.ndarray) -> np.ndarray:
        """Nx2 pixels of the undistorted image -> Nx2 distorted pixels."""
        uv1 = np.column_stack([np.asarray(pixels, dtype=np.float64).reshape(-1, 2), np.ones(len(pixels))])
        return self.camera.project(uv1 @ np.linalg.inv(self.new_K).T)


class RectifyOptions(BaseModel):
    """Stereo rectification of a camchain pair and the thermal-to-colour projection.

    The rectifying rotations ``R0, R1`` are OpenCV's (``cv2.stereoRectify``: each camera turned by
    half the relative rotation, x along the baseline). The rectified camera (``P0, P1``) is chosen
    here rather than by ``stereoRectify``, because OpenCV derives the principal point from the
    corners of the whole canvas, and undistorting the padded thermal canvas corners (far outside the
    sensor, k1 = -0.43) pulls it ~80 px off centre. Both rectified cameras share one focal length
    ``f`` (square pixels) and one principal point (zero disparity at infinity), fitted to the
    *native* image outlines: ``alpha = 0`` zooms until every canvas pixel is seen by both cameras
    (no black border), ``alpha = 1`` shrinks until both whole images fit the canvas; in between,
    focal and centre are interpolated linearly (like OpenCV's ``alpha``).

    ``depth_m`` is the scene depth assumed by :meth:`RgbtRectifier.thermal_to_color`: ``inf`` (the
    default, right for aerial scenes far beyond the ~2.5 cm baseline: at 20 m the parallax is
    < 1 px) warps by the infinite homography (rotation only); a finite value assumes a
    fronto-parallel plane at that distance along the colour camera's optical axis.
    """

    model_config = ConfigDict(extra="forbid")
    alpha: float = Field(default=0.0, ge=0.0, le=1.0)
    depth_m: float = Field(default=math.inf, gt=0.0)
    interpolation: Literal["nearest", "linear", "cubic"] = "linear"
    map_format: MapFormat = "auto"  # see RemapTable


def _outline(size: tuple[int, int], n: int = 64) -> dict[str, np.ndarray]:
    """Pixel samples along the four borders of a (w, h) image."""
    w, h = size
    xs, ys = np.linspace(0, w - 1, n), np.linspace(0, h - 1, n)
    return {"left": np.column_stack([np.zeros(n), ys]), "right": np.column_stack([np.full(n, w - 1.0), ys]),
            "top": np.column_stack([xs, np.zeros(n)]), "bottom": np.column_stack([xs, np.full(n, h - 1.0)])}


class RgbtRectifier:
    """Stereo rectification of a camchain pair (CART: colour = cam0, thermal = cam1) onto one canvas.

    ``rectify(img0, img1)`` takes the pair's cam0 and cam1 images at native resolution (colour
    960x600 RGB, thermal 640x512) and returns both rectified on the canvas (960x600), corresponding
    points on the same row. ``R0, R1`` rotate each camera frame into its rectified frame, ``P0, P1``
    (3x4) project rectified-frame points (``P1[0, 3] = f * Tx``), ``Q`` maps (u, v, d, 1) with
    disparity ``d = u0 - u1`` to homogeneous 3-D points in cam0's rectified frame (OpenCV's form).
    """

    def __init__(self, pair: StereoPair, native_sizes: tuple[tuple[int, int], tuple[int, int]],
                 options: RectifyOptions | None = None, modalities: tuple[str, str] = ("", "")) -> None:
        self.options = options or RectifyOptions()
        self.pair = pair
        self.modalities = modalities
        self.size = (pair.width, pair.height)
        self.cam0 = PinholeCamera.from_calibration(pair.cam0_intrinsics, pair.cam0_distortion, self.size,
                                                   pair.cam0_offset)
        self.cam1 = PinholeCamera.from_calibration(pair.cam1_intrinsics, pair.cam1_distortion, self.size,
                                                   pair.cam1_offset)
        self.native_sizes: tuple[tuple[int, int], tuple[int, int]] = (
            (int(native_sizes[0][0]), int(native_sizes[0][1])), (int(native_sizes[1][0]), int(native_sizes[1][1])))
        self.T_cam1_cam0 = pair.T_cam1_cam0_matrix()
        R, t = self.T_cam1_cam0[:3, :3], self.T_cam1_cam0[:3, 3].reshape(3, 1)
        # the rotations depend on R, t only; intrinsics do not matter here (OpenCV takes None for no
        # distortion; its stubs say arrays only)
        self.R0, self.R1, *_ = cv2.stereoRectify(np.eye(3), None, np.eye(3), None, self.size, R, t,  # type: ignore[call-overload]
                                                 flags=cv2.CALIB_ZERO_DISPARITY, alpha=-1)
        f, cx, cy = self._choose_camera()
        tx = float((self.R1 @ t)[0, 0])
        self.P0 = np.array([[f, 0.0, cx, 0.0], [0.0, f, cy, 0.0], [0.0, 0.0, 1.0, 0.0]])
        self.P1 = self.P0.copy()
        self.P1[0, 3] = f * tx
        self.Q = np.array([[1.0, 0.0, 0.0, -cx], [0.0, 1.0, 0.0, -cy], [0.0, 0.0, 0.0, f],
                           [0.0, 0.0, -1.0 / tx, 0.0]])
        self._interp = _INTERP[self.options.interpolation]
        self.tables = (self._table(*self.cam0.maps(self.R0, self.P0, self.size)),
                       self._table(*self.cam1.maps(self.R1, self.P1, self.size)))
        self.maps0, self.maps1 = self.tables[0].fixed, self.tables[1].fixed
        self._warp_tables: dict[tuple[int, float], RemapTable] = {}

    def _table(self, mx: np.ndarray, my: np.ndarray) -> RemapTable:
        return RemapTable(mx, my, self._interp, self.options.map_format)

    def _choose_camera(self) -> tuple[float, float, float]:
        """(f, cx, cy) of the rectified cameras for ``options.alpha`` (see :class:`RectifyOptions`)."""
        inner = [-np.inf, np.inf, -np.inf, np.inf]  # x0, x1, y0, y1 seen by both cameras
        outer = [np.inf, -np.inf, np.inf, -np.inf]  # everything either camera sees
        for cam, R, size in ((self.cam0, self.R0, self.native_sizes[0]), (self.cam1, self.R1, self.native_sizes[1])):
            edge = {k: cam.undistort(v, R=R) for k, v in _outline(size).items()}  # normalized rectified
            inner = [max(inner[0], edge["left"][:, 0].max()), min(inner[1], edge["right"][:, 0].min()),
                     max(inner[2], edge["top"][:, 1].max()), min(inner[3], edge["bottom"][:, 1].min())]
            pts = np.concatenate(list(edge.values()))
            outer = [min(outer[0], pts[:, 0].min()), max(outer[1], pts[:, 0].max()),
                     min(outer[2], pts[:, 1].min()), max(outer[3], pts[:, 1].max())]
        if inner[1] <= inner[0] or inner[3] <= inner[2]:
            raise ConfigError("stack", "pairs", self.pair.cam0 + "/" + self.pair.cam1,
                              "two cameras whose rectified views overlap")
        w, h = self.size
        a = self.options.alpha
        f_in = max(w / (inner[1] - inner[0]), h / (inner[3] - inner[2]))
        f_out = min(w / (outer[1] - outer[0]), h / (outer[3] - outer[2]))
        f = f_in + a * (f_out - f_in)
        mx = (1 - a) * (inner[0] + inner[1]) / 2 + a * (outer[0] + outer[1]) / 2
        my = (1 - a) * (inner[2] + inner[3]) / 2 + a * (outer[2] + outer[3]) / 2
        return float(f), float((w - 1) / 2 - f * mx), float((h - 1) / 2 - f * my)

    @classmethod
    def from_stack(cls, stack: Stack, pair: str = "color_thermal",
                   options: RectifyOptions | None = None) -> RgbtRectifier:
        if pair not in stack.pairs:
            raise ConfigError("stack", f"pairs.{pair}", pair, f"one of {sorted(stack.pairs)}")
        p = stack.pairs[pair]
        c0, c1 = stack.camera(p.cam0), stack.camera(p.cam1)
        return cls(p, ((c0.width, c0.height), (c1.width, c1.height)), options, (c0.modality, c1.modality))

    @property
    def baseline_m(self) -> float:
        return float(np.linalg.norm(self.T_cam1_cam0[:3, 3]))

    def describe(self) -> dict:
        return {"canvas": list(self.size), "native_sizes": [list(s) for s in self.native_sizes],
                "baseline_m": self.baseline_m, "P0": self.P0.tolist(), "P1": self.P1.tolist(),
                "options": self.options.model_dump()}

    def _side(self, side: int) -> tuple[PinholeCamera, np.ndarray, np.ndarray]:
        return (self.cam0, self.R0, self.P0) if side == 0 else (self.cam1, self.R1, self.P1)

    def rectify(self, img0: np.ndarray, img1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The pair's cam0 and cam1 native images (colour RGB uint8, thermal uint16/float32) ->
        both rectified onto the canvas (same dtype, same channels)."""
        self.check_pair(img0, img1)
        return self.tables[0](img0), self.tables[1](img1)

    def check_pair(self, img0: np.ndarray, img1: np.ndarray) -> None:
        """Raise :class:`ImageError` unless ``img0`` / ``img1`` are cam0's / cam1's native images."""
        _check_image(img0, self.native_sizes[0], "rectify cam0 image")
        _check_image(img1, self.native_sizes[1], "rectify cam1 image")

    def rectify_image(self, img: np.ndarray, side: int) -> np.ndarray:
        _check_image(img, self.native_sizes[side], f"rectify cam{side} image")
        return self.tables[side](img)

    def rectify_points(self, pixels: np.ndarray, side: int) -> np.ndarray:
        """Nx2 distorted pixels of camera ``side``'s native image -> Nx2 rectified canvas pixels."""
        cam, R, P = self._side(side)
        return cam.undistort(pixels, R=R, P=P)

    def unrectify_points(self, pixels: np.ndarray, side: int) -> np.ndarray:
        """Nx2 rectified canvas pixels of camera ``side`` -> Nx2 distorted native pixels."""
        cam, R, P = self._side(side)
        uv1 = np.column_stack([np.asarray(pixels, dtype=np.float64).reshape(-1, 2), np.ones(len(pixels))])
        rays_rect = uv1 @ np.linalg.inv(P[:, :3]).T
        return cam.project(rays_rect @ R)  # R^T applied to row vectors: rectified -> camera frame

    # ---------------------------------------------------------------- projection into the other camera

    def warp_table(self, src: int, depth_m: float | None = None) -> RemapTable:
        """Maps sampling camera ``src``'s native image at every pixel of the other camera's
        native (distorted) image, for scene points at ``depth_m`` along the destination's optical axis
        (``inf``: the infinite homography). Built on first use (~0.5-1 s: every destination pixel is
        undistorted iteratively) and cached per (src, depth); call it at start-up to keep that off
        the first frame."""
        depth = self.options.depth_m if depth_m is None else float(depth_m)
        if not depth > 0:
            raise ValueError(f"depth_m must be > 0 (inf allowed), got {depth}")
        key = (src, depth)
        if key not in self._warp_tables:
            dst_cam = self.cam1 if src == 0 else self.cam0
            src_cam = self.cam0 if src == 0 else self.cam1
            T_src_dst = np.linalg.inv(self.T_cam1_cam0) if src == 0 else self.T_cam1_cam0
            w, h = self.native_sizes[1 - src]
            u, v = np.meshgrid(np.arange(w, dtype=np.float64), np.arange(h, dtype=np.float64))
            xy = dst_cam.undistort(np.column_stack([u.ravel(), v.ravel()]))  # normalized, z = 1
            rays = np.column_stack([xy, np.ones(len(xy))])
            if math.isinf(depth):
                pts = rays @ T_src_dst[:3, :3].T
            else:
                pts = (rays * depth) @ T_src_dst[:3, :3].T + T_src_dst[:3, 3]
            uv = src_cam.project(pts)
            uv[pts[:, 2] <= 1e-9] = -1e4  # behind the source camera: outside
            mx = uv[:, 0].reshape(h, w).astype(np.float32)
            my = uv[:, 1].reshape(h, w).astype(np.float32)
            self._warp_tables[key] = self._table(mx, my)
        return self._warp_tables[key]

    def project_image(self, img: np.ndarray, src: int, depth_m: float | None = None) -> np.ndarray:
        """Camera ``src``'s native image resampled into the other camera's native image."""
        _check_image(img, self.native_sizes[src], f"cam{src} image")
        return self.warp_table(src, depth_m)(img)

    def thermal_to_color(self, thermal: np.ndarray, depth_m: float | None = None) -> np.ndarray:
        """The native thermal frame projected into the colour camera's raw (distorted) native image
        (960x600 for CART), pixel-aligned with the colour frame; same dtype as the input.
        Scene depth: ``depth_m`` (default ``options.depth_m``, ``inf``)."""
        if "thermal" not in self.modalities or "color" not in self.modalities:
            raise ConfigError("stack", "pairs", self.modalities, "a pair of a thermal and a colour camera")
        return self.project_image(thermal, self.modalities.index("thermal"), depth_m)
