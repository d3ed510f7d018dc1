"""`tributary keygen` writes CURVE keys that libzmq (through pyzmq) accepts as a matching pair."""
import os
import stat
import subprocess
import tempfile
import unittest

import zmq

from tool_process import TRIBUTARY  # noqa: E402


def key_line(path):
    with open(path, encoding="utf-8") as handle:
        lines = [line.strip() for line in handle if line.strip() and not line.startswith("#")]
    assert len(lines) == 1, lines
    return lines[0].encode()


class KeygenTests(unittest.TestCase):
    def test_files_are_a_matching_pair_and_the_secret_is_private(self):
        with tempfile.TemporaryDirectory() as directory:
            prefix = os.path.join(directory, "server")
            subprocess.run([TRIBUTARY, "keygen", "--out", prefix], check=True, capture_output=True)
            secret, public = key_line(prefix + ".key"), key_line(prefix + ".pub")
            self.assertEqual(len(secret), 40)
            self.assertEqual(zmq.curve_public(secret), public)
            self.assertEqual(stat.S_IMODE(os.stat(prefix + ".key").st_mode), 0o600)
            # Refuses to overwrite without --force.
            again = subprocess.run([TRIBUTARY, "keygen", "--out", prefix], capture_output=True)
            self.assertEqual(again.returncode, 1)

    def test_printed_keys_work_for_a_curve_handshake(self):
        out = subprocess.run([TRIBUTARY, "keygen"], check=True, capture_output=True, text=True).stdout
        keys = dict(line.split(" ", 1) for line in out.strip().splitlines())
        server_public, server_secret = keys["public-key"].encode(), keys["secret-key"].encode()
        client_public, client_secret = zmq.curve_keypair()
        context = zmq.Context()
        try:
            server = context.socket(zmq.ROUTER)
            server.curve_server = True
            server.curve_secretkey = server_secret
            server.rcvtimeo = 5000
            port = server.bind_to_random_port("tcp://127.0.0.1")
            client = context.socket(zmq.DEALER)
            client.curve_serverkey = server_public
            client.curve_publickey = client_public
            client.curve_secretkey = client_secret
            client.connect(f"tcp://127.0.0.1:{port}")
            client.send(b"hello")
            self.assertEqual(server.recv_multipart()[1], b"hello")
        finally:
            context.destroy(linger=0)


if __name__ == "__main__":
    unittest.main()
