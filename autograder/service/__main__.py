"""``python -m autograder.service PID KIND``: the service's half (``server.py``), as the kernel starts it."""
from .server import main

if __name__ == "__main__":
    main()
