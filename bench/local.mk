# bench/local.mk -- benchmark programs, built by `make bench` (not by
# `make all`), run by bench/run.
EXTRA_PROGRAMS += bench/termbench bench/fcgi_hello bench/hbfloor \
	bench/screenbench
bench_screenbench_SOURCES = bench/screen/screenbench.c
bench_screenbench_CFLAGS = $(AM_CFLAGS) $(VTERM_CFLAGS) -I$(srcdir)/ptyd \
	-I$(srcdir)/lib
bench_screenbench_LDADD = ptyd/libptyd.a libwire.a $(SQLITE_LIBS) \
	$(VTERM_LIBS) $(ZLIB_LIBS) -lutil
bench_termbench_SOURCES = bench/termbench.c
bench_termbench_LDADD = -lutil
bench_hbfloor_SOURCES = bench/hbfloor.c
bench_fcgi_hello_SOURCES = bench/fcgi_hello.c
bench_fcgi_hello_CFLAGS = $(AM_CFLAGS) $(FCGI_CFLAGS)
bench_fcgi_hello_LDADD = $(FCGI_LIBS)
bench: bench/termbench$(EXEEXT) bench/fcgi_hello$(EXEEXT) \
	bench/hbfloor$(EXEEXT) bench/screenbench$(EXEEXT)
CLEANFILES += bench/termbench bench/fcgi_hello bench/hbfloor \
	bench/screenbench
EXTRA_DIST += bench/run bench/README.md bench/streams bench/storm/storm \
	bench/versus bench/compare bench/echo-siab \
	bench/firstprompt/firstprompt.mjs \
	bench/attach/attach bench/store/README.md
.PHONY: bench
