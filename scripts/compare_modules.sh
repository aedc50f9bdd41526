#!/usr/bin/env bash
# Compiles a set of ONNX models for several targets and either records the
# outputs (modules, static-library objects and headers, and the error text of
# models that do not compile) or compares a new compilation with a recording
# byte for byte. A refactoring that must not change generated code runs
# `record` before and `compare` after every step.
#
#   scripts/compare_modules.sh record  --models DIR --store DIR [options]
#   scripts/compare_modules.sh compare --models DIR --store DIR [options]
#
#   --models DIR     every *.onnx below DIR is compiled (repeatable)
#   --store DIR      where `record` writes and `compare` reads the outputs
#   --compiler PATH  osprey-compile (default: build/bin/osprey-compile)
#   --targets LIST   space-separated --target values (default: "host armv7em riscv32");
#                    every target but host is also compiled as a static library
#   --only REGEX     only models whose path below --models matches REGEX
#   --jobs N         parallel compilations (default 2)
#
# `compare` prints one line per differing output and exits 1 if any output
# differs, is missing or is new; `record` replaces the store's contents.
# --target=host code depends on this machine's CPU: record and compare on the
# same machine.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
usage() {
  sed -n '8,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

(($# >= 1)) || usage
mode="$1"
shift
[[ "$mode" == record || "$mode" == compare ]] || usage
model_dirs=()
store=""
compiler="$root/build/bin/osprey-compile"
targets="host armv7em riscv32"
only=""
jobs=2
while (($#)); do
  case "$1" in
    --models) model_dirs+=("$(cd "$2" && pwd)"); shift 2 ;;
    --store) store="$2"; shift 2 ;;
    --compiler) compiler="$2"; shift 2 ;;
    --targets) targets="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    *) usage ;;
  esac
done
((${#model_dirs[@]})) && [[ -n "$store" ]] || usage
[[ -x "$compiler" ]] || { echo "compare_modules.sh: no compiler at $compiler" >&2; exit 2; }

# One job per line: name, model path, target, output format.
job_list="$(mktemp)"
work="$(mktemp -d)"
trap 'rm -rf "$job_list" "$work"' EXIT
for dir in "${model_dirs[@]}"; do
  prefix="$(basename "$dir")"
  while IFS= read -r model; do
    rel="${model#"$dir"/}"
    [[ -z "$only" || "$rel" =~ $only ]] || continue
    name="$prefix.${rel%.onnx}"
    name="${name//\//.}"
    for target in $targets; do
      echo "$name $model $target embedded-elf" >>"$job_list"
      if [[ "$target" != host ]]; then
        echo "$name $model $target static-library" >>"$job_list"
      fi
    done
  done < <(find "$dir" -name '*.onnx' | sort)
done

if [[ "$mode" == record ]]; then
  out="$store"
  rm -rf "$out"
else
  out="$work/new"
  [[ -d "$store" ]] || { echo "compare_modules.sh: no recording in $store" >&2; exit 2; }
fi
mkdir -p "$out"

# Compiles one job into OUT as NAME.TARGET[.static].{osp,o,h}; a failed
# compilation leaves its exit code and error text in .err instead.
compile_one() {
  local name="$1" model="$2" target="$3" format="$4" out="$5" compiler="$6"
  local stem="$name.$target"
  [[ "$format" == static-library ]] && stem="$stem.static"
  local rc=0
  "$compiler" "$model" --target="$target" --output-format="$format" \
    -o "$out/$stem.osp" >/dev/null 2>"$out/$stem.stderr" || rc=$?
  if ((rc)); then
    { echo "exit code $rc"; cat "$out/$stem.stderr"; } >"$out/$stem.err"
    rm -f "$out/$stem.osp" "$out/$stem.o" "$out/$stem.h"
  fi
  rm -f "$out/$stem.stderr"
}
export -f compile_one
count=$(wc -l <"$job_list")
echo "compare_modules.sh: $mode: $count compilations ($targets) with $compiler"
xargs -P "$jobs" -L 1 bash -c 'compile_one "$0" "$1" "$2" "$3" "$4" "$5"' \
  <<<"$(sed "s|\$| $out $compiler|" "$job_list")"

outputs=$(find "$out" -type f | wc -l)
failed=$(find "$out" -name '*.err' | wc -l)
if [[ "$mode" == record ]]; then
  echo "compare_modules.sh: recorded $outputs files in $store ($failed compilations failed)"
  exit 0
fi
differ=0
# Every output a job may write, in the recording or the new compilation.
while read -r name _ target format; do
  stem="$name.$target"
  [[ "$format" == static-library ]] && stem="$stem.static"
  for ext in osp o h err; do
    file="$stem.$ext"
    if [[ -f "$store/$file" && ! -f "$out/$file" ]]; then
      echo "missing: $file"
      differ=$((differ + 1))
    elif [[ ! -f "$store/$file" && -f "$out/$file" ]]; then
      echo "new: $file"
      differ=$((differ + 1))
    elif [[ -f "$store/$file" ]] && ! cmp -s "$store/$file" "$out/$file"; then
      echo "differs: $file"
      differ=$((differ + 1))
    fi
  done
done <"$job_list"
if ((differ)); then
  echo "compare_modules.sh: $differ of $outputs files differ from $store"
  exit 1
fi
echo "compare_modules.sh: all $outputs files identical ($count compilations," \
  "$failed expected failures)"
