"""Rendering: label maps agree with an independent projection of the world; sky above the horizon."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from rgbt.sim.render import ViewRenderer
from rgbt.sim.world import SKY, WATER, build_world
from rgbt.stack import load_stack


def _look(yaw_deg: float, pitch_down_deg: float, position: tuple[float, float, float]) -> np.ndarray:
    """T_world_cam for a camera at ``position`` looking along yaw, pitched down (x right, y down, z fwd)."""
    yaw, pitch = np.deg2rad(yaw_deg), np.deg2rad(pitch_down_deg)
    fwd = np.array([np.cos(yaw) * np.cos(pitch), np.sin(yaw) * np.cos(pitch), -np.sin(pitch)])
    right = np.array([np.sin(yaw), -np.cos(yaw), 0.0])
    down = np.cross(fwd, right)
    T = np.eye(4)
    T[:3, :3] = np.stack([right, down, fwd], -1)
    T[:3, 3] = position
    return T


@pytest.fixture(scope="module")
def world():
    return build_world(0, False)


@pytest.mark.parametrize("camera", ["thermal", "color"])
def test_labels_match_direct_projection(world, camera: str) -> None:
    """Project world points with OpenCV's forward lens model (independent of the renderer's inverse
    model) and check the label at the projected pixel equals the world's class there."""
    cam = load_stack().camera(camera)
    renderer = ViewRenderer(cam, world)
    T_wc = _look(35.0, 40.0, (3.0, -7.0, 15.0))
    _, labels = renderer.render(T_wc)
    rng = np.random.default_rng(0)
    # ground points in front of the camera
    pts = np.column_stack([rng.uniform(-40, 60, 20000), rng.uniform(-50, 50, 20000), np.zeros(20000)])
    T_cw = np.linalg.inv(T_wc)
    pc = pts @ T_cw[:3, :3].T + T_cw[:3, 3]
    pts, pc = pts[pc[:, 2] > 1.0], pc[pc[:, 2] > 1.0]
    uv, _ = cv2.projectPoints(pc, np.zeros(3), np.zeros(3), cam.K(), cam.dist_coeffs())
    uv = uv.reshape(-1, 2)
    col, row = np.round(uv[:, 0]).astype(int), np.round(uv[:, 1]).astype(int)
    inside = (col >= 0) & (col < cam.width) & (row >= 0) & (row < cam.height)
    # the world point under the pixel centre differs from the sample by < 1 pixel footprint (range^2 /
    # (f h) on the oblique ground); keep only samples whose class is the same within one footprint
    # plus one raster cell (away from class boundaries)
    rng_m = np.linalg.norm(pc, axis=1)
    footprint = rng_m ** 2 / (cam.intrinsics.fx * T_wc[2, 3]) + world.res_m
    classes = world.class_at(pts[:, 0], pts[:, 1])
    uniform = np.ones(len(pts), bool)
    for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1), (0.7, 0.7), (-0.7, 0.7), (0.7, -0.7), (-0.7, -0.7)):
        uniform &= world.class_at(pts[:, 0] + dx * footprint, pts[:, 1] + dy * footprint) == classes
    sel = inside & uniform
    assert sel.sum() > 2000
    got = labels[row[sel], col[sel]]
    assert np.array_equal(got, classes[sel]), f"{np.mean(got != classes[sel]):.4%} of labels differ"
    # the view has several classes (a meaningful check)
    assert len(np.unique(classes[sel])) >= 4


def test_sky_above_horizon_and_image_types(world) -> None:
    stack = load_stack()
    T_wc = _look(0.0, -10.0, (0.0, 0.0, 10.0))  # looking 10 deg up: the top part is sky
    for name, dtype, shape in (("thermal", np.uint16, (512, 640)), ("color", np.uint8, (600, 960, 3)),
                               ("mono", np.uint8, (600, 960))):
        img, labels = ViewRenderer(stack.camera(name), world).render(T_wc)
        assert img.dtype == dtype and img.shape == shape
        assert labels.dtype == np.uint8 and labels.shape == shape[:2]
        assert np.all(labels[0] == SKY)
        assert np.all(labels[-1] != SKY)
        sky = labels == SKY
        if name == "thermal":
            assert np.all(img[sky] == world.sky_counts)
            assert img[~sky].min() > world.sky_counts  # the sky is the coldest thing in view
        # the horizon is a single boundary per column: sky rows are contiguous from the top
        rows_sky = sky.sum(axis=0)
        for c in range(0, shape[1], 97):
            assert np.all(sky[: rows_sky[c], c]) and not np.any(sky[rows_sky[c]:, c])


def test_world_is_periodic_and_has_all_classes(world) -> None:
    n = world.size_px * world.res_m
    xs = np.linspace(-100, 100, 500)
    assert np.array_equal(world.class_at(xs, xs * 0.3), world.class_at(xs + n, xs * 0.3 - n))
    present = set(np.unique(world.labels).tolist())
    assert present >= {2, 3, 4, 5, 6, 7, 9, 10, 11}
    # the pond near the origin every flight starts over
    assert np.any(world.class_at(np.full(50, -25.0), np.linspace(35, 55, 50)) == WATER)
