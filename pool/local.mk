# pool/local.mk -- ptyd-pool, the master that runs every account's ptyd
# and ptyd.fcgi (ptyd-pool(8)).  Started by root (init), so in sbin.
sbin_PROGRAMS += pool/ptyd-pool
pool_ptyd_pool_SOURCES = pool/pool.h pool/main.c pool/acct.c pool/reload.c \
	pool/proc.c pool/adopt.c pool/child.c pool/sock.c pool/plog.c pool/plog.h
# Where the programs it runs are, and where it is, so an install moved
# as a whole (DESTDIR, a package's root) still finds them.
pool_ptyd_pool_CPPFLAGS = $(AM_CPPFLAGS) -DPTYD_PREFIX='"$(prefix)"' \
	-DPTYD_SBINDIR='"$(sbindir)"'
pool_ptyd_pool_LDADD = libwire.a
