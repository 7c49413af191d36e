# bench/terms/local.mk -- issue 17's scale of terminals, built by
# `make bench-terms` (not by `make all`); see bench/README.md.
EXTRA_PROGRAMS += bench/terms/termsbench
bench_terms_termsbench_SOURCES = bench/terms/termsbench.c bench/benchutil.c \
	bench/benchutil.h
bench_terms_termsbench_CPPFLAGS = $(AM_CPPFLAGS) $(SQLITE_CFLAGS) \
	-iquote $(srcdir)/bench \
	-DPTYD_BIN='"$(abs_top_builddir)/ptyd/ptyd"'
bench_terms_termsbench_LDADD = libwire.a $(SQLITE_LIBS)
bench-terms: bench/terms/termsbench$(EXEEXT) ptyd/ptyd$(EXEEXT)
CLEANFILES += bench/terms/termsbench
.PHONY: bench-terms
