"""Write the simplified visual meshes of the Panda arm (sim/assets/panda/meshes/*_visual.stl).

The cameras' frame time is bound by the software rasterizer's per-triangle cost (about
0.2 µs per triangle with llvmpipe on one core; docs/performance.md has the profile), and one
link mesh, ``link1.stl``, holds 12,516 of the arm's 14,548 triangles.  This script writes a
simplified copy of each mesh above ``--max-faces`` for rendering only: the original mesh
stays the link's collision geometry (panda.xml), so contacts and physics do not change.

Quadric-error decimation is done by ``fast-simplification`` (MIT, the PyVista project) and
STL reading and writing by ``numpy-stl`` (BSD-3-Clause); both are needed only to run this
script, not to use labrecord:

    python -m pip install fast-simplification==0.2.0 numpy-stl==4.1.1
    python scripts/simplify-visual-meshes.py            # rewrites the committed files

The output is deterministic for a given input and library version.
"""
from __future__ import annotations

import argparse
import io
from pathlib import Path

import numpy as np

MESHES = Path(__file__).resolve().parents[1] / "sim" / "assets" / "panda" / "meshes"


def surface_samples(points: np.ndarray, faces: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` points drawn uniformly by area over a triangle mesh's surface."""
    corners = points[faces]
    area = np.linalg.norm(np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]), axis=1)
    pick = corners[rng.choice(len(faces), n, p=area / area.sum())]
    r1, r2 = np.sqrt(rng.random(n))[:, None], rng.random(n)[:, None]
    return (1 - r1) * pick[:, 0] + r1 * (1 - r2) * pick[:, 1] + r1 * r2 * pick[:, 2]


def deviation_mm(points: np.ndarray, faces: np.ndarray, points_out: np.ndarray, faces_out: np.ndarray) -> float:
    """The symmetric Hausdorff distance between the two surfaces, estimated from 100,000
    area-uniform samples of each (mm): how far the drawn surface strays from the original."""
    from scipy.spatial import cKDTree

    rng = np.random.default_rng(0)
    original, simplified = surface_samples(points, faces, 100_000, rng), surface_samples(points_out, faces_out, 100_000, rng)
    one = cKDTree(original).query(simplified)[0].max()
    other = cKDTree(simplified).query(original)[0].max()
    return 1000.0 * float(max(one, other))


def simplify(path: Path, max_faces: int) -> tuple[int, int, float, Path]:
    """Decimate one STL file to at most ``max_faces`` triangles, written beside it as ``*_visual.stl``."""
    import fast_simplification
    from stl import mesh as stl_mesh

    source = stl_mesh.Mesh.from_file(str(path))
    corners = source.vectors.reshape(-1, 3).astype(np.float64)
    # STL stores each triangle's three corners; the decimator needs shared vertices
    points, index = np.unique(corners, axis=0, return_inverse=True)
    faces = index.reshape(-1, 3)
    reduction = 1.0 - max_faces / len(faces)
    # aggressiveness 3 rather than the library's 7: at 7 the 600-triangle link1 strays up to
    # 6.9 mm from the original surface (a visible spike at the shoulder), at 3 up to 2.8 mm
    points_out, faces_out = fast_simplification.simplify(points, faces.astype(np.int32),
                                                         target_reduction=reduction, agg=3)
    out = stl_mesh.Mesh(np.zeros(len(faces_out), dtype=stl_mesh.Mesh.dtype))
    out.vectors[:] = points_out[faces_out]
    target = path.with_name(f"{path.stem}_visual.stl")
    buffer = io.BytesIO()
    out.save(target.name, fh=buffer, mode=stl_mesh.stl.Mode.BINARY)
    data = buffer.getvalue()
    # numpy-stl stamps the 80-byte header with the time of writing: a fixed header keeps the file reproducible
    header = f"simplified from {path.name} for rendering ({len(faces_out)} triangles)".encode().ljust(80, b" ")
    target.write_bytes(header + data[80:])
    return len(faces), len(faces_out), deviation_mm(points, faces, points_out, faces_out), target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-faces", type=int, default=600,
                        help="simplify meshes with more triangles than this, down to this many (default 600)")
    args = parser.parse_args()
    for path in sorted(MESHES.glob("*.stl")):
        if path.stem.endswith("_visual"):
            continue
        from stl import mesh as stl_mesh

        if len(stl_mesh.Mesh.from_file(str(path)).vectors) <= args.max_faces:
            continue
        before, after, deviation, target = simplify(path, args.max_faces)
        print(f"{path.name}: {before:,} -> {after:,} triangles, within {deviation:.1f} mm of the original surface, "
              f"{target.relative_to(MESHES.parents[3])}")


if __name__ == "__main__":
    main()
