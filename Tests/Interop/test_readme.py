"""README.md and the tool cannot drift apart.

1. Every command of the README's fenced shell blocks runs, in the order the README gives them, in a
   scratch directory with the tool under test on the PATH; each must exit 0. A few are substituted
   or skipped, and the test says which (printed with -v): `make test` (the whole suite, which runs
   this very test), `make demo` (run as `tributary demo --out .`: make would also install and build),
   the `export PATH=…` line (the test puts the tool under test and the venv's python there itself).
   Addresses are rewritten to 127.0.0.1 on free ports, and the wall-clock `--duration` of `subscribe`
   and `record` is cut to 5 s. `serve` runs in the background until the end (a replay-only `serve`
   ends by itself). No README command needs a second machine.
2. Every option each command's parser reads appears in its usage synopsis (the lines before the
   first blank line of `tributary help COMMAND`), read from the Swift sources.
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

from test_transport_cli import TIMEOUT, TRIBUTARY

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SKIPPED = {
    "make test": "the whole suite, which runs this very test",
    "make python": "make test runs python-tests, which installs the package, before this test",
}
SUBSTITUTED = {
    "make demo DEMO_OUT=demo-out": "tributary demo --out demo-out",
    "make demo": "tributary demo --out .",
    ".venv/bin/python examples/": f'"$PY" {ROOT}/examples/',
}


def shell_blocks(text):
    """The commands of the ```sh blocks, in order: continuation lines joined, comment lines dropped."""
    commands = []
    for block in re.findall(r"^```sh\n(.*?)^```", text, flags=re.S | re.M):
        pending = ""
        for line in block.splitlines():
            if not pending and (not line.strip() or line.lstrip().startswith("#")):
                continue
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1] + " "
                continue
            commands.append((pending + line).strip())
            pending = ""
    return commands


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Shell:
    """One bash process that runs the commands one after the other, as a user at a terminal would
    (background jobs, `wait $!` and the working directory carry from one command to the next)."""

    def __init__(self, directory, env):
        self.directory = directory
        self.out_path = os.path.join(directory, ".shell.out")
        self.out = open(self.out_path, "w")
        self.process = subprocess.Popen(["bash"], cwd=directory, env=env, stdin=subprocess.PIPE,
                                        stdout=self.out, stderr=subprocess.STDOUT, text=True)
        self.count = 0

    def run(self, command, timeout=120):
        """Runs `command`; returns its exit status and what it printed (stdout and stderr)."""
        self.count += 1
        status_file = os.path.join(self.directory, f".status-{self.count}")
        start = os.path.getsize(self.out_path)
        self.process.stdin.write(f"{command}\necho $? > {status_file}\n")
        self.process.stdin.flush()
        deadline = time.monotonic() + timeout
        while not self._complete(status_file):
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise AssertionError(f"README command did not finish in {timeout} s: {command}")
            time.sleep(0.05)
        with open(self.out_path, errors="replace") as f:
            f.seek(start)
            output = f.read()
        with open(status_file) as f:
            return int(f.read()), output

    @staticmethod
    def _complete(status_file):
        if not os.path.exists(status_file):
            return False
        with open(status_file) as f:
            return f.read().endswith("\n")

    def close(self):
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.out.close()


class ReadmeCommandsRun(unittest.TestCase):
    def setUp(self):
        self.directory = tempfile.mkdtemp(prefix="tributary-readme-")
        bin_dir = os.path.join(self.directory, ".bin")
        os.makedirs(bin_dir)
        os.symlink(os.path.abspath(TRIBUTARY), os.path.join(bin_dir, "tributary"))
        self.env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""), PY=sys.executable)
        self.background = []
        self.shell = Shell(self.directory, self.env)

    def tearDown(self):
        for process, _, out, err in self.background:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=TIMEOUT)
            out.close()
            err.close()
        self.shell.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    def test_every_readme_command_runs_in_order(self):
        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
            commands = shell_blocks(f.read())
        self.assertGreater(len(commands), 20)
        ports = {}
        notes = []
        outputs = []

        def port(match):
            ports.setdefault(match.group(1), free_port())
            return f":{ports[match.group(1)]}"

        for command in commands:
            original = command
            name = next((k for k in list(SKIPPED) + list(SUBSTITUTED) if command.startswith(k)), None)
            if command.startswith("export PATH="):
                notes.append(f"substituted: {command!r} -> the tool under test and {sys.executable} on PATH/PY")
                continue
            if name in SKIPPED:
                notes.append(f"skipped: {command!r} ({SKIPPED[name]})")
                continue
            if name in SUBSTITUTED:
                command = SUBSTITUTED[name] + command[len(name):] if name.endswith("/") else SUBSTITUTED[name]
            command = command.replace("0.0.0.0", "127.0.0.1")
            # Tests reach this machine only: the README's other machine ('daq-pc'), and any IPv4
            # address that is not loopback, become 127.0.0.1.
            command = command.replace("daq-pc", "127.0.0.1")
            command = re.sub(r"\b(?!127\.)\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b", "127.0.0.1", command)
            if command.startswith("tributary serve") or command.startswith("tributary view"):
                # A publisher (55xx) or a page (80xx) binds a port of its own, even where the README
                # reuses a number for a later example (a user would have stopped the first one);
                # later commands that name the number reach the newest one.
                bound = r":(55[0-9]{2}|80[0-9]{2})\b" if command.startswith("tributary serve") else r"--http [0-9.]+:(80[0-9]{2})\b"
                for number in re.findall(bound, command):
                    ports[number] = free_port()
            command = re.sub(r":(55[0-9]{2}|80[0-9]{2})\b", port, command)
            if re.match(r"tributary (view|monitor) ", command) and "--duration" not in command:
                command += " --duration 3"  # they run until stopped
            if re.match(r"tributary bench\b", command):
                # Points of 0.5 s and at most 2 subscribers: the README's sweeps take minutes.
                command = re.sub(r"--seconds \S+", "", command) + " --seconds 0.5"
                command = re.sub(r"--subscribers (\d+)", lambda m: f"--subscribers {min(int(m.group(1)), 2)}", command)
            if re.match(r"tributary (subscribe|record) ", command):
                command = re.sub(r"--duration (\d+(\.\d+)?)", lambda m: f"--duration {min(float(m.group(1)), 5):g}", command)
            if command != original:
                notes.append(f"substituted: {original!r} -> {command!r}")
            if command.startswith("tributary serve"):
                self.start_server(command)
                continue
            status, output = self.shell.run(command)
            outputs.append(output)
            self.assertEqual(status, 0, f"README command failed: {original}\n  ran: {command}\n  output: {output[-3000:]}")
        for note in notes:
            print(note, file=sys.stderr)
        # What the README's examples claim, checked.
        for name in ("psd.svg", "psd-log.svg", "results.jsonl", "run.tcap", "again.npy", "run.wav", "crashed.tcap",
                     "run.tdms", "run.xdf", "run.h5", "part.csv", "from-tdms.tcap", "reduced.tcap", "live.tcap",
                     "inbox/run.tdms", "inbox/packages.jsonl"):
            self.assertTrue(os.path.exists(os.path.join(self.directory, name)), name)
        everything = "".join(outputs)
        self.assertIn('"operator: ready"', everything)       # cat inbox/packages.jsonl
        self.assertIn('code 3: "gain changed"', everything)   # the subscriber got the control line's message
        for process, command, _, err in self.background:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
            process.wait(timeout=TIMEOUT)
            with open(err.name) as f:
                self.assertEqual(process.returncode, 0, f"{command}: {f.read()}")

    def start_server(self, command):
        # Output goes to files: a pipe nobody reads could fill and stall the publisher.
        index = len(self.background)
        out = open(os.path.join(self.directory, f".serve-{index}.out"), "w+")
        err = open(os.path.join(self.directory, f".serve-{index}.err"), "w+")
        process = subprocess.Popen(["bash", "-c", "exec " + command], cwd=self.directory, env=self.env, stdout=out, stderr=err, text=True)
        self.background.append((process, command, out, err))
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            with open(out.name) as f:
                if f.readline().startswith("listening on "):
                    return
            if process.poll() is not None:
                break
            time.sleep(0.05)
        with open(err.name) as f:
            raise AssertionError(f"{command} did not start listening: {f.read()}")


class UsageListsEveryOption(unittest.TestCase):
    """Each command's synopsis names every option its parser reads (read from the Swift sources)."""

    SHARED = {  # helper files whose options a command takes
        "subscribe": ["Sources/tributary/Transport/SubscriptionOptions.swift"],
        "record": ["Sources/tributary/Transport/SubscriptionOptions.swift"],
    }
    PACKAGE_OPTIONS = {
        "serve": ["--message", "--xml", "--file", "--image", "--array"],
        "subscribe": ["--send-message", "--send-xml", "--send-file", "--send-image", "--send-array"],
        "record": ["--send-message", "--send-xml", "--send-file", "--send-image", "--send-array"],
    }

    def test_synopses(self):
        commands_dir = os.path.join(ROOT, "Sources", "tributary", "Commands")
        checked = 0
        for file in sorted(os.listdir(commands_dir)):
            with open(os.path.join(commands_dir, file), encoding="utf-8") as f:
                source = f.read()
            name = re.search(r'static let name = "([a-z]+)"', source).group(1)
            for extra in self.SHARED.get(name, []):
                with open(os.path.join(ROOT, extra), encoding="utf-8") as f:
                    source += f.read()
            parsed = set(re.findall(r'arguments\.(?:option|options|flag|integer|number)\("(--[a-z0-9-]+)"', source))
            parsed |= set(self.PACKAGE_OPTIONS.get(name, []))
            self.assertTrue(parsed, name)
            usage = subprocess.run([TRIBUTARY, "help", name], capture_output=True, text=True, timeout=TIMEOUT).stdout
            synopsis = usage.split("\n\n", 1)[0]
            listed = set(re.findall(r"--[a-z0-9-]+", synopsis))
            self.assertEqual(sorted(parsed - listed), [], f"{name}: options missing from the synopsis:\n{synopsis}")
            checked += 1
        self.assertGreaterEqual(checked, 12)


if __name__ == "__main__":
    unittest.main()
