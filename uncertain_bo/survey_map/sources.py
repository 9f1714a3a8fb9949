"""The readings of a survey, from a CSV of points, a run's journal or its recording, in metres on a plane
(:class:`Survey`).

**CSV** (:func:`read_csv_survey`): a header row names the columns (matched case-insensitively, surrounding spaces
ignored); comma, semicolon or tab separated; lines starting with ``#`` and blank lines are skipped. The position
is one of

- ``lat``/``latitude`` and ``lon``/``lng``/``longitude``: WGS84 degrees, projected to the UTM zone of the points'
  centroid (:mod:`uncertain_bo.survey_map.georeference`);
- ``x`` and ``y``: metres on a plane, x east, y north (a robot's map frame; georeferenced with ``origin``).

The reading is the column named by ``value``. Every point gets the same location covariance
``location_std² I`` (the GNSS receiver's stated horizontal 1-σ error, m).

Rows that cannot be used are **skipped and counted**, never guessed: a row without a number in the value or a
coordinate column (empty, ``NA``, text), a non-finite one (NaN, inf), or a row with fewer fields than the header
(:attr:`Survey.skipped` says how many of each, and ``uncertain-bo map`` prints and records the counts). A survey
log with sensor dropouts is therefore mapped from the rows that have readings. What is an **error** instead
(:class:`SurveyError`, one line, nothing written): an empty file or one without data rows, no coordinate columns,
both latitude/longitude and x/y columns (mixed units; choose with ``coordinates``), only one of a pair, a
latitude outside ±90° or a longitude outside ±180° (metres in a degree column), a ``value`` column that is not
there (the message lists the columns), fewer than 3 usable rows, or points that span no area.

**Journal** (:func:`read_journal_survey`): a run folder (its ``journal.jsonl``) or a journal file, read
read-only (a damaged journal is refused by :class:`~uncertain_bo.journal.journal.Journal`): every measurement and
en-route reading with its location distribution (the one it was stored with, or its last revision's: a smoother or loop
closure that re-placed it, :mod:`uncertain_bo.planning.revisions`; a Gaussian's covariance; a particle cloud
moment-matched; an exact position zero) and its reported reading variance, in the run's map frame (an engineering
CRS, or the local tangent plane at ``origin``). The robust peak's execution noise defaults to the run's
``execution_noise_std``.

**Recording** (:func:`read_recording_survey`): an explorer's own rosbag2 recording (``record: true``), read as the
journal it holds on ``~/journal``; a recording without one (``ros2 bag record``) is an error that says to replay it.
"""
from __future__ import annotations

import csv
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..user_errors import UsageError
from .georeference import Georeference, engineering_crs, local_tangent_plane, utm_for

__all__ = ['Survey', 'SurveyError', 'read_survey', 'read_csv_survey', 'read_journal_survey', 'LATITUDE_NAMES',
           'LONGITUDE_NAMES', 'DEFAULT_LOCATION_STD', 'COORDINATES', 'survey_summary']

#: CSV column names (lower case) read as WGS84 latitude and longitude, degrees
LATITUDE_NAMES = ('lat', 'latitude')
LONGITUDE_NAMES = ('lon', 'lng', 'longitude')
#: CSV column names read as map coordinates in metres
X_NAMES, Y_NAMES = ('x',), ('y',)
#: the choices of ``coordinates`` when a CSV has both kinds of columns
COORDINATES = ('latlon', 'xy')
#: the GNSS horizontal error assumed when none is stated, m (1-σ per axis; an uncorrected single-frequency receiver)
DEFAULT_LOCATION_STD = 2.0


class SurveyError(UsageError):
    """A survey that cannot be mapped (the message says why and what to do); nothing is written.

    Example:
        >>> read_survey('no/such/soundings.csv', value='depth')
        Traceback (most recent call last):
        ...
        uncertain_bo.survey_map.sources.SurveyError: no/such/soundings.csv does not exist; give a CSV of points, ...
    """


