#!/usr/bin/env bash
# Times the reductions under several launch shapes on one device (tuning off, so each shape is what it
# says): one `reprocl bench --family reduce` per shape, with platform files that differ only in the
# reduce lines. Used to pick the NVIDIA defaults in platforms/nvidia.conf (docs/performance.md).
#   bash scripts/sweep_reduce.sh OUTDIR DEVICE "ordered_local ordered_gpc exact_local exact_gpc" ...
set -euo pipefail
out=$1 dev=$2
shift 2
cli=${CLI:-build-gpu/reprocl}
mkdir -p "$out"
for shape in "$@"; do
  read -r ol og el eg <<<"$shape"
  tag="o${ol}x${og}-e${el}x${eg}"
  dir=$(mktemp -d)
  cp platforms/*.conf "$dir/"
  sed -i -e "s/^reduce\.\*\.ordered .*/reduce.*.ordered  local_size=$ol groups_per_cu=$og/" \
    -e "s/^reduce\.\*\.exact .*/reduce.*.exact    local_size=$el groups_per_cu=$eg/" "$dir/nvidia.conf"
  REPROCL_PLATFORM_DIR=$dir REPROCL_TUNING=off $cli bench --family reduce --device "$dev" --max-seconds 300 \
    -o "$out/sweep-$tag.json" >"$out/sweep-$tag.log" 2>&1 || echo "shape $tag: bench failed (see its log)"
  rm -rf "$dir"
done
