#!/bin/sh
# fuzz_frame.sh -- the frame decoder's fuzz target over its seed corpus with
# fixed mutations (deterministic; prints TAP).  See tests/fuzz/local.mk.
exec "${top_builddir:-.}/tests/fuzz/fuzz_frame" "${top_srcdir:-.}/tests/fuzz/corpus/frame"
