#!/usr/bin/env bash
# Builds the libFuzzer targets with swiftc -sanitize=fuzzer,address and runs each for SECONDS.
# Crash inputs are saved in Fuzz/artifacts/; copy them to Fuzz/regressions/<target>/ so that the
# unit tests replay them forever after.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET="${1:-60}"
PYTHON="${PYTHON:-python3}"
mkdir -p Fuzz/.build Fuzz/artifacts

build() {  # name, sources...
  local name=$1; shift
  local out=Fuzz/.build/$name
  local newest
  newest=$(ls -t $(printf "%s\n" "$@" | grep "\.swift$") | head -1)
  if [ ! -x "$out" ] || [ "$newest" -nt "$out" ]; then
    echo "fuzz: building $name"
    swiftc -sanitize=fuzzer,address -O -parse-as-library -package-name tributary -module-name "${name//-/_}" "$@" -o "$out" 2> Fuzz/.build/$name.log \
      || { cat Fuzz/.build/$name.log; exit 1; }
  fi
}

run() {  # name, corpus directory
  local name=$1 corpus=$2
  echo "fuzz: running $name for ${SECONDS_PER_TARGET}s"
  mkdir -p "Fuzz/corpus-$name"
  # -rss_limit_mb bounds memory; -max_len allows multi-frame streams; the seed corpus comes first.
  "Fuzz/.build/$name" -max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="Fuzz/artifacts/$name-" "Fuzz/corpus-$name" "$corpus" "Fuzz/regressions/$name" 2>&1 \
    | grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|==[0-9]+==ERROR|SUMMARY|Fatal|.*Test unit written)" || true
  if ls Fuzz/artifacts/"$name"-* >/dev/null 2>&1; then
    echo "fuzz: $name found crashing inputs:"; ls Fuzz/artifacts/"$name"-*; exit 1
  fi
}

mkdir -p Fuzz/regressions/wire-fuzz
"$PYTHON" Fuzz/make_seeds.py Fuzz/.build/seeds-wire
build wire-fuzz Sources/TributaryBytes/*.swift Sources/TributaryWire/*.swift Fuzz/WireFuzz.swift
run wire-fuzz Fuzz/.build/seeds-wire

# The capture reader: its format and codec sources plus the wire and byte modules, linked against libzstd and ISA-L,
# and the C kernels of the decoder (compiled with the same sanitizers).
mkdir -p Fuzz/regressions/capture-fuzz
# The C kernels the decoder calls, instrumented too (ASan sees their reads of the stored bytes): every
# C file of the two kernel targets, so that a new kernel file is linked without editing this list.
kernels=(Sources/CLinearPredictor/*.c Sources/CKernels/*.c)
headers=(Sources/CLinearPredictor/include/*.h Sources/CKernels/*.h Sources/CKernels/include/*.h)
objects=()
for c in "${kernels[@]}"; do
  o=Fuzz/.build/$(basename "${c%.c}").o
  objects+=("$o")
  stale=0
  [ ! -f "$o" ] || [ "$c" -nt "$o" ] && stale=1
  for h in "${headers[@]}"; do [ "$h" -nt "$o" ] && stale=1; done
  if [ "$stale" = 1 ]; then
    clang -O2 -fsanitize=fuzzer-no-link,address -I Sources/CLinearPredictor/include -I Sources/CKernels/include \
      -c "$c" -o "$o"
    rm -f Fuzz/.build/capture-fuzz
  fi
done
build capture-fuzz Sources/TributaryBytes/*.swift Sources/TributaryWire/*.swift Sources/TributaryCapture/Codec/*.swift Sources/TributaryCapture/Format/*.swift \
  Sources/TributaryCapture/CaptureReader*.swift Fuzz/CaptureFuzz.swift -I Sources/CZstd -lzstd -I Sources/CISAL -lisal \
  -I Sources/CLinearPredictor/include -I Sources/CKernels/include "${objects[@]}"
run capture-fuzz Fuzz/seeds/capture-fuzz

# The subscriber's session state machine fed frame sequences a hostile publisher could send: the
# socket-free SubscriberSession and what it needs of the transport, with the wire module.
mkdir -p Fuzz/regressions/session-fuzz
build session-fuzz Sources/TributaryBytes/*.swift Sources/TributaryWire/*.swift Sources/TributaryTransport/Subscriber/SubscriberSession.swift \
  Sources/TributaryTransport/Subscriber/SourceLedger.swift Sources/TributaryTransport/Subscriber/CreditWindow.swift \
  Sources/TributaryTransport/Subscriber/SessionEnd.swift Sources/TributaryTransport/Framing/ReceivedPackage.swift \
  Sources/TributaryTransport/Security/FileNameSanitizer.swift Fuzz/SessionFuzz.swift
run session-fuzz Fuzz/regressions/session-fuzz

# The publisher's session state machine: seeded random hello/filter/credit/package sequences from
# several peers against a real `tributary serve` while a victim streams (stateful, not coverage-guided:
# the engine owns its sockets). Needs the release tool and a Python with pyzmq (the Makefile passes both).
TRIBUTARY="${TRIBUTARY:-$(swift build -c release --show-bin-path)/tributary}"
echo "fuzz: running publisher-session for ${SECONDS_PER_TARGET}s"
"$PYTHON" Fuzz/publisher_session_fuzz.py --tributary "$TRIBUTARY" --seconds "$SECONDS_PER_TARGET"
