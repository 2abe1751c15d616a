# What the benchmark scripts share: their flags, their work folder. Sourced from
# the repository root by bench/*.sh, after their defaults:
#
#   source bench/lib.sh
#   num_workers=2; runs=5                 # defaults
#   parse_flags num_workers runs -- "$@"  # --num_workers=4 sets $num_workers
#   make_work_dir                         # $work, removed at exit unless KEEP_WORK=1

bench_script=$(basename "$0")

# parse_flags NAME... -- ARGS...: each --NAME=VALUE in ARGS sets the variable NAME;
# anything else ends the script with exit 2, naming the flags it takes.
parse_flags() {
  local names=() arg name known
  while [[ $# -gt 0 && $1 != -- ]]; do names+=("$1"); shift; done
  [[ $# -gt 0 ]] && shift
  for arg in "$@"; do
    name=${arg%%=*}
    name=${name#--}
    known=0
    if [[ $arg == --*=* ]]; then
      for n in "${names[@]}"; do [[ $n == "$name" ]] && known=1; done
    fi
    if [[ $known == 0 ]]; then
      echo "$bench_script: unknown argument $arg (it takes: ${names[*]/#/--})" >&2
      exit 2
    fi
    printf -v "$name" '%s' "${arg#*=}"
  done
}

# make_work_dir: a new folder in $work, removed when the script exits (kept, and
# named, with KEEP_WORK=1).
make_work_dir() {
  work=$(mktemp -d)
  trap 'if [[ -n ${KEEP_WORK:-} ]]; then echo "kept $work" >&2; else rm -rf "$work"; fi' EXIT
}
