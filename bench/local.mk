# bench/local.mk -- benchmark programs, built by `make bench` (not by
# `make all`), run by bench/run.
EXTRA_PROGRAMS += bench/termbench bench/fcgi_hello
bench_termbench_SOURCES = bench/termbench.c
bench_termbench_LDADD = -lutil
bench_fcgi_hello_SOURCES = bench/fcgi_hello.c
bench_fcgi_hello_CFLAGS = $(AM_CFLAGS) $(FCGI_CFLAGS)
bench_fcgi_hello_LDADD = $(FCGI_LIBS)
bench: bench/termbench$(EXEEXT) bench/fcgi_hello$(EXEEXT)
CLEANFILES += bench/termbench bench/fcgi_hello
EXTRA_DIST += bench/run bench/README.md
.PHONY: bench
