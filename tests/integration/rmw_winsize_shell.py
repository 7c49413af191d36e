#!/usr/bin/python3
"""rmw_winsize_shell.py -- a shell that starts the way bash does, slowly:
it reads the pty's window size, waits a second, writes that size back (bash
does this for job control before its first prompt), says "ready" and
becomes /bin/sh.  A resize that lands in the second is undone by it, as by
bash in its few microseconds.  It writes nothing to the terminal before
"ready" (as bash writes nothing before its prompt); that it has read the
size is told by a file, $HOME/rmw-PID.  Arguments ptyd passes are
ignored."""

import fcntl
import os
import termios
import time

ws = fcntl.ioctl(0, termios.TIOCGWINSZ, b"\0" * 8)
open(os.path.join(os.environ["HOME"], "rmw-%d" % os.getpid()), "w").close()
time.sleep(1.0)
fcntl.ioctl(0, termios.TIOCSWINSZ, ws)
os.write(1, b"ready\r\n")
os.execv("/bin/sh", ["sh"])