@dataclass
class Survey:
    """The readings of one survey in metres on a plane.

    Attributes:
        xy: ``(n, 2)`` location means, m, in :attr:`georeference`'s CRS.
        covariance: ``(n, 2, 2)`` location covariances, m².
        value: ``(n,)`` readings (the survey's units).
        variance: ``(n,)`` reported reading variances (units², 0 = not reported).
        georeference: the CRS of :attr:`xy`.
        source: the file read.
        value_name: the CSV column, or ``'reading'`` for a journal.
        unit: the readings' unit when known (a journal's reading type), else None.
        execution_std: ``(2,)`` default per-axis std (m) of the robust peak's execution noise: where a rover sent to
            a place would take its reading (the CSV's location std; a journal's ``execution_noise_std``).
        skipped: rows left out, by reason.
        rows: data rows read (used and skipped).

    Example:
        Temperature casts on a 5 x 5 grid of WGS84 positions (about 8 m apart), read from a CSV: projected to the
        UTM zone of their centroid, each with the default GNSS error of 2 m:

        >>> import pathlib, tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = pathlib.Path(folder, 'casts.csv')
        ...     _ = path.write_text('lat,lon,temperature\\n' + '\\n'.join(
        ...         f'{47.37 + 1e-4 * i},{8.54 + 1e-4 * j},{12 + 0.1 * i * j}' for i in range(5) for j in range(5)))
        ...     casts = read_csv_survey(path, value='temperature')
        >>> casts.n, casts.georeference.name, casts.execution_std
        (25, 'WGS 84 / UTM zone 32N (EPSG:32632)', (2.0, 2.0))
        >>> (casts.xy[1] - casts.xy[0]).round(2).tolist(), casts.covariance[0].tolist()     # m, m²
        ([7.55, -0.04], [[4.0, 0.0], [0.0, 4.0]])
    """

    xy: np.ndarray
    covariance: np.ndarray
    value: np.ndarray
    variance: np.ndarray
    georeference: Georeference
    source: Path
    value_name: str
    unit: str | None
    execution_std: tuple[float, float]
    skipped: dict[str, int] = field(default_factory=dict)
    rows: int = 0

    @property
    def n(self) -> int:
        """Number of readings."""
        return self.value.shape[0]

    @classmethod
    def from_points(cls, xy, value, location_std: float = DEFAULT_LOCATION_STD, frame: str = 'survey', *,
                    origin: tuple[float, float] | None = None, value_name: str = 'reading',
                    unit: str | None = None) -> 'Survey':
        """A survey of points in memory, checked as a CSV of x/y metres is (module docstring): points with a NaN or
        inf are skipped and counted, fewer than 3 usable points or points that span no area are an error.

        Args:
            xy: ``(n, 2)`` positions, m (x east, y north) on the plane of ``frame`` (or the tangent plane at
                ``origin``).
            value: ``(n,)`` readings.
            location_std: the positions' horizontal 1-σ error, m (every point gets ``location_std² I``).
            frame: the engineering CRS's name (a robot's map frame) when there is no ``origin``.
            origin: ``(latitude, longitude)`` degrees of x = y = 0, which georeferences the survey.
            value_name, unit: what the readings are (the map's labels).

        Raises:
            SurveyError: arrays of the wrong shapes, a ``location_std`` that is not a finite number >= 0, fewer than
                3 usable points, or points that span no area.

        Example:
            Soundings every 10 m over a shoal at (30, 20) m, in a robot's ``map`` frame; one without a reading:

            >>> xy = 10.0 * np.stack(np.meshgrid(range(6), range(6)), -1).reshape(-1, 2)     # m
            >>> depth = 10 - ((xy - [30.0, 20.0]) ** 2).sum(-1) / 250
            >>> depth[0] = np.nan
            >>> soundings = Survey.from_points(xy, depth, location_std=1.0, frame='map', value_name='depth', unit='m')
            >>> soundings.n, soundings.skipped, soundings.georeference.georeferenced, soundings.covariance[0].tolist()
            (35, {'NaN or inf': 1}, False, [[1.0, 0.0], [0.0, 1.0]])
            >>> Survey.from_points(xy[:, 0], depth)
            Traceback (most recent call last):
            ...
            uncertain_bo.survey_map.sources.SurveyError: points in memory: xy must be (n, 2) metres and value (n,), ...
        """
        xy, value = np.asarray(xy, dtype=float), np.asarray(value, dtype=float)
        if xy.ndim != 2 or xy.shape[1] != 2 or value.shape != (xy.shape[0],):
            raise SurveyError(f'points in memory: xy must be (n, 2) metres and value (n,), got {xy.shape} and '
                              f'{value.shape}')
        usable = np.isfinite(xy).all(-1) & np.isfinite(value)
        skipped = {'NaN or inf': int((~usable).sum())} if not usable.all() else {}
        return _points_survey(Path('points in memory'), xy[:, 0], xy[:, 1], value, ('x', 'y', value_name),
                              location_std, lambda x, y: (np.column_stack([x, y]), _plane(origin, frame)),
                              Counter(skipped), unit)


