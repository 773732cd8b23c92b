"""Maps the top-level wing folders onto the ``labrecord`` namespace.

``scorers/`` installs as ``labrecord.scorers`` and so on (see docs/design.md, Layout).  The
package list is derived from the folders so that a new sub-package cannot be forgotten.
"""
from pathlib import Path

from setuptools import setup

WINGS = {"labrecord": "labrecord", "scorers": "labrecord.scorers",
         "recorders": "labrecord.recorders", "sim": "labrecord.sim",
         "exporters": "labrecord.exporters", "chemdata": "labrecord.chemdata"}

here = Path(__file__).parent
packages: list[str] = []
package_dir: dict[str, str] = {}
for folder, dotted in WINGS.items():
    for init in sorted((here / folder).rglob("__init__.py")):
        rel = init.parent.relative_to(here / folder)
        name = ".".join([dotted, *rel.parts]) if rel.parts else dotted
        packages.append(name)
        package_dir[name] = init.parent.relative_to(here).as_posix()

setup(packages=packages, package_dir=package_dir)
