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