def read_survey(source: str | Path, value: str | None = None, location_std: float | None = None,
                coordinates: str | None = None, origin: tuple[float, float] | None = None) -> Survey:
    """The survey at ``source``: a run folder or ``.jsonl`` journal, else a CSV (module docstring).

    Args:
        source: a run folder (with ``journal.jsonl``), a journal file, an explorer's recording, or a CSV file.
        value: the CSV column of the readings (required for a CSV; not for a journal).
        location_std: the CSV's GNSS horizontal error, m (default :data:`DEFAULT_LOCATION_STD`); not for a journal,
            whose readings carry their own covariances.
        coordinates: ``'latlon'`` or ``'xy'`` when a CSV has both kinds of columns; None otherwise.
        origin: ``(latitude, longitude)`` degrees of x = y = 0 for x/y metres (a CSV's or a journal's map frame).

    Raises:
        SurveyError: the source cannot be mapped (module docstring).
        uncertain_bo.journal.journal.JournalError: a journal that is damaged.
    """
    path = Path(source)
    if not path.exists():
        raise SurveyError(f'{path} does not exist; give a CSV of points, a journal.jsonl, a run folder or a recording')
    from ..recording.bag_reader import is_recording
    if is_recording(path):
        _journal_only(value, location_std, coordinates)
        return read_recording_survey(path, origin)
    if path.is_dir():
        if not (path / 'journal.jsonl').is_file():
            raise SurveyError(f'{path} is a folder without journal.jsonl; give a CSV file, a journal or a run folder')
        path = path / 'journal.jsonl'
    if not path.is_file():
        raise SurveyError(f'{path} is not a regular file (a device or a pipe?); give a CSV file, a journal or a '
                          'run folder')
    if _is_journal(path):
        _journal_only(value, location_std, coordinates)
        return read_journal_survey(path, origin)
    if value is None:
        raise SurveyError(f'{path}: give --value COLUMN, the column of the readings to map')
    return read_csv_survey(path, value, DEFAULT_LOCATION_STD if location_std is None else location_std,
                           coordinates, origin)


def _journal_only(value, location_std, coordinates) -> None:
    """Raises SurveyError when a CSV's option is given for a journal or a recording."""
    for flag, given in (('--value', value), ('--location-std', location_std), ('--coordinates', coordinates)):
        if given is not None:
            raise SurveyError(f'{flag} is for CSV surveys: a journal has one reading per record, with the '
                              "location covariance it was stored with; leave out " + flag)


def _is_journal(path: Path) -> bool:
    """A ``.jsonl`` file, or any file whose first non-blank character opens a JSON object."""
    if path.suffix.lower() == '.jsonl':
        return True
    if path.suffix.lower() in ('.csv', '.tsv', '.txt'):
        return False
    try:
        with open(path, 'rb') as fh:
            head = fh.read(256).lstrip()
    except OSError as exc:
        raise SurveyError(f'cannot read {path}: {exc.strerror}') from None
    return head.startswith(b'{')


