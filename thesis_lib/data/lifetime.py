"""No process the library starts outlives the process that started it, whatever ended that one (SIGKILL included,
which leaves it no time to clean up): the one helper every place that starts processes uses.

* Worker processes running library code — the grid's spawned pool (``study/runs/``), the world's forked pool
  (``data/world_files.py``), the DataLoader workers the library creates (``data/train_pairs.py``,
  ``data/eval_sets.py``) — call ``die_with_parent(parent)`` first (a pool's ``initializer``, a loader's
  ``worker_init_fn``: ``loader_worker_init()``). On Linux it asks the kernel for SIGKILL when the parent ends
  (``prctl(PR_SET_PDEATHSIG, SIGKILL)``, through ctypes); where that is not available, a daemon thread polls
  ``os.getppid()`` every ``POLL_S`` seconds and ends the process. Without it a worker blocked on its pipe (and the
  resource tracker, which waits for every worker's end of its pipe) stays forever once its parent is killed.
  The kernel's signal follows the *thread* that started the worker: the pools and loaders start theirs from the
  thread that uses them, which lives as long as they do.
* Commands the library launches — torchrun, bash running the recipe's script, srun-style tasks, the pilot
  (``full_scale``) — run under ``watched(cmd)``: this file as a script (standard library only, started with
  ``python -I`` in a fraction of a second), which starts the command, makes itself the subreaper of everything the
  command starts (torchrun puts its workers in sessions of their own; an orphan is handed to the subreaper, not
  lost), polls its parent, and once the parent is gone kills every process below it, then ends. When the command
  ends it kills what the command left behind and exits with the command's status (a signal as that signal).
  SIGTERM and SIGHUP are passed on to the command; SIGINT is left to the terminal, which sends it to the command
  too.

    python -I thesis_lib/data/lifetime.py -- torchrun --nproc_per_node 2 -m thesis_lib.training.run ...
"""
from __future__ import annotations

import ctypes
import functools
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36      # linux/prctl.h
POLL_S = 0.5            # how often a watchdog looks at its parent: a worker or a launch ends within about this long
KILLED = 128 + 9        # the exit status of a process ended because its parent was gone (as a SIGKILL's)


def _prctl(option: int, arg: int) -> bool:
    """Linux's prctl(option, arg); False where it is not available or refused."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(ctypes.c_int(option), ctypes.c_ulong(arg), ctypes.c_ulong(0), ctypes.c_ulong(0),
                          ctypes.c_ulong(0)) == 0
    except (OSError, AttributeError):
        return False


def _end() -> None:
    os._exit(KILLED)


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(POLL_S)
    _end()


def die_with_parent(parent: int | None = None) -> str:
    """Make this process end as soon as ``parent`` (default: its parent now) is gone; ``"prctl"`` or
    ``"watchdog"``, how. ``parent``: the pid of the process that started this one, taken there (a pool's
    ``initargs=(os.getpid(),)``): a parent that ended before this call is found too, and this process ends at once."""
    parent = os.getppid() if parent is None else parent
    how = "prctl" if _prctl(PR_SET_PDEATHSIG, signal.SIGKILL) else "watchdog"
    if how == "watchdog":
        threading.Thread(target=_watch, args=(parent,), name="die-with-parent", daemon=True).start()
    if os.getppid() != parent:                             # gone before it could be watched
        _end()
    return how


def _loader_worker_started(parent: int, worker_id: int) -> None:
    die_with_parent(parent)


def loader_worker_init():
    """A DataLoader's ``worker_init_fn``: each worker ends with the process that iterates the loader (this one)."""
    return functools.partial(_loader_worker_started, os.getpid())


def watched(cmd: list[str]) -> list[str]:
    """``cmd`` run under this file's watcher (see the module's docstring): nothing it starts outlives the process
    that runs the returned command."""
    return [sys.executable, "-I", str(Path(__file__).resolve()), "--", *map(str, cmd)]


def _process_table() -> dict[int, int]:
    """pid -> parent pid of every live process (zombies left out): from /proc, else from ``ps``."""
    table = {}
    if os.path.isdir("/proc/self"):
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue                                       # it ended meanwhile
            if fields[0] not in (b"Z", b"X"):
                table[int(name)] = int(fields[1])
        return table
    out = subprocess.run(["ps", "-A", "-o", "pid=,ppid=,stat="], capture_output=True, text=True).stdout
    for line in out.splitlines():
        pid, ppid, stat = line.split(None, 2)
        if not stat.startswith("Z"):
            table[int(pid)] = int(ppid)
    return table


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid``: its children, theirs, and so on."""
    children: dict[int, list[int]] = {}
    for child, parent in _process_table().items():
        children.setdefault(parent, []).append(child)
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _reap() -> None:
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


def kill_below(pid: int, rounds: int = 20) -> None:
    """SIGKILL every process below ``pid``, stopped first (SIGSTOP) so that none starts another or reacts to the
    others' end; again until none is left (one started meanwhile, or handed to this subreaper)."""
    for _ in range(rounds):
        found = descendants(pid)
        if not found:
            return
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for p in found if sig == signal.SIGSTOP else descendants(pid):
                try:
                    os.kill(p, sig)
                except (ProcessLookupError, PermissionError):
                    pass
        _reap()
        time.sleep(0.05)


def main(argv: list[str] | None = None) -> int:
    cmd = list(sys.argv[1:] if argv is None else argv)
    if cmd[:1] == ["--"]:
        cmd = cmd[1:]
    if not cmd:
        print("usage: python -I thesis_lib/data/lifetime.py -- COMMAND [ARG ...]", file=sys.stderr)
        return 2
    parent, me = os.getppid(), os.getpid()
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    try:        # the command ends with this watcher too (SIGKILLed alone); it starts no thread: preexec_fn is safe
        child = subprocess.Popen(cmd, preexec_fn=(lambda: _prctl(PR_SET_PDEATHSIG, signal.SIGKILL))
                                 if os.name == "posix" else None)
    except OSError as err:
        print(f"lifetime: cannot start {cmd[0]}: {err}", file=sys.stderr)
        return 127
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda s, _frame: child.send_signal(s))
    signal.signal(signal.SIGINT, signal.SIG_IGN)             # the terminal sends it to the command as well
    if os.getppid() != parent:
        kill_below(me)
        return KILLED
    while True:
        try:
            code = child.wait(timeout=POLL_S)
            break
        except subprocess.TimeoutExpired:
            if os.getppid() != parent:                      # the process that started the command is gone
                kill_below(me)
                return KILLED
    kill_below(me)                                          # what the command left behind
    if code < 0:                                            # ended by a signal: end by the same one
        signal.signal(-code, signal.SIG_DFL)
        os.kill(me, -code)
        return 128 - code                                   # a signal that does not end a process: as a shell says
    return code


if __name__ == "__main__":
    sys.exit(main())
