#!/bin/sh
# Fill fuzz/corpus/<target>/ with the seed inputs (docs/fuzzing.md). Safe to re-run: libFuzzer
# keeps what it has found, and files are named by content.
set -eu
cd "$(dirname "$0")"
root=..
mkdir -p corpus/module_load corpus/capi_sequence
for f in "$root"/tests/fixtures/cubin/*.cubin \
         "$root"/tests/conformance/fixtures/*.sm_87.cubin \
         "$root"/tests/fixtures/fatbin/*.fatbin \
         "$root"/tests/fixtures/fatbin/*.nv_fatbin \
         "$root"/tests/fixtures/fatbin/*.cubin \
         "$root"/tests/fixtures/fatbin/*.o \
         "$root"/tests/fixtures/fatbin/*.ptx \
         "$root"/src/builtin/*.cubin \
         seeds/module_load/*; do
    [ -f "$f" ] || continue
    cp "$f" "corpus/module_load/$(sha1sum "$f" | cut -c1-40)"
done
for f in seeds/capi_sequence/*; do
    [ -f "$f" ] || continue
    cp "$f" "corpus/capi_sequence/$(sha1sum "$f" | cut -c1-40)"
done
echo "module_load: $(ls corpus/module_load | wc -l) inputs; capi_sequence: $(ls corpus/capi_sequence | wc -l) inputs"
