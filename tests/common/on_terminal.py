"""Run a command on a pseudo-terminal COLUMNS wide, as a user's terminal
runs it, and copy what it writes there (stdout and stderr) to stdout, with
the terminal's CR LF line ends made LF; exit with its status.

Usage: on_terminal.py COLUMNS PROGRAM [ARG...]"""

import fcntl
import os
import pty
import struct
import sys
import termios

columns, argv = int(sys.argv[1]), sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    # Sized before the program starts, so its first look sees it.
    fcntl.ioctl(1, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    os.execvp(argv[0], argv)
out = b""
while True:
    try:
        chunk = os.read(fd, 65536)
    except OSError:  # EIO: the program closed the terminal
        break
    if not chunk:
        break
    out += chunk
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode("utf-8", "replace").replace("\r\n", "\n"))
sys.exit(os.waitstatus_to_exitcode(status))
