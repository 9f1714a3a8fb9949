"""Where a survey's map coordinates are on the Earth: the projected or engineering CRS of ``uncertain-bo map``.

A survey is fitted and mapped in metres on a plane (:class:`Georeference`):

- latitude/longitude (WGS84, EPSG:4326) go to the **UTM zone of the points' centroid** (WGS84 / UTM, EPSG:326zz
  north, 327zz south; :func:`utm_for`), projected with pyproj. A survey of tens of kilometres that crosses a zone
  border stays in its centroid's zone (the scale error grows to about 0.1 % at 3° beyond the central meridian);
- x/y in metres with a known origin (``--origin LAT LON``: the WGS84 point at x = y = 0, x east, y north, as
  robot_localization's ``navsat_transform`` datum) go to the **local tangent plane** at that origin, PROJ's
  ellipsoidal orthographic projection centred there (:func:`local_tangent_plane`): the east/north components of
  local ENU coordinates for points on the ellipsoid;
- x/y in metres without an origin (a robot's ``map`` frame) get an **engineering CRS** (:func:`engineering_crs`):
  a local Cartesian frame in metres, x east and y north (REP-103), not tied to the Earth; nothing is given in
  WGS84 then.

The CRS is written into the GeoTIFF (so QGIS and GDAL show it) and described in ``peak.json``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ['Georeference', 'utm_for', 'local_tangent_plane', 'engineering_crs', 'WGS84']

#: EPSG code of WGS84 geographic coordinates (latitude, longitude in degrees)
WGS84 = 4326


@dataclass(frozen=True)
class Georeference:
    """A plane in metres for one survey and, when it is tied to the Earth, the way back to WGS84.

    Attributes:
        crs: the ``pyproj.CRS`` of the map coordinates (projected, or engineering when not georeferenced).
        name: how the CRS is described to the user (``'WGS 84 / UTM zone 32N (EPSG:32632)'``).
        georeferenced: False for an engineering CRS (a robot's map frame without an origin).

    Example:
        A survey on Lake Zurich goes to UTM zone 32N; a robot's ``map`` frame without an origin stays off the
        Earth:

        >>> import numpy as np
        >>> utm = utm_for(np.array([8.54, 8.55]), np.array([47.37, 47.38]))
        >>> utm.name
        'WGS 84 / UTM zone 32N (EPSG:32632)'
        >>> x, y = utm.to_map(np.array([8.545]), np.array([47.375]))
        >>> x.round(1).tolist(), y.round(1).tolist(), [v.round(6).tolist() for v in utm.to_wgs84(x, y)]
        ([465651.2], [5246938.2], [[8.545], [47.375]])
        >>> engineering_crs('map').to_wgs84(np.array([0.0]), np.array([0.0]))
        Traceback (most recent call last):
        ...
        ValueError: local engineering CRS: map frame (x east, y north, metres; not georeferenced) is not tied to ...
    """

    crs: object
    name: str
    georeferenced: bool

    def to_map(self, lon: np.ndarray, lat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Map coordinates ``(x, y)`` m of WGS84 longitudes and latitudes (degrees), arrays of one shape.

        Raises:
            ValueError: the CRS is not georeferenced.
        """
        return self._transformer(forward=True).transform(lon, lat)

    def to_wgs84(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """WGS84 ``(longitude, latitude)`` degrees of map coordinates ``(x, y)`` m.

        Raises:
            ValueError: the CRS is not georeferenced.
        """
        return self._transformer(forward=False).transform(x, y)

    def _transformer(self, forward: bool):
        from pyproj import CRS, Transformer

        if not self.georeferenced:
            raise ValueError(f'{self.name} is not tied to the Earth: no WGS84 coordinates')
        wgs84 = CRS.from_epsg(WGS84)
        src, dst = (wgs84, self.crs) if forward else (self.crs, wgs84)
        return Transformer.from_crs(src, dst, always_xy=True)


def utm_for(lon: np.ndarray, lat: np.ndarray) -> Georeference:
    """The WGS84 / UTM zone of the centroid of points at WGS84 ``lon``, ``lat`` (degrees, ``(n,)``).

    The zone is the standard 6° band of the centroid's longitude (the circular mean, so a survey across the
    antimeridian is handled), north or south by the sign of the mean latitude.

    Raises:
        ValueError: the centroid is beyond UTM's latitudes (84°N, 80°S): give x/y metres instead.
    """
    from pyproj import CRS

    lon = np.radians(np.asarray(lon, dtype=float))
    mean_lon = math.degrees(math.atan2(float(np.mean(np.sin(lon))), float(np.mean(np.cos(lon)))))
    mean_lat = float(np.mean(lat))
    if not -80.0 <= mean_lat <= 84.0:
        raise ValueError(f'the survey is centred at latitude {mean_lat:.3f}°, beyond the UTM zones (80°S to 84°N); '
                         'project it to a polar stereographic CRS yourself and give x/y metres')
    zone = int((mean_lon + 180.0) // 6.0) % 60 + 1
    epsg = (32600 if mean_lat >= 0 else 32700) + zone
    crs = CRS.from_epsg(epsg)
    return Georeference(crs, f'{crs.name} (EPSG:{epsg})', True)


def local_tangent_plane(lat0: float, lon0: float) -> Georeference:
    """The local tangent plane at the WGS84 origin ``lat0``, ``lon0`` (degrees): x east, y north, metres.

    Raises:
        ValueError: the origin is not a latitude in [-90, 90] and a longitude in [-180, 180].
    """
    from pyproj import CRS

    if not (math.isfinite(lat0) and math.isfinite(lon0) and -90.0 <= lat0 <= 90.0 and -180.0 <= lon0 <= 180.0):
        raise ValueError(f'--origin {lat0} {lon0} is not a latitude (-90..90) and a longitude (-180..180) in degrees')
    crs = CRS.from_proj4(f'+proj=ortho +lat_0={lat0!r} +lon_0={lon0!r} +x_0=0 +y_0=0 +ellps=WGS84 +units=m '
                         '+no_defs +type=crs')
    return Georeference(crs, f'local tangent plane (ENU east/north, m) at {lat0:.7f}°, {lon0:.7f}° (WGS84)', True)


def engineering_crs(frame: str) -> Georeference:
    """An engineering CRS for coordinates in metres in ``frame`` (e.g. a robot's ``map``), x east, y north."""
    from pyproj import CRS

    name = f'local engineering CRS: {frame} frame (x east, y north, metres; not georeferenced)'
    wkt = (f'ENGCRS["{_wkt_text(name)}",EDATUM["origin of the {_wkt_text(frame)} frame"],CS[Cartesian,2],'
           'AXIS["x (E)",east,ORDER[1],LENGTHUNIT["metre",1]],AXIS["y (N)",north,ORDER[2],LENGTHUNIT["metre",1]]]')
    return Georeference(CRS.from_wkt(wkt), name, False)


def _wkt_text(text: str) -> str:
    """``text`` safe inside a WKT quoted string (a double quote is written twice)."""
    return str(text).replace('"', '""')
