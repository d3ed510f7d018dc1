"""The documents' examples and the tool cannot drift apart.

1. Every ```sh and ```python block of README.md, docs/CLI.md, docs/PYTHON.md and docs/C_API.md runs as
   a user would paste it, in the order the document gives, starting in the checkout (each document
   in a fresh shell, with TMPDIR in a scratch directory, so that its `cd "$(mktemp -d)"` lands there;
   the "checkout" is a directory of symbolic links to this one's entries, so that what a command
   writes there stays in the scratch directory).
   Shell commands go one by one to one bash process (so `cd`, `export`, `&` and `wait $!` carry
   over); a Python block is saved as a script and run with "$PY" in the shell's directory. Each
   must exit 0. A `tributary serve`, `view` or `monitor` without `--duration` runs until stopped, so
   it is started in the background (the user's other terminal), waited for until it prints that it
   is ready, and stopped with SIGTERM at the end, where it must exit 0 (a replay-only `serve` ends
   by itself). The shell runs in a network namespace of its own (`unshare -n`, loopback up) so that
   the documents' fixed ports and 0.0.0.0 binds are used as written without meeting anything else
   on this machine; where no namespace can be made, addresses become 127.0.0.1 and ports free ones.
   The few other changes are printed with -v: `make` targets (make test ran them; `make demo` runs
   `tributary demo`), the second machine of CLI.md (`daq-pc`) becomes this one, and `tributary
   bench` points last 0.5 s with at most 2 subscribers (the documents' sweeps take minutes). A block
   preceded by the line `<!-- not run: REASON -->` is skipped and REASON printed.
2. Every option each command's parser reads appears in its usage synopsis (the lines before the
   first blank line of `tributary help COMMAND`), read from the Swift sources.
3. docs/CLI.md has a section for every command of `tributary --help`, naming every option of
   `tributary help COMMAND`.
4. The build line in each C example's header comment is one that docs/C_API.md gives (and so runs).
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
TOOL = os.path.abspath(TRIBUTARY)
# Run by `make test` before the interop tests; the test checks what they leave instead.
MAKE_TARGETS_RUN = {"test", "build", "lib", "python", "c-example"}
# Commands that run until stopped, and the start of the line each prints on stdout once ready.
LONG_RUNNING = {"serve": "listening on ", "view": "view: ", "monitor": ""}
NOT_RUN = re.compile(r"<!-- not run: (.+?) -->\s*$")


def blocks(path):
    """The ```sh / ```bash / ```python blocks of a Markdown file, in order: (language, text, line, reason
    to skip or None)."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    found, i = [], 0
    while i < len(lines):
        match = re.match(r"^```(\w*)\s*$", lines[i])
        if not match:
            i += 1
            continue
        start = i
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        language = {"bash": "sh"}.get(match.group(1), match.group(1))
        if language in ("sh", "python"):
            previous = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
            skip = NOT_RUN.match(previous.strip())
            found.append((language, "\n".join(lines[start + 1:end]) + "\n", start + 1,
                          skip.group(1) if skip else None))
        i = end + 1
    return found


def shell_commands(block):
    """The commands of a shell block: continuation lines joined, comment-only and blank lines dropped."""
    commands, pending = [], ""
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


def network_namespace():
    """The command prefix that runs a process in a new network namespace, or None where none can be made."""
    for prefix in (["unshare", "-n", "--"], ["unshare", "-rn", "--"]):
        try:
            if subprocess.run(prefix + ["true"], capture_output=True, timeout=TIMEOUT).returncode == 0:
                return prefix
        except (OSError, subprocess.TimeoutExpired):
            pass
    return None


