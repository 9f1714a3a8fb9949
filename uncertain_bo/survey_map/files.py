"""The files ``uncertain-bo map`` writes: the GeoTIFF, the PNG, ``peak.json`` and ``field.npz``.

- ``map.tif``: GeoTIFF (rasterio), two float32 bands, described: 1 = posterior mean of the field, 2 = its posterior
  standard deviation (the survey's units), on the grid of :class:`~uncertain_bo.survey_map.posterior.Grid`, north
  up, in the survey's CRS (UTM, the local tangent plane, or an engineering CRS; written into the file), cells that are
  not covered (outside the readings' convex hull or beyond the coverage radius) nodata (NaN). The geotransform puts
  pixel centres on the grid's cell centres.
- ``map.png``: the mean with the readings, the robust peak and its region; the standard deviation.
- ``peak.json``: the peak in map and (georeferenced) WGS84 coordinates, its value and credible interval, the region
  (cells, area, bounds, the stated probability and the sampled mass), the model and the input (readings used and
  rows skipped, by reason).
- ``field.npz``: the posterior mean on every cell (``z``, row 0 south) and the cell centres' extent (``xmin``,
  ``xmax``, ``ymin``, ``ymax``, m): the grid ``uncertain-bo bench --field`` and ``report --field`` load
  (:meth:`~uncertain_bo.sim.field.Field.from_npz`).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..reporting.output_files import replacing
from .peak import Peak, region_area
from .posterior import PosteriorMap
from .sources import Survey, survey_summary

__all__ = ['write_outputs', 'write_geotiff', 'write_png', 'peak_record', 'write_field_npz', 'OUTPUT_FILES']

#: the files written into ``--out``
OUTPUT_FILES = ('map.tif', 'map.png', 'peak.json', 'field.npz')


def write_outputs(out: Path, survey: Survey, pmap: PosteriorMap, peak: Peak,
                  execution_std: tuple[float, float]) -> dict[str, Path]:
    """Write every file of :data:`OUTPUT_FILES` into ``out`` (created), each whole or not at all
    (:func:`~uncertain_bo.reporting.output_files.replacing`); returns them by name."""
    out.mkdir(parents=True, exist_ok=True)
    files = {name: out / name for name in OUTPUT_FILES}
    record = peak_record(survey, pmap, peak, execution_std)
    record['files'] = {k: str(v) for k, v in files.items()}
    with replacing(*files.values()) as tmps:
        tmp = dict(zip(files, tmps))
        write_geotiff(tmp['map.tif'], survey, pmap)
        write_field_npz(tmp['field.npz'], pmap)
        tmp['peak.json'].write_text(json.dumps(record, indent=2, ensure_ascii=False) + '\n', encoding='utf-8')
        write_png(tmp['map.png'], survey, pmap, peak)
    return files


def _label(survey: Survey) -> str:
    return survey.value_name + (f' ({survey.unit})' if survey.unit else '')


def write_geotiff(path: Path, survey: Survey, pmap: PosteriorMap) -> Path:
    """The two-band GeoTIFF of the module docstring."""
    import rasterio
    from rasterio.crs import CRS
    from rasterio.transform import Affine

    g = pmap.grid
    half = g.resolution / 2.0   # north-up: the outer corner of the north-west cell, rows southwards
    transform = Affine(g.resolution, 0.0, g.x0 - half, 0.0, -g.resolution, g.y0 + (g.ny - 1) * g.resolution + half)
    bands = [np.where(pmap.covered, a, np.nan)[::-1].astype(np.float32) for a in (pmap.mean, pmap.std)]
    crs = CRS.from_wkt(survey.georeference.crs.to_wkt())
    with rasterio.open(path, 'w', driver='GTiff', width=g.nx, height=g.ny, count=2, dtype='float32', crs=crs,
                       transform=transform, nodata=np.nan, compress='deflate') as dst:
        for i, band in enumerate(bands, start=1):
            dst.write(band, i)
        dst.set_band_description(1, f'posterior mean of {_label(survey)}')
        dst.set_band_description(2, f'posterior standard deviation of {_label(survey)}')
        if survey.unit:
            dst.units = (survey.unit, survey.unit)
        dst.update_tags(SOURCE=str(survey.source), CRS_NAME=survey.georeference.name,
                        MODEL='uncertain_bo DistributionGP (expected SE kernel over location distributions)',
                        NODATA_MEANS=f'outside the readings\' convex hull or farther than {pmap.coverage:g} m from '
                                     'every reading')
    return path


def write_field_npz(path: Path, pmap: PosteriorMap) -> Path:
    """The posterior mean as a field grid (module docstring)."""
    xmin, xmax, ymin, ymax = pmap.grid.extent()
    with open(path, 'wb') as fh:
        np.savez(fh, z=pmap.mean, xmin=xmin, xmax=xmax, ymin=ymin, ymax=ymax)
    return path


def peak_record(survey: Survey, pmap: PosteriorMap, peak: Peak, execution_std: tuple[float, float]) -> dict:
    """The content of ``peak.json`` (module docstring)."""
    geo, g = survey.georeference, pmap.grid
    rows, cols = peak.region_cells[:, 0], peak.region_cells[:, 1]
    centres = np.column_stack([g.x0 + g.resolution * cols, g.y0 + g.resolution * rows])
    half = g.resolution / 2.0
    bounds = [float(centres[:, 0].min() - half), float(centres[:, 0].max() + half),
              float(centres[:, 1].min() - half), float(centres[:, 1].max() + half)]
    wgs84 = None
    if geo.georeferenced:
        lon, lat = geo.to_wgs84(np.array([peak.xy[0]]), np.array([peak.xy[1]]))
        wgs84 = {'latitude': float(lat[0]), 'longitude': float(lon[0])}
    hyper = pmap.hyperparameters()
    return {
        'peak': {
            'map': {'x': float(peak.xy[0]), 'y': float(peak.xy[1])},
            'wgs84': wgs84,
            'cell': list(peak.cell),
            'value': {'mean': peak.mean, 'std': peak.std, 'credible_interval': list(peak.interval),
                      'credibility': peak.credibility, 'unit': survey.unit},
            'argmax_probability': peak.argmax_probability,
            'objective': 'robust: E[f(x + xi)], xi ~ N(0, diag(execution_noise_std^2))',
        },
        'region': {
            'probability': peak.region_probability,
            'sampled_mass': peak.region_mass,
            'cells': int(len(peak.region_cells)),
            'area_m2': region_area(peak, g.resolution),
            'bounds_map': bounds,
            'cells_xy': np.round(centres, 3).tolist(),
            'cell_probabilities': np.round(peak.region_probabilities, 4).tolist(),
            'samples': peak.samples,
            'candidates': peak.candidates,
            'truncated': peak.truncated,
            'excluded_bound': peak.excluded_bound,
            'holds_argmax_at_least': max(0.0, peak.region_mass - peak.excluded_bound),
            'method': 'argmax of joint posterior draws of the robust objective over the covered cells '
                      '(uncertain_bo.survey_map.peak)',
        },
        'execution_noise_std': [float(s) for s in execution_std],
        'crs': {'name': geo.name, 'georeferenced': geo.georeferenced, 'wkt': geo.crs.to_wkt()},
        'grid': {'x0': g.x0, 'y0': g.y0, 'resolution': g.resolution, 'nx': g.nx, 'ny': g.ny,
                 'coverage_m': pmap.coverage, 'covered_cells': int(pmap.covered.sum())},
        'model': {'hyperparameters': hyper, 'sparse': pmap.sparse,
                  'fit_points': pmap.planner.fit_max_points, 'inducing_points': pmap.planner.inducing_points,
                  'sparse_above': pmap.planner.sparse_above, 'input_noise': True},
        'input': survey_summary(survey),
    }


def write_png(path: Path, survey: Survey, pmap: PosteriorMap, peak: Peak, max_points: int = 5000) -> Path:
    """Mean (with readings, peak and region) and standard deviation side by side."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    g = pmap.grid
    half = g.resolution / 2.0
    extent = (g.x0 - half, g.x0 + (g.nx - 0.5) * g.resolution, g.y0 - half, g.y0 + (g.ny - 0.5) * g.resolution)
    geo = survey.georeference
    xl, yl = ('easting (m)', 'northing (m)') if geo.georeferenced else ('x (m)', 'y (m)')
    fig, axes = plt.subplots(1, 2, figsize=(13, 5.6), sharex=True, sharey=True)
    for ax, values, cmap, title in ((axes[0], pmap.mean, 'viridis', 'posterior mean'),
                                    (axes[1], pmap.std, 'magma', 'posterior standard deviation')):
        im = ax.imshow(np.ma.masked_where(~pmap.covered, values), origin='lower', extent=extent, cmap=cmap,
                       aspect='equal', interpolation='nearest')
        fig.colorbar(im, ax=ax, shrink=0.8, label=_label(survey))
        ax.set(title=title, xlabel=xl, ylabel=yl)
        ax.ticklabel_format(useOffset=False, style='plain')
    step = max(1, survey.n // max_points)
    axes[0].scatter(survey.xy[::step, 0], survey.xy[::step, 1], s=1.5, color='white', alpha=0.5, lw=0,
                    label=f'readings ({survey.n}' + (f', every {step}th drawn)' if step > 1 else ')'))
    mask = np.zeros(g.shape, dtype=bool)
    mask[peak.region_cells[:, 0], peak.region_cells[:, 1]] = True
    gx = g.x0 + g.resolution * np.arange(g.nx)
    gy = g.y0 + g.resolution * np.arange(g.ny)
    if mask.any() and min(g.shape) > 1:
        axes[0].contour(gx, gy, mask.astype(float), levels=[0.5], colors='red', linewidths=1.2)
        axes[0].plot([], [], color='red', label=f'peak region ({100 * peak.region_probability:g} %)')
    axes[0].scatter([peak.xy[0]], [peak.xy[1]], marker='*', s=260, color='gold', edgecolor='k', zorder=5,
                    label=f'robust peak {peak.mean:.4g} [{peak.interval[0]:.4g}, {peak.interval[1]:.4g}]')
    axes[0].legend(loc='upper center', bbox_to_anchor=(0.5, -0.14), ncol=2, fontsize=8, frameon=False)
    fig.suptitle(f'{survey.source.name}: {survey.n} readings; {geo.name}', fontsize=9)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
