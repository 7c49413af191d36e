# bench/local.mk -- benchmark programs, built by `make bench` (not by
# `make all`), run by bench/run.
EXTRA_PROGRAMS += bench/termbench bench/fcgi_hello bench/hbfloor
bench_termbench_SOURCES = bench/termbench.c
bench_termbench_LDADD = -lutil
bench_hbfloor_SOURCES = bench/hbfloor.c
bench_fcgi_hello_SOURCES = bench/fcgi_hello.c
bench_fcgi_hello_CFLAGS = $(AM_CFLAGS) $(FCGI_CFLAGS)
bench_fcgi_hello_LDADD = $(FCGI_LIBS)
bench: bench/termbench$(EXEEXT) bench/fcgi_hello$(EXEEXT) \
	bench/hbfloor$(EXEEXT)
CLEANFILES += bench/termbench bench/fcgi_hello bench/hbfloor
EXTRA_DIST += bench/run bench/README.md bench/streams bench/storm/storm \
	bench/attach/attach bench/store/README.md
.PHONY: bench
