# The top of the module burns SECONDS of CPU, as `import matplotlib.pyplot` or `import scipy`
# would (0.5-1 s each): the import has a CPU limit of its own, not the first case's.
import time as _time

_start = _time.process_time()
while _time.process_time() - _start < SECONDS:
    pass
