"""A `tributary` command running beside an interop test, and `serve` started on 127.0.0.1.

Threads collect its stdout and stderr lines (the pipes never fill), so a test waits for a line
with a deadline instead of blocking on the pipe. Not a test module: the tests import it.
"""
import os
import queue
import signal
import subprocess
import threading
import time

TRIBUTARY = os.environ.get("TRIBUTARY", ".build/release/tributary")
TIMEOUT = 20  # seconds any one command or wait may take


class ToolProcess:
    """`tributary ARGS…`; its stdout lines are taken with `wait_for`, its stderr lines kept in `errors`."""

    def __init__(self, *args, stdin=None, env=None):
        self.name = str(args[0])
        self.process = subprocess.Popen([TRIBUTARY, *map(str, args)], stdin=stdin, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, env=env)
        self.lines = queue.Queue()
        self.seen = []
        self.errors = []
        self.readers = [threading.Thread(target=self._read, args=(self.process.stdout, self.lines.put), daemon=True),
                        threading.Thread(target=self._read, args=(self.process.stderr, self.errors.append), daemon=True)]
        for reader in self.readers:
            reader.start()

    @staticmethod
    def _read(stream, put):
        with stream:
            for line in stream:
                put(line)

    def wait_for(self, prefix, timeout=TIMEOUT):
        """The next line (after those already taken) that starts with `prefix`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            self.seen.append(line)
            if line.startswith(prefix):
                return line
        raise AssertionError(f"{self.name} printed no line starting with {prefix!r}; saw {self.seen}, "
                             f"stderr {self.errors}")

    def value_after(self, prefix, timeout=TIMEOUT):
        """What follows `prefix` on the next line that starts with it, without surrounding blanks."""
        return self.wait_for(prefix, timeout).split(prefix, 1)[1].strip()

    def stop(self, how=signal.SIGTERM, kill_if_hung=False):
        """Sends `how` unless it has ended and waits for it (raising if it does not end in TIMEOUT,
        unless `kill_if_hung`: then it is killed); returns its stderr."""
        if self.process.poll() is None:
            self.process.send_signal(how)
            try:
                self.process.wait(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                if not kill_if_hung:
                    raise
                self.process.kill()
                self.process.wait(timeout=TIMEOUT)
        for reader in self.readers:
            reader.join(timeout=TIMEOUT)
        if self.process.stdin:
            self.process.stdin.close()
        return "".join(self.errors)


class Serve(ToolProcess):
    """`tributary serve --bind BIND --api-key KEY ARGS…`, started: `address` is the one it printed
    ("listening on …"), `port` its port (bind port 0 for a free one)."""

    def __init__(self, *args, bind="tcp://127.0.0.1:0", api_key="k", stdin=None, env=None):
        super().__init__("serve", "--bind", bind, "--api-key", api_key, *args, stdin=stdin, env=env)
        self.address = self.value_after("listening on ")
        self.port = int(self.address.rsplit(":", 1)[1])
