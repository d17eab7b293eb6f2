"""A fake ipykernel comm for the kernel side's comm targets: what the target sent, and the message and close
handlers it set (a test calls them as the browser would)."""
from __future__ import annotations


class FakeComm:
    def __init__(self):
        self.sent, self.handlers = [], {}

    def send(self, msg):
        self.sent.append(msg)

    def on_msg(self, fn):
        self.handlers["msg"] = fn

    def on_close(self, fn):
        self.handlers["close"] = fn