def read_csv_survey(path: str | Path, value: str, location_std: float = DEFAULT_LOCATION_STD,
                    coordinates: str | None = None, origin: tuple[float, float] | None = None) -> Survey:
    """A CSV survey (module docstring: columns, what is skipped and counted, what is an error).

    Raises:
        SurveyError: the file cannot be mapped (module docstring).
    """
    path = Path(path)
    _check_location_std(location_std)
    if coordinates is not None and coordinates not in COORDINATES:
        raise SurveyError(f'--coordinates must be one of {", ".join(COORDINATES)}, got {coordinates!r}')
    header, rows = _csv_rows(path)
    names = [h.strip().lower() for h in header]
    dupes = sorted(n for n, c in Counter(names).items() if c > 1 and n)
    if dupes:
        raise SurveyError(f'{path}: column(s) {dupes} appear more than once (names are case-insensitive); rename one')
    kind, (ci, cj) = _coordinate_columns(path, names, header, coordinates)
    if value.strip().lower() not in names:
        raise SurveyError(f'{path} has no column {value!r} for --value; its columns: {", ".join(header)}')
    cv = names.index(value.strip().lower())
    if cv in (ci, cj):
        raise SurveyError(f'--value {value!r} is a coordinate column of {path}; give the column of the readings')
    a, b, v, skipped = _numbers(rows, (ci, cj, cv))
    if kind == 'latlon':
        _check_degrees(path, header[ci], a, 90.0)
        _check_degrees(path, header[cj], b, 180.0)
        if origin is not None:
            raise SurveyError('--origin is the WGS84 point at x = y = 0 of x/y metres; a CSV of latitudes and '
                              'longitudes needs none')

    def project(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, Georeference]:
        if kind != 'latlon':
            return np.column_stack([a, b]), _plane(origin, 'survey')
        try:
            geo = utm_for(b, a)
        except ValueError as exc:
            raise SurveyError(f'{path}: {exc}') from None
        return np.column_stack(geo.to_map(b, a)), geo

    return _points_survey(path, a, b, v, (header[ci], header[cj], header[cv]), location_std, project, skipped,
                          None, rows=len(rows))


def _check_location_std(location_std: float) -> None:
    if not (math.isfinite(location_std) and location_std >= 0):
        raise SurveyError(f'--location-std must be a finite number of metres >= 0, got {location_std!r}')


def _points_survey(source: Path, a: np.ndarray, b: np.ndarray, v: np.ndarray, names: tuple[str, str, str],
                   location_std: float, project, skipped: Counter, unit: str | None, rows: int | None = None
                   ) -> Survey:
    """The one check and assembly of a survey of points (a CSV's or arrays in memory): the usable points (finite
    coordinates ``a``, ``b`` and reading ``v``), at least 3 of them, projected by ``project(a, b) -> (xy, CRS)``,
    spanning an area, each with the covariance ``location_std² I``.

    Raises:
        SurveyError: what the module docstring lists for these steps.
    """
    _check_location_std(location_std)
    usable = np.isfinite(a) & np.isfinite(b) & np.isfinite(v)
    n = int(usable.sum())
    if n < 3:
        raise SurveyError(f'{source}: {n} usable rows (finite {names[0]}, {names[1]} and {names[2]}) of '
                          f'{len(v)}; a map needs at least 3 {_skip_text(skipped)}')
    xy, geo = project(a[usable], b[usable])
    _check_area(source, xy)
    cov = np.broadcast_to(np.eye(2) * location_std ** 2, (n, 2, 2)).copy()
    return Survey(xy, cov, v[usable], np.zeros(n), geo, source, names[2], unit, (float(location_std),) * 2,
                  dict(skipped), len(v) if rows is None else rows)


