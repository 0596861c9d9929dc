"""confine.py: confines the calling process, then execs a preview converter in its place.

The one launcher of the worker's converter processes (sandbox.ts builds its argv; nothing else runs a
converter). Started with `python3 -I -S`, as the worker's uid (or root), optionally already inside a new
network namespace (`unshare --net`). In this order it
  1. sets resource limits (no core dumps, address space, file size);
  2. --uid/--gid: drops to that unprivileged uid/gid with no supplementary groups (worker is root);
  3. sets no_new_privs (nothing it execs can gain privileges; required by the next two);
  4. --landlock: restricts its filesystem access to read/execute beneath the system directories and the
     --ro paths, full access beneath the --rw directories, Unix sockets made in /tmp (--tmp-sockets,
     LibreOffice's pipe), no TCP bind/connect (--no-tcp, ABI 4+), and no signals to or abstract Unix
     sockets of processes outside (ABI 6+). Everything else is denied: other jobs' files, /app, /home;
  5. --seccomp-nonet: installs a seccomp filter that refuses socket() for every family but AF_UNIX,
     io_uring (it can open sockets without socket()) and every syscall of another ABI;
  6. execs COMMAND (pid, process group and open descriptors are kept). Nothing of this can be undone
     by COMMAND or its children.

Usage:
  confine.py [OPTIONS] -- COMMAND [ARG ...]
  confine.py [OPTIONS] --self-test --port P --canary FILE --own DIR -- true   what it allows, as JSON
  confine.py --abi                                                  the Landlock ABI of this kernel (0: none)
Exit status 120 with a one-line reason on stderr when a step fails: the converter never runs half-confined.
"""

import ctypes
import errno
import os
import resource
import struct
import sys

EXIT_CONFINE_FAILED = 120

# Landlock (linux/landlock.h): syscalls 444-446 on every architecture.
NR_CREATE_RULESET, NR_ADD_RULE, NR_RESTRICT_SELF = 444, 445, 446
LANDLOCK_CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
FS_NAMES = (
    "EXECUTE WRITE_FILE READ_FILE READ_DIR REMOVE_DIR REMOVE_FILE MAKE_CHAR MAKE_DIR MAKE_REG MAKE_SOCK "
    "MAKE_FIFO MAKE_BLOCK MAKE_SYM REFER TRUNCATE IOCTL_DEV"
).split()
FS = {name: 1 << i for i, name in enumerate(FS_NAMES)}
FS_SINCE_ABI = {"REFER": 2, "TRUNCATE": 3, "IOCTL_DEV": 5}
FILE_RIGHTS = FS["EXECUTE"] | FS["WRITE_FILE"] | FS["READ_FILE"] | FS["TRUNCATE"] | FS["IOCTL_DEV"]
NET_BIND_TCP, NET_CONNECT_TCP = 1, 2
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1, 2
# Read and execute only. Not /tmp, /home, /root, /srv, /mnt, /app: jobs' files and the worker's own.
SYSTEM_DIRS = ("/usr", "/etc", "/lib", "/lib64", "/bin", "/sbin", "/opt", "/var", "/proc", "/sys", "/dev", "/run")

# seccomp (linux/seccomp.h, linux/filter.h), x86_64 and aarch64.
ARCHES = {"x86_64": (0xC000003E, 41, (425, 426, 427)), "aarch64": (0xC00000B7, 198, (425, 426, 427))}
X32_BIT = 0x40000000
AF_UNIX = 1
RET_ALLOW, RET_EACCES = 0x7FFF0000, 0x00050000 | errno.EACCES
LD_W_ABS, JEQ_K, JGE_K, RET_K = 0x20, 0x15, 0x35, 0x06
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


class ConfineError(Exception):
    pass


def fail_errno(what):
    code = ctypes.get_errno()
    raise ConfineError("%s: %s" % (what, errno.errorcode.get(code, str(code))))


def landlock_abi():
    abi = libc.syscall(NR_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION))
    return abi if abi > 0 else 0


