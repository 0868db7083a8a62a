"""`pip install . --no-build-isolation` (Debian's setuptools): builds the
module with `make python` (the same library as the CLI) and installs it."""
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent


class MakeExtension(build_ext):
    def build_extension(self, ext):
        build = HERE / "build"
        subprocess.run(["make", "python", f"PYTHON={sys.executable}", f"BUILD={build}"], cwd=HERE, check=True)
        built = build / "python" / ("stackalign" + sysconfig.get_config_var("EXT_SUFFIX"))
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, target)


version = (HERE / "src/core/version.hpp").read_text().split('STACKALIGN_VERSION "')[1].split('"')[0]
setup(name="stackalign", version=version, description="Mutual-information alignment of image stacks, tilt series "
      "and 3D landmarks, from numpy", ext_modules=[Extension("stackalign", sources=[])],
      cmdclass={"build_ext": MakeExtension}, zip_safe=False)