def _csv_rows(path: Path) -> tuple[list[str], list[list[str]]]:
    """``(header, data rows)`` of a CSV (comments and blank lines dropped), or a SurveyError."""
    try:
        text = path.read_text(encoding='utf-8-sig')
    except UnicodeDecodeError:
        raise SurveyError(f'{path} is not a text CSV file (not UTF-8)') from None
    except OSError as exc:
        raise SurveyError(f'cannot read {path}: {exc.strerror}') from None
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith('#')]
    if not lines:
        raise SurveyError(f'{path} is empty: expected a header row naming the columns, then one row per point')
    try:
        dialect = csv.Sniffer().sniff(lines[0], delimiters=',;\t')
    except csv.Error:
        dialect = csv.excel
    table = list(csv.reader(lines, dialect))
    header, rows = table[0], table[1:]
    if not rows:
        raise SurveyError(f'{path} has a header but no data rows')
    return header, rows


def _coordinate_columns(path: Path, names: list[str], header: list[str],
                        coordinates: str | None) -> tuple[str, tuple[int, int]]:
    """``('latlon', (lat, lon))`` or ``('xy', (x, y))`` column indices, or a SurveyError saying what is missing or
    ambiguous."""
    def find(options: tuple[str, ...]) -> int | None:
        found = [i for i, n in enumerate(names) if n in options]
        return found[0] if found else None

    lat, lon, x, y = find(LATITUDE_NAMES), find(LONGITUDE_NAMES), find(X_NAMES), find(Y_NAMES)
    has_deg, has_m = lat is not None or lon is not None, x is not None or y is not None
    if has_deg and has_m and coordinates is None:
        raise SurveyError(f'{path} has both latitude/longitude and x/y columns (mixed units); choose one with '
                          '--coordinates latlon or --coordinates xy')
    use = coordinates or ('latlon' if has_deg else 'xy' if has_m else None)
    if use is None:
        raise SurveyError(f'{path} has no coordinate columns: name them lat/latitude and lon/lng/longitude (WGS84 '
                          f'degrees) or x and y (metres); its columns: {", ".join(header)}')
    pair = (lat, lon) if use == 'latlon' else (x, y)
    labels = ('latitude (lat/latitude)', 'longitude (lon/lng/longitude)') if use == 'latlon' else ('x', 'y')
    missing = [lab for lab, i in zip(labels, pair) if i is None]
    if missing:
        raise SurveyError(f'{path} has no {" and no ".join(missing)} column for --coordinates {use}; its columns: '
                          f'{", ".join(header)}')
    return use, pair


