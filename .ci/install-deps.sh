#!/usr/bin/env bash
# Makes sure the Debian packages stackalign builds against are present: as
# root, installs what is missing; otherwise prints the exact command and fails.
set -euo pipefail
declare -A need=(
  [/usr/include/x86_64-linux-gnu/tiffio.h]=libtiff-dev
  [/usr/include/toml++/toml.h]=libtomlplusplus-dev
  [/usr/include/doctest/doctest.h]=doctest-dev
  [/usr/include/CLI/CLI.hpp]=libcli11-dev
  [/usr/include/nlohmann/json.hpp]=nlohmann-json3-dev
  [/usr/include/eigen3/Eigen/Dense]=libeigen3-dev
  [/usr/include/png.h]=libpng-dev
  [/usr/include/teem/nrrd.h]=libteem-dev
  [/usr/include/nifti/nifti2_io.h]=libnifti2-dev
  [/usr/include/pybind11/pybind11.h]=python3-pybind11
)
missing=()
for header in "${!need[@]}"; do
  # libtiff's header sits in /usr/include on some releases.
  [ -e "$header" ] || [ -e "/usr/include/$(basename "$header")" ] || missing+=("${need[$header]}")
done
command -v g++ >/dev/null || missing+=(g++)
# The Python module and its tests (Debian's python3, not a virtualenv's).
py=/usr/bin/python3
[ -x "$py" ] || missing+=(python3)
[ -x "$py" ] && { "$py" -c 'import sysconfig, os; assert os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))' 2>/dev/null || missing+=(python3-dev); }
[ -x "$py" ] && { "$py" -c 'import numpy' 2>/dev/null || missing+=(python3-numpy); }
[ -x "$py" ] && { "$py" -c 'import pytest' 2>/dev/null || missing+=(python3-pytest); }
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
  echo "installing missing packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "missing packages: ${missing[*]}" >&2
  echo "install them with:  sudo apt-get install ${missing[*]}" >&2
  exit 1
fi