class Shell:
    """One bash process that runs the commands one after the other, as a user at a terminal would
    (background jobs, `wait $!`, `export` and the working directory carry from one command to the next)."""

    def __init__(self, scratch, env, prefix):
        self.scratch = scratch
        checkout = os.path.join(scratch, "checkout")
        os.makedirs(checkout)
        for entry in os.listdir(ROOT):
            os.symlink(os.path.join(ROOT, entry), os.path.join(checkout, entry))
        self.out_path = os.path.join(scratch, ".shell.out")
        self.out = open(self.out_path, "w")
        self.process = subprocess.Popen((prefix or []) + ["bash"], cwd=checkout, env=env, stdin=subprocess.PIPE,
                                        stdout=self.out, stderr=subprocess.STDOUT, text=True)
        self.count = 0
        self.background = []  # (command, stem of its .pid/.rc/.out/.err files)

    def run(self, command, timeout=180):
        """Runs `command`; returns its exit status and what it printed (stdout and stderr)."""
        self.count += 1
        status_file = os.path.join(self.scratch, f".status-{self.count}")
        start = os.path.getsize(self.out_path)
        self.process.stdin.write(f"{command}\necho $? > {status_file}\n")
        self.process.stdin.flush()
        deadline = time.monotonic() + timeout
        while not self._complete(status_file):
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise AssertionError(f"command did not finish in {timeout} s: {command}")
            time.sleep(0.05)
        with open(self.out_path, errors="replace") as f:
            f.seek(start)
            output = f.read()
        with open(status_file) as f:
            return int(f.read()), output

    def cwd(self):
        status, output = self.run("pwd")
        assert status == 0, output
        return output.strip().splitlines()[-1]

    def start(self, command, ready):
        """Starts a command that runs until stopped (the user's other terminal), in the shell's directory
        and environment, and waits until its stdout has a line starting with `ready`."""
        stem = os.path.join(self.scratch, f".background-{len(self.background)}")
        self.background.append((command, stem))
        status, output = self.run(f"( {command} & echo $! > {stem}.pid; wait $!; echo $? > {stem}.rc ) "
                                  f"> {stem}.out 2> {stem}.err &")
        assert status == 0, output
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            # The background job's subshell creates its .out file, perhaps after the status of the line
            # that started it was written: not there yet is not ready yet.
            if any(line.startswith(ready) for line in self._read(f"{stem}.out").splitlines()):
                return
            if self._complete(f"{stem}.rc"):
                break
            time.sleep(0.05)
        raise AssertionError(f"{command} did not start: {self._read(stem + '.err')}")

    def _end(self, stem, how, wait=False):
        """Sends `how` to the background command `stem` unless it has ended, then waits (up to TIMEOUT)
        for its exit status: when it was sent, or always with `wait`."""
        pid = self._pid(stem)
        running = pid and not self._complete(f"{stem}.rc")
        if running:
            try:
                os.kill(pid, how)
            except ProcessLookupError:
                pass
        if not (running or wait):
            return
        deadline = time.monotonic() + TIMEOUT
        while not self._complete(f"{stem}.rc") and time.monotonic() < deadline:
            time.sleep(0.05)

    def stop_background(self):
        """SIGTERM to every background command still running; returns [(command, exit status, stderr)]."""
        results = []
        for command, stem in self.background:
            self._end(stem, signal.SIGTERM, wait=True)
            rc = int(self._read(f"{stem}.rc")) if self._complete(f"{stem}.rc") else None
            results.append((command, rc, self._read(f"{stem}.err")))
        return results

    def close(self):
        # After a failure, what still runs is killed, and its exit status awaited: it is written into the
        # scratch directory, which must not be removed before.
        for _, stem in self.background:
            self._end(stem, signal.SIGKILL)
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.out.close()

    def _pid(self, stem):
        text = self._read(f"{stem}.pid").strip()
        return int(text) if text.isdigit() else None

    @staticmethod
    def _read(path):
        try:
            with open(path, errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    @staticmethod
    def _complete(status_file):
        if not os.path.exists(status_file):
            return False
        with open(status_file) as f:
            return f.read().endswith("\n")


class DocumentExamplesRun(unittest.TestCase):
    """Each document's examples, in a shell of its own; returns what the examples printed and the
    directory they ended in, for the checks of each test."""

    def setUp(self):
        self.scratch = tempfile.mkdtemp(prefix="tributary-docs-")
        self.prefix = network_namespace()
        # "$PY" runs the Python blocks: the Python under test unless a document exports its own.
        self.env = dict(os.environ, TMPDIR=self.scratch, PY=sys.executable)
        self.shell = Shell(self.scratch, self.env, self.prefix)
        if self.prefix:
            status, output = self.shell.run("ip link set lo up")
            self.assertEqual(status, 0, output)
        self.ports = {}

    def tearDown(self):
        self.shell.close()
        shutil.rmtree(self.scratch, ignore_errors=True)

    def run_document(self, name, minimum_blocks):
        found = blocks(os.path.join(ROOT, name))
        self.assertGreaterEqual(len(found), minimum_blocks, name)
        notes, outputs = [], []
        if not self.prefix:
            notes.append("no network namespace: addresses become 127.0.0.1 and ports free ones")
        for index, (language, text, line, skip) in enumerate(found):
            if skip:
                notes.append(f"not run: {name}:{line} ({skip})")
                continue
            if language == "python":
                script = os.path.join(self.scratch, f".{os.path.basename(name)}-{line}.py")
                with open(script, "w") as f:
                    f.write(text)
                status, output = self.shell.run(f'"$PY" {script}')
                outputs.append(output)
                self.assertEqual(status, 0, f"{name}:{line}: the Python block failed:\n{text}\n  output: {output[-3000:]}")
                continue
            for command in shell_commands(text):
                ran = self.adapt(command, notes)
                if ran is None:
                    continue
                words = ran.split()
                if (len(words) > 1 and words[0] == "tributary" and words[1] in LONG_RUNNING
                        and "--duration" not in words and not ran.endswith("&")):
                    self.shell.start(ran, LONG_RUNNING[words[1]])
                    continue
                status, output = self.shell.run(ran)
                outputs.append(output)
                self.assertEqual(status, 0, f"{name}:{line}: command failed: {command}\n  ran: {ran}\n"
                                            f"  output: {output[-3000:]}")
        if os.environ.get("TRIBUTARY_DOCS_VERBOSE") or "-v" in sys.argv:
            for note in notes:
                print(f"{name}: {note}", file=sys.stderr)
        directory = self.shell.cwd()
        for command, rc, err in self.shell.stop_background():
            self.assertEqual(rc, 0, f"{name}: `{command}` did not exit 0 when stopped: {err[-3000:]}")
        return directory, "".join(outputs)

    def adapt(self, command, notes):
        """The command as this test runs it (None: not run), with a note for each change."""
        original = command
        make = re.match(r"make (\S+)(.*)$", command)
        if make and make.group(1) in MAKE_TARGETS_RUN:
            notes.append(f"not run: {command!r} (make test ran it before this test)")
            return None
        if make and make.group(1) == "demo":
            out = re.search(r"DEMO_OUT=(\S+)", make.group(2))
            command = f"{TOOL} demo" + (f" --out {out.group(1)}" if out else "")
        if command.startswith("export PATH=") and (
                os.path.dirname(TOOL) != os.path.join(ROOT, ".build", "release")
                or os.path.normpath(sys.executable) != os.path.join(ROOT, ".venv", "bin", "python")):
            # As written (from the checkout), then the tool and the Python under test first.
            command += f'; export PATH="{os.path.dirname(TOOL)}:$PATH" PY="{sys.executable}"'
        command = command.replace("daq-pc", "127.0.0.1")
        if re.match(r"tributary bench\b", command):
            command = re.sub(r"--seconds \S+", "", command) + " --seconds 0.5"
            command = re.sub(r"--subscribers (\d+)", lambda m: f"--subscribers {min(int(m.group(1)), 2)}", command)
        if not self.prefix:
            command = command.replace("0.0.0.0", "127.0.0.1")
            if command.startswith(("tributary serve", "tributary view")):
                for number in re.findall(r":(55[0-9]{2}|80[0-9]{2})\b", command):
                    self.ports[number] = free_port()
            command = re.sub(r":(55[0-9]{2}|80[0-9]{2})\b",
                             lambda m: f":{self.ports.setdefault(m.group(1), free_port())}", command)
        if command != original:
            notes.append(f"ran {original!r} as {command!r}")
        return command

    def test_readme(self):
        self.assertTrue(os.path.exists(os.path.join(ROOT, "lib", "libtributary.so")), "make lib first")
        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
            self.assertLessEqual(len(f.read().splitlines()), 250, "README.md is a user's entry: at most 250 lines")
        directory, everything = self.run_document("README.md", minimum_blocks=10)
        self.assertTrue(directory.startswith(self.scratch), directory)
        for name in ("run.npy", "live.tcap", "run.tcap", "live.tdms", "live-packages", "psd.svg", "results.jsonl",
                     "results.parquet", "quickstart-results.parquet", "read_capture"):
            self.assertTrue(os.path.exists(os.path.join(directory, name)), name)
        self.assertIn("USB-6009", everything)           # the subscriber, inspect and the Python block saw it
        self.assertIn('"filter_id":1', everything)      # the subscriber's channels came through its filter
        self.assertIn("libtributary 1.0.0", everything)  # the C example ran

    def test_cli_reference(self):
        directory, everything = self.run_document("docs/CLI.md", minimum_blocks=8)
        for name in ("psd.svg", "psd-log.svg", "results.jsonl", "run.tcap", "again.npy", "run.wav", "crashed.tcap",
                     "run.tdms", "run.xdf", "run.h5", "part.csv", "from-tdms.tcap", "reduced.tcap", "live.tcap",
                     "inbox/run.tdms", "inbox/packages.jsonl", "publisher.key", "publisher.pub", "bench.json",
                     "bench.svg", "ab.json", "demo-out/demo.tcap", "tone-alsa.tcap"):
            self.assertTrue(os.path.exists(os.path.join(directory, name)), name)
        self.assertIn('"operator: ready"', everything)       # cat inbox/packages.jsonl
        self.assertIn('code 3: "gain changed"', everything)   # the subscriber got the control line's message

    def test_python_guide(self):
        directory, everything = self.run_document("docs/PYTHON.md", minimum_blocks=6)
        for name in ("run.tcap", "results.parquet"):
            self.assertTrue(os.path.exists(os.path.join(directory, name)), name)

    def test_c_api(self):
        directory, _ = self.run_document("docs/C_API.md", minimum_blocks=2)
        for name in ("read_capture", "subscribe", "publish"):
            self.assertTrue(os.access(os.path.join(directory, name), os.X_OK), name)


class CExamplesBuildAsDocumented(unittest.TestCase):
    def test_header_build_lines_are_in_c_api(self):
        with open(os.path.join(ROOT, "docs", "C_API.md"), encoding="utf-8") as f:
            documented = {line.strip() for language, text, _, skip in blocks(f.name) if language == "sh" and not skip
                          for line in text.splitlines()}
        examples = os.path.join(ROOT, "examples", "c")
        for name in sorted(os.listdir(examples)):
            if not name.endswith(".c"):
                continue
            with open(os.path.join(examples, name), encoding="utf-8") as f:
                lines = [line.lstrip(" *").strip() for line in f.read().split("*/", 1)[0].splitlines()
                         if line.lstrip(" *").startswith("gcc ")]
            self.assertEqual(len(lines), 1, f"{name}: one gcc line in its header comment")
            self.assertIn(lines[0], documented, f"{name}'s build line is not one of docs/C_API.md's")


class ReadmeNamesEveryModule(unittest.TestCase):
    def test_modules_paragraph(self):
        with open(os.path.join(ROOT, "Package.swift"), encoding="utf-8") as f:
            modules = re.findall(r'\.target\(\s*name: "(Tributary\w*)"', f.read())
        self.assertGreaterEqual(len(modules), 8)
        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
            paragraph = next(p for p in f.read().split("\n\n") if p.startswith("Modules"))
        for module in modules:
            self.assertIn(f"`{module}`", paragraph, f"README's modules paragraph does not name {module}")


class UsageListsEveryOption(unittest.TestCase):
    """Each command's synopsis names every option its parser reads (read from the Swift sources)."""

    SHARED = {  # helper files whose options a command takes
        "subscribe": ["Sources/tributary/Transport/SubscriptionOptions.swift"],
        "record": ["Sources/tributary/Transport/SubscriptionOptions.swift"],
        "serve": ["Sources/tributary/Transport/ServeOptions.swift"],
        "analyze": ["Sources/tributary/Analysis/AnalyzeOptions.swift"],
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
            # Option tables (Sources/tributary/Options/OptionTable.swift): one entry per option.
            parsed |= set(re.findall(r'\.(?:flag|text|texts|parsed|integer|number|custom)\(\s*"(--[a-z0-9-]+)"', source))
            parsed |= set(self.PACKAGE_OPTIONS.get(name, []))
            self.assertTrue(parsed, name)
            usage = subprocess.run([TRIBUTARY, "help", name], capture_output=True, text=True, timeout=TIMEOUT).stdout
            synopsis = usage.split("\n\n", 1)[0]
            listed = set(re.findall(r"--[a-z0-9-]+", synopsis))
            self.assertEqual(sorted(parsed - listed), [], f"{name}: options missing from the synopsis:\n{synopsis}")
            checked += 1
        self.assertGreaterEqual(checked, 12)


class ReferenceNamesEveryOption(unittest.TestCase):
    """docs/CLI.md has a section per command (a heading naming it) that names every option of
    `tributary help COMMAND`; the commands that take the subscription options may leave those to
    the table of the `subscribe` section."""

    TAKE_SUBSCRIPTION_OPTIONS = {"record", "bench", "view", "monitor"}

    def test_every_command_and_option(self):
        with open(os.path.join(ROOT, "docs", "CLI.md"), encoding="utf-8") as f:
            text = f.read()
        sections, current = {}, None
        for line in text.splitlines():
            heading = re.match(r"^#{2,3} (\S+)\s*$", line)
            if heading:
                current = heading.group(1)
                sections[current] = ""
            elif current:
                sections[current] += line + "\n"
        top = subprocess.run([TRIBUTARY, "--help"], capture_output=True, text=True, timeout=TIMEOUT).stdout
        commands = re.findall(r"^  ([a-z]+)  ", top, flags=re.M)
        self.assertGreaterEqual(len(commands), 15, top)
        for command in commands:
            self.assertTrue(command in sections, f"docs/CLI.md has no section '### {command}'")
            usage = subprocess.run([TRIBUTARY, "help", command], capture_output=True, text=True, timeout=TIMEOUT).stdout
            documented = sections[command]
            if command in self.TAKE_SUBSCRIPTION_OPTIONS:
                documented += sections["subscribe"]
            options = set(re.findall(r"(?<![\w-])--[a-z0-9][a-z0-9-]*", usage))
            missing = sorted(o for o in options if not re.search(re.escape(o) + r"(?![a-z0-9-])", documented))
            self.assertEqual(missing, [], f"docs/CLI.md's section on {command} does not name these options")


if __name__ == "__main__":
    unittest.main()