def _numbers(rows: list[list[str]], cols: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """The columns ``cols`` as float arrays (NaN where a row cannot be used) and the skip counts by reason."""
    out = np.full((len(cols), len(rows)), np.nan)
    skipped: Counter = Counter()
    need = max(cols) + 1
    for r, row in enumerate(rows):
        if len(row) < need:
            skipped['row with fewer fields than the header'] += 1
            continue
        vals = []
        for c in cols:
            try:
                vals.append(float(row[c]))
            except ValueError:
                vals.append(None)
        if any(v is None for v in vals):
            skipped['empty or not a number'] += 1
            continue
        if not all(math.isfinite(v) for v in vals):
            skipped['NaN or inf'] += 1
            continue
        out[:, r] = vals
    return (*out, skipped)


def _check_degrees(path: Path, name: str, deg: np.ndarray, limit: float) -> None:
    """SurveyError if a finite value of the degree column ``name`` lies outside ±``limit``."""
    bad = np.flatnonzero(np.isfinite(deg) & (np.abs(deg) > limit))
    if bad.size:
        raise SurveyError(f'{path}: column {name!r} holds {deg[bad[0]]:g} (data row {bad[0] + 1}), outside '
                          f'±{limit:g}°: {bad.size} values are not WGS84 degrees (metres? name those columns x and y)')


def _skip_text(skipped: Counter) -> str:
    return ('(skipped: ' + ', '.join(f'{c} {r}' for r, c in skipped.items()) + ')') if skipped else ''


def _check_area(path: Path, xy: np.ndarray) -> None:
    """SurveyError unless the points span an area (not all on one line)."""
    span = xy.max(axis=0) - xy.min(axis=0)
    if np.any(span <= 0) or np.linalg.matrix_rank(xy - xy.mean(axis=0), tol=1e-6 * max(span.max(), 1e-9)) < 2:
        raise SurveyError(f'{path}: the points span no area (they lie on one line or one point); a map needs '
                          'points spread over the area')


def _plane(origin: tuple[float, float] | None, frame: str) -> Georeference:
    """The CRS of x/y metres: the tangent plane at ``origin`` (lat, lon), or an engineering CRS of ``frame``."""
    if origin is None:
        return engineering_crs(frame)
    try:
        return local_tangent_plane(*origin)
    except ValueError as exc:
        raise SurveyError(str(exc)) from None


def read_journal_survey(path: str | Path, origin: tuple[float, float] | None = None) -> Survey:
    """A run's measurements and en-route readings (module docstring).

    Raises:
        uncertain_bo.journal.journal.JournalError: no journal, or a damaged one.
        SurveyError: fewer than 3 readings, or readings that span no area.
    """
    from ..journal.journal import Journal
    from ..reporting.units import READING_UNITS

    path = Path(path)
    journal = Journal(path, read_only=True)
    records = [r for r in journal.records if r.get('type') in ('observation', 'en_route')]
    if len(records) < 3:
        raise SurveyError(f'{path} holds {len(records)} readings (measurements and en-route readings); a map needs '
                          'at least 3')
    revisions = journal.revisions
    locations = [journal.location(r, revisions) for r in records]     # a revised reading where it was revised to
    xy = np.array([loc.mean[0].tolist() for loc in locations], dtype=float)
    if xy.shape[1] != 2:
        raise SurveyError(f'{path}: the run is {xy.shape[1]}-dimensional; a map needs x/y locations')
    cov = np.array([loc.covariance[0].tolist() for loc in locations], dtype=float)
    value = np.array([r['y'] for r in records], dtype=float)
    variance = np.array([r.get('reading_variance', 0.0) or 0.0 for r in records], dtype=float)
    params = journal.header.get('parameters') or {}
    std = params.get('execution_noise_std') or [0.0, 0.0]
    std = [float(s) for s in (std if isinstance(std, (list, tuple)) else [std, std])][:2]
    _check_area(path, xy)
    frame = str(params.get('global_frame') or params.get('frame_id') or 'map')   # frame_id: older journals'
    reading_type = params.get('reading_type')
    return Survey(xy, cov, value, variance, _plane(origin, frame), path, 'reading',
                  READING_UNITS.get(reading_type) if reading_type else None, (std[0], std[-1]), {}, len(records))


def read_recording_survey(path: str | Path, origin: tuple[float, float] | None = None) -> Survey:
    """The readings of the journal an explorer's own recording holds (``record: true``, ``demo --record``; its
    ``~/journal`` topic), as :func:`read_journal_survey` reads a run's. A restart's recording holds only what that run
    wrote: map the run folder for the whole mission.

    Raises:
        uncertain_bo.recording.bag_reader.RecordingError: no recording, or a damaged one.
        SurveyError: a recording without the explorer's journal (``ros2 bag record``: replay it, then map the
            replay), or too few readings.
    """
    import dataclasses
    import json
    import tempfile

    from ..recording.bag_reader import open_recording

    path = Path(path)
    records = open_recording(path).journal_records()
    if not records:
        raise SurveyError(f"{path} is a recording without the explorer's journal (a ros2 bag record?): replay it "
                          f'first, uncertain-bo replay {path} --out DIR, then map DIR')
    with tempfile.TemporaryDirectory(prefix='uncertain-bo-map-') as tmp:
        journal = Path(tmp) / 'journal.jsonl'
        journal.write_text(''.join(json.dumps(r) + '\n' for r in records))
        survey = read_journal_survey(journal, origin)
    return dataclasses.replace(survey, source=path)


def survey_summary(survey: Survey) -> dict:
    """What ``peak.json`` records about the input: source, readings, skipped rows, CRS."""
    return {'source': str(survey.source), 'value': survey.value_name, 'unit': survey.unit,
            'readings': survey.n, 'rows': survey.rows, 'rows_skipped': dict(survey.skipped),
            'crs': survey.georeference.name, 'georeferenced': survey.georeference.georeferenced}
