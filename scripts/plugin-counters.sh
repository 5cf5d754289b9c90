#!/bin/sh
# Counts what one plugin exec costs, inside the benchmarks' own rounds, where
# wall time under load says little. Give this script as the "before" binary:
#
#   COUNT_BINARY=$PWD/bin/vpcctl COUNT_MODE=stat COUNT_DIR=/tmp/counts \
#   VPC_CNI_BENCH_BEFORE=$PWD/scripts/plugin-counters.sh \
#   go test ./e2e -run '^$' -bench '^BenchmarkChurn$' -benchtime 8x
#
# The benchmark installs it as .../before/vpc-cni; it runs a copy of
# COUNT_BINARY named vpc-cni (the name makes it the plugin) under:
#   stat   perf stat: task-clock, page faults, context switches
#   strace strace -f -c: system calls by kind
#   faults perf record of every page fault, with call graphs
#   instr  cachegrind: instructions (valgrind 3.19 lacks RDTSCP: turned off)
#   trace  GODEBUG gctrace and inittrace: GC cycles and initialisers (stderr)
# and leaves one file per exec in COUNT_DIR, named VERB.PID.MODE.
set -e
dir=${COUNT_DIR:?COUNT_DIR: where the counts go}
bin=$dir/bin/vpc-cni
if [ ! -x "$bin" ]; then
	mkdir -p "$dir/bin"
	cp "${COUNT_BINARY:?COUNT_BINARY: the vpcctl to count}" "$bin.$$"
	mv "$bin.$$" "$bin"
fi
out=$dir/$CNI_COMMAND.$$
case "${COUNT_MODE:-stat}" in
stat) exec perf stat -x, -e task-clock,page-faults,context-switches -o "$out.stat" "$bin" ;;
strace) exec strace -f -c -o "$out.strace" "$bin" ;;
faults) exec perf record -q -g -d -e page-faults -c 1 -o "$out.faults" "$bin" ;;
instr) GODEBUG=cpu.rdtscp=off exec valgrind --tool=cachegrind --cache-sim=no \
	--cachegrind-out-file="$out.cg" --log-file="$out.instr" "$bin" ;;
trace) GODEBUG=gctrace=1,inittrace=1 exec "$bin" 2>"$out.trace" ;;
*) echo "COUNT_MODE: stat, strace, faults, instr or trace" >&2; exit 2 ;;
esac