def parse(argv):
    opts = {"rw": [], "ro": [], "uid": None, "gid": None, "landlock": False, "tmp_sockets": False,
            "no_tcp": False, "seccomp": False, "as": None, "fsize": None, "self_test": False,
            "port": None, "canary": None, "own": None, "proc_write": False}
    if "--" not in argv:
        raise ConfineError("usage: confine.py [OPTIONS] -- COMMAND [ARG ...]")
    split = argv.index("--")
    head, command = argv[:split], argv[split + 1:]
    i = 0
    valued = {"--uid": "uid", "--gid": "gid", "--rw": "rw", "--ro": "ro", "--as": "as", "--fsize": "fsize",
              "--port": "port", "--canary": "canary", "--own": "own"}
    flags = {"--landlock": "landlock", "--tmp-sockets": "tmp_sockets", "--no-tcp": "no_tcp",
             "--seccomp-nonet": "seccomp", "--self-test": "self_test", "--proc-write": "proc_write"}
    while i < len(head):
        name = head[i]
        if name in flags:
            opts[flags[name]] = True
            i += 1
        elif name in valued and i + 1 < len(head):
            key, value = valued[name], head[i + 1]
            if isinstance(opts[key], list):
                opts[key].append(value)
            else:
                opts[key] = int(value) if key in ("uid", "gid", "as", "fsize", "port") else value
            i += 2
        else:
            raise ConfineError("unknown option %s" % name)
    if not command:
        raise ConfineError("no command")
    if (opts["uid"] is None) != (opts["gid"] is None):
        raise ConfineError("--uid and --gid go together")
    return opts, command


def set_limits(opts):
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if opts["as"] is not None:
        resource.setrlimit(resource.RLIMIT_AS, (opts["as"], opts["as"]))
    if opts["fsize"] is not None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (opts["fsize"], opts["fsize"]))


def drop_to(uid, gid):
    if uid == 0 or gid == 0:
        raise ConfineError("refusing to run a converter as root")
    try:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    except OSError as error:
        raise ConfineError("cannot switch to uid %d gid %d: %s" % (uid, gid, errno.errorcode.get(error.errno, error)))
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid) or os.getgroups():
        raise ConfineError("uid/gid switch did not hold")


def no_new_privs():
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        fail_errno("PR_SET_NO_NEW_PRIVS")


