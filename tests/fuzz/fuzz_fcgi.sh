#!/bin/sh
# fuzz_fcgi.sh -- the FastCGI record guard, and libfcgi behind it for every
# request the guard lets through, over the seed corpus with fixed mutations
# (deterministic; prints TAP).  See tests/fuzz/local.mk.
#
# The corpus is named 20 times: fuzz_main.c's generator runs on from one
# pass to the next, so each pass mutates differently (440,000 inputs, a
# few seconds).  A failing input is left in ./fuzz_fcgi-fail.
c="${top_srcdir:-.}/tests/fuzz/corpus/fcgi"
exec "${top_builddir:-.}/tests/fuzz/fuzz_fcgi" $c $c $c $c $c $c $c $c $c $c \
    $c $c $c $c $c $c $c $c $c $c
