"""Only what pyproject.toml cannot say: the repository folders a wheel ships as package data.

The tool reads its netem profiles, lab job and scheduler sources, templates and example inventories/profiles from the
repository's top-level folders. Those stay the one source: at build time they are copied into the wheel under
``placement/data/<folder>/``, where :func:`placement.resources.repo_dir` finds them in an installed package. An
editable install copies nothing and reads the clone. MANIFEST.in puts the same folders into an sdist.
"""

from __future__ import annotations

import runpy
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
# The folders placement.resources looks for (read from it, not imported: the build does not import the package).
SHIPPED = runpy.run_path(str(HERE / "placement" / "resources.py"))["SHIPPED"]
# Build outputs and caches that may sit in a working tree; never shipped.
IGNORE = shutil.ignore_patterns("*.jar", "*.class", "__pycache__", "*.pyc", ".*", "build")


class build_py_with_data(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads the clone's folders in place
        data = Path(self.build_lib) / "placement" / "data"
        for name in SHIPPED:
            source = HERE / name
            if source.is_dir():
                target = data / name
                shutil.rmtree(target, ignore_errors=True)  # a stale copy from an earlier build must not linger
                shutil.copytree(source, target, ignore=IGNORE)


setup(cmdclass={"build_py": build_py_with_data})