def apply_landlock(opts):
    abi = landlock_abi()
    if abi < 1:
        raise ConfineError("Landlock is not available")
    fs_all = 0
    for name in FS_NAMES:
        if abi >= FS_SINCE_ABI.get(name, 1):
            fs_all |= FS[name]
    net = NET_BIND_TCP | NET_CONNECT_TCP if opts["no_tcp"] and abi >= 4 else 0
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0
    if abi >= 6:
        attr = struct.pack("QQQ", fs_all, net, scoped)
    elif abi >= 4:
        attr = struct.pack("QQ", fs_all, net)
    else:
        attr = struct.pack("Q", fs_all)
    ruleset = libc.syscall(NR_CREATE_RULESET, ctypes.c_char_p(attr), ctypes.c_size_t(len(attr)), ctypes.c_uint32(0))
    if ruleset < 0:
        fail_errno("landlock_create_ruleset")

    def allow(path, rights, required=True):
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            if required:
                raise ConfineError("cannot open %s for a Landlock rule" % path)
            return
        try:
            if not os.path.isdir(path):
                rights &= FILE_RIGHTS
            rule = struct.pack("=Qi", rights & fs_all, fd)
            if libc.syscall(NR_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(RULE_PATH_BENEATH),
                            ctypes.c_char_p(rule), ctypes.c_uint32(0)) != 0:
                fail_errno("landlock_add_rule %s" % path)
        finally:
            os.close(fd)

    read_exec = FS["EXECUTE"] | FS["READ_FILE"] | FS["READ_DIR"]
    for path in SYSTEM_DIRS:
        allow(path, read_exec, required=False)
    allow("/dev", read_exec | FS["WRITE_FILE"] | FS["IOCTL_DEV"], required=False)
    if opts["proc_write"]:
        # Chromium's own sandbox writes the uid_map/gid_map of the user namespaces it makes.
        allow("/proc", FS["WRITE_FILE"])
    for path in opts["ro"]:
        allow(path, read_exec)
    for path in opts["rw"]:
        allow(path, fs_all)
    if opts["tmp_sockets"]:
        # LibreOffice binds its pipe in /tmp whatever TMPDIR says. Not REMOVE_FILE: the worker removes it.
        allow("/tmp", FS["MAKE_SOCK"])
    if libc.syscall(NR_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
        fail_errno("landlock_restrict_self")
    os.close(ruleset)
    return abi


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install_seccomp_nonet():
    machine = os.uname().machine
    if machine not in ARCHES:
        raise ConfineError("no seccomp filter for %s" % machine)
    audit_arch, nr_socket, nr_io_uring = ARCHES[machine]

    def insn(code, k, jt=0, jf=0):
        return struct.pack("HBBI", code, jt, jf, k)

    program = b"".join([
        insn(LD_W_ABS, 4),                    # 0 arch
        insn(JEQ_K, audit_arch, 1, 0),        # 1
        insn(RET_K, RET_EACCES),              # 2 another ABI (i386 socketcall, ...)
        insn(LD_W_ABS, 0),                    # 3 syscall number
        insn(JGE_K, X32_BIT, 0, 1),           # 4
        insn(RET_K, RET_EACCES),              # 5 x32
        insn(JEQ_K, nr_io_uring[0], 3, 0),    # 6
        insn(JEQ_K, nr_io_uring[1], 2, 0),    # 7
        insn(JEQ_K, nr_io_uring[2], 1, 0),    # 8
        insn(JEQ_K, nr_socket, 1, 4),         # 9 socket -> 11, anything else -> 14
        insn(RET_K, RET_EACCES),              # 10 io_uring
        insn(LD_W_ABS, 16),                   # 11 args[0], low 32 bits: the address family
        insn(JEQ_K, AF_UNIX, 1, 0),           # 12
        insn(RET_K, RET_EACCES),              # 13
        insn(RET_K, RET_ALLOW),               # 14
    ])
    buffer = ctypes.create_string_buffer(program)
    fprog = SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        fail_errno("PR_SET_SECCOMP")


def outcome(action):
    try:
        action()
        return "ok"
    except OSError as error:
        return errno.errorcode.get(error.errno, str(error.errno))


def self_test(opts, landlock):
    """What a converter started this way could do, for the worker's start-up choice of a mode."""
    import json
    import socket

    report = {"uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(), "landlock": landlock}

    def tcp():
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.settimeout(2)
            s.connect(("127.0.0.1", opts["port"]))

    def udp():
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.sendto(b"probe", ("127.0.0.1", opts["port"]))

    def canary():
        with open(opts["canary"], "rb") as f:
            f.read(1)

    def own():
        path = os.path.join(opts["own"], ".probe")
        with open(path, "wb") as f:
            f.write(b"ok")
        os.unlink(path)

    socket_path = "/tmp/uhp-probe-%d-%s" % (os.getpid(), os.urandom(6).hex())

    def tmp_socket():
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.bind(socket_path)
        try:
            os.unlink(socket_path)
        except OSError:
            pass  # no REMOVE_FILE in /tmp under Landlock: the worker removes it (tmpSocketPath)

    report["tcp"] = outcome(tcp) if opts["port"] else "skipped"
    report["udp"] = outcome(udp) if opts["port"] else "skipped"
    report["canary"] = outcome(canary) if opts["canary"] else "skipped"
    report["own"] = outcome(own) if opts["own"] else "skipped"
    report["tmpSocket"] = outcome(tmp_socket)  # LibreOffice needs it, whatever the confinement
    report["tmpSocketPath"] = socket_path
    # Chromium's own sandbox needs to make a user namespace (as a non-root uid).
    pid = os.fork()
    if pid == 0:
        os._exit(0 if libc.unshare(0x10000000) == 0 else 1)  # CLONE_NEWUSER
    report["userns"] = os.waitpid(pid, 0)[1] == 0
    sys.stdout.write(json.dumps(report) + "\n")
    sys.stdout.flush()


def main(argv):
    if argv == ["--abi"]:
        print(landlock_abi())
        return
    try:
        opts, command = parse(argv)
        set_limits(opts)
        if opts["uid"] is not None:
            drop_to(opts["uid"], opts["gid"])
        os.umask(0o077)
        no_new_privs()
        landlock = apply_landlock(opts) if opts["landlock"] else 0
        if opts["seccomp"]:
            install_seccomp_nonet()
    except (ConfineError, OSError, ValueError) as error:
        sys.stderr.write("confine: %s\n" % error)
        sys.exit(EXIT_CONFINE_FAILED)
    if opts["self_test"]:
        self_test(opts, landlock)
        return
    try:
        os.execvp(command[0], command)
    except OSError as error:
        sys.stderr.write("confine: cannot exec %s: %s\n" % (command[0], errno.errorcode.get(error.errno, error)))
        sys.exit(127)


if __name__ == "__main__":
    main(sys.argv[1:])
