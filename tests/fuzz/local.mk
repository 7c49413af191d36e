# tests/fuzz/local.mk -- fuzz targets for the frame decoder.
#
# make check runs each target over its corpus plus fixed mutations
# (fuzz_main.c).  `make fuzz` builds the same targets with clang and
# libFuzzer for coverage-guided runs:
#	make fuzz && tests/fuzz/fuzz_frame-libfuzzer -max_total_time=60 \
#	    $(srcdir)/tests/fuzz/corpus/frame
noinst_PROGRAMS += tests/fuzz/fuzz_frame
tests_fuzz_fuzz_frame_SOURCES = tests/fuzz/fuzz_frame.c tests/fuzz/fuzz_main.c
tests_fuzz_fuzz_frame_LDADD = libwire.a
TESTS += tests/fuzz/fuzz_frame.sh
EXTRA_DIST += tests/fuzz/fuzz_frame.sh tests/fuzz/corpus

FUZZ_CC = clang
FUZZ_FLAGS = -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE \
	-I$(srcdir)/lib
fuzz: tests/fuzz/fuzz_frame-libfuzzer
tests/fuzz/fuzz_frame-libfuzzer: $(srcdir)/tests/fuzz/fuzz_frame.c \
    $(srcdir)/lib/frame.c $(srcdir)/lib/frame.h $(srcdir)/lib/proto.h
	$(AM_V_CCLD)mkdir -p tests/fuzz && $(FUZZ_CC) $(FUZZ_FLAGS) -o $@ \
	    $(srcdir)/tests/fuzz/fuzz_frame.c $(srcdir)/lib/frame.c
CLEANFILES += tests/fuzz/fuzz_frame-libfuzzer
.PHONY: fuzz
