#!/usr/bin/env bash
# The Python extension for another Python version than the build tree's, linked from the
# libraries `cmake --build build --target _conflux` built: for the GPU machine, whose python3
# (3.12) is not this machine's (scripts/gpu_suite.sh pack). pybind11's headers come from PyPI
# (the Debian ones predate Python 3.12). Writes OUT/conflux (the package) and OUT/pydeps (pytest,
# for the package's GPU tests there).
#   scripts/python_module_for.sh PYTHON OUT
set -euo pipefail
cd "$(dirname "$0")/.."
py=$1 out=$2
cmake --build build --target _conflux >/dev/null
deps=build/pydeps-$($py -c 'import sys; print("%d.%d" % sys.version_info[:2])')
if [ ! -d "$deps/pybind11" ]; then
    mkdir -p "$deps"
    $py -m pip download --quiet --no-deps -d "$deps/wheels" pybind11 "pytest<8" "pluggy<2" iniconfig packaging
    for w in "$deps"/wheels/*.whl; do python3 -m zipfile -e "$w" "$deps"; done
fi
include=$($py -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
suffix=$($py -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
mkdir -p "$out/conflux"
# The build tree's own compile and link lines for the module, with this Python's headers.
cd build
compile=$(ninja -t commands _conflux | grep -E -- "-o [^ ]*_conflux\.dir/[^ ]*\.o -c " | tail -1)
link=$(ninja -t commands _conflux | grep -- "-shared" | tail -1 | sed 's/ && cd .*//; s/^: && //')
obj=python/CMakeFiles/_conflux.dir/other_python.o
compile=$(echo "$compile" | sed -E "s#-isystem [^ ]*/include/python3[^ ]*#-isystem $include -isystem ../$deps/pybind11/include#; s#-MD -MT [^ ]* -MF [^ ]* ##; s#-o [^ ]*\.o#-o $obj#")
link=$(echo "$link" | sed -E "s#-o [^ ]*\.so [^ ]*\.o#-o $obj.so $obj#")
eval "$compile"
eval "$link"
strip "$obj.so"
cd ..
cp "build/$obj.so" "$out/conflux/_conflux$suffix"
cp python/conflux/*.py "$out/conflux/"
rm -rf "$out/pydeps" && mkdir -p "$out/pydeps"
cp -r "$deps"/{_pytest,pytest,pluggy,iniconfig,packaging,py.py} "$out/pydeps/" 2>/dev/null || true
echo "python_module_for.sh: $out/conflux/_conflux$suffix"
