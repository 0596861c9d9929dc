"""Drives one warm soffice over UNO for the worker's office converter.

soffice.bin is started directly (argv[1]), not through the soffice script and oosplash.
Started by the worker inside the sandbox (network namespace, prlimit, clean environment) as the leader
of its own process group; it starts soffice as its child, so killing the group kills both.

Protocol: one JSON object per line.
  stdout, once:   {"event": "ready", "pid": <soffice pid>}
  stdin:          {"id": 1, "input": "/abs/in.docx", "output": "/abs/out.pdf", "filter": "MS Word 2007 XML", "filterOptions": ""}
  stdout:         {"id": 1, "ok": true} or {"id": 1, "ok": false, "error": "load_failed" | "export_failed", "message": "..."}
Any broken UNO bridge (soffice died) ends this process with exit code 3: the worker then restarts the pair.
soffice's own output goes to stderr so it can never corrupt the protocol on stdout.
"""

import json
import os
import subprocess
import sys
import threading
import time

import uno
from com.sun.star.beans import PropertyValue
from com.sun.star.connection import NoConnectException
from com.sun.star.lang import DisposedException

EXIT_BRIDGE_LOST = 3
EXIT_START_FAILED = 4
# soffice.bin asks to be started again after it has populated a new profile (oosplash would do this).
EXIT_RESTART_REQUESTED = 81


def prop(name, value):
    p = PropertyValue()
    p.Name = name
    p.Value = value
    return p


def emit(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def start_soffice(soffice, profile, pipe_name):
    args = [
        soffice,
        "--headless",
        "--invisible",
        "--nologo",
        "--norestore",
        "--nodefault",
        "--nolockcheck",
        "--nofirststartwizard",
        "-env:UserInstallation=" + uno.systemPathToFileUrl(profile),
        # The shared extension cache lives under /var/spool/libreoffice, and the first soffice on the host to start
        # creates it private to its uid (0700): a root soffice that ran unconfined once would leave every
        # converter uid aborting at start with a DeploymentException. Each profile keeps its own, always empty.
        "-env:UNO_SHARED_PACKAGES_CACHE=" + uno.systemPathToFileUrl(os.path.join(profile, "shared-packages")),
        "--accept=pipe,name=%s;urp;StarOffice.ComponentContext" % pipe_name,
    ]
    return subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=sys.stderr.fileno(), stderr=sys.stderr.fileno())


def own_pipes():
    """This uid's LibreOffice pipes in /tmp, or None where /tmp cannot be listed (under Landlock)."""
    try:
        uid = os.getuid()
        return {n for n in os.listdir("/tmp") if n.startswith("OSL_PIPE_") and os.lstat("/tmp/" + n).st_uid == uid}
    except OSError:
        return None


def narrow_pipes(before, names):
    """soffice makes its pipes world-writable when the uid has no passwd entry (a sandbox uid): anyone who
    finds one could drive this soffice. Narrow the ones it made to this uid (as this uid: no link can redirect it)."""
    after = own_pipes()
    candidates = set(names) | (after - before if before is not None and after is not None else set())
    for name in candidates:
        try:
            os.chmod("/tmp/" + name, 0o600)
        except OSError:
            pass


def start_and_connect(soffice, profile, pipe_name, deadline):
    """soffice.bin is run directly (no oosplash), so the pid we hold is the one that converts.

    Each start gets a pipe name of its own (pipe_name, pipe_name-r1, ...): under Landlock soffice may create its
    pipe in /tmp but not remove it, and a restarted soffice would fail on the one the first start left. The
    worker removes this member's pipes when it stops it."""
    local = uno.getComponentContext()
    resolver = local.ServiceManager.createInstanceWithContext("com.sun.star.bridge.UnoUrlResolver", local)
    before = own_pipes()
    restarts = 0
    name = pipe_name
    process = start_soffice(soffice, profile, name)
    while time.monotonic() < deadline:
        if process.poll() is not None:
            if process.returncode == EXIT_RESTART_REQUESTED and restarts < 2:
                restarts += 1
                name = "%s-r%d" % (pipe_name, restarts)
                process = start_soffice(soffice, profile, name)
                continue
            raise RuntimeError("soffice exited with %s during start" % process.returncode)
        try:
            context = resolver.resolve("uno:pipe,name=%s;urp;StarOffice.ComponentContext" % name)
        except NoConnectException:
            time.sleep(0.05)
            continue
        narrow_pipes(before, ["OSL_PIPE_" + name, "OSL_PIPE_%d_%s" % (os.getuid(), name)])
        return process, context
    process.kill()
    raise RuntimeError("soffice did not accept a connection in time")


