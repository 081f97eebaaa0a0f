"""Local ENU <-> geodetic (WGS84) for the simulated GNSS, and default origins per CART place."""

from __future__ import annotations

import numpy as np

_A = 6378137.0  # WGS84 semi-major axis (m)
_E2 = 6.69437999014e-3  # WGS84 first eccentricity squared

#: approximate geodetic origins (deg, deg, m) of the CART places; a name containing the key picks it
PLACE_ORIGINS = {
    "duck": (36.1826, -75.7503, 2.0),  # Duck, North Carolina (coast)
    "castaic": (34.5225, -118.6085, 460.0),  # Castaic Lake, California
    "northfield": (34.1377, -118.1253, 240.0),  # Pasadena area (Caltech)
}
DEFAULT_ORIGIN = PLACE_ORIGINS["northfield"]


def origin_for(name: str) -> tuple[float, float, float]:
    key = name.lower().replace("_", "").replace("-", "")
    for place, origin in PLACE_ORIGINS.items():
        if place in key:
            return origin
    return DEFAULT_ORIGIN


def _curvature_radii(phi: float) -> tuple[float, float]:
    """WGS84 meridian (north-south) and prime-vertical (east-west) radii of curvature (m) at
    geodetic latitude ``phi`` (rad)."""
    s2 = np.sin(phi) ** 2
    return _A * (1 - _E2) / (1 - _E2 * s2) ** 1.5, _A / np.sqrt(1 - _E2 * s2)


def enu_to_lla(enu: np.ndarray, origin: tuple[float, float, float]) -> np.ndarray:
    """ENU metres (N x 3) -> (lat deg, lon deg, alt m) on the local tangent plane's curvature radii.

    Exact to well below a millimetre within a few hundred metres of the origin (ignores the
    d^2 / 2R drop of the tangent plane, 0.8 mm at 100 m).
    """
    enu = np.atleast_2d(np.asarray(enu, dtype=np.float64))
    lat0, lon0, alt0 = origin
    phi = np.deg2rad(lat0)
    m_radius, n_radius = _curvature_radii(phi)
    lat = lat0 + np.rad2deg(enu[:, 1] / (m_radius + alt0))
    lon = lon0 + np.rad2deg(enu[:, 0] / ((n_radius + alt0) * np.cos(phi)))
    return np.stack([lat, lon, alt0 + enu[:, 2]], -1)


def lla_to_enu(lla: np.ndarray, origin: tuple[float, float, float]) -> np.ndarray:
    """Inverse of :func:`enu_to_lla`."""
    lla = np.atleast_2d(np.asarray(lla, dtype=np.float64))
    lat0, lon0, alt0 = origin
    phi = np.deg2rad(lat0)
    m_radius, n_radius = _curvature_radii(phi)
    north = np.deg2rad(lla[:, 0] - lat0) * (m_radius + alt0)
    east = np.deg2rad(lla[:, 1] - lon0) * (n_radius + alt0) * np.cos(phi)
    return np.stack([east, north, lla[:, 2] - alt0], -1)
