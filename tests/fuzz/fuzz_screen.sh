#!/bin/sh
# fuzz_screen.sh -- the screen emulator's fuzz target over its seed corpus
# with fixed mutations (deterministic; prints TAP).  See tests/fuzz/local.mk.
exec "${top_builddir:-.}/tests/fuzz/fuzz_screen" "${top_srcdir:-.}/tests/fuzz/corpus/screen"