def export_filter(document):
    if document.supportsService("com.sun.star.text.GenericTextDocument"):
        return "writer_pdf_Export"
    if document.supportsService("com.sun.star.sheet.SpreadsheetDocument"):
        return "calc_pdf_Export"
    if document.supportsService("com.sun.star.presentation.PresentationDocument"):
        return "impress_pdf_Export"
    if document.supportsService("com.sun.star.drawing.DrawingDocument"):
        return "draw_pdf_Export"
    return None


def is_bridge_error(error):
    # A dead soffice surfaces as DisposedException or a RuntimeException from the binary UNO bridge.
    if isinstance(error, DisposedException):
        return True
    text = str(error)
    return "Binary URP bridge" in text or "DisposedException" in type(error).__name__


def convert(desktop, job):
    load = [
        prop("Hidden", True),
        prop("ReadOnly", True),
        prop("FilterName", job["filter"]),
        prop("MacroExecutionMode", uno.getConstantByName("com.sun.star.document.MacroExecMode.NEVER_EXECUTE")),
        prop("UpdateDocMode", uno.getConstantByName("com.sun.star.document.UpdateDocMode.NO_UPDATE")),
        prop("RepairPackage", False),
        prop("Silent", True),
    ]
    if job.get("filterOptions"):
        load.append(prop("FilterOptions", job["filterOptions"]))
    try:
        document = desktop.loadComponentFromURL(uno.systemPathToFileUrl(job["input"]), "_blank", 0, tuple(load))
    except Exception as error:  # noqa: BLE001 - UNO raises many unrelated types
        if is_bridge_error(error):
            raise
        return {"ok": False, "error": "load_failed", "message": "%s: %s" % (type(error).__name__, error)}
    if document is None:
        return {"ok": False, "error": "load_failed", "message": "the import filter refused the file"}
    try:
        name = export_filter(document)
        if name is None:
            return {"ok": False, "error": "load_failed", "message": "not a text, spreadsheet or presentation document"}
        document.storeToURL(uno.systemPathToFileUrl(job["output"]), (prop("FilterName", name),))
        return {"ok": True, "exportFilter": name}
    except Exception as error:  # noqa: BLE001
        if is_bridge_error(error):
            raise
        return {"ok": False, "error": "export_failed", "message": "%s: %s" % (type(error).__name__, error)}
    finally:
        try:
            document.close(True)
        except Exception as error:  # noqa: BLE001
            if is_bridge_error(error):
                raise


def main():
    soffice, profile, pipe_name, start_timeout_ms = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    try:
        process, context = start_and_connect(soffice, profile, pipe_name, time.monotonic() + start_timeout_ms / 1000.0)
        desktop = context.ServiceManager.createInstanceWithContext("com.sun.star.frame.Desktop", context)
    except Exception as error:  # noqa: BLE001
        sys.stderr.write("uno-bridge: start failed: %s\n" % error)
        sys.exit(EXIT_START_FAILED)
    # soffice dying while idle ends the bridge too, so the worker replaces the pair before the next job.
    threading.Thread(target=lambda: (process.wait(), os._exit(EXIT_BRIDGE_LOST)), daemon=True).start()
    emit({"event": "ready", "pid": process.pid})
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        job = json.loads(line)
        try:
            result = convert(desktop, job)
        except Exception as error:  # noqa: BLE001 - only bridge errors reach here
            sys.stderr.write("uno-bridge: bridge lost: %s\n" % error)
            emit({"id": job.get("id"), "ok": False, "error": "bridge_lost", "message": str(error)})
            process.kill()
            sys.exit(EXIT_BRIDGE_LOST)
        result["id"] = job.get("id")
        emit(result)
    # stdin closed: the worker is done with us. Ask soffice to quit; the worker kills the group anyway.
    try:
        desktop.terminate()
    except Exception:  # noqa: BLE001
        pass
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()


if __name__ == "__main__":
    os.umask(0o077)
    main()
