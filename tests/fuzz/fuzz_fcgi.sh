#!/bin/sh
# fuzz_fcgi.sh -- the FastCGI guard and libfcgi behind it over the seed
# corpus with fixed mutations (deterministic; prints TAP).  See
# tests/fuzz/local.mk; `make fuzz` builds the coverage-guided version.
exec "${top_builddir:-.}/tests/fuzz/fuzz_fcgi" "${top_srcdir:-.}/tests/fuzz/corpus/fcgi"
