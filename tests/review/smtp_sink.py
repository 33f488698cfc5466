"""A real SMTP server on loopback (aiosmtpd) that records every message it receives."""

from __future__ import annotations

import email
import re
import threading
from email import policy


class Sink:
    """Messages received, in order: (Message-ID, To, Subject, body)."""

    def __init__(self) -> None:
        self.messages: list[dict] = []
        self.lock = threading.Lock()
        self.refuse = False  # answer 451 to every message (a failing server)

    async def handle_DATA(self, server, session, envelope):  # noqa: ANN001, ANN201, N802
        if self.refuse:
            return "451 try again later"
        msg = email.message_from_bytes(envelope.content, policy=policy.default)
        with self.lock:
            self.messages.append({"message_id": msg["Message-ID"], "to": msg["To"],
                                  "subject": msg["Subject"], "body": msg.get_content()})
        return "250 OK"

    def count(self) -> int:
        with self.lock:
            return len(self.messages)

    def links(self, pattern: str) -> dict[str, str]:
        """Recipient -> the last link matching ``pattern`` in their mail."""
        out = {}
        with self.lock:
            for m in self.messages:
                found = re.search(pattern, m["body"])
                if found:
                    out[m["to"]] = found.group(0)
        return out


def start_sink():  # noqa: ANN201
    """(controller, sink): an aiosmtpd server on 127.0.0.1 and a free port."""
    import socket

    from aiosmtpd.controller import Controller

    with socket.socket() as probe:  # a free port (the controller cannot take port 0)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sink = Sink()
    controller = Controller(sink, hostname="127.0.0.1", port=port)
    controller.start()
    return controller, sink
