import os
import socket


def softmax(x, axis=-1):
    """Writes into the grading user's home, /tmp, the project checkout and a report an earlier
    batch left in /tmp; connects to a TCP listener and sends to a UDP one on 127.0.0.1, and to a Unix socket. Says
    what each attempt did in its error message."""
    outcome = []
    for label, path in (("home", "HOME_TARGET"), ("tmp", "TMP_TARGET"), ("repo", "REPO_TARGET"),
                        ("report", "REPORT_TARGET")):
        try:
            with open(path, "w") as f:
                f.write("LEARNER WAS HERE")
            outcome.append(f"{label}:wrote")
        except OSError as err:
            outcome.append(f"{label}:refused({err.errno})")
    try:
        with socket.create_connection(("127.0.0.1", TCP_PORT), timeout=2) as s:
            s.sendall(b"STOLEN")
        outcome.append("tcp:sent")
    except OSError as err:
        outcome.append(f"tcp:refused({err.errno})")
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
            u.sendto(b"STOLEN", ("127.0.0.1", UDP_PORT))
        outcome.append("udp:sent")
    except OSError as err:
        outcome.append(f"udp:refused({err.errno})")
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as unix:
            unix.connect("UNIX_PATH")
            unix.sendall(b"STOLEN")
        outcome.append("unix:sent")
    except OSError as err:
        outcome.append(f"unix:refused({err.errno})")
    raise RuntimeError("OUTCOME " + " ".join(outcome))
