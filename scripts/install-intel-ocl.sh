#!/usr/bin/env bash
# Installs Intel's oneAPI OpenCL CPU runtime from its PyPI packages and registers it with the ICD loader,
# so that reprocl (and every OpenCL program) sees a third CPU implementation beside PoCL and Rusticl.
#   scripts/install-intel-ocl.sh             install into $REPROCL_INTEL_OCL_PREFIX (default
#                                            /opt/intel-opencl-rt) and register it in /etc/OpenCL/vendors
#   scripts/install-intel-ocl.sh --no-register   install only; print the .icd line to use with OCL_ICD_VENDORS
# intel-opencl-rt needs the libimf/libsvml/libirng/libintlc libraries of intel-cmplr-lib-rt without declaring
# them, so both are installed, at the versions reprocl was verified with (docs/vendors.md).
set -euo pipefail
version=${REPROCL_INTEL_OCL_VERSION:-2026.2.0}
prefix=${REPROCL_INTEL_OCL_PREFIX:-/opt/intel-opencl-rt}
register=1
[ "${1:-}" = "--no-register" ] && register=0
lib=$prefix/lib/libintelocl.so
if [ ! -e "$lib" ] || [ "$(cat "$prefix/.version" 2>/dev/null)" != "$version" ]; then
  py=$(command -v python3)
  "$py" -m pip --version >/dev/null 2>&1 || {
    echo "install-intel-ocl: pip is missing (Debian: apt-get install python3-pip)" >&2
    exit 1
  }
  # --prefix puts the wheels' data files (the libraries) in $prefix/lib; --break-system-packages is
  # needed with Debian's pip, which refuses installs outside a virtual environment otherwise.
  # DEB_PYTHON_INSTALL_LAYOUT=deb_system: Debian's python3 otherwise installs under $prefix/local
  # (its posix_local scheme), so the libraries would land in $prefix/local/lib; other Pythons ignore it.
  extra=()
  "$py" -m pip install --help | grep -q -- --break-system-packages && extra=(--break-system-packages)
  DEB_PYTHON_INSTALL_LAYOUT=deb_system PIP_ROOT_USER_ACTION=ignore "$py" -m pip install --quiet \
    --disable-pip-version-check --no-warn-script-location "${extra[@]}" --ignore-installed \
    --prefix "$prefix" "intel-opencl-rt==$version" "intel-cmplr-lib-rt==$version"
  echo "$version" >"$prefix/.version"
fi
[ -e "$lib" ] || {
  echo "install-intel-ocl: $lib missing after the install" >&2
  exit 1
}
# The ICD file names the library by its full path; its RUNPATH ($ORIGIN) finds the rest in $prefix/lib.
mkdir -p "$prefix/vendors"
echo "$lib" >"$prefix/vendors/intel-cpu.icd"
if [ $register = 1 ]; then
  as_root=()
  [ "$(id -u)" = 0 ] || as_root=(sudo)
  "${as_root[@]}" mkdir -p /etc/OpenCL/vendors
  echo "$lib" | "${as_root[@]}" tee /etc/OpenCL/vendors/intel-cpu.icd >/dev/null
  echo "install-intel-ocl: Intel OpenCL CPU runtime $version registered (/etc/OpenCL/vendors/intel-cpu.icd)"
else
  echo "install-intel-ocl: installed; add $prefix/vendors/intel-cpu.icd to OCL_ICD_VENDORS to use it"
fi
