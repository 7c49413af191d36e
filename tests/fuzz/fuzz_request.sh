#!/bin/sh
# fuzz_request.sh -- ptyd.fcgi's request parsing and UTF-8 sanitiser fuzz
# target over its seed corpus with fixed mutations (deterministic; prints
# TAP).  See tests/fuzz/local.mk.
exec "${top_builddir:-.}/tests/fuzz/fuzz_request" "${top_srcdir:-.}/tests/fuzz/corpus/request"
