"""Suite-wide settings.

One torch thread: the suite's models are tiny, and on a shared 2-core CI machine two threads per
process oversubscribe the cores (measured 10–50× slower steps for tiny CNNs).
"""

import pytest
import torch


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(autouse=True, scope="session")
def _ctrl_c_as_in_a_terminal():
    """A shell without job control starts background commands (``.ci/run &``, nohup) with SIGINT ignored, and the
    lessons' subprocesses would inherit that: the tests that press Ctrl-C (the course runner's interrupt tests)
    could not. Python's own handler makes Ctrl-C a KeyboardInterrupt here and SIGINT default again in children."""
    import signal

    before = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)
