# Sourced by the scaling scripts (bench_mpi_scaling.sh, bench_multigpu.sh).
# bench_workdir KEEP: sets tmp to the folder each command's JSON goes to — KEEP, kept (so that a run cut short
# keeps what it measured), or a temporary folder removed at exit when KEEP is empty.
bench_workdir() {
  if [ -n "$1" ]; then
    tmp=$1
    mkdir -p "$tmp"
  else
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
  fi
}
