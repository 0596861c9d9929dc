#!/usr/bin/python3
"""seccomp-nonet.py COMMAND [ARG ...]: run COMMAND unable to open any socket but AF_UNIX.

A probe for test/containers/isolation/probe.sh: it shows that a process without any privilege can still
cut a converter off the network where namespaces are refused. The worker's launcher
(apps/worker/src/previews/sandbox/confine.py, --seccomp-nonet) installs the same filter.
It sets no_new_privs and installs a seccomp filter (allowed for unprivileged processes under
Docker's and Kubernetes' default profiles) that answers EACCES to
  - socket() for every address family but AF_UNIX (so no TCP/UDP/raw/netlink/packet socket),
  - io_uring_setup/enter/register (IORING_OP_SOCKET would open sockets without socket()),
  - any syscall of another ABI (i386 socketcall(), x32),
then execs COMMAND. The filter is inherited by every child and cannot be removed.
"""
import ctypes, errno, os, struct, sys

AUDIT_ARCH_X86_64 = 0xC000003E
NR_SOCKET, NR_IO_URING = 41, (425, 426, 427)
X32_BIT = 0x40000000
AF_UNIX = 1
ALLOW, DENY = 0x7FFF0000, 0x00050000 | errno.EACCES
# BPF: ld/jeq/jge/ret encodings
LD_W_ABS, JEQ_K, JGE_K, RET_K = 0x20, 0x15, 0x35, 0x06


def insn(code, k, jt=0, jf=0):
    return struct.pack("HBBI", code, jt, jf, k)


prog = [
    insn(LD_W_ABS, 4),                    # 0 arch
    insn(JEQ_K, AUDIT_ARCH_X86_64, 1, 0),  # 1
    insn(RET_K, DENY),                    # 2 other ABI
    insn(LD_W_ABS, 0),                    # 3 nr
    insn(JGE_K, X32_BIT, 0, 1),           # 4
    insn(RET_K, DENY),                    # 5 x32
    insn(JEQ_K, NR_IO_URING[0], 3, 0),    # 6
    insn(JEQ_K, NR_IO_URING[1], 2, 0),    # 7
    insn(JEQ_K, NR_IO_URING[2], 1, 0),    # 8
    insn(JEQ_K, NR_SOCKET, 1, 4),         # 9 socket -> 11, anything else -> 14
    insn(RET_K, DENY),                    # 10 io_uring
    insn(LD_W_ABS, 16),                   # 11 args[0] (low 32 bits): the domain
    insn(JEQ_K, AF_UNIX, 1, 0),           # 12
    insn(RET_K, DENY),                    # 13
    insn(RET_K, ALLOW),                   # 14
]
code = b"".join(prog)


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(code)
    fprog = SockFprog(len(code) // 8, ctypes.cast(buf, ctypes.c_void_p))
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        sys.exit(f"seccomp-nonet: PR_SET_NO_NEW_PRIVS: {os.strerror(ctypes.get_errno())}")
    if libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
        sys.exit(f"seccomp-nonet: PR_SET_SECCOMP: {os.strerror(ctypes.get_errno())}")
    os.execvp(sys.argv[1], sys.argv[1:])


main()
