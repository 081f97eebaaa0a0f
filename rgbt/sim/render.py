"""Render a camera view of the flat world: per-pixel rays precomputed once, per frame one homography.

Every pixel's ray (through the lens distortion of the stack's camera: the images look like the real
lenses) is precomputed as an undistorted normalized coordinate ``(x_n, y_n, 1)``. On the ground plane
``z = 0`` the map from ``(x_n, y_n, 1)`` to world ``(x, y)`` is a homography that depends only on the
camera pose, so a frame costs one ``cv2.perspectiveTransform`` plus ``cv2.remap`` of the world rasters
(bilinear for the image, nearest for the class ids: labels come from the same rays, exact by
construction). Rays at or above the horizon see the sky.
"""

from __future__ import annotations

import cv2
import numpy as np

from rgbt.sim.world import SKY, World
from rgbt.stack import CameraSpec

_SKY_EPS = 1e-6


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

    def rays_camera(self) -> np.ndarray:
        """H x W x 3 float64 ray directions in the camera frame (z = 1)."""
        return np.dstack([self.x_n, self.y_n, np.ones_like(self.x_n)]).astype(np.float64)


def ground_homography(T_world_cam: np.ndarray, world: World) -> np.ndarray:
    """3x3 homography from camera normalized coordinates (x_n, y_n, 1) to world raster (col, row, 1)."""
    R, c = T_world_cam[:3, :3], T_world_cam[:3, 3]
    r1, r2, r3 = R[0], R[1], R[2]
    # ground point = c + t R d with t = -c_z / (r3 . d)  =>  x = (c_x r3 - c_z r1) . d / (r3 . d)
    M = np.stack([c[0] * r3 - c[2] * r1, c[1] * r3 - c[2] * r2, r3])
    return world.raster_from_world() @ M


class ViewRenderer:
    """Renders one camera's view of a world: ``render(T_world_cam) -> (image, labels)``."""

    def __init__(self, camera: CameraSpec, world: World) -> None:
        if camera.modality == "thermal":
            self.raster, self.sky_value = world.thermal, world.sky_counts
        elif camera.modality == "color":
            self.raster, self.sky_value = world.rgb, world.sky_rgb
        else:
            self.raster, self.sky_value = world.gray, world.sky_gray
        self.world = world
        self.rays = CameraRays(camera)
        self.shape = (camera.height, camera.width)

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

    def render(self, T_world_cam: np.ndarray, with_labels: bool = True
               ) -> tuple[np.ndarray, np.ndarray | None]:
        """Noise-free image (the raster's dtype/channels) and uint8 CART class ids for a camera pose."""
        sky = self.sky_mask(T_world_cam)
        m = self.maps(T_world_cam)
        if sky is not None:
            m[sky] = 0.0  # keep sky pixels' coordinates finite; they are overwritten below
        img = cv2.remap(self.raster, m, None, cv2.INTER_LINEAR, borderMode=cv2.BORDER_WRAP)
        labels = None
        if with_labels:
            labels = cv2.remap(self.world.labels, m, None, cv2.INTER_NEAREST, borderMode=cv2.BORDER_WRAP)
        if sky is not None:
            img[sky] = self.sky_value
            if labels is not None:
                labels[sky] = SKY
        return img, labels
