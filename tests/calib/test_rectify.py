"""Rectification with CART's calibration on a synthetic 3-D scene (synthetic points and rendered dots)."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from rgbt.calib.build import stack_from_kalibr
from rgbt.errors import ConfigError, ImageError
from rgbt.image.rectify import RectifyOptions, RgbtRectifier, Undistorter, UndistortOptions
from rgbt.stack import load_stack


@pytest.fixture(scope="module")
def stack():
    return load_stack()


@pytest.fixture(scope="module")
def rect(stack) -> RgbtRectifier:
    return RgbtRectifier.from_stack(stack, "color_thermal")


def _project(K, D, points, rvec=np.zeros(3), tvec=np.zeros(3), offset=(0.0, 0.0)):
    uv, _ = cv2.projectPoints(np.asarray(points, np.float64).reshape(-1, 1, 3), rvec, tvec, K, D)
    return uv.reshape(-1, 2) - np.asarray(offset)


def _scene(rect: RgbtRectifier, n: int = 400, seed: int = 0, depth=(5.0, 100.0)):
    """Synthetic points 5-100 m in front of the colour camera, seen by both cameras, and their
    distorted native pixels in each (cv2.projectPoints with the Kalibr pair values)."""
    rng = np.random.default_rng(seed)
    p = rect.pair
    K0, D0 = p.cam0_intrinsics.K(), p.cam0_distortion.as_array()
    K1, D1 = p.cam1_intrinsics.K(), p.cam1_distortion.as_array()
    T = p.T_cam1_cam0_matrix()
    rvec, tvec = cv2.Rodrigues(T[:3, :3])[0], T[:3, 3]
    z = rng.uniform(*depth, n)
    xy = np.column_stack([rng.uniform(-0.6, 0.6, n), rng.uniform(-0.4, 0.4, n)])
    X0 = np.column_stack([xy * z[:, None], z])
    uv0 = _project(K0, D0, X0, offset=p.cam0_offset)
    uv1 = _project(K1, D1, X0, rvec, tvec, offset=p.cam1_offset)
    (w0, h0), (w1, h1) = rect.native_sizes
    ok = ((uv0 >= 10).all(1) & (uv0[:, 0] < w0 - 10) & (uv0[:, 1] < h0 - 10)
          & (uv1 >= 10).all(1) & (uv1[:, 0] < w1 - 10) & (uv1[:, 1] < h1 - 10))
    assert ok.sum() > n // 2
    return X0[ok], uv0[ok], uv1[ok]


def test_corresponding_points_share_rows(rect):
    X0, uv0, uv1 = _scene(rect)
    r0, r1 = rect.rectify_points(uv0, 0), rect.rectify_points(uv1, 1)
    assert np.abs(r0[:, 1] - r1[:, 1]).max() < 0.1
    # the same through cv2.undistortPoints directly on the padded canvas (offset added back)
    p = rect.pair
    direct = cv2.undistortPoints((uv1 + p.cam1_offset).reshape(-1, 1, 2), p.cam1_intrinsics.K(),
                                 p.cam1_distortion.as_array(), R=rect.R1, P=rect.P1,
                                 criteria=(cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 50, 1e-10))
    np.testing.assert_allclose(direct.reshape(-1, 2), r1, atol=1e-6)
    # Q turns (u, v, disparity) back into the point (in cam0's rectified frame)
    h = np.column_stack([r0, r0[:, 0] - r1[:, 0], np.ones(len(r0))]) @ rect.Q.T
    np.testing.assert_allclose(h[:, :3] / h[:, 3:], X0 @ rect.R0.T, rtol=1e-6)


def test_point_round_trips(rect):
    _, uv0, uv1 = _scene(rect, seed=1)
    for side, uv in ((0, uv0), (1, uv1)):
        np.testing.assert_allclose(rect.unrectify_points(rect.rectify_points(uv, side), side), uv, atol=1e-6)
    grid = np.array([[u, v] for u in range(100, 900, 100) for v in range(100, 550, 75)], np.float64)
    for side in (0, 1):
        np.testing.assert_allclose(rect.rectify_points(rect.unrectify_points(grid, side), side), grid, atol=1e-6)


def _render(size, points, dtype, amplitude, sigma=1.6, channels=0):
    w, h = size
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    img = np.zeros((h, w))
    for x, y in points:
        img += np.exp(-((xx - x) ** 2 + (yy - y) ** 2) / (2 * sigma**2))
    img = img * amplitude
    img = img.astype(dtype) if dtype == np.float32 else np.round(img).astype(dtype)
    return np.repeat(img[..., None], channels, axis=2) if channels else img


def _centroid(img, at, radius=7):
    img = img if img.ndim == 2 else img[..., 1]
    x0, y0 = np.round(at).astype(int)
    win = img[y0 - radius:y0 + radius + 1, x0 - radius:x0 + radius + 1].astype(np.float64)
    yy, xx = np.mgrid[y0 - radius:y0 + radius + 1, x0 - radius:x0 + radius + 1]
    return np.array([(win * xx).sum() / win.sum(), (win * yy).sum() / win.sum()])


def _spread_points(uv, count=6):
    """A few well-separated points."""
    order = np.argsort(uv[:, 0])
    return uv[order[np.linspace(0, len(order) - 1, count).astype(int)]]


@pytest.mark.parametrize("dtype,amp,fmt", [(np.uint16, 40000, "auto"), (np.float32, 1.0, "auto"),
                                            (np.uint16, 40000, "fixed")], ids=["uint16", "float32", "uint16-fixed"])
def test_remap_moves_dots_where_points_go(stack, dtype, amp, fmt):
    rect = RgbtRectifier.from_stack(stack, options=RectifyOptions(map_format=fmt))
    _, uv0, uv1 = _scene(rect, seed=2)
    dots0, dots1 = _spread_points(uv0), _spread_points(uv1)
    color = _render(rect.native_sizes[0], dots0, np.uint8, 250, channels=3)
    thermal = _render(rect.native_sizes[1], dots1, dtype, amp)
    c_rect, t_rect = rect.rectify(color, thermal)
    assert c_rect.shape == (600, 960, 3) and c_rect.dtype == np.uint8
    assert t_rect.shape == (600, 960) and t_rect.dtype == dtype
    assert rect.maps0[0].dtype == np.int16 and rect.maps0[0].shape == (600, 960, 2)  # CV_16SC2
    for img, dots, side in ((c_rect, dots0, 0), (t_rect, dots1, 1)):
        want = rect.rectify_points(dots, side)
        got = np.array([_centroid(img, w) for w in want])
        assert np.abs(got - want).max() < 0.5, (side, got - want)


def test_thermal_to_color_infinite_depth_and_plane(rect):
    p = rect.pair
    K0, D0 = p.cam0_intrinsics.K(), p.cam0_distortion.as_array()
    K1, D1 = p.cam1_intrinsics.K(), p.cam1_distortion.as_array()
    T = p.T_cam1_cam0_matrix()
    rvec, tvec = cv2.Rodrigues(T[:3, :3])[0], T[:3, 3]
    pix = np.array([[200.0, 150.0], [480.0, 300.0], [760.0, 450.0], [300.0, 420.0], [650.0, 180.0]])
    rays = cv2.undistortPoints(pix.reshape(-1, 1, 2), K0, D0, criteria=(3, 50, 1e-10)).reshape(-1, 2)
    for depth, opt in ((1e6, None), (8.0, 8.0)):
        X0 = np.column_stack([rays * depth, np.full(len(rays), depth)])
        uv1 = _project(K1, D1, X0, rvec, tvec, offset=p.cam1_offset)
        thermal = _render((640, 512), uv1, np.uint16, 40000)
        warped = rect.thermal_to_color(thermal, depth_m=opt)
        assert warped.shape == (600, 960) and warped.dtype == np.uint16
        want = _project(K0, D0, X0)
        got = np.array([_centroid(warped, w) for w in want])
        assert np.abs(got - want).max() < 0.5, (depth, got - want)
    # at 8 m the parallax of the 2.5 cm baseline is ~2 px: the infinite-depth warp misses it
    got_inf = np.array([_centroid(rect.thermal_to_color(thermal), w) for w in want])
    assert np.abs(got_inf - want).max() > 1.0
    assert rect.warp_table(1) is rect.warp_table(1)  # maps computed once per depth


def test_alpha_one_keeps_whole_images(stack):
    r = RgbtRectifier.from_stack(stack, options=RectifyOptions(alpha=1.0))
    for side, (w, h) in enumerate(r.native_sizes):
        border = np.array([[0, 0], [w - 1, 0], [0, h - 1], [w - 1, h - 1], [w / 2, 0], [0, h / 2]])
        q = r.rectify_points(border, side)
        assert (q >= -0.51).all() and (q[:, 0] <= 959.51).all() and (q[:, 1] <= 599.51).all()
    r0 = RgbtRectifier.from_stack(stack)  # alpha 0: every canvas pixel seen by both cameras
    corners = np.array([[0, 0], [959, 0], [0, 599], [959, 599]], np.float64)
    for side, (w, h) in enumerate(r0.native_sizes):
        src = r0.unrectify_points(corners, side)
        assert (src >= -0.5).all() and (src[:, 0] <= w - 0.5).all() and (src[:, 1] <= h - 0.5).all()


def test_equidistant_pair_from_kalibr_chain(openvins_chain: Path):
    stack = stack_from_kalibr(openvins_chain)
    r = RgbtRectifier.from_stack(stack, "cam0_cam1")
    rng = np.random.default_rng(3)
    z = rng.uniform(2, 50, 300)
    X0 = np.column_stack([rng.uniform(-0.8, 0.8, (300, 2)) * z[:, None], z])
    uv0 = r.cam0.project(X0)
    T = r.T_cam1_cam0
    uv1 = r.cam1.project(X0 @ T[:3, :3].T + T[:3, 3])
    assert np.abs(r.rectify_points(uv0, 0)[:, 1] - r.rectify_points(uv1, 1)[:, 1]).max() < 0.1
    img = np.zeros((480, 640), np.uint8)
    a, b = r.rectify(img, img)
    assert a.shape == (480, 640)


def test_undistorter_dots_and_points(stack):
    cam = stack.cameras["thermal"]
    und = Undistorter(cam)
    assert und.map1.dtype == np.int16
    pts = np.array([[60.0, 50.0], [320.0, 256.0], [600.0, 470.0], [100.0, 400.0]])
    img = _render((640, 512), pts, np.uint16, 40000)
    out = und(img)
    want = und.undistort_points(pts)
    got = np.array([_centroid(out, w) for w in want])
    assert np.abs(got - want).max() < 0.5
    np.testing.assert_allclose(und.distort_points(want), pts, atol=1e-6)
    assert np.array_equal(Undistorter(cam, UndistortOptions(keep_K=True)).new_K, cam.K())
    wide = Undistorter(cam, UndistortOptions(alpha=1.0))
    assert wide.new_K[0, 0] < und.new_K[0, 0]  # alpha 1 keeps all source pixels: smaller focal
    fish = cam.model_copy(update={"distortion": cam.distortion.model_copy(update={"model": "equidistant",
                                                                                  "coeffs": [-0.02, 0.01, 0, 0]})})
    f_und = Undistorter(fish)
    np.testing.assert_allclose(f_und.distort_points(f_und.undistort_points(pts)), pts, atol=1e-5)


def test_bad_inputs(stack, rect):
    color = np.zeros((600, 960, 3), np.uint8)
    with pytest.raises(ImageError, match="shape"):
        rect.rectify(color, np.zeros((600, 960), np.uint16))  # thermal must be native 640x512
    with pytest.raises(ImageError, match="dtype"):
        rect.rectify(color, np.zeros((512, 640), np.int32))
    with pytest.raises(ImageError, match="numpy array"):
        Undistorter(stack.cameras["color"])(None)
    with pytest.raises(ConfigError, match="pairs.nope"):
        RgbtRectifier.from_stack(stack, "nope")
    with pytest.raises(ConfigError, match="thermal and a colour"):
        RgbtRectifier.from_stack(stack, "thermal_mono").thermal_to_color(np.zeros((512, 640), np.uint16))
    with pytest.raises(ValueError):
        rect.warp_table(1, depth_m=-1.0)
