#!/usr/bin/python3
"""landlock-jail.py DIR COMMAND [ARG ...]: run COMMAND able to write only beneath DIR, to read only
beneath DIR and the system directories, and to open no TCP connection.

A probe for test/containers/isolation/probe.sh: it shows that an unprivileged process can still keep a
converter out of other jobs' files (and off TCP) where namespaces are refused (the worker's launcher,
apps/worker/src/previews/sandbox/confine.py --landlock, does it for every converter), through Landlock (Linux 5.13+ for files, 6.7+ for TCP; allowed by Docker's
default seccomp profile). Landlock only grants: everything not granted below is denied (EACCES).
  - read and execute beneath /usr /etc /lib /lib64 /bin /sbin /opt /var /proc /sys /dev /run
    (not /tmp, /home, /root, /app: other jobs' files and the worker's own stay out of reach);
  - read, write, create and remove beneath DIR; write to /dev (null, urandom, tty); create and remove
    Unix sockets beneath /tmp (LibreOffice's pipe; no file in /tmp can be read or written);
  - TCP bind and connect: none (ABI 4+; UDP and other families are not covered: see seccomp-nonet.py).
"""
import ctypes, os, struct, sys

NR_CREATE, NR_ADD_RULE, NR_RESTRICT = 444, 445, 446
RULE_PATH_BENEATH = 1
FS = {name: 1 << i for i, name in enumerate(
    "EXECUTE WRITE_FILE READ_FILE READ_DIR REMOVE_DIR REMOVE_FILE MAKE_CHAR MAKE_DIR MAKE_REG MAKE_SOCK "
    "MAKE_FIFO MAKE_BLOCK MAKE_SYM REFER TRUNCATE IOCTL_DEV".split())}
NET_BIND_TCP, NET_CONNECT_TCP = 1, 2
SYSTEM = ["/usr", "/etc", "/lib", "/lib64", "/bin", "/sbin", "/opt", "/var", "/proc", "/sys", "/dev", "/run"]

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def fail(what):
    e = ctypes.get_errno()
    sys.exit(f"landlock-jail: {what}: errno {e} {os.strerror(e)}")


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    jail = os.path.realpath(sys.argv[1])
    abi = libc.syscall(NR_CREATE, None, 0, 1)
    if abi < 0:
        fail("Landlock is not available")
    fs_rights = [FS[n] for n in FS if (n != "REFER" or abi >= 2) and (n != "TRUNCATE" or abi >= 3) and (n != "IOCTL_DEV" or abi >= 5)]
    handled_fs = sum(fs_rights)
    handled_net = NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0
    attr = struct.pack("QQ", handled_fs, handled_net) if abi >= 4 else struct.pack("Q", handled_fs)
    ruleset = libc.syscall(NR_CREATE, ctypes.c_char_p(attr), len(attr), 0)
    if ruleset < 0:
        fail("landlock_create_ruleset")

    def allow(path, rights):
        if not os.path.exists(path):
            return
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        beneath = struct.pack("=Qi", rights & handled_fs, fd)
        if libc.syscall(NR_ADD_RULE, ruleset, RULE_PATH_BENEATH, ctypes.c_char_p(beneath), 0) != 0:
            fail(f"landlock_add_rule {path}")
        os.close(fd)

    read_exec = FS["EXECUTE"] | FS["READ_FILE"] | FS["READ_DIR"]
    for path in SYSTEM:
        allow(path, read_exec)
    # LibreOffice makes its single-instance pipe (a Unix socket) in /tmp whatever TMPDIR says.
    allow("/tmp", FS["MAKE_SOCK"] | FS["REMOVE_FILE"])
    allow("/dev", read_exec | FS["WRITE_FILE"] | (FS["IOCTL_DEV"] if abi >= 5 else 0))
    allow(jail, handled_fs)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        fail("PR_SET_NO_NEW_PRIVS")
    if libc.syscall(NR_RESTRICT, ruleset, 0) != 0:
        fail("landlock_restrict_self")
    os.execvp(sys.argv[2], sys.argv[2:])


main()
